"""Skills outside skillpress: Arazzo 1.0.1 documents in and out, Agent Skills folders and tool
contracts, a package's tools in every provider's shape."""
