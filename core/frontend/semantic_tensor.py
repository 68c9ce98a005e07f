"""Typing and IR emission for tensor creation, shape manipulation, dot, reductions, scans,
math functions and debugging ops."""
from __future__ import annotations

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, TensorType, i32
from xdsl.ir import Block, Region

from ..language import dtypes as tl
from ..language.core import tensor
from ..ttir import ops as tt, region_ops as rops
from ..ttir.float_formats import FP8_FORMATS
from ..ttir.mlir_ops import AssumeOp, BarrierOp
from xdsl.dialects import math as xmath
from .builder import Builder, ir_type
from . import semantic as _sem
from .semantic import (_unwrap, and_, binary_operands, bitcast, broadcast_to_shape, broadcast_values, cast, full,
                       splat, to_tensor)
from .semantic import add, warn_at_user_line


def _ints(seq, what: str) -> list[int]:
    seq = _unwrap(seq)
    if isinstance(seq, (int, tensor)):
        seq = [seq]
    out = []
    for s in seq:
        s = _unwrap(s)
        if not isinstance(s, int):
            raise TypeError(f"{what} must be made of constexpr integers, got {s!r}")
        out.append(s)
    return out


def program_id(axis, builder: Builder) -> tensor:
    axis = _unwrap(axis)
    if axis not in (0, 1, 2):
        raise ValueError(f"program_id axis must be 0, 1, or 2 but got {axis!r}")
    return tensor(builder.create(tt.GetProgramIdOp(axis)), tl.int32)


def num_programs(axis, builder: Builder) -> tensor:
    axis = _unwrap(axis)
    if axis not in (0, 1, 2):
        raise ValueError(f"num_programs axis must be 0, 1, or 2 but got {axis!r}")
    return tensor(builder.create(tt.GetNumProgramsOp(axis)), tl.int32)


def arange(start, end, builder: Builder) -> tensor:
    start, end = _unwrap(start), _unwrap(end)
    if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool):
        raise TypeError(f"arange's arguments must be constexpr integers, got start={start!r}, end={end!r}")
    if end <= start:
        raise ValueError(f"arange's end must be greater than its start, got arange({start}, {end})")
    n = end - start
    if n & (n - 1):
        raise ValueError("arange's range must be a power of 2")
    if not (-2**31 <= start and end <= 2**31):
        raise ValueError(f"arange's bounds must fit in int32, got arange({start}, {end})")
    ty = tl.block_type(tl.int32, [n])
    return tensor(builder.create(tt.MakeRangeOp(start, end, ir_type(ty))), ty)


def _check_shape(shape) -> list[int]:
    shape = _ints(shape, "a shape")
    for i, s in enumerate(shape):
        if s <= 0 or s & (s - 1):
            raise ValueError(f"Shape element {i} must be a power of 2")
    return shape


def zeros(shape, dtype, builder):
    return full(_check_shape(shape), 0, _unwrap(dtype), builder)


def full_(shape, value, dtype, builder):
    return full(_check_shape(shape), value, _unwrap(dtype), builder)


def reshape(x: tensor, shape, can_reorder: bool, builder: Builder) -> tensor:
    x = to_tensor(x, builder)
    shape = _check_shape(shape)
    if not shape:
        if x.type.is_block() and x.type.numel != 1:
            raise ValueError(f"reshape to a scalar needs one element, got {x.type.numel}")
        return _to_scalar(reshape(x, [1], False, builder), builder) if x.type.is_block() else x
    numel = 1
    for s in shape:
        numel *= s
    have = x.type.numel if x.type.is_block() else 1
    if numel != have:
        raise ValueError(f"reshape cannot change the number of elements: {have} to {numel} (shape {shape})")
    if not x.type.is_block():
        return splat(x, shape, builder)
    ty = tl.block_type(x.type.scalar, shape)
    op = tt.ReshapeOp(x.handle, ir_type(ty))
    if can_reorder:
        from xdsl.dialects.builtin import UnitAttr
        op.properties["allow_reorder"] = UnitAttr()
    return tensor(builder.create(op), ty)


def wrap_axis(axis: int, rank: int) -> int:
    """``axis`` in ``[-rank, rank)`` made non-negative; anything else is an error in Triton's words."""
    if not -rank <= axis < rank:
        raise ValueError(f"invalid axis {axis}. Expected {-rank} <= axis < {rank}")
    return axis + rank if axis < 0 else axis


