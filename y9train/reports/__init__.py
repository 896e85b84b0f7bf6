"""Validation during a run, and the files and pictures a run leaves.

- ``validate``: a model over a letterboxed loader, post-processing on the device, COCO metrics (``y9core.evaluation``);
- ``val_files``: the validation files at the end of a run; ``reporting``: the progress bar and ``results.csv``;
- ``plots``: ``results.csv`` -> ``results.png``; ``previews``: pictures of what the network is fed.

Arrows: ``plots`` -> ``reporting``; ``validate`` -> ``setup``, ``checkpoints``, ``data``. Only ``loop`` imports it.
"""
