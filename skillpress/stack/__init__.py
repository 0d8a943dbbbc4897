"""The embedded composition: nats-server (one, or a cluster on loopback), every worker and the
HTTP API wired in one process, outside both the command line and the application layer.

This package starts processes (nats-server) and serves sockets; it is the one place the faces'
neighbours meet: the CLI asks it to run a stack, the application layer is handed its embedded
pipeline (`embedded_pipeline`) through the context, and neither imports the other's faces.
"""
