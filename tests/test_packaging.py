"""The wheel carries every sub-package of ``core/`` (a wheel once lost ``tritium.backends``, and
with it the embedded interpreter; issue #9).  CI also installs the wheels into a fresh virtual
environment and runs ``tritium examples`` there (``.ci/run``)."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _source_packages() -> set[str]:
    core = ROOT / "core"
    return {"tritium" + "".join("." + part for part in d.relative_to(core).parts)
            for d in [core, *core.rglob("*")] if d.is_dir() and d.name != "__pycache__" and any(d.rglob("*.py"))}


def test_every_package_has_an_init():
    core = ROOT / "core"
    missing = [str(d.relative_to(ROOT)) for d in [core, *core.rglob("*")]
               if d.is_dir() and d.name != "__pycache__" and any(d.rglob("*.py")) and not (d / "__init__.py").exists()]
    assert not missing, f"directories with modules but no __init__.py: {missing}"


def _can_build_wheels() -> bool:
    """setuptools with its own bdist_wheel (70.1+), or an older one with the ``wheel`` package."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    from importlib.metadata import version
    major, minor = (int(x) for x in version("setuptools").split(".")[:2])
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


@pytest.mark.skipif(not _can_build_wheels(), reason="setuptools (with bdist_wheel) is not installed here")
@pytest.mark.timeout(300)
def test_wheel_contains_every_package(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "core", src / "core", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "conformance", src / "conformance", ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("tritium-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    packaged = {n.rsplit("/", 1)[0].replace("/", ".") for n in names if n.endswith(".py")}
    assert _source_packages() <= packaged, sorted(_source_packages() - packaged)
    assert "tritium/backends/interpreter/plugin.py" in names and "tritium/py.typed" in names
    # the conformance suite, which `tritium conformance` runs from an installed wheel
    assert {"conformance/cli.py", "conformance/runner.py", "conformance/cases/__init__.py",
            "conformance/cases/printing.py"} <= names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "tritium.backends.interpreter.plugin" in zipfile.ZipFile(wheel).read(entry_points).decode()
