"""``y9train.metrics.evaluate``, the evaluator named by DESIGN.md's contract. It lives in ``y9core.evaluation.metrics``
(numpy only, below both the trainer and the validation of deployed files); this name stays for the contract."""

from y9core.evaluation.metrics import evaluate

__all__ = ["evaluate"]
