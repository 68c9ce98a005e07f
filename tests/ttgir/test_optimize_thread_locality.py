"""optimize-thread-locality: what Triton's ``test_optimize_thread_locality`` asserts of the TTGIR
(two ``tt.reduce``), checked for cuda:90 with the test's own kernel and parameters; the rewritten
loops run on the host SIMT emulation of the lowering (tests/conversion/simt.py) against numpy; and
the loops the pass must leave alone."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conversion"))
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

import simt  # noqa: E402
from conformance import dtypes  # noqa: E402
from conformance.cases import reduce_loop  # noqa: E402
from conformance.runner import bind, case_seed, compare, prepare  # noqa: E402

import tritium as triton  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.hooks.types import GPUTarget  # noqa: E402
from tritium.ttgir.ir import parse_module  # noqa: E402
from tritium.ttgir.pass_lists import make_ttgir  # noqa: E402

_INIT = {"sum": "tl.zeros([BLOCK_M], dtype=tl.float32)",
         "max": 'tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)',
         "min": 'tl.full([BLOCK_M], float("inf"), dtype=tl.float32)'}
_UPDATE = {"sum": "local + tl.sum(x, axis=1)", "max": "tl.maximum(local, tl.max(x, axis=1))",
           "min": "tl.minimum(local, tl.min(x, axis=1))"}
_SUITE_KERNEL = '''
def kernel(X, Y, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_PID_N: tl.constexpr):
    start_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    local = {init}
    off_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    for start_n in range(pid_n, tl.cdiv(N, BLOCK_N), NUM_PID_N):
        off_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
        Xs = X + off_m[:, None] * N + off_n[None, :]
        x = tl.load(Xs)
        local = {update}
    tl.store(Y + off_m * NUM_PID_N + pid_n, local)
'''


def _jit(src: str, name: str, tmp_path):
    """A ``@jit`` kernel from source text (the JIT reads its source back from the file)."""
    path = tmp_path / f"{name}.py"
    path.write_text("import tritium as triton\nimport tritium.language as tl\n\n\n@triton.jit" + src)
    ns = {"__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns[name]


def _suite_kernel(op, tmp_path):
    return _jit(_SUITE_KERNEL.format(init=_INIT[op], update=_UPDATE[op]), "kernel", tmp_path)


def _loop(module_text: str) -> str:
    start = module_text.index("scf.for")
    return module_text[start:module_text.index("scf.yield", start)]


@pytest.mark.parametrize("num_pid_n", [2, 4])
@pytest.mark.parametrize("block_n", [32, 64, 128])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_suite_kernel_ttgir_has_two_reductions(op, block_n, num_pid_n, tmp_path):
    """Triton's assertion, compiled as the suite's launch would be (N = 1024: divisible by 16)."""
    kernel = _suite_kernel(op, tmp_path)
    x = np.zeros((32, 1024), np.float32)
    y = np.zeros((32, num_pid_n), np.float32)
    k = kernel.warmup(x, y, 1024, 32, block_n, NUM_PID_N=num_pid_n, grid=(1, num_pid_n, 1),
                      backend="nvidia", target="cuda:90")
    ttgir = k.asm["ttgir"]
    assert ttgir.count('"tt.reduce"') == 2, "the reduction inside the loop was not split"
    loop = _loop(ttgir)
    # in the loop: a renaming of registers and a reduction within each thread, nothing shared
    assert "tt.reshape" in loop and "allow_reorder efficient_layout" in loop
    assert "ttg.barrier" not in loop and "ttg.convert_layout" not in loop
    # the loop-carried value: one partial per thread and row, a slice of the 3-d per-thread layout
    carried = loop.split("-> (", 1)[1].split(")", 1)[0]
    assert carried.startswith("tensor<32x") and "#ttg.slice<{dim = 2, parent = #ttg.blocked<{sizePerThread = [1, 1," \
        in carried, carried
    assert "ld.global" in k.asm["ptx"]


def _ttgir_for(ttir: str, target: GPUTarget, num_warps: int):
    return make_ttgir(parse_module(ttir), target, {"num_warps": num_warps})


@pytest.mark.parametrize("op,block_n,num_pid_n", [("sum", 64, 2), ("max", 128, 4), ("min", 32, 2)])
def test_suite_kernel_runs_on_host_simt(op, block_n, num_pid_n, tmp_path):
    kernel = _suite_kernel(op, tmp_path)
    n = 512
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, n)).astype(np.float32)
    y = rng.standard_normal((32, num_pid_n)).astype(np.float32)
    k = kernel.warmup(x, y, n, 32, block_n, NUM_PID_N=num_pid_n, grid=(1, num_pid_n, 1),
                      backend="nvidia", target="cuda:90")
    module = _ttgir_for(k.asm["ttir"], GPUTarget("cuda", 90, 32), 4)
    assert sum(op.name == "tt.reduce" for op in module.walk()) == 2
    assert simt.run_ttgir(module, [x, y, n], grid=(1, num_pid_n, 1)) == 0
    fn = {"sum": np.sum, "max": np.max, "min": np.min}[op]
    np.testing.assert_allclose(fn(y, axis=1), fn(x.astype(np.float64), axis=1), rtol=1e-4, atol=1e-4)


def _case_on_simt(case, target: GPUTarget):
    prep = prepare(case, case_seed(0, case.id))
    # bf16 buffers hold raw bits: the kernel sees them reinterpreted, as the conformance runner does
    typed = {n: triton.reinterpret(v, getattr(tl, dtypes.LANG_NAME[case.inputs[n].dtype]))
             if n in case.inputs and getattr(case.inputs[n], "dtype", None) in dtypes.RAW_BITS else v
             for n, v in prep.host.items()}
    args, kwargs = bind(case, typed)
    backend = "nvidia" if target.backend == "cuda" else "amd"
    k = case.kernel.warmup(*args, grid=case.grid, backend=backend, target=f"{target.backend}:{target.arch}", **kwargs)
    module = _ttgir_for(k.asm["ttir"], target, case.options["num_warps"])
    reduces = [op for op in module.walk() if op.name == "tt.reduce"]
    assert len(reduces) == 2 and reduces[0].parent_op().name == "scf.for", "the loop was not rewritten"
    runtime = [prep.host[n] for n in case.kernel.arg_names
               if n not in case.constexprs and prep.host.get(n) is not None]
    assert simt.run_ttgir(module, runtime) == 0
    (name, out), = case.outputs.items()
    expected = case.reference(**{n: v for n, v in prep.ref_args.items() if n in ("x_ptr", "init_ptr")})
    return compare(name, out, prep.host[name].view(dtypes.STORAGE[out.dtype]), expected, prep.out_start[name], case)


# the broadcast-product cases become dots (tensor cores are not emulated on the host)
_LOOP_CASES = [c for c in reduce_loop.CASES if c.kernel is not reduce_loop.mul_broadcast_kernel]


@pytest.mark.parametrize("case", _LOOP_CASES, ids=lambda c: c.id)
def test_reduce_loop_case_on_host_simt(case):
    problem = _case_on_simt(case, GPUTarget("cuda", 90, 32))
    assert problem is None, problem


@pytest.mark.parametrize("case_id", ["reduce_loop/rows-sum-fp32-32x64-k512-w4-init",
                                     "reduce_loop/cols-max-fp32-64x64-k256-w8",
                                     "reduce_loop/flat-sum-int32-512-k4096-w4-init"])
def test_reduce_loop_case_on_host_simt_wave64(case_id):
    case = {c.id: c for c in reduce_loop.CASES}[case_id]
    problem = _case_on_simt(case, GPUTarget("hip", "gfx942", 64))
    assert problem is None, problem


# --- loops the pass must leave alone ---------------------------------------------------------
_LEFT_ALONE = {
    # the accumulator is read elsewhere in the loop: its running value must exist every iteration
    "read_in_loop": ("acc = acc + tl.sum(x, axis=1)\n        tl.store(z_ptr + rm, acc)", "tl.zeros([32], tl.float32)"),
    # not the combine of the reduction: splitting would change the result
    "subtracted": ("acc = acc - tl.sum(x, axis=1)", "tl.zeros([32], tl.float32)"),
    "max_added": ("acc = acc + tl.max(x, axis=1)", "tl.zeros([32], tl.float32)"),
}
_LEFT_ALONE_KERNEL = '''
def left_alone(x_ptr, z_ptr, K, BK: tl.constexpr):
    rm = tl.arange(0, 32)
    rk = tl.arange(0, BK)
    acc = {init}
    for k0 in range(0, K, BK):
        x = tl.load(x_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        {update}
    tl.store(z_ptr + rm, acc)
'''


@pytest.mark.parametrize("what", sorted(_LEFT_ALONE) + ["one_element_per_thread"])
def test_loops_left_alone(what, tmp_path):
    update, init = _LEFT_ALONE.get(what, ("acc = acc + tl.sum(x, axis=1)", "tl.zeros([32], tl.float32)"))
    kernel = _jit(_LEFT_ALONE_KERNEL.format(update=update, init=init), "left_alone", tmp_path)
    x = np.zeros(32 * 256, np.float32)
    # BK 32 over the 32 lanes of one warp, one element each (K odd: no vector loads)
    bk, k = (32, 257) if what == "one_element_per_thread" else (128, 1024)
    c = kernel.warmup(x, np.zeros(32, np.float32), k, bk, grid=(1,), backend="nvidia", target="cuda:90",
                      num_warps=1)
    ttgir = c.asm["ttgir"]
    assert ttgir.count('"tt.reduce"') == 1 and '"tt.reduce"' in _loop(ttgir)
    assert "efficient_layout" not in ttgir
