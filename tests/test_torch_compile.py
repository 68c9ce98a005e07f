"""``torch.compile`` with Tritium as its Triton.

The launch contract Inductor's generated launchers use (``CompiledKernel.run`` with every argument,
``_init_handles``/``function``, the launch hooks, Triton 3.x ``ASTSource`` attributes) is checked on
the interpreter without torch; then Inductor itself compiles models for CPU tensors with
``cpu_backend="triton"`` in a subprocess where ``import triton`` is Tritium: its kernels run on the
interpreter, and the results are compared with float64 eager PyTorch."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tritium
import tritium.language as tl
from tritium import knobs
from tritium.backends.compiler import GPUTarget
from tritium.compiler.compiler import ASTSource

INDUCTOR_OPTIONS = {"num_warps": 4, "num_stages": 1, "debug": False, "sanitize_overflow": False}


def _launch_extra(grid, metadata, args):
    return {"n": args["n"], "grid": tuple(grid)}


@tritium.jit(launch_metadata=_launch_extra)
def _scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha + tl.load(y_ptr + offs, mask=m), mask=m)


def _compile_as_inductor_does(block: int):
    """As Inductor's ``_precompile_config``: the signature with constexprs in it, constants by name,
    attributes keyed by index path with ``[[name, value]]`` lists, a ``cpu`` GPUTarget."""
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "alpha": "fp32", "BLOCK": "constexpr"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(3)}
    return tritium.compile(ASTSource(_scale_add, sig, {"BLOCK": block}, attrs), target=GPUTarget("cpu", "", 32),
                           options=dict(INDUCTOR_OPTIONS))


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


def _data(n, rng):
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    return x, y, np.full(n, np.nan, np.float32)


def test_run_takes_every_argument_or_the_runtime_ones(cache):
    rng = np.random.default_rng()
    kernel = _compile_as_inductor_does(64)
    assert kernel.src.fn is _scale_add and kernel.metadata.num_warps == 4 and kernel.packed_metadata is kernel.metadata
    assert kernel.src.attrs["x_ptr"] == {"tt.divisibility": 16}
    kernel._init_handles()
    assert callable(kernel.function)
    n = 1000
    grid = (n + 63) // 64
    x, y, out = _data(n, rng)
    alpha = float(rng.uniform(0.5, 2.0))
    # Inductor's launcher: (grid, stream, function, packed metadata, launch metadata, hooks, *all arguments)
    kernel.run(grid, 1, 1, 0, kernel.function, kernel.packed_metadata, None, None, None, x, y, out, n, alpha, 64)
    np.testing.assert_allclose(out, x.astype(np.float64) * np.float32(alpha) + y, rtol=1e-6, atol=1e-6)
    x, y, out = _data(n, rng)
    kernel.run(grid, 1, 1, None, kernel.function, kernel.packed_metadata, None, None, None, x, y, out, n, alpha)
    np.testing.assert_allclose(out, x.astype(np.float64) * np.float32(alpha) + y, rtol=1e-6, atol=1e-6)
    # a grid with a zero dimension launches nothing
    x, y, out = _data(n, rng)
    kernel.run(0, 1, 1, None, kernel.function, kernel.packed_metadata, None, None, None, x, y, out, n, alpha)
    assert np.isnan(out).all()
    with pytest.raises(TypeError, match=r"takes 6 arguments \(5 without its constexprs\), got 4"):
        kernel.run(grid, 1, 1, None, kernel.function, kernel.packed_metadata, None, None, None, x, y, out, n)


def test_getitem_takes_every_argument_or_the_runtime_ones(cache):
    rng = np.random.default_rng()
    kernel = _compile_as_inductor_does(32)
    n = 100
    for args in (lambda x, y, out: (x, y, out, n, 3.0, 32), lambda x, y, out: (x, y, out, n, 3.0)):
        x, y, out = _data(n, rng)
        kernel[(4, 1, 1)](*args(x, y, out))
        np.testing.assert_allclose(out, x.astype(np.float64) * 3 + y, rtol=1e-6, atol=1e-6)


def test_a_compiled_kernel_crosses_processes_as_inductor_sends_it(cache):
    """Inductor's compile workers pickle a kernel's ``__dict__`` (the JITFunction's ``fn`` and the
    handles cleared) and the parent rebuilds it with ``CompiledKernel.__new__`` before loading it."""
    import pickle
    from tritium.compiler import CompiledKernel
    rng = np.random.default_rng()
    kernel = _compile_as_inductor_does(64)
    saved = _scale_add.fn, _scale_add.__globals__
    _scale_add.fn = _scale_add.__globals__ = None  # as Inductor's prepare_for_pickle does
    try:
        data = pickle.dumps({**kernel.__dict__, "function": None, "module": None})
    finally:
        _scale_add.fn, _scale_add.__globals__ = saved
    clone = CompiledKernel.__new__(CompiledKernel)
    clone.__dict__.update(pickle.loads(data))
    assert clone.backend.name == "interpreter" and clone.hash == kernel.hash
    clone._init_handles()
    n = 777
    x, y, out = _data(n, rng)
    clone.run((n + 63) // 64, 1, 1, 0, clone.function, clone.packed_metadata, None, None, None, x, y, out, n, 0.5, 64)
    np.testing.assert_allclose(out, x.astype(np.float64) * 0.5 + y, rtol=1e-6, atol=1e-6)


def test_hash_names_the_compiled_kernel(cache):
    a, b, a_again = _compile_as_inductor_does(64), _compile_as_inductor_does(128), _compile_as_inductor_does(64)
    assert len(a.hash) == 64 and a.hash == a_again.hash and a.hash != b.hash


def test_launch_hooks_see_the_launch(cache):
    rng = np.random.default_rng()
    kernel = _compile_as_inductor_does(128)
    n = 300
    x, y, out = _data(n, rng)
    assert kernel.launch_metadata((3, 1, 1), 0, x, y, out, n, 1.0, 128) is None  # no hook: nothing built
    seen = []

    def enter(meta):
        seen.append(("enter", dict(meta.get()), bool(np.isnan(out).all())))

    def exit_(meta):
        seen.append(("exit", dict(meta.get()), bool(np.isnan(out).any())))

    knobs.runtime.launch_enter_hook.add(enter)
    knobs.runtime.launch_exit_hook.add(exit_)
    try:
        assert knobs.runtime.launch_enter_hook  # a chain with a hook is true: Inductor passes metadata
        meta = kernel.launch_metadata((3, 1, 1), 7, x, y, out, n, 1.0, 128)
        kernel.run(3, 1, 1, 7, kernel.function, kernel.packed_metadata, meta, knobs.runtime.launch_enter_hook,
                   knobs.runtime.launch_exit_hook, x, y, out, n, 1.0, 128)
    finally:
        knobs.runtime.launch_enter_hook.remove(enter)
        knobs.runtime.launch_exit_hook.remove(exit_)
    assert not knobs.runtime.launch_enter_hook and not knobs.runtime.launch_exit_hook
    expected = {"name": "_scale_add", "stream": 7, "n": n, "grid": (3, 1, 1)}
    assert [s[0] for s in seen] == ["enter", "exit"]
    for _, meta, _ in seen:
        assert {k: meta[k] for k in expected} == expected and callable(meta["function"])
    assert seen[0][2] and not seen[1][2]  # before the launch nothing was written, after it all was
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_the_interpreter_is_the_cpu_backend_and_listed_last():
    from tritium.backends import backends
    names = list(backends)
    assert names[-2:] == ["interpreter", "cpu"]
    assert isinstance(backends["cpu"].driver(), backends["interpreter"].driver)
    assert backends["cpu"].driver.is_active()
    options = backends["cpu"].compiler(GPUTarget("cpu", "", 32)).parse_options({"num_warps": 8})
    assert options.num_warps == 8 and options.threads_per_warp == 1


# --- Inductor, end to end on the CPU ----------------------------------------------------------------
_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import tritium
    if hasattr(tritium, "install_as_triton"):
        tritium.install_as_triton()
    else:
        from tritium.tools.inductor import triton_as_tritium
        _alias = triton_as_tritium(); _alias.__enter__()
    import torch, triton
    import torch._inductor.config as config
    from torch.utils._triton import has_triton
    dev = sys.argv[1]
    config.cpu_backend = "triton"
    if dev == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    launched = []
    triton.knobs.runtime.launch_enter_hook.add(lambda meta: launched.append(meta.get()["name"]))

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.LayerNorm(48)
            with torch.no_grad():
                self.norm.weight.uniform_(0.5, 1.5)
                self.norm.bias.uniform_(-0.5, 0.5)

        def forward(self, x):
            h = torch.nn.functional.gelu(self.norm(x)) * x
            return h * torch.softmax(x * 1.5, dim=-1) + (x.abs() * h).amax(-1, keepdim=True)

    def err(a, b):
        return float(((a.detach().double() - b.detach()).abs() / (1e-4 + 1e-4 * b.detach().abs())).max())

    out = {"triton_is_tritium": triton.jit is tritium.jit, "has_triton": has_triton(), "version": triton.__version__}
    block = Block().to(dev)
    x = torch.randn(19, 48, device=dev, requires_grad=True)
    got = torch.compile(block)(x)
    gx, gw = torch.autograd.grad((got * got).sum(), (x, block.norm.weight))
    ref_block = Block().to(dev).double()
    ref_block.load_state_dict(block.state_dict())
    xd = x.detach().double().requires_grad_()
    ref = ref_block(xd)
    rx, rw = torch.autograd.grad((ref * ref).sum(), (xd, ref_block.norm.weight))
    out["err"] = [err(got, ref), err(gx, rx), err(gw, rw)]
    out["launched"] = sorted(set(launched))
    print("RESULT " + json.dumps(out))
""")


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_inductor_runs_its_triton_kernels_on_tritium(tmp_path, device):
    """On the CPU the kernels run on the interpreter; on a CUDA device through the nvidia plugin."""
    torch = pytest.importorskip("torch", reason="needs PyTorch (Inductor generates the kernels)")
    pytest.importorskip("torch._inductor.runtime.triton_heuristics", reason=f"torch {torch.__version__} has no Inductor")
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"), TRITIUM_CACHE_DIR=str(tmp_path / "k"),
               TORCHINDUCTOR_COMPILE_THREADS="1", TRITIUM_BACKEND="")
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, device], capture_output=True, text=True, env=env, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    out = json.loads(lines[-1][len("RESULT "):])
    assert out["triton_is_tritium"] and out["has_triton"]
    assert max(out["err"]) <= 1.0, out
    # Inductor's own kernels ran, through the launch hooks of Tritium's knobs
    assert out["launched"] and all(name.startswith("triton_") for name in out["launched"]), out["launched"]
