"""A package loaded for calling: its operations as tools (each schema checked against JSON
Schema's metaschema and shaped for a provider), its hosts and credentials, what each operation
does (reads or writes)."""
