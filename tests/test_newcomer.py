"""What a new user meets first: device printing on every backend, grid validation, and the
``tritium`` command's errors, packaging and docs."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args, cwd=None, env=None, timeout=300):
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "tritium.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=full, timeout=timeout)


def _has_cuda() -> bool:
    try:
        from tritium.runtime.driver import get_backend
        return bool(get_backend("nvidia").device_present())
    except Exception:
        return False


# -- 1. device_print ---------------------------------------------------------------------------
@triton.jit
def _print_forms(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("x", x)
    tl.device_print("pid", tl.program_id(0))
    tl.device_print("h", x.to(tl.int32), hex=True)
    tl.device_print("text only")
    tl.device_print("two", x, x.to(tl.int64))
    tl.device_print("ptr", x_ptr + tl.arange(0, BLOCK))
    tl.device_print("b", x.to(tl.bfloat16), hex=True)


@pytest.mark.parametrize("target", ["cuda:80", "cuda:90"])
def test_device_print_compiles_for_nvidia(target):
    pytest.importorskip("tritium_nvidia")
    x = np.zeros(16, np.float32)
    k = _print_forms.warmup(x, BLOCK=16, grid=(1,), backend="nvidia", target=target)
    ptx = k.asm["ptx"]
    assert "vprintf" in ptx and k.asm.get("cubin")
    # the format strings as the device prints them
    strings = {bytes(int(c) for c in m.group(1).split(",")).rstrip(b"\0").decode()
               for m in re.finditer(r"\.b8 \S+\[\d+\] = \{([^}]*)\}", ptx)}
    assert "pid (%u, %u, %u) idx (%2u) x: %f\n" in strings
    assert "pid (%u, %u, %u) idx () pid: %i\n" in strings
    assert "pid (%u, %u, %u) idx (%2u) h: 0x%08x\n" in strings
    assert "pid (%u, %u, %u) text only\n" in strings
    assert "pid (%u, %u, %u) idx (%2u) two: (operand 1) %lli\n" in strings
    assert "pid (%u, %u, %u) idx (%2u) ptr: %p\n" in strings
    assert "pid (%u, %u, %u) idx (%2u) b: 0x%04x\n" in strings


@triton.jit
def _print_interp(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("x", x)
    print("", x, x.to(tl.uint8))
    print("no arg")
    tl.device_print("h ", x.to(tl.int16), hex=True)


def test_device_print_interpreter_format(capfd):
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 100, 16).astype(np.int32)
    _print_interp[(2,)](x, BLOCK=16, backend="interpreter")
    got = Counter(capfd.readouterr().out.splitlines())
    want = Counter()
    for p in range(2):
        want[f"pid ({p}, 0, 0) no arg"] += 1
        for i, v in enumerate(x):
            want[f"pid ({p}, 0, 0) idx ({i:2}) x: {v}"] += 1
            want[f"pid ({p}, 0, 0) idx ({i:2}): (operand 0) {v}"] += 1
            want[f"pid ({p}, 0, 0) idx ({i:2}): (operand 1) {int(v) % 256}"] += 1
            want[f"pid ({p}, 0, 0) idx ({i:2}) h: 0x{int(v) % 2**16:04x}"] += 1
    assert got == want


def test_print_cases_check_the_text():
    from conformance.cases import by_id
    from conformance.runner import CapturedStdout
    case = by_id()["print/tensor-int32"]
    x = np.arange(256, dtype=np.int32)
    good = "\n".join(f"pid ({p}, 0, 0) idx ({i:3}) x: {p * 128 + i}" for p in range(2) for i in range(128))
    assert case.stdout(good, {"x_ptr": x}) is None
    assert "missing" in case.stdout(good.replace("idx (  5)", "idx (5)"), {"x_ptr": x})
    with CapturedStdout() as cap:
        print("from python")
        os.write(1, b"from fd 1\n")
    assert cap.text.splitlines() == ["from python", "from fd 1"]


@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA device")
def test_print_cases_on_gpu():
    r = subprocess.run([sys.executable, "-m", "conformance", "--backend", "nvidia", "-k", "print/*"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.search(r"print\s+\d+ passed", r.stdout)


# -- 2. grid validation ------------------------------------------------------------------------
@triton.jit
def add_one_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


@pytest.mark.parametrize("grid, kind, entry", [
    ((4.88,), TypeError, "4.88 (float)"), ((5, 0.5), TypeError, "0.5 (float) on axis 1"),
    (("5",), TypeError, "'5' (str)"), ((True,), TypeError, "True (bool)"),
    ((-5,), ValueError, "negative entry -5"), ((5, -1), ValueError, "negative entry -1 on axis 1"),
    (lambda meta: (meta["n"] / meta["BLOCK"],), TypeError, "returned by the grid function"),
    (lambda meta: (-1,), ValueError, "negative entry -1"),
])
def test_bad_grid_is_an_error(grid, kind, entry):
    x = np.random.default_rng(1).standard_normal(5000).astype(np.float32)
    y = np.full_like(x, np.nan)
    # twice: the first launch compiles (JITFunction.run), the second takes the fast binder
    for fresh in (True, False):
        if not fresh:
            add_one_kernel[(5,)](x, y, x.size, BLOCK=1024)
            y[:] = np.nan
        with pytest.raises(kind) as e:
            add_one_kernel[grid](x, y, x.size, BLOCK=1024)
        msg = str(e.value)
        assert "add_one_kernel" in msg and "launch grid" in msg and entry in msg, msg
        assert np.isnan(y).all(), "a rejected grid launched programs"


def test_zero_grid_is_an_empty_launch():
    x = np.random.default_rng(2).standard_normal(2048).astype(np.float32)
    y = np.full_like(x, np.nan)
    for grid in ((0,), (2, 0), lambda meta: (0,)):
        add_one_kernel[grid](x, y, x.size, BLOCK=1024)
        assert np.isnan(y).all()
    add_one_kernel[(np.int64(2),)](x, y, x.size, BLOCK=1024)  # numpy integers are ints
    np.testing.assert_allclose(y, x.astype(np.float64) + 1, rtol=1e-6)


# -- 3-10. the command line --------------------------------------------------------------------
KERNELS = textwrap.dedent('''
    import tritium as triton
    import tritium.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    @triton.jit
    def too_big(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, offs)
''')
SIG = ["-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=1024"]


@pytest.fixture
def kernels(tmp_path):
    (tmp_path / "kernels.py").write_text(KERNELS)
    return tmp_path


def _usage_error(r, *fragments):
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("usage:")]
    assert len(lines) == 1, r.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])


@pytest.mark.parametrize("stage, target", [("ptxx", "cuda:90"), ("hsaco", "cuda:90"), ("PTX", "cuda:90")])
def test_unknown_stage(kernels, stage, target):
    pytest.importorskip("tritium_nvidia")
    r = _cli("compile", "kernels.py:add_kernel", *SIG, "-t", target, "--stage", stage, "-o", "out", cwd=kernels)
    _usage_error(r, f"unknown stage {stage!r}", "ttir, ttgir, llir, ptx, cubin")
    assert not (kernels / "out").exists()


def test_unknown_stage_in_the_api():
    pytest.importorskip("tritium_nvidia")
    with pytest.raises(ValueError, match="unknown stage 'PTX' for cuda:90.*ttir, ttgir, llir, ptx, cubin"):
        triton.compile(add_one_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                       constexprs={"BLOCK": 64}, target="cuda:90", stage="PTX")


def test_target_of_a_missing_plugin_names_the_distribution():
    from tritium.hooks.manager import TritiumPluginManager
    pm = TritiumPluginManager(entry_point_group=None)  # nothing installed
    with pytest.raises(ValueError) as e:
        pm.parse_target("cuda:90")
    assert "tritium-nvidia" in str(e.value) and "pip install" in str(e.value) and "plugins/nvidia" in str(e.value)


def test_conformance_ships_in_the_wheel():
    # setup.py lists the conformance packages (tests/test_packaging.py builds the wheel)
    text = (ROOT / "setup.py").read_text()
    assert '"conformance"' in text and 'find_namespace_packages("conformance"' in text


@pytest.mark.parametrize("entry, hint", [("int32", "did you mean 'i32'"), ("i23", "is not a type"),
                                         ("float32", "did you mean 'fp32'")])
def test_signature_entry_that_is_no_type(kernels, entry, hint):
    r = _cli("compile", "kernels.py:add_kernel", "-s", f"*fp32,*fp32,*fp32,{entry}", "-c", "BLOCK=1024",
             "-t", "hip:gfx942", "--stage", "ttir", "-o", "out", cwd=kernels)
    _usage_error(r, f"signature entry {entry!r} for n", hint, "fp32", "i32")


def test_max_tensor_numel_at_the_users_line(kernels):
    r = _cli("compile", "kernels.py:too_big", "-s", "*i32", "-c", f"BLOCK={2**21}", "--stage", "ttir",
             "-o", "out", cwd=kernels, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "numel (2097152) exceeds triton maximum tensor numel (1048576)" in r.stderr
    assert "kernels.py:13:" in r.stderr and "tl.arange(0, BLOCK)" in r.stderr


@pytest.mark.parametrize("argv, fragments", [
    (["examples", "--backend", "bogus"], ["unknown backend 'bogus'"]),
    (["examples", "-k", "nosuch"], ["-k 'nosuch' matches no example", "vector add"]),
    (["conformance", "--backend", "bogus"], ["unknown backend 'bogus'"]),
    (["compile", "kernels.py"], ["name the kernel", "kernels.py:add_kernel"]),
    (["compile", "kernels.py:nosuch"], ["no kernel 'nosuch'", "add_kernel"]),
    (["compile", "nosuch.py:add_kernel"], ["file not found: nosuch.py"]),
    (["compile", "kernels.py:add_kernel"], ["needs --signature", "x_ptr, y_ptr, out_ptr, n, BLOCK"]),
])
def test_one_line_usage_errors(kernels, argv, fragments):
    _usage_error(_cli(*argv, cwd=kernels, timeout=120), *fragments)


def test_version():
    r = _cli("--version")
    assert r.returncode == 0 and re.fullmatch(r"tritium \S+ \(plugin API \d+\)\n", r.stdout), r.stdout


def test_conformance_progress_and_default_jobs():
    from conformance.cli import _Progress, default_jobs
    assert default_jobs(10) == 1
    assert default_jobs(2000) == len(os.sched_getaffinity(0))
    r = subprocess.run([sys.executable, "-m", "conformance", "--backend", "interpreter", "-k", "print/tensor-int*"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert re.search(r"\[interpreter\] 4/4 cases, \d+:\d\d elapsed", r.stderr), r.stderr
    p = _Progress("x", 4, Counter({"a": 4}))
    p.done = 1
    assert "about" in p.status() and "left" in p.status()


# -- 17. non-contiguous numpy views ------------------------------------------------------------
def test_non_contiguous_view_warns():
    from tritium.backends.interpreter.driver import NonContiguousArgumentWarning
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    y = np.full(32, np.nan, np.float32)
    with pytest.warns(NonContiguousArgumentWarning, match=r"argument x_ptr is a non-contiguous numpy view") as w:
        add_one_kernel[(1,)](x[::2], y, 32, BLOCK=32, backend="interpreter")
    assert w[0].filename == __file__
    # GPU semantics: the kernel walks the underlying buffer from the view's first element
    np.testing.assert_array_equal(y, x[:32] + 1)


# -- 11, 12. driver messages, one target list --------------------------------------------------
def test_nvidia_messages_in_tritiums_words():
    pytest.importorskip("tritium_nvidia")
    from tritium_nvidia.runtime.driver import _no_driver_text
    from tritium_nvidia.runtime.device_pointers import Unplaceable, locate
    text = _no_driver_text(RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system '
                                        'search. Ensure the NVIDIA display driver is installed.'))
    assert text.startswith("no NVIDIA driver found") and "--target cuda:90" in text and "system search" not in text
    with pytest.raises(Unplaceable, match=r"a host \(numpy\) array, not CUDA memory"):
        locate(np.zeros(4, np.float32))


def test_one_nvidia_target_list():
    pytest.importorskip("tritium_nvidia")
    from tritium.hooks.manager import get_backend, parse_target
    listed = get_backend("nvidia").info.targets
    assert "cuda:87" in listed and "cuda:90a" in listed
    for t in listed:
        assert str(parse_target(t)) == t
    with pytest.raises(ValueError, match=r"write cuda:90\).*" + re.escape(", ".join(listed))):
        parse_target("cuda:sm_90")


# -- 15. skip reasons say what is needed -------------------------------------------------------
def test_skip_reasons_name_no_machine_kind():
    offenders = []
    for path in list((ROOT / "tests").rglob("*.py")) + list((ROOT / "plugins").rglob("tests/*.py")):
        for m in re.finditer(r"reason\s*=\s*(f?\"[^\"]*\"|f?'[^']*')", path.read_text()):
            if re.search(r"nvidia-h\d+|h200|-x\d\b", m.group(1), re.IGNORECASE):
                offenders.append(f"{path.relative_to(ROOT)}: {m.group(1)}")
    assert not offenders, offenders


# -- 14. the README's commands run as written --------------------------------------------------
def test_readme_using_it_and_compile_commands(tmp_path):
    pytest.importorskip("tritium_nvidia")
    pytest.importorskip("tritium_amd")
    text = (ROOT / "README.md").read_text()
    using = text.split("## Using it", 1)[1]
    assert "Save this as `kernels.py`" in using
    code = re.search(r"```python\n(.*?)```", using, re.S).group(1)
    (tmp_path / "kernels.py").write_text(code + "\nnp.testing.assert_allclose(out, x + y, rtol=1e-6)\n")
    r = subprocess.run([sys.executable, "kernels.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    block = re.search(r"```sh\n(tritium compile .*?)```", using, re.S).group(1)
    commands = [c for c in block.replace("\\\n", " ").splitlines() if c.startswith("tritium compile")]
    assert len(commands) == 2
    outs = set()
    for c in commands:
        argv = [a.strip("'") for a in c.split("#")[0].split()][1:]
        r = _cli(*argv, cwd=tmp_path)
        assert r.returncode == 0, (c, r.stderr[-2000:])
        outs.add(argv[argv.index("-o") + 1])
    assert len(outs) == 2, "the two compile examples write to the same directory"
    assert (tmp_path / "out/cuda/add_kernel.ptx").exists() and (tmp_path / "out/hip/add_kernel.hsaco").exists()
    assert "pip install -e '.[plot]'" in text


def test_an_argument_given_twice_is_named_in_the_kernels_words():
    # Python's own binding error of the launch binder, under the kernel's name (issue 31, item 6)
    @triton.jit
    def twice_kernel(x, n, B: tl.constexpr):
        tl.store(x + tl.arange(0, B), 1.0)

    x = np.zeros(16, np.float32)
    for _ in range(2):  # the first launch and the cached binder
        with pytest.raises(TypeError, match=r"^twice_kernel\(\) got multiple values for argument 'n'$"):
            twice_kernel[(1,)](x, 16, n=16, B=16)
    twice_kernel[(1,)](x, 16, B=16)
    with pytest.raises(TypeError, match=r"twice_kernel\(\) got multiple values for argument 'B'"):
        twice_kernel[(1,)](x, 16, 3, B=16)
