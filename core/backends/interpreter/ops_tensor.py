"""Translation of program ids, tensor creation and shape ops, pointer arithmetic, ``tt.dot`` and
the debugging ops ``tt.print`` / ``tt.assert``, ``llvm.intr.assume`` (checked) and ``gpu.barrier``."""
from __future__ import annotations

import math
import sys

import numpy as np
from xdsl.dialects.builtin import TensorType

from .errors import KernelAssertionError, location_of
from ...ttir.types import element_type
from ...ttgir.passes.decompose_bf16_dot import TERMS as BF16_TERMS
from .numerics import round_bf16, round_tf32, type_info
from .ops_arith import bitcast_fn
from .registry import emit, translates


@translates("tt.get_program_id")
def _pid(tr, op):
    axis, o = op.axis.value.data, tr.out(op.result)

    def f(fr):
        fr[o] = fr[0].pid[axis]
    return f


@translates("tt.get_num_programs")
def _nprog(tr, op):
    axis, o = op.axis.value.data, tr.out(op.result)

    def f(fr):
        fr[o] = fr[0].grid[axis]
    return f


@translates("tt.make_range")
def _make_range(tr, op):
    tr.const(op.result, np.arange(op.start.value.data, op.end.value.data, dtype=np.int32))
    return None


def _shape(op):
    return tuple(op.result.type.get_shape())


@translates("tt.splat")
def _splat(tr, op):
    shape, dt = _shape(op), type_info(op.result.type).hold
    return emit(tr, op, lambda x: np.full(shape, x, dt))


@translates("tt.broadcast")
def _broadcast(tr, op):
    shape = _shape(op)
    return emit(tr, op, lambda x: np.broadcast_to(x, shape))


@translates("tt.expand_dims")
def _expand_dims(tr, op):
    axis = op.axis.value.data
    return emit(tr, op, lambda x: np.expand_dims(x, axis))


@translates("tt.reshape")
def _reshape(tr, op):
    shape = _shape(op) if isinstance(op.result.type, TensorType) else ()
    if not shape:
        return emit(tr, op, lambda x: np.asarray(x).reshape(())[()])
    return emit(tr, op, lambda x: np.reshape(x, shape))


@translates("tt.trans")
def _trans(tr, op):
    order = tuple(op.order.get_values())
    return emit(tr, op, lambda x: np.transpose(x, order))


@translates("tt.join")
def _join(tr, op):
    return emit(tr, op, lambda a, b: np.stack([a, b], axis=-1))


@translates("tt.cat")
def _cat(tr, op):
    return emit(tr, op, lambda a, b: np.concatenate([a, b], axis=0))


@translates("tt.gather")
def _gather(tr, op):
    """``take_along_axis``.  The language leaves an out-of-range index's value unspecified; here,
    as in the GPU lowering, it reads ``index mod n`` (indices narrower than 32 bits taken as
    unsigned), so no access leaves the source."""
    axis, n = op.axis.value.data, op.src.type.get_shape()[op.axis.value.data]
    width = element_type(op.indices.type).width.data
    mask = (1 << width) - 1 if width < 32 else None

    def f(x, i):
        i = i.astype(np.int64)
        return np.take_along_axis(x, np.mod(i if mask is None else i & mask, n), axis)
    return emit(tr, op, f)


@translates("tt.split")
def _split(tr, op):
    a, lo, hi = tr.r(op.src), tr.out(op.out_lhs), tr.out(op.out_rhs)
    scalar = not isinstance(op.out_lhs.type, TensorType)

    def f(fr):
        x = fr[a]
        fr[lo], fr[hi] = (x[0], x[1]) if scalar else (x[..., 0], x[..., 1])
    return f


@translates("tt.addptr")
def _addptr(tr, op):
    elt = type_info(op.ptr.type.element_type.pointee_type if isinstance(op.ptr.type, TensorType)
                    else op.ptr.type.pointee_type)
    size = np.int64(np.dtype(elt.store).itemsize)
    if isinstance(op.offset.type, TensorType):
        return emit(tr, op, lambda p, off: p + np.multiply(off, size, dtype=np.int64))
    return emit(tr, op, lambda p, off: p + np.int64(off) * size)


@translates("tt.int_to_ptr", "tt.ptr_to_int")
def _ptr_int(tr, op):
    return emit(tr, op, lambda x: x.astype(np.int64))


@translates("tt.bitcast")
def _bitcast(tr, op):
    return emit(tr, op, bitcast_fn(type_info(op.src.type), type_info(op.result.type)))


# -- dot -----------------------------------------------------------------------------------------
@translates("tt.dot")
def _dot(tr, op):
    ta, out = type_info(op.a.type), type_info(op.d.type)
    prec = op.input_precision
    if ta.kind in ("int", "bool"):
        hold = out.hold

        def dot_int(a, b, c):
            return (np.matmul(a.astype(np.int64), b.astype(np.int64)) + c).astype(hold)
        return emit(tr, op, dot_int)
    tf32 = prec == "tf32" and ta.name == "f32"
    fix = out.fix
    hold = out.hold
    if prec in BF16_TERMS and ta.name == "f32" and out.name == "f32":
        return emit(tr, op, _bf16_split_dot(prec))

    def dot(a, b, c):
        # products of <= 24-bit mantissas are exact in float64; the sum is rounded once per term in
        # 53 bits and once more to the accumulator type
        if tf32:
            a, b = round_tf32(a), round_tf32(b)
        d = np.matmul(a.astype(np.float64), b.astype(np.float64)) + c
        return fix(d.astype(np.float32)) if fix is not None else d.astype(hold)
    return emit(tr, op, dot)


