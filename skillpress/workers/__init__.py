"""The pipeline's workers: thin shells on JetStream around the pure derivation core.

Each worker loads its inputs by id (records + blobs), calls pure functions, stores what they
return, publishes the next event with a deterministic `Nats-Msg-Id`, and only then acks.
"""
