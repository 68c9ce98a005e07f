"""fuse-nested-loops (``tl.range(..., flatten=True)``) and optimize-thread-locality, as Triton 3.6's
``test_tl_range_fuse``, ``test_tl_range_fuse_dependent`` and ``test_optimize_thread_locality``
check them: results on the interpreter against numpy (outputs poisoned), and the TTGIR of a
``cuda:90`` compile (no device needed): one ``scf.for`` for a flattened nest, two ``tt.reduce``
for a reduction folded into a loop-carried accumulator.  The launches on a GPU are in
``test_loop_fuse_gpu``, skipped without one."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.ttir.ir import parse_module, print_module
from tritium.ttir.passes.fuse_nested_loops import FuseNestedLoops

# the suite's two kernels, shared with the conformance cases
from conformance.cases.loops_options import flatten_counter_kernel as fuse_kernel
from conformance.cases.loops_options import flatten_dependent_kernel as fuse_dependent_kernel

SENTINEL = np.int32(0x5A5A5A5A)


@triton.jit
def fuse_rows_kernel(x_ptr, z_ptr, start, rows, step, lo, cols, DEP: tl.constexpr, B: tl.constexpr):
    r = tl.arange(0, B)
    total = tl.zeros((B,), dtype=tl.float32)
    for i in tl.range(start, rows, step, flatten=True):
        row = tl.zeros((B,), dtype=tl.float32) + i
        first = lo + i if DEP else lo
        for k in tl.range(first, cols):
            row = row * 0.5 + tl.load(x_ptr + (i * cols + k) * B + r)
        total = total * 0.75 + row
    tl.store(z_ptr + r, total)


@triton.jit
def deep_nest_kernel(out_ptr, n):
    # three levels: the marked loop holds a loop that holds one, so it is not fused
    k = 0
    for i in tl.range(0, n, flatten=True):
        for j in tl.range(0, n):
            for m in tl.range(0, n):
                tl.store(out_ptr + k, i * 100 + j * 10 + m)
                k += 1


def _counter_ref(ub):
    ref = np.full((32, 32), SENTINEL, np.int32)
    ref[:ub, :ub] = np.arange(1, ub * ub + 1).reshape(ub, ub)
    return ref


@pytest.mark.parametrize("ub", [10, 3, 1, 0])
def test_fuse_counter_interpreter(ub):
    out = np.full((32, 32), SENTINEL, np.int32)
    h = fuse_kernel[(1,)](ub, out, backend="interpreter")
    assert "tt.flatten" in h.asm["ttir"]
    assert h.asm["ttir"].count("scf.for") == 2 and h.asm["interp"].count("scf.for") == 1
    np.testing.assert_array_equal(out, _counter_ref(ub))


def test_fuse_dependent_interpreter():
    ub = 10
    out_i = np.full(1024, SENTINEL, np.int32)
    out_j = np.full(1024, SENTINEL, np.int32)
    fuse_dependent_kernel[(1,)](ub, out_i, out_j, backend="interpreter")
    pairs = [(i, j) for i in range(ub) for j in range(2 * i, 3 * i + 1)]
    ref_i, ref_j = np.full(1024, SENTINEL, np.int32), np.full(1024, SENTINEL, np.int32)
    ref_i[:len(pairs)] = [p[0] for p in pairs]
    ref_j[:len(pairs)] = [p[1] for p in pairs]
    np.testing.assert_array_equal(out_i, ref_i)
    np.testing.assert_array_equal(out_j, ref_j)


@pytest.mark.parametrize("start, rows, step, lo, cols, dep", [
    (0, 5, 1, 0, 4, False), (1, 8, 3, 1, 6, False), (0, 4, 1, 3, 3, False), (3, 3, 1, 0, 2, False),
    (0, 6, 1, 0, 4, True), (2, 9, 2, 1, 7, True)])
def test_fuse_rows_interpreter(start, rows, step, lo, cols, dep):
    B = 16
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (rows, cols, B)).astype(np.float32)
    z = np.full(B, np.nan, np.float32)
    h = fuse_rows_kernel[(1,)](x, z, start, rows, step, lo, cols, DEP=dep, B=B, backend="interpreter")
    assert h.asm["interp"].count("scf.for") == (2 if dep else 1)  # the trip-count loop, then the fused one
    total = np.zeros(B)
    for i in range(start, rows, step):
        row = np.zeros(B) + i
        for k in range(lo + i if dep else lo, cols):
            row = row * 0.5 + x[i, k].astype(np.float64)
        total = total * 0.75 + row
    np.testing.assert_allclose(z, total, rtol=1e-5, atol=1e-5)


def test_deep_nest_left_alone():
    n = 3
    out = np.full(64, SENTINEL, np.int32)
    h = deep_nest_kernel[(1,)](out, n, backend="interpreter")
    assert h.asm["interp"].count("scf.for") == 3 and "tt.flatten" not in h.asm["interp"]
    ref = np.full(64, SENTINEL, np.int32)
    ref[:n ** 3] = [i * 100 + j * 10 + m for i in range(n) for j in range(n) for m in range(n)]
    np.testing.assert_array_equal(out, ref)


def test_pass_on_ttir_text():
    """The pass alone, on the TTIR of the kernel: the nest becomes one loop that verifies."""
    ck = triton.compile(fuse_kernel, signature={"ub": "i32", "out_ptr": "*i32"}, target="interpreter", stage="ttir")
    module = parse_module(ck.asm["ttir"])
    FuseNestedLoops().run(module)
    module.verify()
    text = print_module(module)
    assert text.count("scf.for") == 1 and text.count("scf.if") == 3 and "tt.flatten" not in text


def _compile(fn, sig, **kw):
    return triton.compile(fn, signature=sig, target="cuda:90", stage="cubin", **kw)


def test_fuse_ttgir_cuda90():
    ck = _compile(fuse_kernel, {"ub": "i32", "out_ptr": "*i32"})
    assert "tt.flatten" in ck.asm["ttir"]
    assert ck.asm["ttgir"].count("scf.for") == 1


def test_fuse_dependent_ttgir_cuda90():
    # the suite's check: a first loop (the trip count) with no loop inside, then one more loop
    ck = _compile(fuse_dependent_kernel, {"ub": "i32", "out_i_ptr": "*i32", "out_j_ptr": "*i32"})
    assert "tt.flatten" in ck.asm["ttir"]
    ttgir = ck.asm["ttgir"]
    ttgir = ttgir[ttgir.find("scf.for"):]
    assert ttgir[:ttgir.find("}")].count("scf.for") == 1
    ttgir = ttgir[ttgir.find("}"):]
    assert ttgir.count("scf.for") == 1


@triton.jit
def _locality_kernel(X, Y, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, OP: tl.constexpr):
    start_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    num_pid_n = tl.num_programs(1)
    if OP == "sum":
        local = tl.zeros([BLOCK_M], dtype=tl.float32)
    elif OP == "max":
        local = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    else:
        local = tl.full([BLOCK_M], float("inf"), dtype=tl.float32)
    off_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    for start_n in range(pid_n, tl.cdiv(N, BLOCK_N), num_pid_n):
        off_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(X + off_m[:, None] * N + off_n[None, :])
        if OP == "sum":
            local = local + tl.sum(x, axis=1)
        elif OP == "max":
            local = tl.maximum(local, tl.max(x, axis=1))
        else:
            local = tl.minimum(local, tl.min(x, axis=1))
    tl.store(Y + off_m * num_pid_n + pid_n, local)


_NP = {"sum": np.sum, "max": np.max, "min": np.min}


@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("BLOCK_N, N, num_pid_n", [(32, 512, 2), (64, 1024, 4), (128, 2048, 2)])
def test_thread_locality_ttgir_cuda90(op, BLOCK_N, N, num_pid_n):
    """Compiled through the launch path's specialisation (N divisible by 16, as in the suite)."""
    x = np.random.default_rng(0).standard_normal((32, N)).astype(np.float32)
    y = np.zeros((32, num_pid_n), np.float32)
    h = _locality_kernel.warmup(x, y, N, 32, BLOCK_N, op, grid=(1, num_pid_n, 1), backend="nvidia",
                                target="cuda:90")
    assert h.asm["ttgir"].count('"tt.reduce"') == 2


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_thread_locality_interpreter(op):
    N, BLOCK_N, num_pid_n = 512, 64, 4
    x = np.random.default_rng(1).standard_normal((32, N)).astype(np.float32)
    y = np.full((32, num_pid_n), np.nan, np.float32)
    _locality_kernel[(1, num_pid_n, 1)](x, y, N, 32, BLOCK_N, op, backend="interpreter")
    np.testing.assert_allclose(_NP[op](y, axis=1), _NP[op](x.astype(np.float64), axis=1), rtol=1e-4, atol=1e-4)


