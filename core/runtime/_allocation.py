"""Global scratch memory for kernels that need it at launch: ``tritium.set_allocator``.

Some kernels need a piece of global memory of their own per launch: a backend that builds a
hardware descriptor inside the kernel (``tl.make_tensor_descriptor`` lowered to NVIDIA's tensor
maps writes each one into 128 bytes of global memory per program) says so in the compiled
kernel's metadata (``global_scratch_size`` bytes per program, aligned to
``global_scratch_align``), and the launcher asks the allocator set here for
``grid size x num_ctas x global_scratch_size`` bytes before each launch::

    def alloc_fn(size: int, alignment: int, stream: int | None):
        return torch.empty(size, dtype=torch.int8, device="cuda")

    tritium.set_allocator(alloc_fn)

The allocator returns any buffer with ``data_ptr()`` (a torch tensor, a CuPy array's wrapper);
the launcher holds it until the launch has been queued.  Kernels that need no scratch never call
it, and the interpreter needs none (its descriptors are plain Python values).  Where none was set
and the process uses torch with a GPU, the scratch is a ``torch.empty`` on the launch's device
(torch's stream-ordered caching allocator, what a Triton user's ``alloc_fn`` usually is); without
either, a launch that needs scratch raises a ``RuntimeError`` that names ``set_allocator``.

The allocator is a context variable: a thread or ``contextvars`` context that sets its own sees
its own."""
from __future__ import annotations

import sys
from contextvars import ContextVar
from typing import Optional, Protocol


class Buffer(Protocol):
    def data_ptr(self) -> int:
        ...


class Allocator(Protocol):
    def __call__(self, size: int, alignment: int, stream: Optional[int]) -> Buffer:
        ...


class NullAllocator:
    """The allocator in place until ``set_allocator`` is called: asking it for memory is an error."""

    def __call__(self, size: int, alignment: int, stream: Optional[int]) -> Buffer:
        raise RuntimeError(
            f"this kernel needs {size} bytes of global scratch memory at launch (for example for the "
            "tensor descriptors that tl.make_tensor_descriptor builds on the device), but no allocator "
            "is set: call triton.set_allocator(fn) first, with fn(size, alignment, stream) returning a "
            "buffer with data_ptr(), e.g. torch.empty(size, dtype=torch.int8, device='cuda')")


_NULL_ALLOCATOR = NullAllocator()

_allocator: ContextVar = ContextVar("_allocator", default=_NULL_ALLOCATOR)


def set_allocator(allocator: Allocator) -> None:
    """Set the function that launches call for a kernel's global scratch memory:
    ``allocator(size, alignment, stream)`` returning a buffer with ``data_ptr()``."""
    if allocator is None:
        allocator = _NULL_ALLOCATOR
    elif not callable(allocator):
        raise TypeError(f"set_allocator expects a callable (size, alignment, stream) -> buffer, "
                        f"got {type(allocator).__name__}")
    _allocator.set(allocator)


def get_allocator() -> Allocator:
    """The allocator in force in this context (``NullAllocator`` when none was set)."""
    return _allocator.get()


class _AllocatorSlot:
    """A settable allocator with the context variable's ``get``/``set`` (the profiler's scratch)."""

    def __init__(self, allocator: Allocator) -> None:
        self._allocator = allocator

    def get(self) -> Allocator:
        return self._allocator

    def set(self, allocator: Allocator) -> None:
        self._allocator = allocator

    def __call__(self, size: int, alignment: int, stream: Optional[int]) -> Buffer:
        return self._allocator(size, alignment, stream)


_profile_allocator = _AllocatorSlot(_NULL_ALLOCATOR)


def set_profile_allocator(allocator: Optional[Allocator]) -> None:
    """Set the allocator of a profiler's per-launch scratch memory (None: none)."""
    _profile_allocator.set(allocator if allocator is not None else _NULL_ALLOCATOR)


def _torch_scratch(size: int, device: int | None):
    """``size`` bytes from torch's allocator on GPU ``device``, or None where the process has not
    imported torch or torch has no GPU (the scratch must not be what pulls torch in)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return torch.empty(size, dtype=torch.int8, device=f"cuda:{device}" if device is not None else "cuda")


def allocate_scratch(size_per_program: int, alignment: int, grid_size: int, num_ctas: int, stream,
                     allocator=None, device: int | None = None):
    """The scratch buffer of one launch (None when the kernel needs none): ``grid_size x num_ctas x
    size_per_program`` bytes from the allocator in force (none set: torch's, on ``device``)."""
    if not size_per_program:
        return None
    size = grid_size * num_ctas * size_per_program
    fn = (allocator or _allocator).get()
    if fn is _NULL_ALLOCATOR:
        buf = _torch_scratch(size, device)
        if buf is not None:
            return buf
    return fn(size, alignment, stream)


class ScratchLauncher:
    """The launch of a kernel that takes the launch's global scratch as one more pointer, last
    (``allocate-global-scratch``): each launch asks the allocator in force for ``blocks x size``
    bytes (``size`` per program and CTA) and passes their address to ``inner``, the backend's
    launcher of the kernel with that extra pointer; the buffer is held until the launch is queued
    (the allocator's memory, a stream-ordered pool such as torch's, keeps it for the kernel)."""

    __slots__ = ("inner", "size", "align", "num_ctas", "device")

    def __init__(self, inner, size: int, align: int, num_ctas: int, device) -> None:
        self.inner = inner
        self.size = size
        self.align = align
        self.num_ctas = num_ctas
        self.device = device

    def __call__(self, grid, stream, args) -> None:
        buf = allocate_scratch(self.size, self.align, grid[0] * grid[1] * grid[2], self.num_ctas, stream,
                               device=self.device)
        self.inner(grid, stream, [*args, buf])

    def make_direct(self, driver, device: int, arity: int, positions: tuple):
        """The launch fast path's form (``Driver.make_direct_launcher``'s ``direct(grid, v0, ...)``,
        ``grid`` a tuple of 1 to 3 ints): the backend's direct launcher of ``inner`` with the
        scratch's address as one more value, after the ``arity`` the binder passes; None where
        the backend has no direct form for ``inner``."""
        inner = driver.make_direct_launcher(self.inner, device, arity + 1, (*positions, arity))
        if inner is None:
            return None
        size, align, num_ctas = self.size, self.align, self.num_ctas
        stream_of = driver.stream_and_current_device

        def direct(grid, *values):
            blocks = 1
            for g in grid:
                blocks *= g
            buf = allocate_scratch(size, align, blocks, num_ctas, stream_of(device)[0], device=device)
            inner(grid, *values, buf.data_ptr())
        direct.params = getattr(inner, "params", None)
        return direct


def make_direct_launcher(driver, launcher, device: int, arity: int, positions: tuple):
    """``driver.make_direct_launcher`` for ``launcher``, a ``ScratchLauncher`` included."""
    if type(launcher) is ScratchLauncher:
        return launcher.make_direct(driver, device, arity, positions)
    return driver.make_direct_launcher(launcher, device, arity, positions)
