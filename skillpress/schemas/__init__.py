"""skillpress contracts: the subject catalogue, event models and SQLModel records."""
