"""The toy backend (``tests/plugins/tritium_toy``), a plugin written from ``docs/hooks.md`` only,
as a vendor team would: it registers without being installed, its barrier rule is asked through
its hook on every compile path, its shared-memory sizes equal cuda:90's for the same kernels (the
core's scratch rules, whatever the process imported), and it compiles the conformance suite."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tritium
import tritium.language as tl
from tritium.hooks import manager

HERE = Path(__file__).resolve().parent
SPEC = "tritium_toy.plugin:plugin"


@pytest.fixture(scope="module")
def toy():
    """The toy plugin object, registered in this process's plugin manager."""
    sys.path.insert(0, str(HERE))
    try:
        from tritium_toy.plugin import plugin
        assert manager.get_plugin_manager().register_spec(SPEC), manager.failed_plugins()
        yield plugin
    finally:
        sys.path.remove(str(HERE))


def _env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def test_registered_through_the_environment_without_installing():
    out = subprocess.run([sys.executable, "-m", "tritium.cli", "backends"], capture_output=True, text=True,
                         env=_env(TRITIUM_PLUGINS=SPEC), timeout=300)
    assert out.returncode == 0, out.stderr
    row = next((line for line in out.stdout.splitlines() if line.split()[:1] == ["toy"]), None)
    assert row is not None and "toy:1" in row, out.stdout


def test_a_spec_that_does_not_import_is_skipped_with_its_reason():
    pm = manager.TritiumPluginManager(entry_point_group=None)
    with pytest.warns(manager.TritiumPluginWarning, match="no_such_module"):
        assert not pm.register_spec("no_such_module:plugin")
    assert "import failed" in pm.failed_plugins()[0].reason


_SIG = {"x": "*fp32", "y": "*fp32", "n": "i32"}


@tritium.jit
def _reduce_dot(x, y, n, B: tl.constexpr):
    r = tl.arange(0, B)
    m = r < n
    v = tl.load(x + r[:, None] * B + r[None, :], mask=m[:, None] & m[None, :], other=0.0)
    s = tl.sum(tl.dot(v, v), axis=1)
    tl.store(y + r, s, mask=m)


_ROW_SUMS = (Path(__file__).resolve().parents[1] / "test_compile_ir.py").read_text()


def _row_sums_ttgir() -> str:
    ns: dict = {}
    start = _ROW_SUMS.index('_TTGIR = """')
    exec(_ROW_SUMS[start:_ROW_SUMS.index('"""', start + 12) + 3], ns)
    return ns["_TTGIR"]


