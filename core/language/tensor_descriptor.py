"""Tensor descriptors: ``tl.make_tensor_descriptor`` and the ``desc.load`` / ``desc.store`` of
Triton's TMA-style API.

A descriptor is a compile-time object holding a base pointer, the tensor's shape and strides
(run-time values) and a block shape (constexprs).  Its accesses are emitted as block-pointer
loads and stores with every dimension boundary-checked, so each backend runs them through the
path block pointers already take (NVIDIA: ``rewrite_tensor_pointer`` to masked vector loads);
lanes outside the tensor read zero (or NaN with ``padding_option="nan"``) and stores there are
dropped.  A host-side ``tritium.tools.tensor_descriptor.TensorDescriptor`` passed as a kernel
argument arrives as such an object (``tritium.runtime.descriptors``); where the backend's plugin
built a hardware descriptor for it (NVIDIA sm_90: a TMA tensor map), the descriptor also holds a
pointer to that map and its accesses become ``tt.descriptor_load`` / ``tt.descriptor_store``,
which that plugin lowers."""
from __future__ import annotations

from .core import _unwrap_if_constexpr as _u, builtin, constexpr, tensor


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class tensor_descriptor:
    """What ``tl.make_tensor_descriptor`` returns (inside a kernel)."""

    def __init__(self, base: tensor, shape: list, strides: list, block_shape: list, padding_option: str = "zero",
                 tensor_map: tensor | None = None):
        self.base = base
        self.tensor_map = tensor_map
        self.shape = list(shape)
        self.strides = list(strides)
        self.block_shape = [constexpr(b) for b in block_shape]
        self.padding_option = padding_option

    @property
    def dtype(self):
        return self.base.type.scalar.element_ty

    @property
    def ndim(self) -> int:
        return len(self.block_shape)

    def _block_ptr(self, offsets, builder):
        from . import functions as F
        offsets = list(_u(offsets))
        if len(offsets) != self.ndim:
            raise ValueError(f"a rank-{self.ndim} tensor descriptor needs {self.ndim} offsets, got {len(offsets)}")
        order = tuple(range(self.ndim - 1, -1, -1))
        return F.make_block_ptr(self.base, self.shape, self.strides, offsets, [b.value for b in self.block_shape],
                                order, _builder=builder)

    @builtin
    def load(self, offsets, _builder=None):
        """The block at ``offsets`` (one per dimension); elements outside the tensor read zero
        (NaN with ``padding_option="nan"``)."""
        from . import functions as F
        if self.tensor_map is not None:
            from ..frontend.semantic_descriptor import descriptor_load
            return descriptor_load(self.tensor_map, self.dtype, [b.value for b in self.block_shape],
                                   list(_u(offsets)), _builder)
        return F.load(self._block_ptr(offsets, _builder), boundary_check=tuple(range(self.ndim)),
                      padding_option=self.padding_option, _builder=_builder)

    @builtin
    def store(self, offsets, value, _builder=None):
        """Store ``value`` (the block's shape) at ``offsets``; elements outside the tensor are dropped."""
        from . import functions as F
        if self.tensor_map is not None:
            from ..frontend.semantic_descriptor import descriptor_store
            return descriptor_store(self.tensor_map, self.dtype, [b.value for b in self.block_shape],
                                    list(_u(offsets)), _u(value), _builder)
        value = F.cast(value, self.dtype, _builder=_builder) if isinstance(_u(value), tensor) else value
        return F.store(self._block_ptr(offsets, _builder), value, boundary_check=tuple(range(self.ndim)),
                       _builder=_builder)

    def __repr__(self) -> str:
        return f"tensor_descriptor<{self.dtype}, block {[b.value for b in self.block_shape]}>"


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero", _tensor_map=None, _builder=None):
    """A descriptor of the tensor at ``base`` with ``shape`` and ``strides`` (elements; the last
    stride must be 1), accessed in blocks of ``block_shape`` (powers of two).  ``_tensor_map`` is
    for host descriptors only: a pointer to the backend's hardware descriptor of the same tensor (or
    its address as an integer)."""
    base = _u(base)
    if not isinstance(base, tensor) or not base.type.scalar.is_ptr():
        raise TypeError(f"make_tensor_descriptor expects a pointer base, got {base!r}")
    shape, strides = list(_u(shape)), list(_u(strides))
    block = [int(_u(b)) for b in _u(block_shape)]
    if not len(shape) == len(strides) == len(block) or not 1 <= len(block) <= 5:
        raise ValueError(f"make_tensor_descriptor needs shape, strides and block_shape of one rank (1 to 5), got "
                         f"{len(shape)}, {len(strides)} and {len(block)}")
    bad = [b for b in block if not _is_pow2(b)]
    if bad:
        raise ValueError(f"block_shape entries must be powers of two, got {block}")
    last = _u(strides[-1])
    if not isinstance(last, tensor) and last != 1:
        raise ValueError(f"the last dimension of a tensor descriptor must be contiguous (stride 1), got stride {last}")
    padding = _u(padding_option)
    if padding not in ("zero", "nan"):
        raise ValueError(f"padding_option must be 'zero' or 'nan', got {padding!r}")
    tensor_map = _u(_tensor_map)
    if isinstance(tensor_map, tensor) and tensor_map.type.is_int() and not tensor_map.type.is_block() \
            and tensor_map.type.int_bitwidth == 64 and _builder is not None:
        # the map's device address as an integer argument (what host-descriptor launches pass)
        from ..frontend import semantic
        from .dtypes import pointer_type, uint8
        tensor_map = semantic.cast(tensor_map, pointer_type(uint8), _builder)
    if tensor_map is not None and not (isinstance(tensor_map, tensor) and tensor_map.type.is_ptr()):
        raise TypeError(f"make_tensor_descriptor: _tensor_map must be a pointer or its 64-bit address, "
                        f"got {tensor_map!r}")
    return tensor_descriptor(base, shape, strides, block, padding, tensor_map)


@builtin
def load_tensor_descriptor(desc, offsets, _builder=None):
    return _u(desc).load(offsets, _builder=_builder)


@builtin
def store_tensor_descriptor(desc, offsets, value, _builder=None):
    return _u(desc).store(offsets, value, _builder=_builder)
