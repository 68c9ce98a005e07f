"""AST -> TTIR: the IR has Triton's shape, and control flow computes the right values (run on the
interpreter against numpy references on random inputs)."""
import numpy as np
import pytest

import tritium
import tritium as triton
import tritium.language as tl
from tritium.ttir.ir import parse_module, print_module


@triton.jit
def loops(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    j = 0
    total = 0.0
    while j < n:
        total += tl.sum(tl.load(x_ptr + j * BLOCK + offs), axis=0)
        j += 1
    for k in tl.static_range(3):
        acc = acc * 1.0 + k
    tl.store(out_ptr + offs, acc)
    tl.store(out_ptr + BLOCK, total)


def test_loops_compute_sums():
    rng = np.random.default_rng()
    n, block = 5, 16
    x = rng.standard_normal(n * block).astype(np.float32)
    out = np.full(block + 1, np.nan, np.float32)
    loops[(1,)](x, out, n, BLOCK=block)
    ref = x.reshape(n, block).astype(np.float64).sum(0) + 3
    # fp32 sums of mixed-sign terms: the error scales with the magnitudes summed, not the result
    scale = np.abs(x).reshape(n, block).astype(np.float64).sum(0) + 3
    np.testing.assert_array_less(np.abs(out[:block] - ref), 1e-6 * scale)
    assert abs(out[block] - x.astype(np.float64).sum()) < 1e-6 * np.abs(x).astype(np.float64).sum()


@triton.jit
def clamp_fn(v, lo):
    if v < lo:
        return lo
    return v


@triton.jit
def early_return(x_ptr, out_ptr, n):
    pid = tl.program_id(0)
    if pid >= n:
        return
    v = tl.load(x_ptr + pid)
    tl.store(out_ptr + pid, clamp_fn(v, 0.25))


def test_early_returns_become_structured_control_flow():
    rng = np.random.default_rng()
    x = rng.random(40).astype(np.float32)
    out = np.full(40, np.nan, np.float32)
    early_return[(40,)](x, out, 30)
    np.testing.assert_array_equal(out[:30], np.maximum(x[:30], np.float32(0.25)))
    assert np.isnan(out[30:]).all()  # programs past n returned early
    ttir = tritium.compile(early_return, signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                           target="interpreter").asm["ttir"]
    assert "scf.if" in ttir and "cf.cond_br" not in ttir


@triton.jit(noinline=True)
def add_pair(a, b):
    return a + b, a - b


@triton.jit
def tuple_returns(x_ptr, out_ptr):
    a = tl.load(x_ptr)
    b = tl.load(x_ptr + 1)
    s, d = add_pair(a, b)
    tl.store(out_ptr, s)
    tl.store(out_ptr + 1, d)


def test_noinline_call_with_tuple_return():
    x = np.random.default_rng().standard_normal(2).astype(np.float32)
    out = np.full(2, np.nan, np.float32)
    tuple_returns[(1,)](x, out)
    np.testing.assert_allclose(out, [x[0] + x[1], x[0] - x[1]], rtol=1e-6)
    ttir = tritium.compile(tuple_returns, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                           target="interpreter").asm["ttir"]
    assert "tt.call @" in ttir and "noinline = true" in ttir


def test_specialization_attributes_and_locations():
    from tritium.examples.vector_add import add_kernel
    k = tritium.compile(add_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32",
                                               "n_elements": "i32"},
                        constexprs={"BLOCK_SIZE": 1024}, attrs={"x_ptr": {"tt.divisibility": 16}},
                        target="interpreter")
    ttir = k.asm["ttir"]
    assert "tt.func public @add_kernel(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}" in ttir
    assert "tt.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>" in ttir
    assert 'vector_add.py":' in ttir  # every op carries file:line:col


def test_int_one_and_divisibility_specialize_the_launch():
    from tritium.examples.vector_add import add_kernel
    x = np.random.default_rng().random(32).astype(np.float32)
    out = np.empty_like(x)
    before = len(add_kernel.kernel_cache)
    add_kernel[(1,)](x, x, out, 32, BLOCK_SIZE=32)
    add_kernel[(1,)](x, x, out, 1, BLOCK_SIZE=32)   # n == 1: compiled as a constant
    add_kernel[(1,)](x, x, out, 17, BLOCK_SIZE=32)  # not divisible by 16
    add_kernel[(1,)](x, x, out, 48, BLOCK_SIZE=32)  # same specialization as 32
    assert len(add_kernel.kernel_cache) - before == 3
    keys = list(add_kernel.kernel_cache)[-3:]
    parts = [k[2][3] for k in keys]
    assert parts == [("a", "i32", "D"), ("1",), ("a", "i32", "")]


@pytest.mark.parametrize("name", ["vector_add", "fused_softmax", "layer_norm", "matmul", "attention"])
def test_tutorial_ttir_round_trips(name):
    import importlib
    mod = importlib.import_module(f"tritium.examples.{name}")
    fn, sig, consts = _TUTORIALS[name](mod)
    ttir = tritium.compile(fn, signature=sig, constexprs=consts, target="interpreter", stage="ttir").asm["ttir"]
    assert print_module(parse_module(ttir)) == ttir
    generic = print_module(parse_module(ttir), generic=True)
    assert print_module(parse_module(generic)) == ttir


def _ptrs(names, t="*fp32"):
    return {n: t for n in names}


_TUTORIALS = {
    "vector_add": lambda m: (m.add_kernel, {**_ptrs(["x_ptr", "y_ptr", "output_ptr"]), "n_elements": "i32"},
                             {"BLOCK_SIZE": 1024}),
    "fused_softmax": lambda m: (m.softmax_kernel, {**_ptrs(["output_ptr", "input_ptr"]), "input_row_stride": "i32",
                                                   "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                                {"BLOCK_SIZE": 1024, "num_stages": 3}),
    "layer_norm": lambda m: (m._layer_norm_fwd_fused, {**_ptrs(["X", "Y", "W", "B", "Mean", "Rstd"]), "stride": "i32",
                                                       "N": "i32", "eps": "fp32"}, {"BLOCK_SIZE": 1024}),
    "matmul": lambda m: (m.matmul_kernel.fn, {**_ptrs(["a_ptr", "b_ptr", "c_ptr"], "*fp16"),
                                             **{k: "i32" for k in ["M", "N", "K", "stride_am", "stride_ak", "stride_bk",
                                                                   "stride_bn", "stride_cm", "stride_cn"]}},
                         {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8,
                          "ACTIVATION": "leaky_relu"}),
    "attention": lambda m: (m._fwd_kernel, {**_ptrs(["Q", "K", "V"], "*fp16"), "sm_scale": "fp32", "L": "*fp32",
                                            "Out": "*fp16", **{f"stride_{a}{b}": "i32" for a in "qkvo" for b in "zhmkn"
                                                                if f"stride_{a}{b}" in m._fwd_kernel.arg_names},
                                            "Z": "i32", "H": "i32", "N_CTX": "i32"},
                            {"BLOCK_M": 64, "BLOCK_DMODEL": 64, "BLOCK_N": 64, "IS_CAUSAL": True}),
}