def _cuda():
    try:
        import torch
        return torch.cuda.is_available() and torch.version.hip is None
    except ImportError:
        return False


@pytest.mark.skipif(not _cuda(), reason="needs a CUDA device")
def test_loop_fuse_gpu():
    import torch
    for ub in (10, 0):
        out = torch.full((32, 32), int(SENTINEL), dtype=torch.int32, device="cuda")
        h = fuse_kernel[(1,)](ub, out)
        assert h.asm["ttgir"].count("scf.for") == 1
        np.testing.assert_array_equal(out.cpu().numpy(), _counter_ref(ub))
    out_i = torch.full((1024,), int(SENTINEL), dtype=torch.int32, device="cuda")
    out_j = torch.full((1024,), int(SENTINEL), dtype=torch.int32, device="cuda")
    fuse_dependent_kernel[(1,)](10, out_i, out_j)
    pairs = [(i, j) for i in range(10) for j in range(2 * i, 3 * i + 1)]
    assert out_i.cpu().numpy()[:len(pairs)].tolist() == [p[0] for p in pairs]
    assert out_j.cpu().numpy()[:len(pairs)].tolist() == [p[1] for p in pairs]
    assert (out_i.cpu().numpy()[len(pairs):] == SENTINEL).all()
    for op in ("sum", "max", "min"):
        x = torch.randn((32, 1024), device="cuda")
        y = torch.full((32, 4), float("nan"), device="cuda")
        h = _locality_kernel[(1, 4, 1)](x, y, 1024, 32, 64, op)
        assert h.asm["ttgir"].count('"tt.reduce"') == 2
        np.testing.assert_allclose(_NP[op](y.cpu().numpy(), axis=1), _NP[op](x.cpu().double().numpy(), axis=1),
                                   rtol=1e-4, atol=1e-4)


