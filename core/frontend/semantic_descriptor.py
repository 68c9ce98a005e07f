"""Tensor-map accesses (``tt.descriptor_load`` / ``tt.descriptor_store``) of a tensor descriptor
that carries a backend's hardware descriptor: one the host built (``tritium.runtime.descriptors``),
or one the kernel builds (:func:`device_tensor_map`, ``tt.make_tensor_descriptor``)."""
from __future__ import annotations

from ..language import dtypes as tl
from ..language.core import tensor
from ..ttir import descriptor_ops as dops
from .builder import Builder, ir_type
from .semantic import broadcast_to_shape, cast, to_tensor
from ..hooks.manager import backend_for_target_or_none
from ..ttgir.analysis.axis_info import PartialAxisInfo


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


def _known_multiple(v, facts: PartialAxisInfo, scale: int) -> int:
    """What the scalar ``v`` (a tensor, or a plain int) times ``scale`` is known to be a multiple of
    (0 for a constant zero or a negative constant: nothing a stride may be)."""
    if isinstance(v, tensor):
        info = facts.get(v.handle)
        if info.constant is not None:
            return info.constant * scale if info.constant > 0 else 0
        return info.divisibility[0] * scale
    return int(v) * scale if int(v) > 0 else 0


def device_tensor_map(base: tensor, shape: list, strides: list, block_shape: list[int], padding: str,
                      builder: Builder) -> tensor | None:
    """The hardware descriptor the kernel builds for ``tl.make_tensor_descriptor(base, shape,
    strides, block_shape, padding)`` (a ``tt.make_tensor_descriptor``, its map's address), or
    None: the backend declines (``tritium_device_tensor_descriptor``), the last stride is not
    known to be 1, or the base address or an outer stride is not known to have the alignment it
    asks for (the descriptor's accesses then
    stay block-pointer loads and stores, which take any address and stride)."""
    backend = backend_for_target_or_none(builder.target)
    if backend is None:
        return None
    elt = base.type.scalar.element_ty
    align = backend.device_tensor_descriptor(builder.target, builder.options, elt.name, tuple(block_shape), padding)
    if not align:
        return None
    facts = PartialAxisInfo()
    ebytes = max(elt.primitive_bitwidth // 8, 1)
    if _known_multiple(base, facts, 1) % align:
        return None
    last = strides[-1]
    if (facts.get(last.handle).constant if isinstance(last, tensor) else int(last)) != 1:
        return None  # the map's innermost dimension is contiguous
    if not all((m := _known_multiple(s, facts, ebytes)) and not m % align for s in strides[:-1]):
        return None
    shape_v = [cast(to_tensor(s, builder), tl.int32, builder).handle for s in shape]
    stride_v = [cast(to_tensor(s, builder), tl.int64, builder).handle for s in strides]
    map_ty = tl.pointer_type(tl.uint8)
    op = dops.MakeTensorDescriptorOp(base.handle, shape_v, stride_v, block_shape, padding, ir_type(map_ty))
    return tensor(builder.create(op), map_ty)
