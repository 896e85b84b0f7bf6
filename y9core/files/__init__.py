"""Files and run folders: every write that must not leave half a file, and every path a user gives.

- ``atomic_write``: the old file or the new one, never a part; ``append_file``: whole lines only;
- ``output_file``: one writer per named output file; ``run_dir``: where a command writes (never over an input);
- ``file_paths``: ``expect_file``, the one check of an input that must be a file; ``yaml_load``: the one YAML loader.

Arrows: ``output_file`` -> ``atomic_write``, ``run_dir``; all of them -> ``y9core.errors``. The lowest room of y9core:
``images``, ``evaluation`` and ``data`` stand on it.
"""
