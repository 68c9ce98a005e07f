"""``tritium.tools.tensor_descriptor.TensorDescriptor``: a host-side tensor descriptor, passed to
a kernel as one argument and seen there as a ``tl.tensor_descriptor`` (``desc.load(...)``,
``desc.store(...)``).  At launch it expands into the base pointer, the shape and the strides
(``tritium.runtime.descriptors``); the block shape and padding specialise the kernel."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, List


def _strides_in_elements(t) -> list[int]:
    torch = sys.modules.get("torch")
    if torch is not None and type(t) is torch.Tensor:  # the common case, first: no further lookups
        return list(t.stride())
    from ..runtime.specialize import TensorWrapper
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
        self.block_shape = block = list(map(int, self.block_shape))
        rank = len(shape)
        if not 1 <= rank <= 5 or len(strides) != rank or len(block) != rank:
            raise ValueError(f"TensorDescriptor: shape, strides and block_shape need one rank (1 to 5), got "
                             f"{shape}, {strides}, {block}")
        for b in block:
            if b <= 0 or b & (b - 1):
                raise ValueError(f"TensorDescriptor: block_shape entries must be powers of two, got {block}")
        if strides[-1] != 1:
            raise ValueError(f"TensorDescriptor: the last dimension must be contiguous (stride 1), got {strides}")
        if min(shape) <= 0:
            raise ValueError(f"TensorDescriptor: shape must be positive, got {shape}")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"TensorDescriptor: padding must be 'zero' or 'nan', got {self.padding!r}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: List[int], padding: str = "zero") -> "TensorDescriptor":
        """A descriptor of all of ``tensor`` (torch tensor, numpy/CuPy array) in ``block_shape`` blocks."""
        return TensorDescriptor(tensor, list(tensor.shape), _strides_in_elements(tensor), list(block_shape), padding)
