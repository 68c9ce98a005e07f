"""The pass interface and pass manager shared by TTIR and TTGIR pipelines.

A pass is any object with a ``name`` and a ``run(module)`` method that rewrites the module in
place.  ``PassManager(name, passes).run(module)`` runs them in order and adds the debugging
hooks every pipeline wants, driven by ``tritium.knobs`` (each backed by an environment variable):

``TRITIUM_VERIFY_EACH=1``   verify the module after every pass (on by default under pytest)
``TRITIUM_DUMP_IR=1``       print the IR before and after every pass to stderr; any other value
                            restricts the dump to kernels whose name contains it
``TRITIUM_DUMP_IR_DIR=dir`` write the dumps as files under ``dir`` instead of stderr
``TRITIUM_PASS_TIMING=1``   print a per-pass timing table at the end of each pipeline run

A pass that raises is reported as a :class:`PassError` naming the pass and the kernel; the
caller (the compiler driver) turns it into a user-facing compiler error.
"""
from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, runtime_checkable

from xdsl.dialects.builtin import ModuleOp
from . import knobs
from .ttir.ir import print_module


@runtime_checkable
class Pass(Protocol):
    name: str

    def run(self, module: ModuleOp) -> None: ...


class PassError(RuntimeError):
    """An internal error raised inside a pass, annotated with where it happened."""

    def __init__(self, pass_name: str, kernel: str, pipeline: str, cause: BaseException):
        self.pass_name, self.kernel, self.pipeline, self.cause = pass_name, kernel, pipeline, cause
        super().__init__(f"pass '{pass_name}' ({pipeline} pipeline) failed on kernel '{kernel}': "
                         f"{type(cause).__name__}: {cause}")


def _knobs():
    return knobs


def verify_each_default() -> bool:
    # knobs.compilation.verify_each: on by default while pytest runs a test, off elsewhere
    return knobs.compilation.verify_each


def kernel_names(module: ModuleOp) -> list[str]:
    """Names of the public functions of ``module`` (the kernels), else of all functions."""
    funcs = [op for op in module.body.block.ops if "sym_name" in op.properties]
    public = [f for f in funcs if getattr(f.properties.get("sym_visibility"), "data", "public") == "public"]
    return [f.properties["sym_name"].data for f in (public or funcs)]


def _print(module: ModuleOp) -> str:

    return print_module(module)


class PassManager:
    """Runs ``passes`` in order over a module, with verification, dumps and timing on request."""

    def __init__(self, name: str, passes: Iterable[Pass], *, verify_each: bool | None = None):
        self.name = name
        self.passes: list[Pass] = list(passes)
        self.verify_each = verify_each_default() if verify_each is None else verify_each
        self.timings: list[tuple[str, float]] = []

    def add(self, p: Pass) -> "PassManager":
        self.passes.append(p)
        return self

    def run(self, module: ModuleOp) -> ModuleOp:
        kernel = ",".join(kernel_names(module)) or "<module>"
        dump = self._dump_target(kernel)
        self.timings = []
        for idx, p in enumerate(self.passes):
            if dump:
                self._dump(dump, kernel, idx, p.name, "before", module)
            start = time.perf_counter()
            try:
                p.run(module)
                if self.verify_each:
                    module.verify()
            except PassError:
                raise
            except Exception as exc:  # noqa: BLE001 - re-raised with the pass and kernel named
                raise PassError(p.name, kernel, self.name, exc) from exc
            self.timings.append((p.name, time.perf_counter() - start))
            if dump:
                self._dump(dump, kernel, idx, p.name, "after", module)
        if _knobs().compilation.pass_timing:
            sys.stderr.write(self.timing_report(kernel))
        return module

    def timing_report(self, kernel: str = "") -> str:
        total = sum(t for _, t in self.timings) or 1e-12
        lines = [f"=== {self.name} pipeline timing ({kernel}) ===",
                 f"{'pass':<28}{'ms':>10}{'%':>8}"]
        for name, t in self.timings:
            lines.append(f"{name:<28}{t * 1e3:>10.3f}{100 * t / total:>7.1f}%")
        lines.append(f"{'total':<28}{total * 1e3:>10.3f}{100.0:>7.1f}%")
        return "\n".join(lines) + "\n"

    @staticmethod
    def _dump_target(kernel: str) -> str | None:
        """``"stderr"``, a directory, or None when this kernel is not dumped."""
        knobs = _knobs()
        sel, out_dir = knobs.compilation.dump_ir, knobs.cache.dump_dir  # False, True or a name's part
        if sel is False and knobs.compilation.knob_descriptors["dump_ir"].raw(knobs.compilation) is not None:
            return None  # dumping turned off explicitly
        if not sel and not out_dir:
            return None
        if isinstance(sel, str) and sel not in kernel:
            return None
        return out_dir or "stderr"

    def _dump(self, target: str, kernel: str, idx: int, pass_name: str, when: str, module: ModuleOp) -> None:
        text = _print(module)
        if target == "stderr":
            sys.stderr.write(f"// -----// IR Dump {when.capitalize()} {pass_name} "
                             f"({self.name}) on {kernel} //----- //\n{text}\n")
            return
        safe = re.sub(r"[^\w.-]", "_", kernel)
        path = Path(target) / f"{safe}.{self.name}.{idx:02d}.{pass_name}.{when}.mlir"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
