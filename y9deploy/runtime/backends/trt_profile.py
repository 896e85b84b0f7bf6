"""Pure helpers of the TensorRT backend: an engine's optimization profile, the input shape for a batch, output
shapes (no TensorRT import; tested without a GPU)."""

from __future__ import annotations

from typing import Any

from y9core.errors import ModelFileError
from y9core.wording import count_range

Shape = tuple[int, ...]


def profile_batch_range(profile: tuple[Shape, Shape, Shape]) -> tuple[int, int]:
    """(min, max) batch of an input profile ``(min_shape, opt_shape, max_shape)``."""
    mn, _, mx = profile
    return int(mn[0]), int(mx[0])


def select_input_shape(
    profile: tuple[Shape, Shape, Shape], batch: int, *, where: str = "the engine"
) -> Shape:
    """The input shape to set for ``batch`` images within an optimization profile.

    The batch must lie in ``[min[0], max[0]]``; every other dimension takes its fixed value, or the
    profile's optimum where the profile leaves it free (min != max).
    Raises:
        ValueError: ``batch`` is outside the profile, or the profile is malformed.
    """
    mn, opt, mx = (tuple(int(d) for d in s) for s in profile)
    if not (len(mn) == len(opt) == len(mx)) or len(mn) < 1:
        raise ValueError(f"{where}: the optimization profile {profile} is malformed.")
    if not mn[0] <= batch <= mx[0]:
        raise ValueError(f"{where} accepts batches of {count_range(mn[0], mx[0], 'image')} (its profile), not {batch}.")
    rest = tuple(lo if lo == hi else o for lo, o, hi in zip(mn[1:], opt[1:], mx[1:]))
    return (int(batch), *rest)


def engine_profile(engine: Any, name: str, shape: Shape) -> tuple[Shape, Shape, Shape]:
    """(min, opt, max) input shapes of profile 0; a static input (no -1 in ``shape``) is its own profile."""
    if all(d > 0 for d in shape):
        return (tuple(shape),) * 3  # type: ignore[return-value]
    dims = [tuple(int(d) for d in s) for s in engine.get_tensor_profile_shape(name, 0)]
    if len(dims) != 3 or any(len(d) != len(shape) for d in dims):
        raise ModelFileError(f"the engine reports no usable optimization profile for input {name} ({dims}).")
    return dims[0], dims[1], dims[2]


def output_shape(shape: Shape, batch: int) -> Shape:
    """An engine output shape with its dynamic batch dimension (-1) set to ``batch``."""
    return tuple(batch if (i == 0 and d < 0) else int(d) for i, d in enumerate(shape))
