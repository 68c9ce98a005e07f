"""``tritium.knobs``: values from the environment, assigned values, scopes, and that each knob
changes what Tritium does (cache directory, backend choice, debug, JIT hooks, arch, fp fusion)."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium import knobs


@pytest.fixture
def clean():
    """Every knob reads the environment, and the variables that the test touches are unset; each
    group's scope() puts values and variables back afterwards (knobs a test sets are exported to
    the environment: propagate_env)."""
    groups = [knobs.cache, knobs.compilation, knobs.runtime, knobs.language, knobs.nvidia, knobs.autotuning]
    with contextlib.ExitStack() as scopes:
        for g in groups:
            scopes.enter_context(g.scope())
            for d in g.knob_descriptors.values():
                for k in d.keys:
                    os.environ.pop(k, None)
            g.reset()
            g.__dict__.pop("jit_cache_hook", None)
            g.__dict__.pop("jit_post_compile_hook", None)
        yield


@triton.jit
def _axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _inputs(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, dtype=np.float32)  # poison: unwritten elements show
    return x, y, out


# -- the settings themselves ------------------------------------------------------------------
def test_groups_and_descriptors():
    for name in ("cache", "compilation", "runtime", "language", "nvidia", "amd", "build", "autotuning"):
        group = getattr(knobs, name)
        assert isinstance(group, knobs.base_knobs)
        assert group.knob_descriptors and all(d.key in d.keys for d in group.knob_descriptors.values())
    d = knobs.cache.knob_descriptors["dir"]
    assert d.key == "TRITON_CACHE_DIR" and d.keys == ("TRITIUM_CACHE_DIR", "TRITON_CACHE_DIR")
    assert knobs.runtime.knob_descriptors["interpret"].key == "TRITON_INTERPRET"
    import importlib
    assert importlib.import_module("tritium.knobs") is knobs is triton.knobs


def test_environment_read_at_each_read_and_tritium_name_wins(clean, monkeypatch, tmp_path):
    assert knobs.compilation.always_compile is False
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    assert knobs.compilation.always_compile is True          # read now, not at import
    monkeypatch.setenv("TRITIUM_ALWAYS_COMPILE", "0")
    assert knobs.compilation.always_compile is False         # Tritium's name wins
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "b"))
    assert knobs.cache.dir == str(tmp_path / "b")
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "a"))
    assert knobs.cache.dir == str(tmp_path / "a")
    assert knobs.language.default_fp_fusion is True          # the default
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "off")
    assert knobs.language.default_fp_fusion is False
    monkeypatch.setenv("TRITON_DEBUG", "maybe")
    with pytest.raises(ValueError, match="TRITON_DEBUG='maybe'"):
        knobs.runtime.debug


def test_assigned_value_wins_and_env_restores(clean, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "env"))
    knobs.cache.dir = str(tmp_path / "set")
    assert knobs.cache.dir == str(tmp_path / "set")
    # propagated: both names now say the same, for subprocesses and for code reading them
    assert os.environ["TRITIUM_CACHE_DIR"] == os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "set")
    knobs.propagate_env = False
    try:
        knobs.runtime.debug = True
        assert knobs.runtime.debug is True and "TRITON_DEBUG" not in os.environ
    finally:
        knobs.propagate_env = True
    monkeypatch.setenv("TRITON_DEBUG", "0")
    assert knobs.runtime.debug is True                        # the assigned value wins over the variable
    knobs.runtime.debug = knobs.env                           # forget it: the variable again
    assert knobs.runtime.debug is False
    with pytest.raises(AttributeError, match="no setting 'dri'"):
        knobs.cache.dri = "x"
    with pytest.raises(TypeError, match="takes a bool"):
        knobs.runtime.interpret = "yes"


def test_scope_restores_values_and_environment(clean, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "before"))
    knobs.cache.dump_dir = str(tmp_path / "dumps")
    with knobs.cache.scope():
        knobs.cache.dir = str(tmp_path / "inside")
        knobs.cache.dump_dir = None
        assert knobs.cache.dir == str(tmp_path / "inside") and knobs.cache.dump_dir is None
        assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "inside")
    assert knobs.cache.dir == str(tmp_path / "before")
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "before") and "TRITIUM_CACHE_DIR" not in os.environ
    assert knobs.cache.dump_dir == str(tmp_path / "dumps")
    with pytest.raises(RuntimeError):
        with knobs.runtime.scope():
            knobs.runtime.override_arch = "sm80"
            raise RuntimeError("restored on errors too")
    assert knobs.runtime.override_arch is None and "TRITON_OVERRIDE_ARCH" not in os.environ


def test_copy_and_reset_as_fresh_knobs_use_them(clean, monkeypatch):
    knobs.runtime.debug = True
    fresh = knobs.runtime.copy().reset()
    monkeypatch.delenv("TRITON_DEBUG")
    assert type(fresh) is type(knobs.runtime) and fresh.debug is False and knobs.runtime.debug is True


# -- the knobs act -----------------------------------------------------------------------------
def test_cache_dir_knob_is_where_a_compile_writes(clean, tmp_path):
    @triton.jit
    def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):  # a kernel of its own: not cached in memory yet
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3.0, mask=offs < n)

    x, _, out = _inputs(200, seed=1)
    with knobs.cache.scope():
        knobs.cache.dir = str(tmp_path / "kernels")
        scale[(2,)](x, out, 200, BLOCK=128, backend="interpreter")
    np.testing.assert_allclose(out, x * 3.0, rtol=1e-6)
    entries = [p for p in (tmp_path / "kernels").iterdir() if not p.name.startswith(".")]
    assert entries and all((p / "__manifest__.json").is_file() for p in entries)
    names = {f for p in entries for f in json.loads((p / "__manifest__.json").read_text())["files"]}
    assert any(n.endswith(".ttir") and "scale" in n for n in names)


def test_interpret_knob_picks_the_interpreter_and_backend_knob_wins(clean, monkeypatch):
    from tritium.hooks import manager
    nvidia = pytest.importorskip("tritium_nvidia") and manager.get_backend("nvidia")
    monkeypatch.setattr(nvidia, "device_present", lambda: True)  # as on a GPU machine
    assert manager.select_backend(None, ()).name == "nvidia"
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert manager.select_backend(None, ()).name == "interpreter"
    monkeypatch.setenv("TRITIUM_BACKEND", "nvidia")             # TRITIUM_BACKEND comes first
    assert manager.select_backend(None, ()).name == "nvidia"
    monkeypatch.delenv("TRITIUM_BACKEND")
    knobs.runtime.interpret = False                              # an assigned knob beats the variable
    assert manager.select_backend(None, ()).name == "nvidia"


def test_triton_interpret_in_a_subprocess_runs_on_the_interpreter(tmp_path):
    script = tmp_path / "k.py"
    script.write_text('''
import numpy as np
import tritium as triton, tritium.language as tl
from tritium import knobs
@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(out_ptr + o, tl.load(x_ptr + o, mask=o < n) + tl.load(y_ptr + o, mask=o < n), mask=o < n)
x = np.arange(100, dtype=np.float32); y = np.full(100, 0.5, np.float32); out = np.full(100, np.nan, np.float32)
k = add[(1,)](x, y, out, 100, BLOCK=128)
assert np.array_equal(out, x + y), out
print(knobs.runtime.interpret, knobs.selected_backend(), k.metadata["backend"])
''')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITIUM_BACKEND", "TRITON_"))}
    env.update(TRITON_INTERPRET="1", TRITIUM_CACHE_DIR=str(tmp_path / "c"))
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "interpreter", "interpreter"]


def test_jit_cache_hook_arguments_veto_and_post_hook(clean):
    @triton.jit
    def axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    seen, post = [], []
    veto = [True]

    def hook(**kw):
        seen.append(kw)
        return veto[0]

    knobs.runtime.jit_cache_hook = hook
    knobs.runtime.jit_post_compile_hook = lambda **kw: post.append(kw)
    x, y, out = _inputs(300, seed=2)
    assert axpy[(3,)](x, y, out, 300, 2.0, BLOCK=128, backend="interpreter") is None
    assert np.isnan(out).all() and not axpy.kernel_cache and not post   # vetoed: nothing compiled or run
    kw = seen[0]
    assert set(kw) == {"key", "repr", "fn", "compile", "is_manual_warmup", "already_compiled"}
    assert kw["is_manual_warmup"] is False and kw["already_compiled"] is False
    assert isinstance(kw["fn"], knobs.JitFunctionInfo) and kw["fn"].jit_function is axpy
    assert kw["fn"].name == axpy.__qualname__ and kw["fn"].module == __name__
    c = kw["compile"]
    assert c["key"] == kw["key"] and c["is_warmup"] is False
    assert c["signature"] == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "alpha": "fp32",
                              "BLOCK": "constexpr"}
    assert c["constants"] == {(5,): 128} and c["num_warps"] == 4
    data = json.loads(c["specialization_data"])
    assert data["name"].endswith("axpy") and data["constant_vals"] == [128]
    assert kw["repr"].startswith(f"{axpy.__qualname__}[num_warps=4,") and "x_ptr: *fp32" in kw["repr"]

    veto[0] = False  # a false result: compiled, then the post hook with the same arguments
    k = axpy[(3,)](x, y, out, 300, 2.0, BLOCK=128, backend="interpreter")
    assert k is not None and len(seen) == 2 and len(post) == 1 and post[0]["key"] == seen[1]["key"]
    np.testing.assert_allclose(out, 2.0 * x + y, rtol=1e-6)
    axpy[(3,)](x, y, out, 300, 2.0, BLOCK=128, backend="interpreter")
    assert len(seen) == 2  # compiled already: not asked again
    w = axpy.warmup(x, y, out, 300, 2.0, BLOCK=64, grid=(5,), backend="interpreter")
    assert w is not None and seen[-1]["is_manual_warmup"] is True and seen[-1]["compile"]["constants"] == {(5,): 64}


def test_debug_knob_turns_device_asserts_on(clean):
    @triton.jit
    def check_positive(x_ptr, BLOCK: tl.constexpr):
        v = tl.load(x_ptr + tl.arange(0, BLOCK))
        tl.device_assert(v > 0, "not positive")

    x = -np.abs(np.random.default_rng(3).standard_normal(16).astype(np.float32)) - 1.0
    check_positive[(1,)](x, BLOCK=16, backend="interpreter")  # debug off: the assert is compiled out
    knobs.runtime.debug = True
    with pytest.raises(Exception, match="not positive"):
        check_positive[(1,)](x, BLOCK=16, backend="interpreter")
    knobs.runtime.debug = False
    check_positive[(1,)](x, BLOCK=16, backend="interpreter")


def test_override_arch_and_default_fp_fusion_reach_an_nvidia_compile(clean):
    pytest.importorskip("tritium_nvidia")
    from tritium.hooks import manager
    x, y, out = _inputs(64)
    knobs.runtime.override_arch = "sm80"
    k = _axpy.warmup(x, y, out, 64, 1.5, BLOCK=64, grid=(1,), backend="nvidia", target="cuda:90")
    assert str(k.target) == "cuda:80" and "cuda:80" in k.asm["ttgir"]
    knobs.runtime.override_arch = None
    k90 = _axpy.warmup(x, y, out, 64, 1.5, BLOCK=64, grid=(1,), backend="nvidia", target="cuda:90")
    assert str(k90.target) == "cuda:90"
    nv = manager.get_backend("nvidia")
    t = nv.parse_target("cuda:90")
    assert nv.parse_options(t, {}).enable_fp_fusion is True
    knobs.language.default_fp_fusion = False
    assert nv.parse_options(t, {}).enable_fp_fusion is False
    assert nv.parse_options(t, {"enable_fp_fusion": True}).enable_fp_fusion is True  # the launch's own wins


def test_ptxas_knob_reports_the_real_version(clean, tmp_path):
    tc = pytest.importorskip("tritium_nvidia.toolchain.tools")
    tool = knobs.nvidia.ptxas
    if tool.path is None:
        assert tool.version.count(".") == 1  # nvJitLink's CUDA version, or "0.0" with no assembler
        return
    out = subprocess.run([tool.path, "--version"], capture_output=True, text=True).stdout
    assert f"release {tool.version}" in out and tool.path == tc.find_ptxas()
    fake = tmp_path / "ptxas"
    shutil.copy(tool.path, fake)
    knobs.nvidia.ptxas = str(fake)
    assert knobs.nvidia.ptxas.path == str(fake) and tc.find_ptxas() == str(fake)
    assert os.environ["TRITIUM_PTXAS_PATH"] == str(fake)
    knobs.nvidia.ptxas = str(tmp_path / "missing")
    with pytest.raises(RuntimeError, match="knobs.nvidia.ptxas"):
        tc.find_ptxas()


def test_pass_dumps_follow_the_knobs(clean, tmp_path):
    @triton.jit
    def neg(x_ptr, BLOCK: tl.constexpr):
        o = tl.arange(0, BLOCK)
        tl.store(x_ptr + o, -tl.load(x_ptr + o))

    x = np.arange(8, dtype=np.float32)
    knobs.compilation.always_compile = True
    knobs.compilation.dump_ir = "neg"
    knobs.cache.dump_dir = str(tmp_path / "dump")
    neg[(1,)](x, BLOCK=8, backend="interpreter")
    np.testing.assert_array_equal(x, -np.arange(8, dtype=np.float32))
    assert any(p.name.startswith("neg") for p in (tmp_path / "dump").iterdir())


def test_every_variable_is_documented():
    from pathlib import Path
    doc = (Path(__file__).resolve().parent.parent / "docs" / "environment.md").read_text()
    for name in ("cache", "compilation", "runtime", "language", "autotuning", "build", "nvidia", "amd"):
        for knob, d in getattr(knobs, name).knob_descriptors.items():
            row = next((line for line in doc.splitlines()
                        if line.startswith("|") and f"`knobs.{name}.{knob}`" in line), None)
            assert row is not None, f"knobs.{name}.{knob} is not in docs/environment.md"
            assert all(f"`{k}`" in row for k in d.keys), (row, d.keys)