def expand_dims(x, axes, builder: Builder) -> tensor:
    x = to_tensor(x, builder)
    axes = _ints(axes, "expand_dims axes")
    rank = (len(x.type.shape) if x.type.is_block() else 0) + len(axes)
    axes = [wrap_axis(a, rank) for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"expand_dims received duplicate axes, normalized axes = {axes}")
    if not x.type.is_block():
        return splat(x, [1] * rank, builder)
    for a in sorted(axes):
        shape = list(x.type.shape)
        shape.insert(a, 1)
        ty = tl.block_type(x.type.scalar, shape)
        x = tensor(builder.create(tt.ExpandDimsOp(x.handle, ir_type(ty), axis=IntegerAttr(a, i32))), ty)
    return x


def permute(x, dims, builder: Builder) -> tensor:
    x = to_tensor(x, builder)
    if not x.type.is_block():
        raise TypeError("permute/trans expects a tensor")
    dims = _ints(dims, "permute dims")
    rank = len(x.type.shape)
    if sorted(dims) != list(range(rank)):
        raise ValueError(f"permute dims must be a permutation of 0..{rank - 1}, got {dims}")
    if dims == list(range(rank)):
        return x
    from xdsl.dialects.builtin import DenseArrayBase
    ty = tl.block_type(x.type.scalar, [x.type.shape[d] for d in dims])
    op = tt.TransOp(x.handle, ir_type(ty), order=DenseArrayBase.from_list(i32, dims))
    return tensor(builder.create(op), ty)


def trans(x, dims, builder: Builder) -> tensor:
    x = to_tensor(x, builder)
    dims = [_unwrap(d) for d in dims]
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = list(dims[0])
    if not dims:
        # no dims: swap the last two (a transpose of each matrix of a batch)
        rank = len(x.type.shape) if x.type.is_block() else 0
        if rank < 2:
            raise ValueError(f"tl.trans invoked with a 0- or 1-dimensional tensor (rank {rank}): "
                             f"trans() without dims needs at least 2 dimensions")
        dims = list(range(rank - 2)) + [rank - 1, rank - 2]
    return permute(x, dims, builder)


def join(a, b, builder: Builder) -> tensor:
    a, b = to_tensor(a, builder), to_tensor(b, builder)
    if a.type.scalar != b.type.scalar:
        raise TypeError(f"join needs tensors of the same dtype, got {a.type.scalar} and {b.type.scalar}")
    a, b = broadcast_values(a, b, builder)
    if not a.type.is_block():
        a, b = splat(a, [1], builder), splat(b, [1], builder)
        squeeze = True
    else:
        squeeze = False
    ty = tl.block_type(a.type.scalar, list(a.type.shape) + [2])
    out = tensor(builder.create(tt.JoinOp(a.handle, b.handle, ir_type(ty))), ty)
    return reshape(out, [2], False, builder) if squeeze else out


def split(x, builder: Builder) -> tuple[tensor, tensor]:
    x = to_tensor(x, builder)
    if not x.type.is_block() or x.type.shape[-1] != 2:
        raise ValueError(f"split needs a tensor whose last dimension is 2, got shape "
                         f"{list(x.type.shape) if x.type.is_block() else []}")
    shape = list(x.type.shape[:-1])
    ty = tl.block_type(x.type.scalar, shape) if shape else x.type.scalar
    if not shape:
        x = reshape(x, [1, 2], False, builder)
        ty1 = tl.block_type(x.type.scalar, [1])
        op = builder.create(tt.SplitOp(x.handle, ir_type(ty1)))
        a, b = tensor(op.results[0], ty1), tensor(op.results[1], ty1)
        return _to_scalar(a, builder), _to_scalar(b, builder)
    op = builder.create(tt.SplitOp(x.handle, ir_type(ty)))
    return tensor(op.results[0], ty), tensor(op.results[1], ty)


def _to_scalar(x: tensor, builder: Builder) -> tensor:
    """A one-element tensor as a scalar, through a reduction (there is no extract op in TTIR)."""
    return reduce([x], 0, lambda b, args: [add_scalar_combine(args[0], args[1], b)], builder, keep_dims=False)[0]


def add_scalar_combine(a: tensor, b: tensor, builder: Builder) -> tensor:
    return add(a, b, builder)


