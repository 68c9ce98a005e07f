"""What ``kernel[grid](...)`` means, shared by ``JITFunction``, ``Autotuner`` and ``Heuristics``."""
from __future__ import annotations

import operator
from typing import Any


def _grid_entry(x):
    """``x`` as a launch grid entry (an int, a numpy integer, anything with ``__index__`` that is
    not a bool), or None."""
    if isinstance(x, bool) or type(x).__name__ == "bool_":
        return None
    if type(x) is int:
        return x
    try:
        return operator.index(x)
    except TypeError:
        return None


def grid3(grid, kernel: str | None = None, grid_fn=None) -> tuple[int, int, int]:
    """A launch grid as three ints: an int, or a tuple of one to three ints, padded with 1s.

    Every entry must be a non-negative integer (zero launches nothing); a float, a string, a bool
    or a negative entry is an error naming ``kernel`` and the grid (and ``grid_fn``, the grid
    function that returned it)."""
    if type(grid) is int and grid >= 0:
        return (grid, 1, 1)
    who = f"{kernel}: " if kernel else ""
    what = f"the launch grid {grid!r}"
    if grid_fn is not None:
        what += f" returned by the grid function {getattr(grid_fn, '__qualname__', grid_fn)!r}"
    items = (grid,) if isinstance(grid, int) or _grid_entry(grid) is not None else grid
    if isinstance(items, (str, bytes)):
        items = None
    try:
        items = tuple(items)
    except TypeError:  # None, a float, a string
        raise TypeError(f"{who}{what} is not a tuple of 1 to 3 non-negative ints (got a {type(grid).__name__})") from None
    if not 1 <= len(items) <= 3:
        raise ValueError(f"{who}{what} must have 1 to 3 dimensions, got {len(items)}")
    g = []
    for axis, x in enumerate(items):
        v = _grid_entry(x)
        if v is None:
            hint = " (use triton.cdiv(n, BLOCK) or // for a program count)" if isinstance(x, float) else ""
            raise TypeError(f"{who}{what} has a non-integer entry {x!r} ({type(x).__name__}) on axis {axis}: "
                            f"grid entries are non-negative ints{hint}")
        if v < 0:
            raise ValueError(f"{who}{what} has a negative entry {v} on axis {axis}: grid entries are "
                             f"non-negative ints (0 launches nothing)")
        g.append(v)
    return tuple(g) + (1,) * (3 - len(g))


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
