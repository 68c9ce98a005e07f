"""What ``kernel[grid](...)`` means, shared by ``JITFunction``, ``Autotuner`` and ``Heuristics``."""
from __future__ import annotations

from typing import Any


def grid3(grid) -> tuple[int, int, int]:
    """A launch grid as three ints: an int, or a tuple of one to three ints, padded with 1s."""
    if isinstance(grid, int):
        return (grid, 1, 1)
    g = tuple(int(x) for x in grid)
    if not 1 <= len(g) <= 3:
        raise ValueError(f"grid must have 1 to 3 dimensions, got {grid!r}")
    return g + (1,) * (3 - len(g))


class KernelInterface:
    """Subclasses implement ``run(*args, grid, warmup, **kwargs)``; ``kernel[grid](*args)`` calls it.

    ``grid`` is a tuple of up to three ints or a callable ``grid(meta) -> tuple`` receiving the
    dict of all arguments by name (constexprs and launch options included)."""

    def run(self, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    def __getitem__(self, grid: Any):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def warmup(self, *args: Any, grid: Any = (1,), **kwargs: Any) -> Any:
        """Compile for these arguments without launching; returns the compiled kernel."""
        return self.run(*args, grid=grid, warmup=True, **kwargs)
