"""LLVM's targets and assembly printers, initialised once per process for every plugin that emits
code through llvmlite (the NVIDIA and AMD plugins call :func:`initialize_llvm` before making a
target machine)."""
from __future__ import annotations

import threading

_lock = threading.Lock()
_done = False


def initialize_llvm() -> None:
    global _done
    with _lock:
        if not _done:
            import llvmlite.binding as llvm
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            _done = True