def cat(a, b, can_reorder, builder: Builder) -> tensor:
    a, b = to_tensor(a, builder), to_tensor(b, builder)
    if not a.type.is_block() or not b.type.is_block() or len(a.type.shape) != 1 or a.type.shape != b.type.shape:
        raise ValueError("cat supports two 1-D tensors of the same shape")
    if a.type.scalar != b.type.scalar:
        raise TypeError(f"cat needs tensors of the same dtype, got {a.type.scalar} and {b.type.scalar}")
    ty = tl.block_type(a.type.scalar, [a.type.shape[0] * 2])
    return tensor(builder.create(tt.CatOp(a.handle, b.handle, ir_type(ty))), ty)


def gather(src: tensor, index: tensor, axis: int, builder: Builder) -> tensor:
    """``tt.gather``: the result has ``index``'s shape and ``src``'s element type (checks are the
    caller's: same rank, equal extents off ``axis``, integer indices)."""
    ty = tl.block_type(src.type.scalar, list(index.type.shape))
    return tensor(builder.create(tt.GatherOp(src.handle, index.handle, axis, ir_type(ty))), ty)


def broadcast_to(x, shape, builder: Builder) -> tensor:
    return broadcast_to_shape(to_tensor(x, builder), _ints(shape, "broadcast_to shape"), builder)


# --- dot -------------------------------------------------------------------------------------------

#: fp8 formats a dot keeps as they are unless the target's options say otherwise
#: (``dot_fp8_dtypes``: gfx942 adds its FNUZ formats); dots of the others upcast to fp16 here
_TENSOR_CORE_FP8 = ("fp8e4nv", "fp8e5")


#: every fp32 ``input_precision`` the frontend knows (a backend allows a subset in its options)
_DOT_INPUT_PRECISIONS = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")


def _dot_batched(a, b, acc, input_precision, max_num_imprecise_acc, out_dtype, builder: Builder) -> tensor:
    """``dot`` with several batch dimensions: they are merged into one (a reshape that keeps the
    element order), the 3-D dot runs, and the result gets the batch dimensions back."""
    sa, sb = list(a.type.shape), list(b.type.shape)
    if sa[:-2] != sb[:-2]:
        raise ValueError(f"dot: the batch dimensions differ: {sa} @ {sb} (batch {sa[:-2]} vs {sb[:-2]})")
    batch = 1
    for d in sa[:-2]:
        batch *= d
    c_shape = sa[:-1] + [sb[-1]]
    if acc is not None:
        acc = to_tensor(acc, builder)
        if not acc.type.is_block() or list(acc.type.shape) != c_shape:
            found = list(acc.type.shape) if acc.type.is_block() else "a scalar"
            raise ValueError(f"dot: the accumulator must have shape {c_shape}, got {found}")
        acc = reshape(acc, [batch] + c_shape[-2:], False, builder)
    a = reshape(a, [batch] + sa[-2:], False, builder)
    b = reshape(b, [batch] + sb[-2:], False, builder)
    c = dot(a, b, acc, input_precision, max_num_imprecise_acc, out_dtype, builder)
    return reshape(c, c_shape, False, builder)


