"""The base room: what every other room of the application layer stands on, and owns nothing of
theirs. The bootstrap (`context`), the read models every face shows (`views`), package folders on
disk (`package_dir`), who may do what (`roles`), the pipeline's bus (`bus`: where NATS is, a
connection, sending and following) and the streams' copies (`streams`).

A module here imports the platform, the runtime's and core's types and the schemas; never
another room of `app` (an import contract holds it)."""
