"""Run a Python program with Tritium installed as ``triton`` (``tritium.install_as_triton()``)
in its process and in every Python process it starts:

    python -m tritium.run_as_triton script.py [args...]
    python -m tritium.run_as_triton -m pytest tests/ [args...]
    python -m tritium.run_as_triton -c "import triton; print(triton.__version__)"
    python -m tritium.run_as_triton --path        # the folder to put first on PYTHONPATH

The program's own process gets the alias before its first line runs.  Processes it starts (a
compile worker, a test runner's workers) inherit ``PYTHONPATH`` with :data:`SHIM_PATH` first,
where a ``triton`` package installs the same alias on import.  A real Triton installed in the
environment is hidden only for the program run this way; nothing is installed or changed
outside it."""
from __future__ import annotations

import os
import runpy
import sys

from .triton_alias import SHIM_PATH, install_as_triton

USAGE = ("usage: python -m tritium.run_as_triton (script.py | -m module | -c code) [args...]\n"
         "       python -m tritium.run_as_triton --path")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    if argv[0] == "--path":
        print(SHIM_PATH)
        return 0
    if argv[0] in ("-m", "-c") and len(argv) < 2:
        print(USAGE, file=sys.stderr)
        return 2
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = SHIM_PATH + (os.pathsep + old if old else "")
    # on this process's path too (after the program's folder), ahead of any installed Triton:
    # PyTorch Inductor starts its compile workers with PYTHONPATH set to its parent's sys.path
    sys.path.insert(1, SHIM_PATH)
    install_as_triton()
    if argv[0] == "-m":
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c"] + argv[2:]
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})  # noqa: S102
    else:
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as `python script.py` would
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
