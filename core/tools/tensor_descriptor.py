"""``tritium.tools.tensor_descriptor.TensorDescriptor``: a host-side tensor descriptor, passed to
a kernel as one argument and seen there as a ``tl.tensor_descriptor`` (``desc.load(...)``,
``desc.store(...)``).  At launch it expands into the base pointer, the shape and the strides
(``tritium.runtime.descriptors``); the block shape and padding specialise the kernel."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List


def _strides_in_elements(t) -> list[int]:
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
        self.shape = [int(s) for s in self.shape]
        self.strides = [int(s) for s in self.strides]
        self.block_shape = [int(b) for b in self.block_shape]
        rank = len(self.shape)
        if not 1 <= rank <= 5 or len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"TensorDescriptor: shape, strides and block_shape need one rank (1 to 5), got "
                             f"{self.shape}, {self.strides}, {self.block_shape}")
        if any(b <= 0 or b & (b - 1) for b in self.block_shape):
            raise ValueError(f"TensorDescriptor: block_shape entries must be powers of two, got {self.block_shape}")
        if self.strides[-1] != 1:
            raise ValueError(f"TensorDescriptor: the last dimension must be contiguous (stride 1), got {self.strides}")
        if any(s <= 0 for s in self.shape):
            raise ValueError(f"TensorDescriptor: shape must be positive, got {self.shape}")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"TensorDescriptor: padding must be 'zero' or 'nan', got {self.padding!r}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: List[int], padding: str = "zero") -> "TensorDescriptor":
        """A descriptor of all of ``tensor`` (torch tensor, numpy/CuPy array) in ``block_shape`` blocks."""
        return TensorDescriptor(tensor, list(tensor.shape), _strides_in_elements(tensor), list(block_shape), padding)
