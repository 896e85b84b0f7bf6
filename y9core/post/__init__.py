"""Post-processing shared by training's validation and deployment: raw head output [B, 4+nc, A] -> rows
(x1, y1, x2, y2, score, class) per image.

- ``rows``: ``postprocess``, the one door (it asks ``choice`` and runs what it picks), and ``rows_with``;
- ``choice``: ``choose_post``, the rule (one table) that picks the implementation, and the failure record;
- ``nms``: the host implementation (numpy; the official ``non_max_suppression`` semantics): the batch API over the
  decode and greedy NMS of ``y9core.boxes``;
- ``torch_batched``: the batched torch implementation (any device) with the Triton or the fixed-point scan;
- ``triton_nms``: the Triton kernels (packed IoU bits, greedy scan).

Importing this package, ``rows``, ``choice`` or ``nms`` needs numpy only: torch and triton are imported
by what needs them.
"""
