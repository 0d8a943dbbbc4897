"""The runtime: read a skill package, offer its operations as tools, build their requests."""
