"""The Triton greedy-NMS scan (``y9core.post.triton_nms``) run on the CPU by Triton's interpreter
(TRITON_INTERPRET=1: the same kernel source, executed with numpy semantics), against a slow greedy reference
written here and against the host ``postprocess``.

SKIPPED when triton is not importable (torch's CPU wheels do not bring it; the project's dev extra installs it on
Linux x86-64, so CI runs these). Compilation for a real GPU is checked by lowering the kernel to an sm_90 cubin
(no GPU needed); running it on a GPU, and its speed, only by benchmarks/bench_batched_nms.py and
benchmarks/bench_detector_gpu.py (steps nms and graph) on the H200, which compare its results with the host.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip(
    "triton",
    reason="triton is not importable: the Triton NMS kernel cannot be tested here",
    exc_type=ImportError,
)

import triton.language as tl  # noqa: E402

from tests.deploy.test_detector_gpu_path import random_pred, random_settings, uneven_pred  # noqa: E402
from tests.deploy.triton_interpret import interpret_fast  # noqa: E402
from y9core.post import triton_nms as nms_triton  # noqa: E402
from y9core.post.torch_batched import batched_postprocess_torch  # noqa: E402
from y9deploy.postprocess import postprocess  # noqa: E402


@pytest.fixture(autouse=True)
def interpret(monkeypatch):
    """Triton's CPU interpreter for every test here (read by triton at each kernel build and launch), its
    ``bit_or`` reductions by numpy (tests/deploy/triton_interpret.py)."""
    interpret_fast(monkeypatch)


def _or_tiles(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr):  # noqa: N803
    """out = bit_or reduction of the [R, C] int32 tile x along AXIS (R values when AXIS is 1, else C)."""
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    words = tl.reduce(tl.load(x_ptr + r[:, None] * C + c[None, :]), AXIS, nms_triton.bit_or)
    tl.store(out_ptr + (r if AXIS == 1 else c), words)


@pytest.mark.parametrize("rows,cols,axis", [(64, 32, 1), (16, 16, 0)])
def test_fast_or_reduce_equals_the_interpreters(rows, cols, axis, monkeypatch):
    """The fast path of triton_interpret (numpy) gives what the interpreter's own element-by-element reduction
    with ``bit_or`` gives, in a kernel, on random int32 words (the sign bit included), and their OR."""
    import triton

    rng = np.random.default_rng(rows)
    data = rng.integers(-(1 << 31), 1 << 31, size=(rows, cols), dtype=np.int64).astype(np.int32)
    data &= rng.integers(-(1 << 31), 1 << 31, size=(rows, cols), dtype=np.int64).astype(np.int32)
    kernel = triton.jit(_or_tiles)

    def run() -> np.ndarray:
        out = torch.zeros(rows if axis == 1 else cols, dtype=torch.int32)
        kernel[(1,)](torch.from_numpy(data), out, R=rows, C=cols, AXIS=axis)
        return out.numpy()

    fast = run()
    monkeypatch.undo()  # the interpreter's own reduce
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    slow = run()
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast, np.bitwise_or.reduce(data, axis=axis))
    assert (fast < 0).any()


def slow_greedy(over: np.ndarray, n: np.ndarray, max_det: int) -> np.ndarray:
    """Greedy NMS straight from the definition: walk boxes by score, keep one unless a kept box before it
    overlaps it (over[i, j], i < j), stop keeping after max_det."""
    b, k, _ = over.shape
    keep = np.zeros((b, k), bool)
    for x in range(b):
        kept: list[int] = []
        for j in range(int(n[x])):
            if len(kept) < max_det and not any(over[x, i, j] for i in kept):
                kept.append(j)
        keep[x, kept] = True
    return keep


def test_pack_rows_bit_layout():
    rng = np.random.default_rng(0)
    for k in (1, 31, 32, 33, 100):
        over = rng.random((2, k, k)) < 0.3
        words = nms_triton.pack_rows(torch.from_numpy(over)).numpy()
        assert words.dtype == np.int32 and words.shape == (2, k, -(-k // 32))
        bits = (words[..., None].astype(np.int64) >> np.arange(32)) & 1  # bit j of word w = box 32 w + j
        np.testing.assert_array_equal(bits.reshape(2, k, -1)[..., :k].astype(bool), over)
        assert not bits.reshape(2, k, -1)[..., k:].any()


@pytest.mark.parametrize("k", [1, 5, 31, 32, 33, 64, 100, 257])
def test_kernel_equals_slow_greedy(k):
    """Random overlap matrices (lower triangle and diagonal filled with junk the kernel must ignore), images
    with fewer boxes than K, none at all, and max_det limits."""
    rng = np.random.default_rng(k)
    over = rng.random((4, k, k)) < rng.choice([0.02, 0.1, 0.5])
    n = np.array([k, max(0, k - 3), 0, (k + 1) // 2])
    for max_det in (10_000, 1, 7):
        got = nms_triton.greedy_keep(torch.from_numpy(over), torch.from_numpy(n), max_det).numpy()
        np.testing.assert_array_equal(got, slow_greedy(np.triu(over, 1), n, max_det))


def test_kernel_dense_chain():
    """300 boxes each overlapping the next only: greedy keeps every other one (a chain the fixed point needs
    ~300 passes for); with each overlapping the next two: every third."""
    k = 300
    over = np.zeros((2, k, k), bool)
    i = np.arange(k - 1)
    over[:, i, i + 1] = True
    over[1, i[:-1], i[:-1] + 2] = True
    got = nms_triton.greedy_keep(torch.from_numpy(over), torch.tensor([k, k]), 10_000).numpy()
    np.testing.assert_array_equal(got[0], np.arange(k) % 2 == 0)
    np.testing.assert_array_equal(got[1], np.arange(k) % 3 == 0)
    np.testing.assert_array_equal(got, slow_greedy(over, np.array([k, k]), 10_000))


@pytest.mark.parametrize("k", [1, 33, 130, 260])  # one word, two, five, nine (K above 256)
def test_iou_bits_equal_overlaps(k):
    """The packed bits computed from the boxes equal ``iou > t`` of the float32 formula (``box_iou_torch``,
    itself equal to ``boxes.box_iou``) for every i < j < n, ties at the threshold included; the scan of them (output
    buffer pre-filled with junk: the words left unwritten must not matter) equals the greedy reference."""
    from tests.deploy.test_nms import random_boxes
    from y9core.boxes import threshold_below
    from y9core.post.torch_batched import box_iou_torch

    rng = np.random.default_rng(k)
    boxes = np.stack([random_boxes(rng, k, clusters=max(1, k // 20))[0] for _ in range(3)])
    boxes[0, 1::3] = boxes[0, 0::3][: len(boxes[0, 1::3])]  # identical boxes: IoU exactly 1
    n = np.array([k, max(0, k - 5), k // 2])
    for iou in (0.3, 0.5, 1.0) if k < 256 else (0.5,):  # the interpreter takes ~4 s a call at 260: the words'
        # layout above 256 once, the thresholds (ties at 1.0 included) on the smaller sizes
        t = torch.tensor([float(threshold_below(iou))])
        junk = torch.full((3, k, -(-k // 32)), -1, dtype=torch.int32)
        words = nms_triton.iou_bits(torch.from_numpy(boxes), torch.from_numpy(n), t, out=junk)
        tb = torch.from_numpy(boxes)
        over = (box_iou_torch(tb, tb) > float(t)).numpy()
        bits = ((words.numpy()[..., None].astype(np.int64) >> np.arange(32)) & 1).reshape(3, k, -1)[..., :k]
        for x in range(3):
            upper = np.triu(np.ones((n[x], n[x]), bool), 1)
            np.testing.assert_array_equal(bits[x, : n[x], : n[x]][upper], over[x, : n[x], : n[x]][upper])
        for max_det in (10_000, 3):
            got = nms_triton.scan_words(words, torch.from_numpy(n), max_det).numpy()
            np.testing.assert_array_equal(got, slow_greedy(np.triu(over, 1), n, max_det))


def test_kernel_bad_input():
    with pytest.raises(ValueError, match="expected \\[B, K, K\\] bool"):
        nms_triton.greedy_keep(torch.zeros((1, 3, 4), dtype=torch.bool), torch.tensor([3]), 5)
    with pytest.raises(ValueError, match="K <= 4096"):
        nms_triton.greedy_keep(torch.zeros((1, 4097, 4097), dtype=torch.bool), torch.tensor([1]), 5)
    with pytest.raises(ValueError, match="expected \\[B, K, 4\\] float32"):
        nms_triton.iou_bits(torch.zeros((1, 5, 4), dtype=torch.float64), torch.tensor([5]), torch.zeros(1))


@pytest.mark.parametrize("seed", range(6))
def test_batched_triton_equals_host_postprocess(seed):
    """Randomized raw outputs (ties in half the cases, classes, per-class thresholds, agnostic, max_det)."""
    rng = np.random.default_rng(100 + seed)
    b, nc, a = int(rng.integers(1, 5)), int(rng.integers(1, 7)), int(rng.integers(20, 500))
    pred = random_pred(rng, b, nc, a, ties=bool(seed % 2))
    kw = random_settings(rng, seed, nc)
    want = postprocess(pred, **kw)
    got = batched_postprocess_torch(torch.from_numpy(pred), scan="triton", **kw)
    for x, y in zip(got, want):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "counts,chain",
    [([0, 1, 7, 31, 33, 65, 300, 2], (6,)), ([300, 3, 0, 129, 70], (0, 3)), ([45, 45, 45], ())],
)
def test_batched_triton_uneven_counts_and_chains(counts, chain, monkeypatch):
    """Several images of very different k (K not a multiple of 32) in one batch, with dense chains (300 boxes
    each overlapping the next); and with the kernel's limit lowered to 64, buckets above it take the fixed
    point in the same call."""
    rng = np.random.default_rng(sum(counts))
    pred = uneven_pred(rng, counts, a=700, chain=chain)
    for kw in (dict(), dict(agnostic=True), dict(max_det=4), dict(iou=0.65, max_nms=100)):
        want = postprocess(pred, conf=0.25, **kw)
        got = batched_postprocess_torch(torch.from_numpy(pred), conf=0.25, scan="triton", **kw)
        for x, y in zip(got, want):
            np.testing.assert_array_equal(x, y)
    monkeypatch.setattr(nms_triton, "MAX_K", 64)
    want = postprocess(pred, conf=0.25)
    for x, y in zip(batched_postprocess_torch(torch.from_numpy(pred), conf=0.25, scan="triton"), want):
        np.testing.assert_array_equal(x, y)


def test_scan_argument(monkeypatch):
    pred = torch.from_numpy(random_pred(np.random.default_rng(0), 1, 2, 50))
    with pytest.raises(ValueError, match="scan='bogus'"):
        batched_postprocess_torch(pred, scan="bogus")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="expected CUDA tensors"):
        batched_postprocess_torch(pred, scan="triton")


def test_kernel_compiles_for_hopper(monkeypatch):
    """The interpreter runs the kernel with numpy semantics; this lowers the same source through Triton's real
    compiler to a cubin for sm_90 (the H200), catching what only compilation sees (loop-carried types, ...).
    No GPU needed: Triton ships ptxas."""
    import triton
    from triton.backends.compiler import GPUTarget

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    kernel = nms_triton.kernel()
    if not isinstance(kernel, triton.runtime.JITFunction) or not isinstance(
        nms_triton.bit_or, triton.runtime.JITFunction
    ):
        pytest.skip("nms_triton was imported under TRITON_INTERPRET=1: no compilable kernel in this process")
    sig = {"words_ptr": "*i32", "n_ptr": "*i32", "keep_ptr": "*i32", "K": "i32", "W": "i32", "max_det": "i32"}
    for w_pad in (16, 128):
        src = triton.compiler.ASTSource(
            fn=kernel, signature={**sig, "W_PAD": "constexpr"}, constexprs={"W_PAD": w_pad}
        )
        try:
            compiled = triton.compile(
                src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 1, "enable_fp_fusion": False}
            )
        except Exception as exc:  # noqa: BLE001
            if "ptxas" in str(exc).lower():
                pytest.skip(f"no ptxas for this triton build: {exc}")
            raise
        assert len(compiled.asm["cubin"]) > 1000 and ".target sm_90" in compiled.asm["ptx"]
