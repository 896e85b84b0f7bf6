"""Detection metrics and the files and pictures of a validation (numpy only).

- ``metrics``: COCO mAP50, mAP50-95, AP by size, per class, P/R/F1 (DESIGN.md's ``y9train.metrics.evaluate``);
- ``curves``: precision-recall and P/R/F1 against the confidence; ``confusion``: the confusion matrix;
- ``result``: the result of validating one model on one split; ``report``: the files of a validation, into one
  folder; ``plots``: its pictures; ``coco_categories``, ``coco_results``: COCO's ids and results rows.

Arrows: ``metrics`` -> ``curves``; ``report`` -> ``confusion``, ``plots``, ``coco_*``; ``metrics``, ``confusion``
-> ``y9core.boxes``; ``report``, ``plots`` -> ``y9core.files``.
"""
