"""y9train: YOLOv9 / GELAN models, checkpoints, re-parameterization and a compact single-GPU trainer.

Modules of its own: ``reparam`` (``to_deploy``, ``fuse``), ``value_ranges``, and DESIGN.md's contract paths
``checkpoint`` (``load_checkpoint``) and ``metrics`` (``evaluate``). Rooms, top to bottom (each imports only rooms
below it; docs/architecture.md has a paragraph each):

    run/                          train(), its command line, several processes
    loop/                         the training loop and what it keeps between epochs
    reports/  optimisation/       validation and a run's files | optimiser, EMA, settings
    setup/                        device, model, data and seeds of a run
    checkpoints/ loss/ timing/ data/
    models/                       the networks
"""

from y9core.version import __version__ as __version__
