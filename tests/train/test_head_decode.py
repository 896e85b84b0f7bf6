"""The head's box decode under mixed precision: float32 boxes, not bfloat16 ones.

bfloat16 keeps 8 significant bits, so a coordinate between 256 and 512 px moves in steps of 2 px: validation under
bf16 autocast used to score boxes whose corners had been rounded that far. The reference is the same maps decoded in
float64 without autocast.
"""

from __future__ import annotations

import torch

from y9train.models import build_model


def _maps(head, b: int = 2, sizes=((80, 80), (40, 40), (20, 20))) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(b, head.no, h, w, generator=gen).to(torch.bfloat16) for h, w in sizes]


def test_decode_under_bf16_autocast_is_float32_and_matches_a_float64_reference():
    head = build_model("gelan-t", nc=3).head
    head.set_strides([8.0, 16.0, 32.0])
    maps = _maps(head)
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = head.decode(maps, head.dfl)
        ref = head.double().decode([m.double() for m in maps], head.dfl)
        head.float()
        plain_bf16 = head.decode(maps, head.dfl.to(torch.bfloat16))  # no autocast: the maps' own dtype
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.double(), ref, atol=1e-3, rtol=1e-5)  # pixels and probabilities
    # What autocast used to give: boxes rounded to bfloat16, corners off by far more than a pixel at 640.
    assert (plain_bf16[:, :4].double() - ref[:, :4]).abs().max() > 0.5


def test_decode_without_autocast_keeps_the_maps_dtype():
    head = build_model("gelan-t", nc=3).head
    head.set_strides([8.0, 16.0, 32.0])
    maps = [m.float() for m in _maps(head)]
    with torch.no_grad():
        assert head.decode(maps, head.dfl).dtype == torch.float32
        assert head.half().decode([m.half() for m in maps], head.dfl).dtype == torch.float16
