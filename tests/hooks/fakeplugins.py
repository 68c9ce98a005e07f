"""Fake backend plugins installed as real distributions (a module plus a ``*.dist-info`` folder)
in a temporary directory, and a runner that imports Tritium in a fresh interpreter with that
directory on ``PYTHONPATH`` — the way a vendor's wheel would be found."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

# A working backend; the {placeholders} vary per test.  Its driver owns instances of `Marker`.
GOOD_PLUGIN = '''
from tritium.hooks.hookspecs import hookimpl
from tritium.hooks.types import BackendInfo, GPUTarget, Options
from tritium.runtime.driver import Driver

TRITIUM_PLUGIN_API = {api}
PRESENT = {present}

class Marker:
    pass

class FakeDriver(Driver):
    backend = "{name}"
    def is_active(self): return PRESENT
    def get_current_target(self): return GPUTarget("{kind}", 1, 16)
    def get_device_properties(self, device): return {{"name": "fake", "warp_size": 16}}
    def load_binary(self, name, binary, metadata, device): return binary
    def make_launcher(self, handle, metadata, signature): return lambda grid, stream, args: None
    def owns(self, arg): return isinstance(arg, Marker)

@hookimpl
def tritium_backend_info():
    return BackendInfo(name="{name}", api_version=1, version="9.9", target_kinds=("{kind}",),
                       targets=("{kind}:1", "{kind}:2"), default_target="{kind}:2",
                       stages=("ttir", "bin"), binary_ext="bin")

@hookimpl
def tritium_device_present(backend):
    return PRESENT if backend == "{name}" else None

@hookimpl
def tritium_current_target(backend):
    return GPUTarget("{kind}", 1, 16) if backend == "{name}" and PRESENT else None

@hookimpl
def tritium_parse_target(text):
    kind, _, arch = text.partition(":")
    if kind != "{kind}":
        return None
    if arch not in ("1", "2"):
        raise ValueError(f"{kind} architectures are 1 and 2, got {{arch!r}}")
    return GPUTarget("{kind}", int(arch), 16)

@hookimpl
def tritium_add_stages(target, stages, options):
    if target.backend != "{kind}":
        return None
    stages["bin"] = lambda src, metadata: b"BIN:" + src.encode()
    return True

@hookimpl
def tritium_layout_encodings():
    return ["{name}_enc"]

@hookimpl
def tritium_driver(backend):
    return FakeDriver() if backend == "{name}" else None
'''


def install(root: Path, dist: str, module: str, source: str, entry: str | None = None) -> None:
    """Write ``module.py`` and ``<dist>-1.0.dist-info`` declaring entry point ``entry``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[tritium]\n{entry or module} = {module}\n")


def install_good(root: Path, name: str, kind: str | None = None, present: bool = True,
                 api: int = 1, extra: str = "") -> None:
    src = GOOD_PLUGIN.format(name=name, kind=kind or name, present=present, api=api) + textwrap.dedent(extra)
    install(root, f"tritium-{name}", f"tritium_{name}_plugin", src, entry=name)


def run(root: Path, script: str, env: dict | None = None) -> dict:
    """Run ``script`` in a fresh interpreter after ``import tritium``, recording every warning;
    the script fills the dict ``out``, which comes back parsed together with the warnings."""
    prelude = (
        "import json, warnings\n"
        "warnings.simplefilter('always')\n"
        "_rec = warnings.catch_warnings(record=True)\n"
        "_w = _rec.__enter__()\n"
        "warnings.simplefilter('always')\n"
        "import tritium\n"
        "from tritium.hooks import manager\n"
        "out = {}\n"
    )
    epilogue = (
        "\nout['warnings'] = [f'{w.category.__name__}: {w.message}' for w in _w]\n"
        "print('@@' + json.dumps(out, default=str))\n"
    )
    full_env = dict(os.environ)
    full_env.pop("TRITIUM_BACKEND", None)
    full_env["PYTHONPATH"] = os.pathsep.join([str(root), full_env.get("PYTHONPATH", "")])
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script) + epilogue],
                          env=full_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@")][-1]
    return json.loads(line[2:])


def warnings_about(out: dict, needle: str) -> list[str]:
    return [w for w in out["warnings"] if needle in w]
