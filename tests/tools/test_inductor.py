"""``import tritium as triton`` for PyTorch Inductor: the names torch's ``triton_compat`` reads, its
``triton_helpers`` bound to Tritium, and Inductor-style kernel files run on the interpreter."""
import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium.tools import inductor

pytest.importorskip("torch", reason="PyTorch provides the Inductor runtime these tests load")

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "inductor_files")


@pytest.fixture
def interpreter(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_BACKEND", "interpreter")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


def test_the_names_triton_compat_and_hints_read():
    from tritium.backends import backends
    from tritium.backends.compiler import GPUTarget
    from tritium.compiler.compiler import ASTSource, CompiledKernel, make_backend, triton_key
    from tritium.language.extra import libdevice
    from tritium.runtime.autotuner import OutOfResources, PTXASError
    from tritium.runtime.cache import triton_key as cache_key
    from tritium.runtime.errors import InterpreterError, TritonError
    from tritium.runtime.jit import JITFunction, KernelInterface
    import tritium.language.core as core
    import tritium.language.standard as standard

    assert tritium.Config is not None and issubclass(JITFunction, KernelInterface)
    assert ASTSource is tritium.compiler.ASTSource and CompiledKernel is tritium.compiler.CompiledKernel
    assert tl.extra.libdevice is libdevice and tl.math is not None
    assert GPUTarget("cuda", 90, 32).arch == 90
    assert triton_key() == cache_key() and tritium.__version__ in triton_key()
    assert issubclass(OutOfResources, TritonError) and issubclass(PTXASError, TritonError)
    assert issubclass(InterpreterError, Exception)
    err = OutOfResources(300000, 232448, "shared memory")
    assert "out of resource: shared memory, Required: 300000, Hardware limit: 232448" in str(err)
    assert callable(core.view) and core.get_int_dtype(16, signed=False) == tl.uint16
    assert standard._log2(tl.constexpr(64)) == 6 and standard._log2(1) == 0
    options = make_backend("cuda:90").parse_options({})
    assert options.__dict__["num_warps"] == 4
    interp = backends["interpreter"]
    assert interp.driver.is_active() and isinstance(interp.driver(), interp.driver)
    active = tritium.runtime.driver.active
    assert isinstance(active, backends[active.backend].driver)
    assert not isinstance(interp.driver(), backends["nvidia"].driver)
    assert interp.compiler(GPUTarget("interpreter", 0, 1)).parse_options({"num_warps": 8}).num_warps == 8


def test_triton_helpers_import_with_triton_resolving_to_tritium():
    helpers = inductor.tritium_triton_helpers()
    compat = sys.modules["tritium_inductor_runtime.triton_compat"]
    assert compat.HAS_TRITON and compat.triton is tritium and compat.tl is tl
    assert helpers.triton is tritium and helpers.libdevice is tl.extra.libdevice and helpers.math is tl.math
    assert isinstance(helpers.max2, tritium.JITFunction) and isinstance(helpers.welford_reduce, tritium.JITFunction)
    # nothing of the alias is left behind: `triton` is the real one where it is installed (torch
    # imports it), else nothing
    assert sys.modules.get("triton") is not tritium
    if importlib.util.find_spec("triton") is None:
        assert "triton" not in sys.modules
        with pytest.raises(ImportError):
            import triton  # noqa: F401
    assert tritium.__spec__.name == "tritium"


def test_torch_imports_triton_helpers_with_the_alias_installed_first(tmp_path):
    # the strong form: `triton` is Tritium before torch is imported at all
    script = textwrap.dedent("""
        from tritium.tools.inductor import triton_as_tritium
        alias = triton_as_tritium()
        alias.__enter__()
        import torch._inductor.runtime.triton_helpers as th
        from torch._inductor.runtime import triton_compat
        import tritium
        assert triton_compat.HAS_TRITON and th.triton is tritium, (triton_compat.HAS_TRITON, th.triton)
        assert th.libdevice is tritium.language.extra.libdevice
        print("imported", type(th.max2).__name__)
    """)
    env = dict(os.environ, TRITIUM_BACKEND="interpreter", TRITIUM_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "imported JITFunction" in proc.stdout


def test_kernel_file_parsing():
    path = os.path.join(FILES, "poi_fused_add_exp_maximum.py")
    source = open(path).read()
    assert inductor.jit_functions(source) == ["triton_poi_fused_add_exp_maximum_0"]
    assert inductor.kernel_name(source) == "triton_poi_fused_add_exp_maximum_0"


def test_pointwise_kernel_runs_unchanged_on_the_interpreter(interpreter):
    fn = inductor.load_kernel(os.path.join(FILES, "poi_fused_add_exp_maximum.py"))
    assert isinstance(fn, tritium.JITFunction)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    out = np.full(1000, np.nan, np.float32)
    args, kwargs = inductor.launch_arguments(fn, (x, y, out, 1000), {"XBLOCK": 128})
    assert kwargs == {"XBLOCK": 128} and len(args) == 4
    fn[(8,)](*args, **kwargs)
    ref = 1 / np.sqrt(np.exp(np.maximum(x, y).astype(np.float64)) + 1)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_persistent_reduction_kernel_runs_unchanged_on_the_interpreter(interpreter):
    fn = inductor.load_kernel(os.path.join(FILES, "per_fused_softmax.py"))
    x = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)
    out = np.full((8, 64), np.nan, np.float32)
    args, kwargs = inductor.launch_arguments(fn, (x, out, 8, 64), {"XBLOCK": 2})
    fn[(4,)](*args, **kwargs)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)


