"""Serving skills to agents: a call or a workflow run from the command line (`calling`), MCP
servers of one skill or many (`mcp`, `catalog`), followers that keep a folder equal to each live
version (`followers`), and what the agent host's face is built from (`hosting`). A module here
imports the records and base rooms, never `stages` or `operator`; the gates a call meets are
decided by a desk (the records here, or a `serve`'s approvals API)."""
