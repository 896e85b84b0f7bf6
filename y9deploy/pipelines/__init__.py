"""What runs around a Detector: where frames come from, tiling, inspection rules and prediction runs, one
sub-package per concern, arrows pointing down (docs/architecture.md draws the map):

    predict/      inspection/     runs and their writers (the top); they open a Detector (y9deploy.runtime)
       |    \\     /     |
    tiling/   sources/    |       crops of a frame / where frames come from
                          |
            y9deploy.tracking     tracking and counting on Detections (below the runtime: Detector.track uses it)

``predict`` stands on ``sources``, ``tiling`` and ``y9deploy.tracking``; ``inspection`` on ``sources`` and
``y9deploy.tracking``; ``tiling`` and ``sources`` import nothing of the others (``tiling`` is given a Detector).
"""
