"""The ``tritium`` command: argument handling and error paths, with a stand-in compiler."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import tritium.compiler
from tritium import cli

sys.path.insert(0, str(Path(__file__).parent / "hooks"))
import fakeplugins as fp  # noqa: E402

KERNELS = '''
from tritium.runtime.interface import KernelInterface
from tritium.runtime.autotuner import Config, autotune, heuristics

class FakeJIT(KernelInterface):
    """Stands in for a @jit function: arg_names plus the wrapped Python function."""
    def __init__(self, fn):
        self.fn = fn
        self.arg_names = list(fn.__code__.co_varnames[: fn.__code__.co_argcount])
        self.__name__ = fn.__name__

def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: "tl.constexpr", EVEN: "tl.constexpr" = False):
    pass

add = FakeJIT(add_kernel)
tuned = autotune([Config({"BLOCK": 64})], key=["n"])(heuristics({"EVEN": lambda a: True})(add))
not_a_kernel = 42
'''


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return path


class FakeCompiled:
    def __init__(self, asm, metadata):
        self.asm, self.metadata = asm, metadata


class CompilationError(Exception):
    pass


@pytest.fixture
def compiler(monkeypatch):
    calls = []

    def compile(fn, **kwargs):
        calls.append((fn, kwargs))
        if kwargs["constexprs"].get("BLOCK") == 3:
            raise CompilationError("kernels.py:9: arange's range must be a power of two, got 3")
        return FakeCompiled({"ttir": "module {}", "bin": b"\x00\x01"}, {"name": "add_kernel", "shared": 0})

    monkeypatch.setattr(tritium.compiler, "compile", compile)
    return calls


def test_compile_writes_every_stage(kernels, compiler, tmp_path, capsys):
    out = tmp_path / "out"
    rc = cli.main(["compile", f"{kernels}:add", "-s", "*fp32, *fp32,*fp32,i32", "-c", "BLOCK=1024",
                   "-o", str(out), "--num-warps", "8", "--stage", "ttir"])
    assert rc == 0
    fn, kwargs = compiler[0]
    assert fn.arg_names[0] == "x_ptr"
    assert kwargs == {"signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                      "constexprs": {"BLOCK": 1024}, "target": None, "stage": "ttir",
                      "options": {"num_warps": 8}}
    assert (out / "add_kernel.ttir").read_text() == "module {}"
    assert (out / "add_kernel.bin").read_bytes() == b"\x00\x01"
    assert json.loads((out / "add_kernel.json").read_text()) == {"name": "add_kernel", "shared": 0}
    assert capsys.readouterr().out.split() == [str(out / f"add_kernel.{e}") for e in ("ttir", "bin", "json")]


def test_compile_full_signature_and_unwrapping(kernels, compiler, tmp_path):
    rc = cli.main(["compile", f"{kernels}:tuned", "-s", "*fp16,*fp16,*fp16,16,128,True", "-o", str(tmp_path)])
    assert rc == 0
    fn, kwargs = compiler[0]
    assert type(fn).__name__ == "FakeJIT"  # autotune and heuristics wrappers removed
    assert kwargs["signature"] == {"x_ptr": "*fp16", "y_ptr": "*fp16", "out_ptr": "*fp16"}
    assert kwargs["constexprs"] == {"n": 16, "BLOCK": 128, "EVEN": True}


def test_compilation_error_exits_1(kernels, compiler, tmp_path, capsys):
    rc = cli.main(["compile", f"{kernels}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=3", "-o", str(tmp_path)])
    assert rc == 1
    assert "power of two, got 3" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["missing.py:k", "-s", "i32"], "file not found: missing.py"),
    (["{k}", "-s", "i32"], "expected FILE:KERNEL"),
    (["{k}:nosuch", "-s", "i32"], "has no kernel 'nosuch'"),
    (["{k}:not_a_kernel", "-s", "i32"], "is not a @tritium.jit function (found int)"),
    (["{k}:add", "-s", "*fp32,i32", "-c", "BLOCK=1"],
     "--signature has 2 entries; expected 4 (one per parameter x_ptr, y_ptr, out_ptr, n) or 6"),
    (["{k}:add", "-s", "*fp33,*fp32,*fp32,i32", "-c", "BLOCK=1"], "signature entry '*fp33' for x_ptr: unknown pointee"),
    (["{k}:add", "-s", "*fp32:16,*fp32,*fp32,i32", "-c", "BLOCK=1"], "specialization hints"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32,i32"], "constexpr parameter(s) BLOCK have no value"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32,i32,i32,1"], "parameter BLOCK is tl.constexpr and needs a constant"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK"], "--constexpr expects NAME=VALUE, got 'BLOCK'"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOK=1"], "--constexpr names BLOK are not parameters"),
    (["{k}:add", "-s", "*fp32,,*fp32,i32", "-c", "BLOCK=1"], "empty entry"),
])
def test_compile_usage_errors_exit_2(kernels, compiler, args, message, capsys):
    args = [a.replace("{k}", str(kernels)) for a in args]
    assert cli.main(["compile", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert compiler == []


def test_compile_import_error_names_the_line(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\nraise ImportError('no module named vendorlib')\n")
    assert cli.main(["compile", f"{bad}:k", "-s", "i32"]) == 2
    assert "importing" in (err := capsys.readouterr().err) and "at line 2: ImportError" in err


def test_parse_constant():
    assert [cli.parse_constant(t) for t in ("16", "0x10", "0.5", "True", "false", "None", "ieee")] == \
        [16, 16, 0.5, True, False, None, "ieee"]


def test_delegating_commands(monkeypatch, capsys):
    seen = []
    monkeypatch.setitem(sys.modules, "tritium.examples",
                        types.SimpleNamespace(main=lambda argv: seen.append(argv) or 3))
    assert cli.main(["examples", "--list", "-h"]) == 3 and seen == [["--list", "-h"]]
    with pytest.raises(cli.UsageError, match="needs the module tritium.nosuch, which is not installed"):
        cli._delegate("tritium.nosuch", [], "examples")


def test_missing_delegate_exits_2(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tritium.examples", None)  # an import of it fails
    assert cli.main(["examples"]) == 2
    assert "'tritium examples' needs the module tritium.examples" in capsys.readouterr().err


def test_backends_lists_working_and_failed_plugins(tmp_path):
    fp.install_good(tmp_path, "alpha", present=True)
    fp.install_good(tmp_path, "gamma", present=False)
    fp.install(tmp_path, "tritium-broken", "tritium_broken_plugin", "raise ImportError('gone')\n", entry="broken")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "tritium.cli", "backends"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "Tritium plugin API 1"
    alpha = next(ln for ln in lines if ln.startswith("alpha "))
    gamma = next(ln for ln in lines if ln.startswith("gamma "))
    assert "9.9" in alpha and "alpha:1, alpha:2" in alpha and "yes (alpha:1)" in alpha
    assert " no " in gamma and "tritium-gamma 1.0" in gamma
    assert "failed plugin broken (tritium-broken 1.0): import failed: ImportError: gone" in lines
    assert "broken" not in proc.stderr  # listed once, in the report, not again as a warning


def test_help_explains_signature():
    proc = subprocess.run([sys.executable, "-m", "tritium.cli", "compile", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "one entry per parameter, all of them" in proc.stdout
