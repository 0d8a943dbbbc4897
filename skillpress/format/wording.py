"""The words a package's body carries for how its tools are called and where its files are: each
face that reads the body elsewhere (an Agent Skills folder, an MCP server) finds them and says
its own instead."""

from __future__ import annotations

__all__ = ["BESIDE", "CALL_BY_NAME", "CREDENTIAL_ATTACHED"]

CALL_BY_NAME = "call one by its name; the request is built for you."
BESIDE = ", beside this one)"
CREDENTIAL_ATTACHED = "The credential is attached for you"
