"""Triton 3.6 frontend behaviours: error wording, warnings, fp8 support per target, and the
3.6 language additions (map_elementwise, unsplat conditions, annotations, autotuner attributes)."""
import importlib.util
import warnings

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium import CompilationError

HAS_NVIDIA = importlib.util.find_spec("tritium_nvidia") is not None
needs_nvidia = pytest.mark.skipif(not HAS_NVIDIA, reason="needs the tritium-nvidia plugin (compile-only)")


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch, tmp_path):
    # warnings are given while compiling: a kernel read back from the cache would give none
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


def _compile(fn, target="interpreter", signature=None, constexprs=None):
    return triton.compile(triton.compiler.ASTSource(fn=fn, signature=signature or {}, constexprs=constexprs or {}),
                          target=target)


# --- error wording -------------------------------------------------------------------------------

@triton.jit
def _arange_not_pow2():
    tl.arange(2, 7)


@triton.jit
def _full_not_pow2():
    tl.full((4, 33), 0, dtype=tl.int64)


def test_arange_power_of_two_wording():
    with pytest.raises(CompilationError) as e:
        _compile(_arange_not_pow2)
    assert str(e.value.__cause__) == "arange's range must be a power of 2"
    assert "tl.arange(2, 7)" in str(e.value)  # the user's line shows what was found


def test_shape_power_of_two_wording_names_the_element():
    with pytest.raises(CompilationError) as e:
        _compile(_full_not_pow2)
    assert str(e.value.__cause__) == "Shape element 1 must be a power of 2"


# --- tl.where with a non-boolean condition -----------------------------------------------------

@triton.jit
def _where_int_condition():
    a = tl.full((64, ), 0, tl.uint32)
    b = tl.full((64, ), 1, tl.float32)
    tl.where(a, b, b)


@triton.jit
def _where_bool_condition():
    a = tl.full((64, ), 0, tl.uint32)
    b = tl.full((64, ), 1, tl.float32)
    tl.where(a > 0, b, b)


def test_where_non_boolean_condition_warns_at_the_user_line():
    import inspect
    lines, first = inspect.getsourcelines(_where_int_condition.fn)
    line = first + next(i for i, s in enumerate(lines) if "tl.where" in s)
    with pytest.warns(UserWarning, match="non-boolean condition is deprecated.*Got uint32") as rec:
        _compile(_where_int_condition)
    w = [r for r in rec if "non-boolean" in str(r.message)][0]
    assert w.filename == __file__ and w.lineno == line


def test_where_boolean_condition_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _compile(_where_bool_condition)


# --- fp8 formats per target ----------------------------------------------------------------------

@triton.jit
def _fp8_dot(dtype: tl.constexpr):
    a = tl.full((64, 64), 0.0, dtype)
    tl.dot(a, a)


@needs_nvidia
@pytest.mark.parametrize("dtype", [tl.float8e4b8, tl.float8e5b16])
def test_fnuz_fp8_rejected_on_nvidia(dtype):
    with pytest.raises(CompilationError) as e:
        _compile(_fp8_dot, "cuda:90", {"dtype": "constexpr"}, {"dtype": dtype})
    assert "not supported in this architecture" in str(e.value.__cause__)
    assert dtype.name in str(e.value.__cause__)


@needs_nvidia
@pytest.mark.parametrize("target, supported", [("cuda:80", ("fp8e4b15", "fp8e5")),
                                               ("cuda:90", ("fp8e4b15", "fp8e4nv", "fp8e5"))])
def test_nvidia_supported_fp8(target, supported):
    from tritium.hooks import manager
    t = manager.parse_target(target)
    opts = manager.get_plugin_manager().backend_for_target(t).parse_options(t, {})
    assert tuple(opts.supported_fp8_dtypes) == supported


@needs_nvidia
def test_fp8e4b15_dot_warns_from_sm90_only():
    with pytest.warns(UserWarning, match="fp8e4b15 is deprecated on Hopper and later architectures"):
        _compile(_fp8_dot, "cuda:90", {"dtype": "constexpr"}, {"dtype": tl.float8e4b15})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _compile(_fp8_dot, "cuda:80", {"dtype": "constexpr"}, {"dtype": tl.float8e4b15})


@pytest.mark.parametrize("dtype", [tl.float8e4b8, tl.float8e5b16, tl.float8e4b15, tl.float8e4nv, tl.float8e5])
def test_interpreter_takes_every_fp8(dtype):
    _compile(_fp8_dot, "interpreter", {"dtype": "constexpr"}, {"dtype": dtype})


# --- Autotuner / Heuristics attributes -------------------------------------------------------------

