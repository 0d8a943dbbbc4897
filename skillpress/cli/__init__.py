"""The `skillpress` command line."""