def dot(a, b, acc, input_precision, max_num_imprecise_acc, out_dtype, builder: Builder) -> tensor:
    a, b = to_tensor(a, builder), to_tensor(b, builder)
    if not (a.type.is_block() and b.type.is_block()):
        raise TypeError("dot expects two tensors")
    deprecated = getattr(builder.options, "deprecated_fp8_dot_operand_dtypes", None) or ()
    if "fp8e4b15" in deprecated and "fp8e4b15" in (a.type.scalar.name, b.type.scalar.name):
        warn_at_user_line(builder, "the use of fp8e4b15 is deprecated on Hopper and later architectures and can "
                                   "cause significant slow down; prefer fp8e4nv or fp8e5")
    ra, rb = len(a.type.shape), len(b.type.shape)
    if ra == rb >= 4:
        return _dot_batched(a, b, acc, input_precision, max_num_imprecise_acc, out_dtype, builder)
    if ra != rb or ra not in (2, 3):
        raise ValueError(f"dot expects two tensors of one rank >= 2 (matrices, or batches of them), got shapes "
                         f"{list(a.type.shape)} and {list(b.type.shape)}")
    if a.type.shape[-1] != b.type.shape[-2]:
        raise ValueError(f"dot: the inner dimensions differ: {list(a.type.shape)} @ {list(b.type.shape)} "
                         f"(K={a.type.shape[-1]} vs {b.type.shape[-2]})")
    if ra == 3 and a.type.shape[0] != b.type.shape[0]:
        raise ValueError(f"dot: batch dimensions differ: {a.type.shape[0]} vs {b.type.shape[0]}")
    m, k, n = a.type.shape[-2], a.type.shape[-1], b.type.shape[-1]
    at, bt = a.type.scalar, b.type.scalar
    # the target's smallest dot, for 8-bit operands and for wider ones (smaller tiles than the
    # matrix instructions take run on FMA; the target's bound is what it can pad up to)
    small = tuple(getattr(builder.options, "min_dot_size", None) or ((1, 1, 1), (1, 1, 1)))
    mm, mn, mk = small[0] if at.primitive_bitwidth == 8 else small[1]
    if m < mm or n < mn or k < mk:
        raise ValueError(f"Input shapes should have M >= {mm}, N >= {mn} and K >= {mk} for {at} operands "
                         f"on this target, got M={m}, N={n}, K={k}")
    if at.is_fp8() or bt.is_fp8():
        if not (at.is_fp8() and bt.is_fp8()):
            raise TypeError(f"dot: an fp8 operand needs an fp8 partner, got {at} and {bt}")
        native = getattr(builder.options, "dot_fp8_dtypes", None) or _TENSOR_CORE_FP8
        if at.name not in native or bt.name not in native:
            # no matrix instruction takes these formats; every value is exact in fp16, and so is
            # the fp16 dot's fp32 accumulation of their products
            a, b = cast(a, tl.float16, builder), cast(b, tl.float16, builder)
            at = bt = tl.float16
    elif at != bt:
        raise TypeError(f"dot: operands must have the same dtype, got {at} and {bt}")
    out_dtype = _unwrap(out_dtype) or tl.float32
    if at.is_int():
        if at != tl.int8 and at != tl.uint8:
            raise TypeError(f"dot supports int8 integer operands, got {at}")
        ret = tl.int32
    elif at.is_fp64():
        ret = tl.float64
    elif at.is_fp32():
        ret = tl.float32
    else:
        ret = out_dtype if out_dtype in (tl.float16, tl.float32) else tl.float32
        if at.is_bf16() and ret == tl.float16:
            raise TypeError("dot of bf16 operands cannot accumulate in fp16")
    prec = _unwrap(input_precision)
    opts = builder.options
    if prec is None:
        prec = getattr(opts, "default_dot_input_precision", "ieee") if at.is_fp32() else "ieee"
    # the backend's options say which precisions it implements (Triton's names, any case)
    allowed = tuple(getattr(opts, "allowed_dot_input_precisions", None) or _DOT_INPUT_PRECISIONS)
    prec = prec.lower() if isinstance(prec, str) else prec
    if prec not in allowed:
        raise ValueError(f"input_precision must be one of {', '.join(allowed)}, got {_unwrap(input_precision)!r}")
    if not at.is_fp32():
        prec = "ieee"
    shape = list(a.type.shape[:-1]) + [b.type.shape[-1]]
    rty = tl.block_type(ret, shape)
    acc = _unwrap(acc)
    if acc is None:
        acc = full(shape, 0, ret, builder)
    else:
        acc = to_tensor(acc, builder)
        if not acc.type.is_block() or list(acc.type.shape) != shape:
            raise ValueError(f"dot: the accumulator must have shape {shape}, got {list(acc.type.shape) if acc.type.is_block() else []}")
        if acc.type.scalar != ret:
            if acc.type.scalar.is_floating() and ret.is_floating():
                ret, rty = acc.type.scalar, acc.type
            else:
                raise TypeError(f"dot: the accumulator must be {ret}, got {acc.type.scalar}")
    # max_num_imprecise_acc bounds how many fp8 products a tensor core may add at its reduced
    # accumulator precision before the sum is added into the fp32 accumulator (Triton's rule)
    imprecise = _unwrap(max_num_imprecise_acc)
    both_fp8 = at.is_fp8() and bt.is_fp8()
    if imprecise is None:
        imprecise = int(getattr(opts, "max_num_imprecise_acc_default", 0) or 0) if both_fp8 else 0
    elif both_fp8 and imprecise > k:
        raise ValueError(f"max_num_imprecise_acc ({imprecise}) must be <= K ({k})")
    return tensor(builder.create(tt.DotOp(a.handle, b.handle, acc.handle, prec, imprecise)), rty)


