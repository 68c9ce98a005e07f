"""`tritium compile` writes every stage it ran for a kernel in the file it was pointed at, with the
real compiler (no stand-ins)."""
import json
import subprocess
import sys
from pathlib import Path

import tritium.examples.vector_add as vadd

KERNEL = f"{Path(vadd.__file__)}:add_kernel"


def test_compile_writes_ttir(tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "tritium.cli", "compile", KERNEL, "--signature", "*fp32,*fp32,*fp32,i32",
                        "--constexpr", "BLOCK_SIZE=512", "--target", "interpreter", "--stage", "ttir", "-o", str(out)],
                       capture_output=True, text=True, env={**__import__("os").environ, "TRITIUM_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr
    ttir = (out / "add_kernel.ttir").read_text()
    assert "tt.func public @add_kernel" in ttir
    assert "tt.make_range {start = 0 : i32, end = 512 : i32}" in ttir
    meta = json.loads((out / "add_kernel.json").read_text())
    assert meta["name"] == "add_kernel" and meta["stages"] == ["ttir"]


def test_compile_error_is_one_clear_message(tmp_path):
    src = tmp_path / "k.py"
    src.write_text("import tritium as triton\nimport tritium.language as tl\n\n@triton.jit\n"
                   "def k(x):\n    tl.store(x + tl.arange(0, 12), 1.0)\n")
    r = subprocess.run([sys.executable, "-m", "tritium.cli", "compile", f"{src}:k", "--signature", "*fp32",
                        "--target", "interpreter", "-o", str(tmp_path / "o")], capture_output=True, text=True)
    assert r.returncode == 1
    assert "arange's range must be a power of 2" in r.stderr
    assert f"{src}:6:" in r.stderr and "Traceback" not in r.stderr


def test_compile_an_ir_file(tmp_path):
    """An IR file needs no --signature: the kernel, its arguments and options come from the IR."""
    ir = Path(__file__).parent / "ttgir" / "kernels" / "triton_dump_add.ttgir"
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "tritium.cli", "compile", str(ir), "--target", "interpreter",
                        "-o", str(out)], capture_output=True, text=True,
                       env={**__import__("os").environ, "TRITIUM_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "add_kernel.json").read_text())
    assert meta["name"] == "add_kernel" and meta["stages"] == ["ttgir", "interp"] and meta["num_warps"] == 4
    assert meta["signature"] == {"arg0": "*fp32", "arg1": "*fp32", "arg2": "*fp32", "arg3": "i32"}
