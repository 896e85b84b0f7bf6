"""``LetterboxSpec``: the letterbox parameters of a model, read once from its description."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from y9core.letterbox import as_hw
from y9deploy.pre.host import fill_value


@dataclass(frozen=True)
class LetterboxSpec:
    """Network input and letterbox settings, the same for every pre-processing implementation.

    Attributes:
        imgsz: ``(h, w)`` of the network input.
        scaleup: allow enlarging small frames.
        stride: the stride (for ``auto`` padding; kept for the geometry).
        color: the padding colour, a (b, g, r) tuple.
    """

    imgsz: tuple[int, int]
    scaleup: bool = True
    stride: int = 32
    color: tuple[int, int, int] = (114, 114, 114)

    def __post_init__(self) -> None:
        if min(self.imgsz) < 1 or int(self.stride) < 1:
            raise ValueError(
                f"letterbox imgsz={self.imgsz}, stride={self.stride}; expected a positive size and stride."
            )

    @classmethod
    def of(cls, imgsz: Any, letterbox: Mapping[str, Any] | None) -> LetterboxSpec:
        """From a model's input size and its letterbox rule (``ModelFacts.letterbox``, or a dict of its settings:
        missing keys take the defaults)."""
        lb = letterbox.to_dict() if hasattr(letterbox, "to_dict") else dict(letterbox or {})
        return cls(
            as_hw(tuple(imgsz) if not isinstance(imgsz, int) else imgsz),
            bool(lb.get("scaleup", True)),
            int(lb.get("stride", 32)),
            fill_value(lb.get("color", 114)),
        )

    def kwargs(self) -> dict[str, Any]:
        """``scaleup``, ``stride``, ``color`` as the letterbox functions take them."""
        return {"scaleup": self.scaleup, "stride": self.stride, "color": self.color}