# --- reductions and scans --------------------------------------------------------------------------

def _combine_region(srcs, builder: Builder, combine) -> Region:
    scalars = [s.type.scalar for s in srcs]
    block = Block(arg_types=[ir_type(t) for t in scalars] * 2)
    n = len(srcs)
    with builder.at(block):
        lhs = [tensor(block.args[i], scalars[i]) for i in range(n)]
        rhs = [tensor(block.args[n + i], scalars[i]) for i in range(n)]
        outs = combine(builder, lhs + rhs)
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        if len(outs) != n:
            raise ValueError(f"the combine function must return {n} value(s), got {len(outs)}")
        handles = []
        for o, t in zip(outs, scalars):
            o = to_tensor(o, builder)
            if o.type.is_block():
                raise TypeError("the combine function must return scalars")
            handles.append(cast(o, t, builder).handle)
    return Region(block), handles


def reduce(srcs, axis, combine, builder: Builder, keep_dims: bool = False) -> list[tensor]:
    srcs = [to_tensor(s, builder) for s in srcs]
    axis = _unwrap(axis)
    orig_rank = len(srcs[0].type.shape) if srcs[0].type.is_block() else 0
    if axis is None:
        srcs = [reshape(s, [s.type.numel if s.type.is_block() else 1], True, builder) for s in srcs]
        axis = 0
        flat = True
    else:
        flat = False
    shape = list(srcs[0].type.shape) if srcs[0].type.is_block() else []
    if not shape:
        return srcs
    rank = len(shape)
    axis = wrap_axis(axis, rank)
    for s in srcs:
        if list(s.type.shape) != shape:
            raise ValueError("all reduced tensors must have the same shape")
    region, handles = _combine_region(srcs, builder, combine)
    with builder.at(region.blocks[0]):
        builder.insert(rops.ReduceReturnOp(handles))
    rshape = shape[:axis] + shape[axis + 1:]
    rtys = [tl.block_type(s.type.scalar, rshape) if rshape else s.type.scalar for s in srcs]
    op = builder.insert(rops.ReduceOp([s.handle for s in srcs], axis, [ir_type(t) for t in rtys], region))
    outs = [tensor(r, t) for r, t in zip(op.results, rtys)]
    if keep_dims:
        if flat:
            outs = [splat(o, [1] * max(orig_rank, 1), builder) for o in outs]
        else:
            outs = [expand_dims(o, [axis], builder) for o in outs]
    return outs


def scan(srcs, axis, combine, reverse, builder: Builder) -> list[tensor]:
    srcs = [to_tensor(s, builder) for s in srcs]
    axis = _unwrap(axis)
    shape = list(srcs[0].type.shape) if srcs[0].type.is_block() else []
    if not shape:
        raise ValueError("scan needs a tensor")
    rank = len(shape)
    if axis is None:
        raise ValueError("a scan needs an axis, got None")
    axis = wrap_axis(axis, rank)
    region, handles = _combine_region(srcs, builder, combine)
    with builder.at(region.blocks[0]):
        builder.insert(rops.ScanReturnOp(handles))
    op = builder.insert(rops.ScanOp([s.handle for s in srcs], axis, bool(_unwrap(reverse)), region))
    return [tensor(r, s.type) for r, s in zip(op.results, srcs)]


# --- map_elementwise -------------------------------------------------------------------------------