def test_launch_arguments_take_constants_by_name_or_index():
    fn = inductor.load_kernel(os.path.join(FILES, "poi_fused_add_exp_maximum.py"))
    args, kwargs = inductor.launch_arguments(fn, (1, 2, 3, 4, "extra"), {"XBLOCK": 64, "num_warps": 4}, {4: 32})
    assert args == [1, 2, 3, 4] and kwargs == {"XBLOCK": 64}  # the config's block wins over a constant
    args, kwargs = inductor.launch_arguments(fn, (1, 2, 3, 4), {}, {"XBLOCK": 32})
    assert kwargs == {"XBLOCK": 32}
    with pytest.raises(ValueError, match="takes 4 run-time arguments"):
        inductor.launch_arguments(fn, (1, 2), {"XBLOCK": 64})


_GENERATE = """
from tritium.tools.inductor import triton_as_tritium
alias = triton_as_tritium()
alias.__enter__()
import torch
import torch._inductor.config as cfg
cfg.cpu_backend = "triton"
cfg.compile_threads = 1

def f(x, y):
    return torch.relu(x * 2 + y).exp(), (x * y).sum(-1)

try:
    torch.compile(f)(torch.randn(64, 32), torch.randn(64, 32))
except Exception as exc:  # running needs a CPU Triton runtime; the kernel files are written first
    print("run:", type(exc).__name__)
"""


def _signature(source: str) -> dict:
    import ast
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg == "triton_meta":
            meta = node.value
            key = next(i for i, k in enumerate(meta.keys) if isinstance(k, ast.Constant) and k.value == "signature")
            return ast.literal_eval(meta.values[key])
    raise AssertionError("no triton_meta in the kernel file")


def test_kernels_inductor_generates_run_on_the_interpreter(interpreter, tmp_path):
    # torch writes real kernel files for its CPU Triton backend (tritium standing in for triton);
    # each one, rebound to Tritium, computes one of the function's two outputs
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    proc = subprocess.run([sys.executable, "-c", _GENERATE], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = [os.path.join(r, f) for r, _, fs in os.walk(tmp_path / "inductor") for f in fs if f.endswith(".py")]
    kernels = [p for p in files if inductor.jit_functions(open(p).read())] if files else []
    assert kernels, f"no kernel file among {files}"
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal((64, 32)).astype(np.float32)
    want = [np.exp(np.maximum(x * 2 + y, 0)).ravel(), (x * y).sum(-1)]
    found = set()
    for path in kernels:
        source = open(path).read()
        fn = inductor.load_kernel(path)
        sig = _signature(source)
        reduction = "r0_numel" in sig
        numels = {"xnumel": 64 if reduction else 64 * 32, "r0_numel": 32}
        ins = iter([x.ravel(), y.ravel()])
        bufs, call = [], []
        for name in (p.name for p in fn.params if not p.is_constexpr):
            if name.startswith("in_ptr"):
                call.append(next(ins).copy())
            elif name.startswith("out_ptr"):
                bufs.append(np.full(64 * 32, np.nan, np.float32))
                call.append(bufs[-1])
            else:
                call.append(numels[name])
        block = 8 if reduction else 256
        args, kwargs = inductor.launch_arguments(fn, call, {"XBLOCK": block})
        fn[(-(-numels["xnumel"] // block),)](*args, **kwargs)
        for b in bufs:
            for i, w in enumerate(want):
                if np.allclose(b[:w.size], w, rtol=1e-5, atol=1e-5):
                    found.add(i)
    assert found == {0, 1}, f"outputs computed: {sorted(found)} of [0, 1]"