def test_membar_rule_is_asked_through_the_hook_on_every_path(toy, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    before = len(toy.membar_calls)
    k = tritium.compile(_reduce_dot, signature=_SIG, constexprs={"B": 32}, target="toy:1")
    assert k.metadata.shared > 0 and len(toy.membar_calls) == before + 1
    # a TTGIR file: the core's finalize (allocation, the plugin's rule) then the plugin's llir
    path = tmp_path / "row_sums.ttgir"
    path.write_text(_row_sums_ttgir())
    k = tritium.compile(str(path), target="toy:1")
    assert len(toy.membar_calls) == before + 2
    assert "toy_barrier" in k.asm["llir"] and k.metadata.shared > 0
    # and a launch's compile (warmup: no device is needed to build the kernel)
    import numpy as np
    x = np.zeros(64 * 64, np.float32)
    _reduce_dot.warmup(x, x, 64, B=64, grid=(1,), backend="toy", target="toy:1")
    assert len(toy.membar_calls) == before + 3


#: kernels whose shared memory is all scratch: a scan, a cross-warp reduction, a transpose that
#: a reshape follows, a join and a cat
_KERNELS = '''
import tritium
import tritium.language as tl


@tritium.jit
def cumsum(x, y, B: tl.constexpr):
    r = tl.arange(0, B)
    tl.store(y + r, tl.cumsum(tl.load(x + r), 0))


@tritium.jit
def reduce_rows(x, y, B: tl.constexpr):
    r = tl.arange(0, B)
    v = tl.load(x + r[:, None] * B + r[None, :])
    tl.store(y + r, tl.max(v, axis=0))


@tritium.jit
def trans_reshape(x, y, B: tl.constexpr):
    r = tl.arange(0, B)
    v = tl.load(x + r[:, None] * B + r[None, :])
    w = tl.reshape(tl.trans(v), (B * B,))
    tl.store(y + tl.arange(0, B * B), w)


@tritium.jit
def join_cat(x, y, B: tl.constexpr):
    r = tl.arange(0, B)
    a = tl.load(x + r)
    b = tl.load(x + B + r)
    j = tl.reshape(tl.join(a, b), (2 * B,))
    c = tl.cat(a, b, can_reorder=True)
    tl.store(y + tl.arange(0, 2 * B), j + c)
'''

_MEASURE = '''
import json, sys
sys.path.insert(0, {kernels_dir!r})
import kernels_for_toy as k
targets = sys.argv[1].split(",")
out = {{}}
for t in targets:
    for name, B in (("cumsum", 1024), ("reduce_rows", 64), ("trans_reshape", 32), ("join_cat", 256)):
        ck = __import__("tritium").compile(getattr(k, name), signature={{"x": "*fp32", "y": "*fp32"}},
                                           constexprs={{"B": B}}, target=t, num_warps=4)
        out[f"{{t}} {{name}}"] = [ck.metadata.shared, ck.asm["ttgir"]]
print(json.dumps(out))
'''


def _measure(tmp_path, targets: str, first: str = "") -> dict:
    (tmp_path / "kernels_for_toy.py").write_text(_KERNELS)
    script = first + _MEASURE.format(kernels_dir=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", script, targets], capture_output=True, text=True, timeout=600,
                         env=_env(TRITIUM_PLUGINS=SPEC, TRITIUM_CACHE_DIR=str(tmp_path / f"cache{len(first)}")))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_shared_memory_equals_cuda90_in_a_fresh_process(tmp_path):
    pytest.importorskip("tritium_nvidia", reason="the nvidia plugin is the reference for the sizes")
    got = _measure(tmp_path, "toy:1,cuda:90")
    for name in ("cumsum", "reduce_rows", "trans_reshape", "join_cat"):
        toy_shared, cuda_shared = got[f"toy:1 {name}"][0], got[f"cuda:90 {name}"][0]
        assert toy_shared == cuda_shared, (name, toy_shared, cuda_shared)
    assert got["toy:1 cumsum"][0] == 4096  # 1,024 fp32 row-major
    assert got["toy:1 reduce_rows"][0] > 0


def test_a_compile_does_not_depend_on_what_the_process_did_before(tmp_path):
    """The same kernels for cuda:90 and toy:1, first thing in a fresh process and after compiling
    other kernels for AMD and NVIDIA (which import those plugins' modules): the same TTGIR and
    shared-memory size."""
    pytest.importorskip("tritium_nvidia", reason="compiles for cuda:90")
    fresh = _measure(tmp_path, "toy:1,cuda:90")
    warm_up = textwrap.dedent('''
        import tritium
        from tritium.examples import fused_softmax
        for t in ("cuda:90", "hip:gfx942"):
            try:
                tritium.compile(fused_softmax.softmax_kernel, target=t,
                                signature={"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
                                           "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                                constexprs={"BLOCK_SIZE": 1024, "num_stages": 2})
            except ValueError:
                pass  # the plugin is not installed
    ''')
    after = _measure(tmp_path, "cuda:90,toy:1", first=warm_up)
    assert fresh.keys() == after.keys()
    for key in fresh:
        assert fresh[key] == after[key], key


def test_compiles_the_conformance_suite(tmp_path):
    """The whole suite, compile-only, with nothing but the toy's own declarations: every case
    compiles to LLVM IR that LLVM verifies, or is rejected as it must be, or is one the toy
    declares it cannot take (inline assembly, other vendors' wave64 IR, fp8 formats it does not
    support, clusters, libdevice functions outside its math library).  CI leaves out the batched
    dots of 4 and 8 matrices (FMA-unrolled; the batches of 1 and 2 run the same lowering)."""
    out = tmp_path / "toy.json"
    cmd = [sys.executable, "-m", "conformance", "--backend", "toy", "--compile-only", "-j", "2", "--json", str(out),
           "--skip", "dot3d/*-b4-*", "--skip", "dot3d/*-b8-*"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=str(HERE.parents[1]),
                          env=_env(TRITIUM_PLUGINS=SPEC, TRITIUM_CACHE_DIR=str(tmp_path / "cache")))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    results = json.loads(out.read_text())["results"]
    statuses = {r["status"] for r in results}
    assert statuses <= {"compiled", "passed", "excluded"}, statuses
    assert sum(r["status"] == "compiled" for r in results) > 1500
