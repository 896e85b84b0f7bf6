"""Files and run folders: atomic writes, appends, input checks, where a command writes, YAML."""
