"""``tt.extern_elementwise``: calls of device-library functions (libdevice and relatives).

A call names its symbol per argument-type tuple (Triton's ``arg_type_symbol_dict``).  The TTIR
carries the symbol as written; each backend maps it to its own library at lowering time
(``TargetInfo.map_extern``) and reports a symbol it cannot map as an error at the call's line."""
from __future__ import annotations

import math

from ..language import dtypes as tl
from ..language.core import tensor
from ..ttir import ops as tt
from .builder import Builder, ir_type
from .semantic import _unwrap, binary_operands, broadcast_to_shape, cast, to_tensor, broadcast_shapes


def _key(types) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def extern_elementwise(lib_name: str, lib_path: str, args: list, table: dict, is_pure: bool,
                       builder: Builder, fn_name: str | None = None) -> tensor:
    if not table:
        raise ValueError("extern_elementwise needs a non-empty arg_type_symbol_dict")
    table = {tuple(tl.dtype(t) if isinstance(t, str) else t for t in k): v for k, v in table.items()}
    arity = len(next(iter(table)))
    name = fn_name or next(iter(table.values()))[0]
    args = [_unwrap(a) for a in args]
    if len(args) != arity:
        raise TypeError(f"{name} takes {arity} argument{'s' * (arity != 1)}, got {len(args)}")
    vals = [to_tensor(a, builder) for a in args]
    types = tuple(v.type.scalar for v in vals)
    if types not in table and arity > 1:
        # the arguments' common type (Triton's arithmetic check), then look again
        common = vals[0]
        for v in vals[1:]:
            common, _ = binary_operands(common, v, builder)
        vals = [cast(v, common.type.scalar, builder) for v in vals]
        types = tuple(v.type.scalar for v in vals)
    if types not in table:
        wanted = ", ".join(_key(k) for k in table)
        hint = "; cast the arguments with .to(tl.float32)" if any(t in (tl.float16, tl.bfloat16) for t in types) else ""
        raise TypeError(f"{name} has no version for arguments {_key(types)}; it accepts {wanted}{hint}")
    symbol, ret = table[types]
    ret = tl.dtype(ret) if isinstance(ret, str) else ret
    shape = None
    for v in vals:
        if v.type.is_block():
            shape = list(v.type.shape) if shape is None else _broadcast(shape, list(v.type.shape))
    if shape is not None:
        vals = [broadcast_to_shape(v, shape, builder) for v in vals]
        ret_ty = tl.block_type(ret, shape)
    else:
        ret_ty = ret
    op = tt.ExternElementwiseOp([v.handle for v in vals], ir_type(ret_ty), symbol, lib_name or "", lib_path or "",
                                bool(is_pure))
    return tensor(builder.create(op), ret_ty)


def _broadcast(a: list, b: list) -> list:
    return broadcast_shapes(a, b)


def inline_asm_elementwise(asm: str, constraints: str, args: list, dtype, is_pure: bool, pack: int,
                           builder: Builder):
    """``tl.inline_asm_elementwise``: the arguments broadcast together; one result per dtype."""
    asm, constraints, pack = _unwrap(asm), _unwrap(constraints), int(_unwrap(pack))
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise TypeError("inline_asm_elementwise needs the assembly and the constraints as strings")
    if pack < 1:
        raise ValueError(f"inline_asm_elementwise: pack must be at least 1, got {pack}")
    dtypes = list(_unwrap(dtype)) if isinstance(_unwrap(dtype), (list, tuple)) else [_unwrap(dtype)]
    dtypes = [_unwrap(d) for d in dtypes]
    vals = [to_tensor(a, builder) for a in (_unwrap(args) or [])]
    shape = None
    for v in vals:
        if v.type.is_block():
            shape = list(v.type.shape) if shape is None else _broadcast(shape, list(v.type.shape))
    if shape is not None:
        vals = [broadcast_to_shape(v, shape, builder) for v in vals]
        if shape and math.prod(shape) % pack:
            raise ValueError(f"inline_asm_elementwise: pack={pack} does not divide the {shape} block")
    types = [tl.block_type(d, shape) if shape is not None else d for d in dtypes]
    op = builder.insert(tt.ElementwiseInlineAsmOp([v.handle for v in vals], [ir_type(t) for t in types], asm,
                                                  constraints, bool(_unwrap(is_pure)), pack))
    outs = [tensor(r, t) for r, t in zip(op.results, types)]
    return outs[0] if len(outs) == 1 and not isinstance(_unwrap(dtype), (list, tuple)) else tuple(outs)
