"""The HTTP face: a JSON API under /v1 and the operator console, both over the application layer."""
