"""The training loop and what it keeps between epochs."""
