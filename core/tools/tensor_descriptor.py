"""``tritium.tools.tensor_descriptor.TensorDescriptor``: a host-side tensor descriptor, passed to
a kernel as one argument and seen there as a ``tl.tensor_descriptor`` (``desc.load(...)``,
``desc.store(...)``).  At launch it expands into the base pointer, the shape and the strides
(``tritium.runtime.descriptors``); the block shape and padding specialise the kernel."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, List
from ..runtime.specialize import TensorWrapper


def _strides_in_elements(t) -> list[int]:
    torch = sys.modules.get("torch")
    if torch is not None and type(t) is torch.Tensor:  # the common case, first: no further lookups
        return list(t.stride())
    if isinstance(t, TensorWrapper):  # tritium.reinterpret: the strides are the wrapped array's
        t = t.base
    stride = getattr(t, "stride", None)
    if callable(stride):  # torch
        return [int(s) for s in stride()]
    strides = getattr(t, "strides", None)  # numpy / CuPy: bytes
    if strides is not None:
        item = t.dtype.itemsize
        return [int(s) // item for s in strides]
    cai = getattr(t, "__cuda_array_interface__", None)
    if cai is not None and cai.get("strides") is None:  # C-contiguous device memory
        out, n = [], 1
        for s in reversed(cai["shape"]):
            out.insert(0, n)
            n *= int(s)
        return out
    raise TypeError(f"cannot read the strides of a {type(t).__name__}")


class TensorDescriptorError(ValueError, AssertionError):
    """A host ``TensorDescriptor`` that cannot describe its tensor.  It is a ``ValueError`` and,
    as code written for Triton expects of these checks, an ``AssertionError``."""


def _is_floating(t) -> bool:
    dt = getattr(t, "dtype", None)
    flag = getattr(dt, "is_floating_point", None)  # torch
    if isinstance(flag, bool):
        return flag
    kind = getattr(dt, "kind", None)  # numpy / CuPy
    if kind is not None:
        return kind == "f" or getattr(dt, "name", "").startswith(("bfloat16", "float8"))
    return True  # unknown: leave it to the kernel's compile-time check


@dataclass
class TensorDescriptor:
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"

    def __post_init__(self):
        # every launch through a descriptor made per call (as Triton's tutorials do) pays for
        # this: plain loops, no generators
        self.shape = shape = list(map(int, self.shape))
        self.strides = strides = list(map(int, self.strides))
        block = list(self.block_shape)
        rank = len(shape)
        where = f"TensorDescriptor(shape={shape}, strides={strides}, block_shape={block})"
        if len(strides) != rank or len(block) != rank:
            raise TensorDescriptorError(f"rank mismatch: {where}: shape, strides and block_shape need one rank")
        if rank == 0:
            raise TensorDescriptorError(f"rank must not be zero: {where}")
        if rank > 5:
            raise TensorDescriptorError(f"rank cannot be more than 5: {where} has rank {rank}")
        for i, b in enumerate(block):
            if not isinstance(b, int) or isinstance(b, bool):
                if hasattr(b, "value") and isinstance(b.value, int):  # a tl.constexpr
                    b = block[i] = b.value
                else:
                    raise TensorDescriptorError(f"{where}: Shape element {i} of block_shape must be an int, got "
                                                f"{type(b).__name__}")
            if b <= 0 or b & (b - 1):
                raise TensorDescriptorError(f"{where}: Shape element {i} must be a power of 2 (block_shape entries "
                                            f"must be powers of two), got {b}")
        self.block_shape = block
        for s in shape:
            if s <= 0:
                raise TensorDescriptorError(f"shape must be positive: {where}")
        if strides[-1] != 1:
            raise TensorDescriptorError(f"Last dimension must be contiguous (stride 1): {where}")
        if self.padding not in ("zero", "nan"):
            raise TensorDescriptorError(f"Illegal value for padding: {self.padding!r} (expected 'zero' or 'nan')")
        if self.padding == "nan" and not _is_floating(self.base):
            raise TensorDescriptorError("Padding option `nan` is only supported for floating point tensors, got "
                                        f"{getattr(self.base, 'dtype', type(self.base).__name__)}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: List[int], padding: str = "zero") -> "TensorDescriptor":
        """A descriptor of all of ``tensor`` (torch tensor, numpy/CuPy array) in ``block_shape`` blocks."""
        return TensorDescriptor(tensor, list(tensor.shape), _strides_in_elements(tensor), list(block_shape), padding)
