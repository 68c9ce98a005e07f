"""The JIT and compiler API that Triton 3.6 code touches beyond launching kernels:
``JITFunction._unsafe_update_src`` / a settable ``.src`` (a kernel varied by editing its text),
``device_caches``, ``ASTSource.constants``, ``tritium.compiler.errors`` with
``CompileTimeAssertionFailure``, ``must_use_result``, ``tl.str_to_ty``, the ``tl.dtype`` kind
lists, ``reinterpret`` with torch/numpy dtypes and the ``tritium.runtime.jit`` /
``tritium.runtime.errors`` names."""
import pickle

import numpy as np
import pytest

import tritium
import tritium as triton
import tritium.language as tl
from tritium.compiler import ASTSource
from tritium.compiler.errors import CompilationError, CompileTimeAssertionFailure


@triton.jit
def _template(X, Y, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(Y + offs, GENERATE_TEST_HERE)  # noqa: F821 - replaced before compiling


def _patched(expr):
    k = triton.JITFunction(_template.fn)
    k._unsafe_update_src(k.src.replace("GENERATE_TEST_HERE", expr))
    return k


def _run(k, x, n=64):
    y = np.full(n, np.nan, np.float32)  # poison: an element the kernel misses stays NaN
    k[(1,)](x, y, N=n)
    return y


def test_updated_source_compiles_the_new_text():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(64).astype(np.float32)
    k = _patched("x * 2.0 + 1.0")
    np.testing.assert_allclose(_run(k, x), x.astype(np.float64) * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(_run(k, x), x.astype(np.float64) * 2 + 1, rtol=1e-6)  # the fast path
    old_key = k.cache_key
    old_disk_key = ASTSource(k, {"X": "*fp32", "Y": "*fp32"}, {"N": 64}).key()
    k.src = k.src.replace("x * 2.0 + 1.0", "tl.abs(x) - 3.0")  # the property setter does the same
    assert k.cache_key != old_key
    assert ASTSource(k, {"X": "*fp32", "Y": "*fp32"}, {"N": 64}).key() != old_disk_key
    assert len(k.kernel_cache) == 0 and k._fast is None and k._direct is None and not k._by_grid
    x = rng.standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(_run(k, x), np.abs(x.astype(np.float64)) - 3, rtol=1e-6)
    np.testing.assert_allclose(_run(k, x), np.abs(x.astype(np.float64)) - 3, rtol=1e-6)
    # the template itself is untouched
    assert "GENERATE_TEST_HERE" in _template.src and "tl.abs" not in _template.src


def test_updated_source_errors_point_into_the_new_text():
    k = _patched("x + not_defined_anywhere")
    with pytest.raises(CompilationError) as e:
        _run(k, np.zeros(64, np.float32))
    msg = str(e.value)
    # line 4 of the new text (``def`` is line 1), the column of the name, the line quoted
    assert e.value.lineno == 4 and "updated source" in e.value.filename and "test_triton36_api.py" in e.value.filename
    assert "not_defined_anywhere" in msg and "tl.store(Y + offs, x + not_defined_anywhere)" in msg
    assert msg.splitlines()[2].index("^") == msg.splitlines()[1].index("not_defined_anywhere")


def test_updated_source_must_keep_the_parameters_and_parse():
    k = triton.JITFunction(_template.fn)
    with pytest.raises(ValueError, match=r"parameters \(A, Y, N\) differ from the function's \(X, Y, N\)"):
        k._unsafe_update_src(k.src.replace("def _template(X,", "def _template(A,"))
    with pytest.raises(SyntaxError, match="does not parse"):
        k._unsafe_update_src("def _template(X, Y, N:\n")
    with pytest.raises(TypeError, match="must be a str"):
        k._unsafe_update_src(b"def f(): pass")


@triton.jit
def _callee(x):
    return x + 1.0


@triton.jit
def _caller(X, Y, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Y + offs, _callee(tl.load(X + offs)))


def test_a_callers_key_follows_its_callees_new_source():
    before = _caller.cache_key
    original = _callee.src
    try:
        _callee._unsafe_update_src(original.replace("x + 1.0", "x + 2.0"))
        assert _caller.cache_key != before
    finally:
        _callee._unsafe_update_src(original)
    assert _caller.cache_key == before


def test_device_caches_clear_forces_a_recompile():
    k = triton.JITFunction(_template.fn)
    k._unsafe_update_src(k.src.replace("GENERATE_TEST_HERE", "x * x"))
    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    y = _run(k, x)
    np.testing.assert_allclose(y, x.astype(np.float64) ** 2, rtol=1e-6)
    first = k.warmup(x, y, N=64, grid=(1,))
    cache, key_cache, target, backend, binder = k.device_caches[0]
    assert cache is k.kernel_cache and k.device_caches["cpu"][0] is cache and len(cache) >= 1
    assert isinstance(key_cache, dict) and backend is not None and callable(binder)
    bound, parts, opts = binder(x, y, N=64, num_warps=2)
    assert list(bound) == ["X", "Y", "N"] and parts[2][0] == "c" and opts == {"num_warps": 2}
    k.device_caches[0][0].clear()
    assert len(k.kernel_cache) == 0 and k._fast is None
    second = k.warmup(x, y, N=64, grid=(1,))
    assert second is not first and len(k.kernel_cache) >= 1
    np.testing.assert_allclose(_run(k, x), x.astype(np.float64) ** 2, rtol=1e-6)


def test_launch_takes_the_backends_options_as_keywords():
    """As Triton 3.6 (``JITFunction._pack_args``), a launch keyword that names no parameter may
    name any option of the backend the launch compiles for: it reaches the compiler (and the
    kernel cache key); a name that is neither is refused as an unexpected keyword argument,
    pointing at the kernel."""
    pytest.importorskip("tritium_nvidia")
    k = triton.JITFunction(_template.fn)
    k._unsafe_update_src(k.src.replace("GENERATE_TEST_HERE", "x + 1"))
    x = np.zeros(64, np.float32)
    y = np.zeros(64, np.float32)
    ptx = {v: k.warmup(x, y, N=64, grid=(1,), backend="nvidia", target="cuda:90", ptx_version=v).asm["ptx"]
           for v in (83, 84)}
    assert ".version 8.3" in ptx[83] and ".version 8.4" in ptx[84]
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such'"):
        k.warmup(x, y, N=64, grid=(1,), backend="nvidia", target="cuda:90", no_such=1)
    # the interpreter's options have no ``ptx_version``; its own (``num_warps``) pass
    with pytest.raises(TypeError, match="ptx_version"):
        k[(1,)](x, y, N=64, backend="interpreter", ptx_version=84)
    k[(1,)](x, y, N=64, backend="interpreter", num_warps=2)
    np.testing.assert_array_equal(y, np.ones(64, np.float32))
    # the device caches' binder (Triton's ``device_caches[device][4]``) checks them against its
    # backend the same way
    _, _, _, backend, binder = k.device_caches[0]
    names = tritium.runtime.jit.backend_option_names(backend, None)
    assert {"num_warps", "num_stages"} <= names
    own = sorted(names - tritium.runtime.jit.LAUNCH_OPTIONS)[0]  # an option outside the fixed set
    value = getattr(backend.parse_options(backend.default_target(), {}), own)
    assert binder(x, y, N=64, **{own: value})[2] == {own: value}
    with pytest.raises(TypeError, match="no_such"):
        binder(x, y, N=64, no_such=1)


def test_ast_source_constants_and_the_repr_hook():
    @triton.jit
    def k(value, is_one, X, B: tl.constexpr):
        pass

    src = ASTSource(k, {"value": "i32", "X": "*fp32"}, {"is_one": 1, "B": 4})
    assert src.constants == {(1,): 1, (3,): 4}
    seen = {}

    def name(spec):
        seen.update(spec.constants)
        return f"k_{spec.signature['value']}_" + "_".join(n for n, v in spec.constants.items() if v == 1)

    k2 = triton.jit(repr=name)(k.fn)
    compiled = k2.warmup(-1, 1, np.zeros(1, np.float32), B=4, grid=(1,))
    assert seen == {"is_one": 1, "B": 4} and compiled.name == "k_i32_is_one"


@triton.jit
def _static_assert_kernel(X, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 64 == 0, "BLOCK must be a multiple of 64")
    tl.store(X + tl.arange(0, BLOCK), 1)


def test_static_assert_raises_compile_time_assertion_failure():
    with pytest.raises(CompileTimeAssertionFailure) as e:
        tritium.compile(_static_assert_kernel, signature={"X": "*i32"}, constexprs={"BLOCK": 32}, target="interpreter")
    assert isinstance(e.value, CompilationError) and isinstance(e.value, tritium.TritonError)
    assert e.value.__cause__ is None
    assert "BLOCK must be a multiple of 64" in str(e.value)
    assert 'tl.static_assert(BLOCK % 64 == 0, "BLOCK must be a multiple of 64")' in str(e.value)
    again = pickle.loads(pickle.dumps(e.value))
    assert type(again) is CompileTimeAssertionFailure and str(again) == str(e.value)
    # a passing assert compiles
    tritium.compile(_static_assert_kernel, signature={"X": "*i32"}, constexprs={"BLOCK": 64}, target="interpreter")


_EXTRA = "Assign it: y = cube(x)."


@triton.must_use_result(_EXTRA)
@triton.jit
def _cube(x):
    return x * x * x


@triton.jit
def _drops_cube():
    a = tl.full((16,), 2.0, tl.float32)
    _cube(a)


@triton.jit
def _uses_cube(Y):
    a = tl.full((16,), 2.0, tl.float32)
    a = _cube(a)
    tl.store(Y + tl.arange(0, 16), a)


@triton.jit
def _drops_advance(P):
    bp = tl.make_block_ptr(P, (16,), (1,), (0,), (16,), (0,))
    tl.advance(bp, (16,))


@triton.jit
def _drops_advance_method(P):
    bp = tl.make_block_ptr(P, (16,), (1,), (0,), (16,), (0,))
    bp.advance((16,))


def test_must_use_result():
    y = np.full(16, np.nan, np.float32)
    _uses_cube[(1,)](y)
    np.testing.assert_array_equal(y, np.full(16, 8.0, np.float32))
    with pytest.raises(CompilationError) as e:
        tritium.compile(ASTSource(fn=_drops_cube, signature={}, constexprs={}), target="interpreter")
    lines = str(e.value).splitlines()
    assert "_cube(a)" in lines[1] and "must be used" in lines[0]
    assert lines[-1] == "The result of _cube is not being used. " + _EXTRA
    for fn, what in ((_drops_advance, "tl.advance"), (_drops_advance_method, "bp.advance")):
        with pytest.raises(CompilationError, match=f"The result of {what} is not being used. tl.advance returns"):
            tritium.compile(fn, signature={"P": "*fp32"}, target="interpreter")
    # a plain marker, without a note
    f = tritium.must_use_result(lambda: None)
    assert f._must_use_result is True and tl.core.must_use_result is tritium.must_use_result


def test_compiler_module_names():
    import tritium.compiler.compiler as cc
    import tritium.compiler.errors as ce
    assert cc.ASTSource is tritium.compiler.ASTSource is tritium.ASTSource
    assert cc.CompiledKernel is tritium.compiler.CompiledKernel and callable(cc.compile) and callable(cc.make_backend)
    assert ce.CompilationError is tritium.CompilationError
    assert issubclass(ce.CompileTimeAssertionFailure, ce.CompilationError)
    assert issubclass(ce.UnsupportedLanguageConstruct, ce.CompilationError)


@pytest.mark.parametrize("name, expected", [
    ("i32", tl.int32), ("u1", tl.int1), ("fp16", tl.float16), ("bf16", tl.bfloat16), ("fp8e4nv", tl.float8e4nv),
    ("*fp32", tl.pointer_type(tl.float32)), ("*ki8", tl.pointer_type(tl.int8, const=True)),
])
def test_str_to_ty(name, expected):
    assert tl.str_to_ty(name, None) == expected


def test_str_to_ty_constexpr_and_tuples():
    assert tl.str_to_ty("constexpr", 7) == tl.constexpr_type(7)
    t = tl.str_to_ty(("i32", "*fp16"), None)
    assert isinstance(t, tl.tuple_type) and t.types == [tl.int32, tl.pointer_type(tl.float16)]


def test_dtype_kind_lists():
    D = tl.dtype
    assert D.SINT_TYPES == ["int8", "int16", "int32", "int64"]
    assert D.UINT_TYPES == ["int1", "uint8", "uint16", "uint32", "uint64"]
    assert D.STANDARD_FP_TYPES == ["fp16", "bf16", "fp32", "fp64"] and set(D.STANDARD_FP_TYPES) <= set(D.FP_TYPES)
    assert D.OTHER_TYPES == ["void"]
    # every name builds its dtype, with the right kind
    for n in D.SINT_TYPES + D.UINT_TYPES + D.FP_TYPES:
        t = tl.dtype(n)
        assert t.is_int_signed() == (n in D.SINT_TYPES) and t.is_floating() == (n in D.FP_TYPES)
    assert [tl.dtype(n).is_standard_floating() for n in D.FP_TYPES] == [n in D.STANDARD_FP_TYPES for n in D.FP_TYPES]


def test_runtime_jit_names():
    from tritium.runtime.jit import TensorWrapper, reinterpret, type_canonicalisation_dict as tcd
    assert TensorWrapper is tritium.TensorWrapper and reinterpret is tritium.reinterpret
    assert tcd["bool"] == "u1" and tcd["float16"] == "fp16" and tcd["bfloat16"] == "bf16" and tcd["int32"] == "i32"
    assert tcd["float8_e4m3fn"] == "fp8e4nv" and tcd["uint64"] == "u64"
    assert all(tcd[v] == v for v in tcd.values())
    for name, canonical in tcd.items():
        if canonical != "void":
            tl.str_to_ty(canonical, None)  # every canonical string is a type


@triton.jit
def _widen(X, Y, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Y + offs, tl.load(X + offs).to(tl.int32))


def test_reinterpret_with_numpy_and_torch_dtypes():
    rng = np.random.default_rng(2)
    raw = rng.integers(-128, 128, 64, dtype=np.int8)
    y = np.full(64, -999, np.int32)
    _widen[(1,)](tritium.reinterpret(raw, np.uint8), y, N=64)
    np.testing.assert_array_equal(y, raw.view(np.uint8).astype(np.int32))
    w = tritium.reinterpret(raw, tl.uint8)
    assert w.dtype == tl.uint8 and tritium.reinterpret(w, np.dtype("int8")) is raw
    with pytest.raises(TypeError, match="cannot reinterpret a str"):
        tritium.reinterpret("not a tensor", tl.int8)
    with pytest.raises(TypeError, match="dtype"):
        tritium.reinterpret(raw, "no such type")
    torch = pytest.importorskip("torch")
    t = torch.tensor(raw)
    y = np.full(64, -999, np.int32)
    w = tritium.reinterpret(t, torch.uint8)
    assert w.dtype == tl.uint8 and tritium.reinterpret(w, torch.int8) is t
    _widen[(1,)](w, y, N=64)
    np.testing.assert_array_equal(y, raw.view(np.uint8).astype(np.int32))


def test_runtime_errors_names():
    from tritium.runtime import errors
    from tritium.backends.interpreter import InterpreterError
    assert errors.InterpreterError is InterpreterError is tritium.InterpreterError
    assert errors.TritonError is tritium.TritonError
    for cls in (errors.OutOfResources, errors.PTXASError, errors.AutotunerError, InterpreterError):
        assert issubclass(cls, tritium.TritonError)
    assert str(errors.OutOfResources(10, 5, "shared memory")).startswith("out of resource: shared memory")


# -- Tritium under Triton's name -------------------------------------------------------------------
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

_AS_TRITON = textwrap.dedent("""
    import sys
    import numpy as np
    import triton
    import triton.language as tl
    from triton.language.math import exp
    from triton.language.extra import libdevice
    from triton.compiler.errors import CompileTimeAssertionFailure
    from triton.runtime.jit import TensorWrapper
    import tritium
    assert triton.__version__ == "3.6.0" and tritium.__version__ == "0.1.0", (triton.__version__, tritium.__version__)
    assert tl is tritium.language and exp is tritium.language.math.exp and triton.jit is tritium.jit
    assert sys.modules["triton.language"] is tritium.language and tritium.language.__spec__.name == "tritium.language"
    assert CompileTimeAssertionFailure is tritium.compiler.errors.CompileTimeAssertionFailure
    assert "jit" in dir(triton)

    @triton.jit
    def scale(X, Y, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(Y + offs, tl.load(X + offs) * 3.0)

    x = np.random.default_rng(0).standard_normal(32).astype(np.float32)
    y = np.full(32, np.nan, np.float32)
    scale[(1,)](x, y, N=32)
    np.testing.assert_allclose(y, x.astype(np.float64) * 3, rtol=1e-6)
    try:
        import triton.no_such_module
    except ModuleNotFoundError as e:
        assert "triton.no_such_module" in str(e)
    else:
        raise AssertionError("a module Tritium lacks must not import")
    print("ok", sys.argv[1:])
""")


def _python(*args, **kw):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, **kw)


def test_install_as_triton(tmp_path):
    prog = tmp_path / "prog.py"  # a file: a @jit function is compiled from its source text
    prog.write_text("import tritium; t = tritium.install_as_triton(); assert tritium.install_as_triton() is t\n"
                    + _AS_TRITON)
    r = _python(str(prog))
    assert r.returncode == 0 and r.stdout.strip() == "ok []", r.stderr[-2000:]


def test_importing_tritium_leaves_triton_alone():
    r = _python("-c", "import sys, tritium, tritium.language; print('triton' in sys.modules, "
                      "any(type(f).__name__ == '_TritonAlias' for f in sys.meta_path))")
    assert r.returncode == 0 and r.stdout.split() == ["False", "False"], r.stderr[-2000:]


def test_install_as_triton_refuses_a_triton_already_imported():
    r = _python("-c", "import sys, types, tritium\nsys.modules['triton'] = types.ModuleType('triton')\n"
                      "tritium.install_as_triton()")
    assert r.returncode != 0 and "a real Triton is already imported" in r.stderr, r.stderr[-2000:]


def test_run_as_triton_script_and_children(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(_AS_TRITON + textwrap.dedent("""
        import subprocess
        child = subprocess.run([sys.executable, "-c", "import triton, tritium; "
                                "print(triton.__version__, triton.jit is tritium.jit)"], capture_output=True, text=True)
        print("child", child.stdout.strip(), child.stderr[-500:])
    """))
    r = _python("-m", "tritium.run_as_triton", str(script), "a", "b", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [l.strip() for l in r.stdout.splitlines()] == ["ok ['a', 'b']", "child 3.6.0 True"], r.stdout + r.stderr[-2000:]
    r = _python("-m", "tritium.run_as_triton", "-c", "import triton; print(triton.__version__)")
    assert r.returncode == 0 and r.stdout.strip() == "3.6.0", r.stderr[-2000:]
    r = _python("-m", "tritium.run_as_triton", "--path")
    from tritium.triton_alias import SHIM_PATH
    assert r.stdout.strip() == SHIM_PATH
    r = _python("-m", "tritium.run_as_triton")
    assert r.returncode == 2 and "usage" in r.stderr


def test_updated_source_changes_the_ptx_for_cuda90():
    """Compile-only (no GPU needed): each text of a varied kernel gets its own PTX."""
    from tritium.hooks import manager
    try:
        manager.parse_target("cuda:90")
        manager.get_backend("nvidia")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"needs the nvidia plugin to compile for cuda:90 ({e})")
    k = triton.JITFunction(_template.fn)
    sig = {"X": "*fp32", "Y": "*fp32"}
    k._unsafe_update_src(k.src.replace("GENERATE_TEST_HERE", "x * 3.0"))
    mul = tritium.compile(ASTSource(k, sig, {"N": 128}), target="cuda:90", stage="ptx").asm["ptx"]
    k._unsafe_update_src(k.src.replace("x * 3.0", "tl.exp(x)"))
    exp = tritium.compile(ASTSource(k, sig, {"N": 128}), target="cuda:90", stage="ptx").asm["ptx"]
    assert "mul.f32" in mul and "ex2.approx" not in mul
    assert "ex2.approx" in exp and "mul.f32" in exp  # exp(x) = ex2(x * log2(e))
    assert mul != exp


@triton.jit
def _shifted(x, offs: tl.constexpr):
    return x + offs


@triton.jit
def _tensor_for_constexpr(X, Y, start, N: tl.constexpr):
    offs = start + tl.arange(0, N)
    tl.store(Y + tl.arange(0, N), _shifted(tl.load(X + tl.arange(0, N)), offs))


def test_a_tensor_passed_to_a_constexpr_annotated_helper_parameter():
    """Triton 3.6 passes a tensor given to a helper's ``tl.constexpr`` parameter as a run-time
    value (its attention tutorial gives ``offs_m: tl.constexpr`` a ``tl.arange`` expression): the
    annotation binds launch arguments only."""
    x = np.random.default_rng(1).standard_normal(32).astype(np.float32)
    y = np.full(32, np.nan, np.float32)
    _tensor_for_constexpr[(1,)](x, y, 5, N=32)
    np.testing.assert_allclose(y, x + 5 + np.arange(32), rtol=1e-6)
    ttir = triton.compile(_tensor_for_constexpr, target="cuda:90", signature={"X": "*fp32", "Y": "*fp32",
                          "start": "i32"}, constexprs={"N": 32}, stage="ttir").asm["ttir"]
    assert "tt.call" not in ttir and "tt.store" in ttir  # the helper took the tensor and was inlined


@triton.jit
def _block_pointer_loop(A, Out, K, BLOCK: tl.constexpr):
    p = tl.make_block_ptr(A, (K,), (1,), (0,), (BLOCK,), (0,))
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in tl.range(0, K, BLOCK, num_stages=1, disable_licm=True):
        acc += tl.load(p)
        p = tl.advance(p, (BLOCK,))
    tl.store(Out + tl.arange(0, BLOCK), acc)


def test_a_block_pointer_loop_keeps_its_hints():
    """Rewriting block pointers into offsets rebuilds the loops that carry them: their hints
    (``num_stages``, ``disable_licm``, ``warp_specialize``) stay on the rebuilt loop."""
    ttir = triton.compile(_block_pointer_loop, target="cuda:90", signature={"A": "*fp32", "Out": "*fp32", "K": "i32"},
                          constexprs={"BLOCK": 128}, stage="ttir").asm["ttir"]
    assert "tt.num_stages = 1" in ttir and "licm = <disable = true>" in ttir
