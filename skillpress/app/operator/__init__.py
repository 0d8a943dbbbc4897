"""The operator's use-cases: what the command line, the HTTP API and the console call to take a
spec in, review, annotate, publish, read the records, export and run workflows, and what they
ask of the pipeline. A module here imports the records and base rooms, never `stages` or
`serving`; a face calls these, presents what they return, and adds nothing of its own."""
