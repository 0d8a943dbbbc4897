"""The pipeline's stages: one module per stage, each the use-case one worker calls with its
message (fetch, parse, categorize, guess, propose, publish, and the dead letters of the delivery
contract). Idempotent: ids derived from content, a row written once. Used by the workers only; a
module here imports the records and base rooms, never `operator` or `serving`."""