def _bf16_split_dot(prec: str):
    """fp32 ``bf16x3``/``bf16x6`` as the GPU backends compute it (``decompose-bf16-dot``): each
    operand split into bf16 pieces, the chosen products summed smallest first into fp32 (each
    piece-dot's products exact, its sum rounded once to fp32), NaNs of that partial sum zeroed,
    then ``hi*hi`` and the accumulator added."""
    pieces, small = BF16_TERMS[prec]

    def split(x):
        x = np.asarray(x, np.float32)
        out = []
        with np.errstate(invalid="ignore", over="ignore"):
            for i in range(pieces):
                p = round_bf16(x)
                out.append(p)
                if i != pieces - 1:
                    x = (x - p).astype(np.float32)
        return out

    def piece_dot(x, y, acc):
        with np.errstate(invalid="ignore", over="ignore"):
            return (np.matmul(x.astype(np.float64), y.astype(np.float64)) + acc).astype(np.float32)

    def dot(a, b, c):
        sa, sb = split(a), split(b)
        acc = np.zeros(np.shape(c), np.float32)
        for i, j in small:
            acc = piece_dot(sa[i], sb[j], acc)
        acc = np.where(np.isnan(acc), np.float32(0), acc)
        acc = piece_dot(sa[0], sb[0], acc)
        with np.errstate(invalid="ignore", over="ignore"):
            return (acc + np.asarray(c, np.float32)).astype(np.float32)
    return dot


# -- print and assert ----------------------------------------------------------------------------
def _format(v, info, hex_, signed) -> str:
    # as the compiled backends print (C's %f, %i/%u, and with hex the value's own bits padded to
    # its width)
    if info.kind == "ptr":
        return f"0x{int(v) & (2**64 - 1):x}"
    if hex_:
        if info.kind == "float":
            held = np.asarray(v, info.hold)
            bits = int((info.save(held) if info.save is not None else held).view(info.unsigned))
        else:
            bits = int(np.asarray(v).astype(info.unsigned))
        return f"0x{bits:0{max(info.bits // 4, 1)}x}"
    if info.kind == "float":
        return f"{float(v):f}"
    if info.kind == "bool":
        return str(int(bool(v)))
    return str(int(v) if signed else int(np.asarray(v).astype(info.unsigned)))


def _index_width(dim: int) -> int:
    return math.ceil(math.log10(dim)) if dim > 0 else 0


@translates("tt.print")
def _print(tr, op):
    prefix, hex_ = op.prefix.data, bool(op.hex.value.data)
    signed = list(op.isSigned.get_values())
    args = [(tr.r(v), type_info(v.type)) for v in op.args]
    many = len(args) > 1

    def f(fr):
        # pid (<x>, <y>, <z>) idx (<i0>, ...)<prefix>[(operand <k>) ]<value>, indices padded to
        # their dimension's digits
        x, y, z = (int(p) for p in fr[0].pid)
        lines = []
        for k, (reg, info) in enumerate(args):
            val = np.asarray(fr[reg])
            sgn = signed[k] if k < len(signed) else 1
            tag = f"(operand {k}) " if many else ""
            widths = [_index_width(d) for d in val.shape]
            for idx in np.ndindex(val.shape):
                i = ", ".join(str(j).rjust(w) for j, w in zip(idx, widths))
                lines.append(f"pid ({x}, {y}, {z}) idx ({i}){prefix}{tag}{_format(val[idx], info, hex_, sgn)}")
        if not args:
            lines.append(f"pid ({x}, {y}, {z}){prefix}")
        sys.stdout.write("\n".join(lines) + "\n")
    return f


@translates("tt.assert")
def _assert(tr, op):
    c, msg, where = tr.r(op.condition), op.message.data, location_of(op)

    def f(fr):
        cond = np.asarray(fr[c])
        if not cond.all():
            ctx = fr[0]
            bad = np.argwhere(~cond) if cond.ndim else []
            first = f"; first failing index {tuple(int(i) for i in bad[0])}" if len(bad) else ""
            raise KernelAssertionError(f"device assertion failed: {msg}{first}", kernel=ctx.kernel,
                                       where=where, pid=ctx.pid)
    return f


@translates("llvm.intr.assume")
def _assume(tr, op):
    # an assumption that does not hold makes the program undefined on a GPU: say so here
    c, where = tr.r(op.cond), location_of(op)

    def f(fr):
        if not bool(fr[c]):
            ctx = fr[0]
            raise KernelAssertionError("tl.assume's condition is false", kernel=ctx.kernel, where=where, pid=ctx.pid)
    return f


@translates("gpu.barrier")
def _barrier(tr, op):
    # a program runs as one logical thread here: nothing to wait for
    return None
