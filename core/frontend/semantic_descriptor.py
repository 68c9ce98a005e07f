"""Tensor-map accesses (``tt.descriptor_load`` / ``tt.descriptor_store``) of a tensor descriptor
that carries a backend's hardware descriptor (``tritium.runtime.descriptors``)."""
from __future__ import annotations

from ..language import dtypes as tl
from ..language.core import tensor
from ..ttir import descriptor_ops as dops
from .builder import Builder, ir_type
from .semantic import broadcast_to_shape, cast, to_tensor


def _indices(offsets, rank: int, builder: Builder) -> list:
    if len(offsets) != rank:
        raise ValueError(f"a rank-{rank} tensor descriptor needs {rank} offsets, got {len(offsets)}")
    return [cast(to_tensor(o, builder), tl.int32, builder).handle for o in offsets]


def descriptor_load(tensor_map: tensor, elt: tl.dtype, block_shape: list[int], offsets, builder: Builder) -> tensor:
    ty = tl.block_type(elt, list(block_shape))
    op = dops.DescriptorLoadOp(tensor_map.handle, _indices(offsets, len(block_shape), builder), ir_type(ty))
    return tensor(builder.create(op), ty)


def descriptor_store(tensor_map: tensor, elt: tl.dtype, block_shape: list[int], offsets, value, builder: Builder):
    value = cast(to_tensor(value, builder), elt, builder)
    value = broadcast_to_shape(value, list(block_shape), builder)
    builder.insert(dops.DescriptorStoreOp(tensor_map.handle, _indices(offsets, len(block_shape), builder),
                                          value.handle))