def map_elementwise(args, call_scalar, pack, builder: Builder):
    """``tl.map_elementwise``: the operands are broadcast to one shape; ``call_scalar(scalars)``
    emits the scalar function's call into the region (``pack`` scalars per operand, operand after
    operand) and returns its results: ``pack`` scalars per result, result after result."""
    pack = _unwrap(pack)
    if not isinstance(pack, int) or isinstance(pack, bool) or pack < 1 or pack & (pack - 1):
        raise ValueError(f"map_elementwise: pack must be a power of 2, got {pack!r}")
    args = [to_tensor(a, builder) for a in args]
    if not args:
        raise ValueError("map_elementwise needs at least one tensor argument")
    shape = None
    for a in args:
        if a.type.is_block():
            shape = list(a.type.shape) if shape is None else _sem.broadcast_shapes(shape, a.type.shape)
    if shape is None:  # every argument is a scalar: one call of the function
        if pack != 1:
            raise ValueError(f"map_elementwise: pack={pack} needs tensor arguments")
        return call_scalar(args)
    args = [splat(a, shape, builder) if not a.type.is_block() else broadcast_to_shape(_expand_to_rank(a, len(shape), builder), shape, builder) for a in args]
    numel = 1
    for d in shape:
        numel *= d
    if numel % pack:
        raise ValueError(f"map_elementwise: pack={pack} does not divide the {numel} elements of the tensors")
    scalars = [a.type.scalar for a in args]
    block = Block(arg_types=[ir_type(t) for t in scalars for _ in range(pack)])
    with builder.at(block):
        outs = call_scalar([tensor(block.args[i * pack + j], t) for i, t in enumerate(scalars) for j in range(pack)])
        single = not isinstance(outs, (tuple, list))
        outs = [outs] if single else list(outs)
        outs = [to_tensor(o, builder) for o in outs]
        for o in outs:
            if o.type.is_block():
                raise TypeError(f"map_elementwise: the function must return scalars, got a tensor of type {o.type}")
        if not outs or len(outs) % pack:
            raise ValueError(f"map_elementwise: with pack={pack} the function must return a multiple of {pack} "
                             f"values (pack per result), got {len(outs)}")
        n_res = len(outs) // pack
        rscalars = [outs[i * pack].type for i in range(n_res)]
        for i in range(n_res):
            for j in range(1, pack):
                if outs[i * pack + j].type != rscalars[i]:
                    raise TypeError(f"map_elementwise: the {pack} packed values of result {i} differ in type: "
                                    f"{rscalars[i]} and {outs[i * pack + j].type}")
        builder.insert(rops.MapElementwiseReturnOp([o.handle for o in outs]))
    rtys = [tl.block_type(t, shape) for t in rscalars]
    op = builder.insert(rops.MapElementwiseOp([a.handle for a in args], [ir_type(t) for t in rtys], pack,
                                              Region(block)))
    res = [tensor(r, t) for r, t in zip(op.results, rtys)]
    return res[0] if single else tuple(res)


def _expand_to_rank(x: tensor, rank: int, builder: Builder) -> tensor:
    return _sem._prepend_unit_dims(x, rank, builder)


# --- math ------------------------------------------------------------------------------------------

_FLOAT_UNARY = {
    "exp": xmath.ExpOp, "exp2": xmath.Exp2Op, "log": xmath.LogOp, "log2": xmath.Log2Op, "cos": xmath.CosOp,
    "sin": xmath.SinOp, "sqrt": xmath.SqrtOp, "rsqrt": xmath.RsqrtOp, "floor": xmath.FloorOp,
    "ceil": xmath.CeilOp, "erf": xmath.ErfOp, "tanh": xmath.TanhOp, "log1p": xmath.Log1pOp,
}


def float_unary(name: str, x, builder: Builder) -> tensor:
    x = to_tensor(x, builder)
    sc = x.type.scalar
    if not sc.is_floating():
        raise TypeError(f"{name} expects a floating-point argument, got {sc}; cast it with .to(tl.float32)")
    if sc.is_fp8() or sc in (tl.float16, tl.bfloat16):
        # computed in fp32 and rounded back, as the hardware has no 8/16-bit versions of these
        y = float_unary(name, cast(x, tl.float32, builder), builder)
        return cast(y, sc, builder)
    return tensor(builder.create(_FLOAT_UNARY[name](x.handle)), x.type)


def sqrt_rn(x, builder):
    x = to_tensor(x, builder)
    if not x.type.scalar.is_floating():
        raise TypeError(f"sqrt_rn expects a floating-point argument, got {x.type.scalar}")
    return tensor(builder.create(tt.PreciseSqrtOp(x.handle)), x.type)


def abs_(x, builder):
    x = to_tensor(x, builder)
    sc = x.type.scalar
    if sc.is_floating():
        if sc.is_fp8():
            if FP8_FORMATS[sc.name].has_neg_zero:
                # sign-magnitude codes: clearing the sign bit keeps infinities and NaNs (Triton's way)
                bits = bitcast(x, tl.int8, builder)
                return bitcast(and_(bits, 0x7F, builder), sc, builder)
            # no negative zero (its code is the NaN): through fp32, exact, NaN stays NaN
            return cast(abs_(cast(x, tl.float32, builder), builder), sc, builder)
        return tensor(builder.create(xmath.AbsFOp(x.handle)), x.type)
    if sc.is_int_unsigned():
        return x
    return tensor(builder.create(xmath.AbsIOp(x.handle)), x.type)


