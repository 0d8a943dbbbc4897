"""The application layer: every use-case the faces (CLI, HTTP API, console, MCP, the agent host)
and the workers share, with typed signatures, over one context built once. In five rooms:
`stages` (the workers'), `operator` (the command line's, the API's and the console's) and
`serving` (the runtimes') over `records` (state several rooms share) over `base` (what every
room stands on); the three upper rooms never import each other (docs/architecture.md).

Modules are imported by what uses them (nothing here imports at package import time), so a
command that needs only the offline derivation never loads a database or broker client.
"""
