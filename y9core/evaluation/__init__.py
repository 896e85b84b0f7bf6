"""Detection metrics and the files and pictures of a validation."""
