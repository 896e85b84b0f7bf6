"""Inspection: pass/fail rules on regions of a fixed camera view, per image or over time windows of a video, with
an audit log. It stands on ``y9deploy.tracking`` (regions, counting, tracks) and ``sources`` (frames).

- ``frame_rules``: ``Rule``, ``Thresholds`` and ``inspect(dets, rules)``, one frame's verdict;
- ``ruleset``: ``RuleSet``, the validated contents of a rules file, bound to a model's class names;
- ``rules_file``: ``load_rules(path)``, the YAML rules file read and checked (schema: docs/inspection.md);
- ``gate``: ``Gate``, a counting gate judging time windows of a video or stream on tracks;
- ``gate_run``: ``run_gate``, the gate over a video file, a stream or a camera;
- ``run``: ``run_inspection``, rules over images (or a video, through ``gate_run``) with the audit log.

Arrows: ``run`` -> ``gate_run`` -> ``gate`` -> ``ruleset`` -> ``frame_rules``; ``rules_file`` -> ``ruleset``.
The names below are the public ones of one frame's verdict (``from y9deploy.pipelines.inspection import inspect``).
"""

from y9deploy.pipelines.inspection.frame_rules import (
    ClassThreshold,
    InspectionResult,
    Rule,
    Thresholds,
    inspect,
)

__all__ = ["ClassThreshold", "InspectionResult", "Rule", "Thresholds", "inspect"]
