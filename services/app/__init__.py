"""The application layer: every use-case the faces (CLI, HTTP API, console, MCP, runtime
followers) and the workers share, with typed signatures, over one context built once.

Modules are imported by what uses them (nothing here imports at package import time), so a
command that needs only the offline derivation never loads a database or broker client.
"""
