"""Validation during a run, and the files and pictures a run leaves."""
