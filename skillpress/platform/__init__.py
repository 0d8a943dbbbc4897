"""The platform shell: settings, logging, records, blobs, NATS and the local stack.

Nothing here connects at import time; every connection is made by an explicit call.
"""
