"""The MCP face: a skill (or several) served to MCP clients over stdio or streamable HTTP, read
the way a package is meant to be read (deferred), every call through the runtime's gates."""
