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