def fma(x, y, z, builder):
    x, y = binary_operands(x, y, builder)
    x, z = binary_operands(x, z, builder)
    x, y = broadcast_values(x, y, builder)
    if not x.type.scalar.is_floating():
        raise TypeError(f"fma expects floating-point arguments, got {x.type.scalar}")
    return tensor(builder.create(xmath.FmaOp(x.handle, y.handle, z.handle)), x.type)


def umulhi(x, y, builder):
    x, y = binary_operands(x, y, builder)
    if x.type.scalar not in (tl.int32, tl.uint32, tl.int64, tl.uint64):
        raise TypeError(f"umulhi expects 32- or 64-bit integers, got {x.type.scalar}")
    return tensor(builder.create(tt.MulhiUIOp(x.handle, y.handle)), x.type)


# --- debugging and hints ---------------------------------------------------------------------------

def device_print(prefix, args, hex, builder: Builder) -> None:
    prefix = _unwrap(prefix)
    if not isinstance(prefix, str):
        raise TypeError(f"device_print's prefix must be a string, got {prefix!r}")
    # the printed line reads ``... idx (3) x: 1.5``: with operands the prefix ends in ": ", and a
    # prefix longer than that separator starts with a space
    if args and not prefix.endswith(" "):
        prefix += " "
    if args and not prefix.endswith(": "):
        prefix = prefix[:-1] + ": "
    if len(prefix) > 2 and not prefix.startswith(" "):
        prefix = " " + prefix
    vals = [to_tensor(a, builder) for a in args]
    signed = [1 if v.type.scalar.is_int_signed() else 0 for v in vals]
    builder.insert(tt.PrintOp(prefix, bool(_unwrap(hex)), [v.handle for v in vals], signed))


def device_assert(cond, msg, builder: Builder) -> None:
    if not getattr(builder.options, "debug", False):
        return
    cond = cast(to_tensor(cond, builder), tl.int1, builder)
    builder.insert(tt.AssertOp(cond.handle, str(_unwrap(msg) or "")))


def assume(cond, builder: Builder) -> None:
    c = to_tensor(cond, builder)
    if c.type.is_block():
        raise TypeError(f"assume expects a scalar boolean condition, got a tensor {c.type}")
    if not c.type.is_bool():
        raise TypeError(f"assume expects a boolean condition, got {c.type}")
    builder.insert(AssumeOp(c.handle))


def debug_barrier(builder: Builder) -> None:
    builder.insert(BarrierOp())


def set_hint(x, values, attr: str, builder: Builder) -> tensor:
    x = to_tensor(x, builder)
    vals = _ints(values, attr)
    rank = len(x.type.shape) if x.type.is_block() else 1
    if len(vals) == 1 and rank > 1:
        vals = vals * rank
    if len(vals) != rank:
        raise ValueError(f"{attr} needs one value per dimension ({rank}), got {vals}")
    op = x.handle.owner
    if isinstance(op, Block):  # a block argument: hint a function argument, as Triton does
        _hint_argument(x.handle, op, "tt." + attr, vals, x.type.is_block())
        return x
    t = TensorType(i32, [len(vals)])
    op.attributes["tt." + attr] = DenseIntOrFPElementsAttr.from_list(t, vals)
    return x


def _hint_argument(arg, block: Block, name: str, vals: list[int], is_block: bool) -> None:
    """Record a hint on a ``tt.func`` argument (``{tt.divisibility = 16 : i32}``); arguments of
    loop bodies have no attribute to carry it and are left as they are."""
    from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr
    func = block.parent_op()
    if not isinstance(func, tt.FuncOp) or func.body.blocks[0] is not block:
        return
    n = len(block.args)
    old = list(func.arg_attrs.data) if func.arg_attrs is not None else [DictionaryAttr({}) for _ in range(n)]
    entry = dict(old[arg.index].data)
    if is_block:
        entry[name] = DenseIntOrFPElementsAttr.from_list(TensorType(i32, [len(vals)]), vals)
    else:
        entry[name] = IntegerAttr(vals[0], i32)
    old[arg.index] = DictionaryAttr(entry)
    func.arg_attrs = ArrayAttr(old)