def test_autotuner_base_fn_and_hook_flags():
    @triton.autotune(configs=[triton.Config(kwargs={"BLOCK": 32})], key=["n"])
    @triton.heuristics({"EVEN": lambda a: a["n"] % 2 == 0})
    @triton.jit
    def _tuned(dst, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        tl.store(dst + tl.arange(0, BLOCK), tl.full((BLOCK, ), EVEN, tl.int32))

    assert _tuned.base_fn.__name__ == "_tuned" and callable(_tuned.base_fn)
    assert _tuned.fn.base_fn is _tuned.base_fn
    assert _tuned.user_defined_pre_hook is False and _tuned.user_defined_post_hook is False
    dst = np.full(32, -7, np.int32)
    _tuned[(1, )](dst, 6)
    np.testing.assert_array_equal(dst, np.ones(32, np.int32))


# --- dtype annotations on scalar parameters ----------------------------------------------------------

def _annotated(**types):
    def deco(f):
        f.__annotations__ = dict(types)
        return f
    return deco


@pytest.mark.parametrize("signed, width", [(s, w) for s in (False, True) for w in (8, 16, 32, 64)] + [(False, 1)])
def test_int_annotation_fixes_the_parameter_type(signed, width):
    @triton.jit
    @_annotated(v=f"tl.{'' if signed else 'u'}int{width}")
    def _k(X, v):
        tl.store(X + v, v)

    x = np.full(8, np.nan, np.float32)
    h = _k[(1, )](x, 3)
    ttir = h.asm["ttir"]
    assert f"%v: i{width}" in ttir
    if not signed and width < 64:
        assert "arith.extui %v" in ttir
    assert f"arith.{'si' if signed else 'ui'}tofp" in ttir
    pos = 1 if width == 1 else 3  # 3 as one bit is 1
    expect = np.full(8, np.nan, np.float32)
    expect[pos] = pos
    np.testing.assert_array_equal(x, expect)


@pytest.mark.parametrize("dtype, ir", [(tl.float16, "f16"), (tl.bfloat16, "bf16"), (tl.float32, "f32"),
                                       (tl.float64, "f64")])
@pytest.mark.parametrize("val", [0.0, 42.0, 1.0 / 3.0, float("inf"), float("nan")])
def test_float_annotation_fixes_the_parameter_dtype(dtype, ir, val):
    @triton.jit
    @_annotated(val=dtype)
    def _k(ptr, val):
        tl.static_assert(val.dtype == dtype)
        tl.store(ptr, val)

    out = np.full(1, -1.0, np.float32)
    h = _k[(1, )](out, val)
    # the reference: the value rounded to the annotated type, then to fp32
    ref = {"f16": np.float16, "f32": np.float32, "f64": np.float64}.get(ir)
    expect = np.float32(ref(val)) if ref is not None else np.float32(_round_bf16(val))
    np.testing.assert_array_equal(out, [expect])
    assert f"%val: {ir}" in h.asm["ttir"]
    if ir in ("f16", "bf16"):
        assert f"arith.extf %val : {ir} to f32" in h.asm["ttir"]
    if ir == "f64":
        assert "arith.truncf %val : f64 to f32" in h.asm["ttir"]


def _round_bf16(v: float) -> float:
    b = np.array([v], np.float32).view(np.uint32)[0]
    if np.isnan(v):
        return v
    b = (int(b) + 0x7FFF + ((int(b) >> 16) & 1)) & 0xFFFF0000
    return float(np.array([b], np.uint32).view(np.float32)[0])


def test_python_type_annotations_and_others():
    from tritium.runtime.specialize import annotation_type
    assert annotation_type(int) == "i32" and annotation_type("int") == "i32"
    assert annotation_type(float) == "fp32" and annotation_type(bool) == "i1"
    assert annotation_type("tl.uint8") == "u8" and annotation_type(tl.bfloat16) == "bf16"
    for other in ("tl.constexpr", tl.constexpr, "torch.Tensor", tl.pointer_type(tl.float32), None, "whatever"):
        assert annotation_type(other) == ""


def test_parameter_names_in_ttir_tuple_leaves_numbered():
    @triton.jit
    def _k(X, v, t, n: tl.constexpr):
        a, b = t
        tl.store(X + tl.arange(0, n), v + a + b)

    x = np.full(4, np.nan, np.float32)
    h = _k[(1, )](x, 3, (1.5, 2), n=4)
    np.testing.assert_array_equal(x, np.full(4, 6.5, np.float32))
    sig = h.asm["ttir"].split("tt.func public @_k(")[1].split("attributes")[0]
    assert "%X: !tt.ptr<f32>" in sig and "%v: i32" in sig and "%t: f32" in sig and "%t_1: i32" in sig
    # the printed module reads back
    from tritium.compiler import IRSource
    assert IRSource(h.asm["ttir"]) is not None


# --- `if` on a one-element tensor ----------------------------------------------------------------------

@triton.jit
def _unsplat_kernel(x, explicit: tl.constexpr):
    condition = tl.load(x + tl.arange(0, 1)) > 42
    if explicit:
        condition = condition.item()
    if condition:
        tl.store(x, 42)


@pytest.mark.parametrize("explicit", [False, True])
@pytest.mark.parametrize("y", [41, 43])
def test_if_on_one_element_tensor(y, explicit):
    x = np.full(1, y, np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _unsplat_kernel[(1, )](x, explicit)
    assert x[0] == (42 if y > 42 else y)


def test_if_on_one_element_tensor_warns_unless_item():
    sig = {"x": "*i32", "explicit": "constexpr"}
    with pytest.warns(UserWarning, match=r"please use \"if \(condition\).item\(\)\" instead"):
        _compile(_unsplat_kernel, "interpreter", sig, {"explicit": False})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _compile(_unsplat_kernel, "interpreter", sig, {"explicit": True})


@triton.jit
def _if_two_elements(x):
    if tl.load(x + tl.arange(0, 2)) > 0:
        tl.store(x, 1)


def test_if_on_two_element_tensor_is_ambiguous():
    with pytest.raises(CompilationError, match="Boolean value of Tensor with more than one value is ambiguous"):
        _if_two_elements[(1, )](np.zeros(2, np.int32))


# --- num_ctas > 1 before sm_90, with the arch= launch option ------------------------------------------

@triton.jit
def _empty(src):
    pass


@needs_nvidia
@pytest.mark.parametrize("target, opts, bad", [("cuda:90", {"arch": "sm80"}, 80), ("cuda:80", {}, 80),
                                               ("cuda:80", {"arch": "sm90"}, None), ("cuda:90", {}, None),
                                               ("cuda:90", {"arch": "sm90"}, None)])
def test_num_ctas_needs_sm90(target, opts, bad):
    # an arch= option names the architecture compiled for, over the target (Triton's CUDAOptions.arch)
    src = triton.compiler.ASTSource(fn=_empty, signature={"src": "*fp32"}, constexprs={})
    if bad is None:
        triton.compile(src, target=target, options={"num_ctas": 2, **opts})
        return
    with pytest.raises(ValueError, match=rf"num_ctas > 1 requires NVIDIA SM90\+ \(Hopper\)\. Current target is sm_{bad}"):
        triton.compile(src, target=target, options={"num_ctas": 2, **opts})


@needs_nvidia
def test_warmup_takes_arch_option():
    with pytest.raises(ValueError, match=r"num_ctas > 1 requires NVIDIA SM90\+ \(Hopper\)"):
        _empty.warmup(np.zeros(1, np.float32), grid=(1, ), num_ctas=2, arch="sm80", backend="nvidia")
    _empty.warmup(np.zeros(1, np.float32), grid=(1, ), arch="sm80")  # the interpreter has no arch: ignored


@pytest.mark.skipif(importlib.util.find_spec("tritium_amd") is None, reason="needs the tritium-amd plugin")
def test_num_ctas_on_amd():
    src = triton.compiler.ASTSource(fn=_empty, signature={"src": "*fp32"}, constexprs={})
    with pytest.raises(ValueError, match=r"num_ctas > 1 not supported on gfx942"):
        triton.compile(src, target="hip:gfx942", options={"num_ctas": 2})


def test_range_options_given_as_none_are_not_set():
    # tl.range(..., num_stages=None, loop_unroll_factor=None) is a plain loop (Triton 3.6's test_tl_range_option_none)
    import tritium

    @tritium.jit
    def loop_kernel(x_ptr, ub):
        acc = 0
        for i in tl.range(0, ub, num_stages=None, loop_unroll_factor=None):
            acc += i
        tl.store(x_ptr, acc)

    k = tritium.compile(loop_kernel, signature={"x_ptr": "*i32", "ub": "i32"}, target="interpreter")
    assert "num_stages" not in k.asm["ttir"] and "loop_unroll_factor" not in k.asm["ttir"]
    x = np.full(1, -1, np.int32)
    loop_kernel[(1,)](x, 10)
    assert x[0] == sum(range(10))


def test_hasattr_on_a_tensor_is_answered_at_compile_time():
    # Triton 3.6's test_short_circuiting: hasattr(x, "dtype") on a run-time tensor
    import tritium

    @tritium.jit
    def kernel(x_ptr, y_ptr, B: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, B))
        if (x is not None) and hasattr(x, "dtype") and not hasattr(x, "no_such_attribute"):
            x = x * 2
        tl.store(y_ptr + tl.arange(0, B), x)

    x = np.random.rand(8).astype(np.float32)
    y = np.full(8, np.nan, np.float32)
    kernel[(1,)](x, y, B=8)
    np.testing.assert_array_equal(y, x * 2)
