"""Workflows a skill carries: their types, the checks at load, the runner and its steps, success
tests, the run's record, the slash form for direct use, and the runs a model carries out."""
