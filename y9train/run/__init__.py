"""The entry of a training run: the library call, its command line and several processes."""
