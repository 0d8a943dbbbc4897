"""One call of a skill's operation: the request built from a model's arguments, held at its gate,
sent (credentials attached, bounded, redacted), its answer fitted for an agent, its next page."""
