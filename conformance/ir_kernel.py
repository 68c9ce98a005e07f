"""A conformance kernel given as IR text instead of a ``@jit`` function.

:class:`IRKernel` holds a function from the target's warp size to TTGIR (or TTIR) text, so one case
lays out its tensors for 32- and 64-lane warps alike, and answers the runner as a ``@jit`` kernel
does: ``kernel[grid](*args, backend=...)`` compiles the text with ``tritium.compile`` for the
backend's current target and launches it; ``kernel.warmup(*args, grid=, backend=, target=)``
compiles only.  ``arg_names`` are the ``tt.func`` parameters, in order."""
from __future__ import annotations

from typing import Callable


class IRKernel:
    def __init__(self, name: str, text: Callable[[int], str], arg_names: list[str], ext: str = "ttgir",
                 warp_size: int = 32):
        self.__name__ = name
        self.warp_size = warp_size  # the text a backend without warps (the interpreter) reads
        self.make_text = text
        self.arg_names = list(arg_names)
        self.ext = ext

    def text(self, warp_size: int) -> str:
        return self.make_text(warp_size)

    def compile(self, backend: str | None = None, target=None):
        import tritium
        from tritium.hooks import manager
        from tritium.compiler import IRSource
        if target is None:
            target = manager.select_backend(backend, ()).default_target()
        elif isinstance(target, str):
            target = manager.parse_target(target)
        # a backend without warps (the interpreter: warp size 1) reads the kernel's own text
        warp_size = target.warp_size if target.warp_size >= 32 else self.warp_size
        return tritium.compile(IRSource(self.text(warp_size), ext=self.ext), target=target)

    def __getitem__(self, grid):
        def run(*args, backend: str | None = None, **kwargs):
            if kwargs:
                raise TypeError(f"{self.__name__}: an IR kernel takes its arguments by position, got {sorted(kwargs)}")
            kernel = self.compile(backend)
            kernel[grid](*args)
            return kernel
        return run

    def warmup(self, *args, grid=None, backend: str | None = None, target=None, **kwargs):
        return self.compile(backend, target)

    def __repr__(self) -> str:
        return f"IRKernel({self.__name__})"
