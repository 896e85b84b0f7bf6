"""Post-processing: raw network outputs -> rows (x1, y1, x2, y2, score, class) -> Detections.

- ``host``: numpy decode + NMS (official semantics), end-to-end rows, rows -> Detections;
- ``nms``: the host NMS and the numpy IoU;
- ``torch_batched``: the batched torch decode + NMS (any device) and the torch IoU;
- ``triton_nms``: the Triton kernels (packed IoU bits, greedy scan);
- ``graph``: the batched decode + NMS replayed as CUDA graphs, with typed per-shape state;
- ``choice``: ``choose_post``, the rule that picks the implementation, and the one fallback rule;
- ``runner``: ``PostRunner``, the torch pipeline's post-processing by that choice.

Importing this package needs numpy only: torch and triton are imported by what needs them.
"""
