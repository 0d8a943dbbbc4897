"""skillpress services: the pure derivation core, the runtime, the workers, the CLI and the platform shell."""