@triton.jit
def dot_nest_kernel(a_ptr, b_ptr, c_ptr, tiles, k_tiles, B: tl.constexpr):
    r = tl.arange(0, B)
    for t in tl.range(0, tiles, flatten=True):
        acc = tl.zeros((B, B), dtype=tl.float32)
        for k in range(k_tiles):
            a = tl.load(a_ptr + (t * B + r[:, None]) * (k_tiles * B) + k * B + r[None, :])
            b = tl.load(b_ptr + (k * B + r[:, None]) * B + r[None, :])
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + (t * B + r[:, None]) * B + r[None, :], acc)


def test_dot_nest_stays_a_nest_on_gpu_backends():
    """A flattened nest whose inner loop computes a dot is left a nest where the backend pipelines
    the inner loop only (fused, its loads would not be pipelined: 97 against 737 TFLOP/s for
    Triton's persistent tutorial matmul on an H200), with the reason on the loop; the interpreter
    still fuses it, and the results agree."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "tiles": "i32", "k_tiles": "i32"}
    ttgir = _compile(dot_nest_kernel, sig, constexprs={"B": 64}).asm["ttgir"]
    assert ttgir.count("scf.for") == 2 and "tritium.flatten_reason" in ttgir
    ttir = triton.compile(dot_nest_kernel, signature=sig, constexprs={"B": 64}, target="interpreter",
                          stage="ttir").asm["ttir"]
    assert "tt.flatten" in ttir  # the interpreter fuses when it loads the kernel
    rng = np.random.default_rng(0)
    tiles, k_tiles, b = 3, 2, 64
    a = rng.standard_normal((tiles * b, k_tiles * b)).astype(np.float16)
    bm = rng.standard_normal((k_tiles * b, b)).astype(np.float16)
    c = np.full((tiles * b, b), np.nan, np.float32)
    dot_nest_kernel[(1,)](a, bm, c, tiles, k_tiles, B=b)
    ref = a.astype(np.float64) @ bm.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2)
