"""The ``y9`` command line: thin typer commands, one module per command group."""
