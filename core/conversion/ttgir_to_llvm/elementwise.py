"""Elementwise ops: ``arith`` / ``math`` and the elementwise ``tt`` ops, applied register by
register; constants, program ids, ``tt.make_range`` and pointer arithmetic."""
from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr, TensorType

from ...ttir.attrs import CMPF_PREDICATES, CMPI_PREDICATES
from ..target_info import intrinsic
from .affine_compare import lower_affine_cmpi
from .lowering import FunctionLowering, LoweringError, lowers
from .types import BF16, I32, I64, bits_of, const, is_float, scalar_type
from .shape_ops import linear_index
from ...frontend.errors import error_at_op


def map_values(fl: FunctionLowering, op, fn) -> None:
    """Set ``op``'s result to ``fn(*scalars)`` applied per register (scalars broadcast)."""
    args = [fl.get(v) for v in op.operands]
    n = max((len(a) for a in args if isinstance(a, list)), default=None)
    if n is None:
        fl.set(op.results[0], fn(*args))
        return
    cols = [a if isinstance(a, list) else [a] * n for a in args]
    fl.set(op.results[0], [fn(*row) for row in zip(*cols)])


def _elem_info(op):
    return scalar_type(op.operands[0].type)


# --- constants, ids, ranges ------------------------------------------------------------------------
@lowers("arith.constant")
def _constant(fl: FunctionLowering, op) -> None:
    t = op.results[0].type
    ty = fl.ty(t)
    val = op.value
    if isinstance(val, (IntegerAttr, FloatAttr)):
        fl.set(op.results[0], const(ty, val.value.data))
        return
    if isinstance(val, DenseIntOrFPElementsAttr):
        data = val.get_values() if hasattr(val, "get_values") else [x.value.data for x in val.data]
        data = list(data)
        if not isinstance(t, TensorType):
            fl.set(op.results[0], const(ty, data[0]))
            return
        n = fl.layout(t).ll.num_registers
        if len(set(map(repr, data))) == 1:
            c = const(ty, data[0])
            fl.set(op.results[0], [c] * n)
            return
        # a non-splat constant: element of each register by its coordinates (known per thread only
        # at run time) -> a small table in registers selected with the linear index
        shape = t.get_shape()
        idx = [linear_index(fl, row, shape) for row in fl.coords(t)]
        arr = ir.Constant(ir.ArrayType(ty, len(data)), [const(ty, x) for x in data])
        g = ir.GlobalVariable(fl.module, arr.type, fl.module.get_unique_name("cst"))
        g.global_constant, g.initializer, g.linkage = True, arr, "internal"
        g.type = ir.PointerType()
        b = fl.builder
        fl.set(op.results[0], [b.load(b.gep(g, [const(I32, 0), i], source_etype=arr.type), typ=ty) for i in idx])
        return
    raise NotImplementedError(f"arith.constant with {val}")


class _Poison(ir.Constant):
    """LLVM's ``poison`` of a type (llvmlite spells only ``undef``)."""

    def __init__(self, ty):
        super().__init__(ty, None)

    def _get_reference(self):
        return "poison"


@lowers("ub.poison")
def _poison(fl: FunctionLowering, op) -> None:
    """A value no path defines (a function that falls off its end on one path): every register is
    LLVM ``poison``, which the optimiser may take as any value."""
    t = op.results[0].type
    p = _Poison(fl.ty(t))
    fl.set(op.results[0], [p] * fl.layout(t).ll.num_registers if isinstance(t, TensorType) else p)


@lowers("tt.get_program_id")
def _pid(fl: FunctionLowering, op) -> None:
    fl.set(op.results[0], fl.target.program_id(fl.builder, op.axis.value.data))


@lowers("tt.get_num_programs")
def _nprogs(fl: FunctionLowering, op) -> None:
    fl.set(op.results[0], fl.target.num_programs(fl.builder, op.axis.value.data))


@lowers("tt.make_range")
def _make_range(fl: FunctionLowering, op) -> None:
    start = op.start.value.data
    t = op.results[0].type
    ty = fl.ty(t)
    b = fl.builder
    fl.set(op.results[0], [b.add(c[0], const(ty, start)) if start else c[0] for c in fl.coords(t)])


@lowers("tt.addptr")
def _addptr(fl: FunctionLowering, op) -> None:
    pointee = fl.ty(scalar_type(op.operands[0].type).pointee_type)
    b = fl.builder
    map_values(fl, op, lambda p, o: b.gep(p, [o], source_etype=pointee))


# --- integer and float arithmetic ------------------------------------------------------------------
_INT = {"arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul", "arith.divsi": "sdiv",
        "arith.divui": "udiv", "arith.remsi": "srem", "arith.remui": "urem", "arith.andi": "and_",
        "arith.ori": "or_", "arith.xori": "xor", "arith.shli": "shl", "arith.shrsi": "ashr",
        "arith.shrui": "lshr"}
_FLOAT = {"arith.addf": "fadd", "arith.subf": "fsub", "arith.mulf": "fmul", "arith.divf": "fdiv",
          "arith.remf": "frem"}


@lowers(*_INT, *_FLOAT)
def _binary(fl: FunctionLowering, op) -> None:
    meth = getattr(fl.builder, _INT.get(op.name) or _FLOAT[op.name])
    if op.name == "arith.divf":
        # ``/`` is not correctly rounded in Triton's model (``div_rn`` is): the target may use its
        # fast division (NVIDIA: div.full.f32, 2 ulp)
        def div(a, c):
            r = fl.target.math(fl.builder, "arith.divf", [a, c], a.type)
            return meth(a, c) if r is None else r
        map_values(fl, op, div)
        return
    if op.name in ("arith.addf", "arith.subf", "arith.mulf") and getattr(fl.options, "enable_fp_fusion", True):
        if op.name != "arith.mulf" and _fma_over_select(fl, op):
            return
        # Triton's enable_fp_fusion: LLVM may contract a multiply and an add into one fma even when
        # the product has other uses (attention's qk * scale - max)
        map_values(fl, op, lambda a, c: meth(a, c, flags=("contract",)))
        return
    map_values(fl, op, lambda a, c: meth(a, c))


def _fma_over_select(fl: FunctionLowering, op) -> bool:
    """``a * b + where(c, K1, K2)`` (or ``- where``) with constant ``K1``, ``K2``, lowered as
    ``where(c, fma(a, b, K1), fma(a, b, K2))``: the same values (the fused form contraction would
    give), one more ``fma`` a register, and the select now waits for the product.  An attention
    mask's ``where`` depends on indices alone, so the assembler computes it early, in the shadow of
    the ``wgmma`` that makes the scores, and holds one register per element of the tile next to
    the accumulator's (``affine_compare``'s module docstring).  Explicit ``llvm.fma`` calls: LLVM
    would fold a select of two ``fadd`` sharing an operand back into one ``fadd`` of the select.
    False (nothing emitted) where the pattern is not there."""
    ty = fl.ty(op.results[0].type)
    if not isinstance(op.results[0].type, TensorType) or not isinstance(ty, (ir.FloatType, ir.DoubleType)):
        return False
    x, y = op.operands
    pairs = [(x, y, -1.0)] if op.name == "arith.subf" else [(x, y, 1.0), (y, x, 1.0)]
    for prod, sel, sign in pairs:
        if getattr(prod.owner, "name", None) != "arith.mulf" or getattr(sel.owner, "name", None) != "arith.select" \
                or not sel.has_one_use():
            continue
        n = fl.n_regs(op.results[0])
        regs = [fl.get(v) for v in (*prod.owner.operands, *sel.owner.operands)]
        a, b, cond, k1, k2 = (r if isinstance(r, list) else [r] * n for r in regs)
        if not all(isinstance(k, ir.Constant) for k in (*k1, *k2)):
            continue
        bld = fl.builder
        name = f"llvm.fma.{_suffix(ty)}"

        def addend(k):
            return k if sign > 0 else bld.fneg(k)
        fl.set(op.results[0], [bld.select(c, intrinsic(bld, name, ty, [ai, bi, addend(p)]),
                                          intrinsic(bld, name, ty, [ai, bi, addend(q)]))
                               for ai, bi, c, p, q in zip(a, b, cond, k1, k2)])
        return True
    return False


_MINMAX = {"arith.maxsi": (">", True), "arith.minsi": ("<", True), "arith.maxui": (">", False),
           "arith.minui": ("<", False)}


@lowers(*_MINMAX)
def _int_minmax(fl: FunctionLowering, op) -> None:
    pred, signed = _MINMAX[op.name]
    b = fl.builder
    cmp = b.icmp_signed if signed else b.icmp_unsigned
    map_values(fl, op, lambda a, c: b.select(cmp(pred, a, c), a, c))


_FMINMAX = {"arith.maxnumf": "llvm.maxnum", "arith.minnumf": "llvm.minnum", "arith.maximumf": "llvm.maximum",
            "arith.minimumf": "llvm.minimum"}


@lowers(*_FMINMAX)
def _float_minmax(fl: FunctionLowering, op) -> None:
    ty = fl.ty(op.results[0].type)
    name = f"{_FMINMAX[op.name]}.{_suffix(ty)}"
    map_values(fl, op, lambda a, c: intrinsic(fl.builder, name, ty, [a, c]))


def _suffix(ty: ir.Type) -> str:
    return ty.intrinsic_name


@lowers("arith.negf")
def _negf(fl: FunctionLowering, op) -> None:
    map_values(fl, op, lambda a: fl.builder.fneg(a))


@lowers("arith.cmpi")
def _cmpi(fl: FunctionLowering, op) -> None:
    pred = CMPI_PREDICATES[op.predicate.value.data]
    if lower_affine_cmpi(fl, op, pred):
        return
    sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    b = fl.builder
    if pred in ("eq", "ne"):
        map_values(fl, op, lambda a, c: b.icmp_signed(sym[pred], a, c))
    else:
        cmp = b.icmp_signed if pred[0] == "s" else b.icmp_unsigned
        map_values(fl, op, lambda a, c: cmp(sym[pred[1:]], a, c))


@lowers("arith.cmpf")
def _cmpf(fl: FunctionLowering, op) -> None:
    pred = CMPF_PREDICATES[op.predicate.value.data]
    b = fl.builder
    sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    if pred in ("false", "true"):
        map_values(fl, op, lambda a, c: fl.bool_const(pred == "true"))
    elif pred in ("ord", "uno"):
        cmp = b.fcmp_ordered if pred == "ord" else b.fcmp_unordered
        map_values(fl, op, lambda a, c: cmp(pred, a, c))
    else:
        cmp = b.fcmp_ordered if pred[0] == "o" else b.fcmp_unordered
        map_values(fl, op, lambda a, c: cmp(sym[pred[1:]], a, c))


@lowers("arith.select")
def _select(fl: FunctionLowering, op) -> None:
    map_values(fl, op, lambda c, x, y: fl.builder.select(c, x, y))


# --- math ------------------------------------------------------------------------------------------
_INTRINSIC = {"math.exp": "llvm.exp", "math.exp2": "llvm.exp2", "math.log": "llvm.log", "math.log2": "llvm.log2",
              "math.sqrt": "llvm.sqrt", "math.sin": "llvm.sin", "math.cos": "llvm.cos", "math.absf": "llvm.fabs",
              "math.floor": "llvm.floor", "math.ceil": "llvm.ceil", "math.fma": "llvm.fma",
              "math.roundeven": "llvm.roundeven", "math.round": "llvm.round", "tt.precise_sqrt": "llvm.sqrt"}
_MATH = ("math.exp", "math.exp2", "math.log", "math.log2", "math.log10", "math.sqrt", "math.rsqrt", "math.sin",
         "math.cos", "math.tan", "math.absf", "math.floor", "math.ceil", "math.erf", "math.fma", "math.tanh",
         "math.log1p", "math.expm1", "math.powf", "math.roundeven", "math.round", "math.atan", "math.atan2",
         "tt.precise_sqrt")


@lowers(*_MATH)
def _math(fl: FunctionLowering, op) -> None:
    ty = fl.ty(op.results[0].type)
    b = fl.builder
    name = op.name

    def one(*args):
        # half-precision math computes in f32 (as Triton does), then rounds back
        wide = ty if bits_of(ty) >= 32 else ir.FloatType()
        xs = [a if wide == ty else fl.target.bf16_to_f32(b, a) if ty == BF16 else b.fpext(a, wide) for a in args]
        r = fl.target.math(b, name, xs, wide)
        if r is None:
            if name == "math.rsqrt":
                r = b.fdiv(const(wide, 1.0), intrinsic(b, f"llvm.sqrt.{_suffix(wide)}", wide, xs))
            elif name in _INTRINSIC:
                r = intrinsic(b, f"{_INTRINSIC[name]}.{_suffix(wide)}", wide, xs)
            else:
                raise NotImplementedError(f"{name} on {wide} has no lowering for this target")
        return r if wide == ty else b.fptrunc(r, ty)
    map_values(fl, op, one)


@lowers("tt.precise_divf")
def _precise_div(fl: FunctionLowering, op) -> None:
    map_values(fl, op, lambda a, c: fl.builder.fdiv(a, c))


@lowers("math.absi")
def _absi(fl: FunctionLowering, op) -> None:
    ty = fl.ty(op.results[0].type)
    b = fl.builder
    map_values(fl, op, lambda a: b.select(b.icmp_signed("<", a, const(ty, 0)), b.neg(a), a))


@lowers("math.ctlz", "math.ctpop")
def _bits(fl: FunctionLowering, op) -> None:
    ty = fl.ty(op.results[0].type)
    b = fl.builder
    if op.name == "math.ctlz":
        map_values(fl, op, lambda a: b.ctlz(a, ir.Constant(ir.IntType(1), 0)))
    else:
        map_values(fl, op, lambda a: b.ctpop(a))


@lowers("tt.mulhiui")
def _mulhi(fl: FunctionLowering, op) -> None:
    ty = fl.ty(op.results[0].type)
    wide = ir.IntType(2 * ty.width)
    b = fl.builder
    map_values(fl, op, lambda a, c: b.trunc(b.lshr(b.mul(b.zext(a, wide), b.zext(c, wide)),
                                                   const(wide, ty.width)), ty))


@lowers("tt.clampf")
def _clampf(fl: FunctionLowering, op) -> None:
    ty = fl.ty(op.results[0].type)
    b = fl.builder
    nan = op.propagateNan.value.data != 0
    lo, hi = ("llvm.maximum", "llvm.minimum") if nan else ("llvm.maxnum", "llvm.minnum")
    s = _suffix(ty)
    map_values(fl, op, lambda x, mn, mx: intrinsic(b, f"{hi}.{s}", ty, [intrinsic(b, f"{lo}.{s}", ty, [x, mn]), mx]))


@lowers("tt.extern_elementwise")
def _extern(fl: FunctionLowering, op) -> None:
    ty = fl.ty(op.results[0].type)
    sym = fl.target.map_extern(op.symbol.data)
    if sym is None:
        raise error_at_op(op, f"the {fl.target.backend_name} backend has no implementation of the extern "
                              f"function {op.symbol.data}")
    map_values(fl, op, lambda *a: fl.target.extern_function(fl.builder, sym, list(a), ty))


def is_float_type(ty) -> bool:
    return is_float(ty)


__all__ = ["map_values", "I64"]


def _check_constraints(fl: FunctionLowering, op) -> None:
    allowed = fl.target.inline_asm_constraints
    if allowed is None:
        return
    for part in op.constraints.data.split(","):
        code = part.strip().lstrip("=+&*")
        if not code or code.isdigit() or code.startswith(("~{", "{")) or code in allowed:
            continue
        raise error_at_op(op, f"inline assembly constraint {code!r} is not one the {fl.target.backend_name} backend "
                              f"can allocate for this target (expected one of {', '.join(sorted(allowed))}, a tied "
                              "operand's number or an explicit {register}); was the assembly written for another "
                              "instruction set?")


@lowers("tt.elementwise_inline_asm")
def _inline_asm(fl: FunctionLowering, op) -> None:
    """One LLVM inline-asm call per ``packed_element`` elements, as Triton packs them: an operand
    or result of elements narrower than 32 bits puts ``min(32 / bits, pack)`` of them in one
    register (``pack=4`` on int8: one 32-bit register), wider ones take a register each (``pack=4``
    on int32: four).  The results come back as one struct of every result's registers, result by
    result.  A thread's elements are padded with undef to a multiple of ``pack``."""
    _check_constraints(fl, op)
    b = fl.builder
    pack = op.packed_element.value.data
    args = [fl.get(v) for v in op.operands]
    tensor_out = isinstance(op.results[0].type, TensorType)
    n = max((len(a) for a in args if isinstance(a, list)), default=None)
    if n is None:
        n = 1
        args = [[a] for a in args]
    cols = [a if isinstance(a, list) else [a] * n for a in args]
    padded = -(-n // pack) * pack
    cols = [col + [ir.Constant(col[0].type, ir.Undefined)] * (padded - n) for col in cols]
    res_tys = [fl.ty(r.type) for r in op.results]

    def per_reg(ty) -> int:
        bits = bits_of(ty)  # pointers count 64
        return min(32 // bits if bits < 32 else 1, pack)

    def reg_type(ty) -> ir.Type:
        k = per_reg(ty)
        return ty if k == 1 else ir.IntType(bits_of(ty) * k)

    def pack_regs(vals, ty) -> list:
        k = per_reg(ty)
        if k == 1:
            return list(vals)
        regs = []
        for j in range(0, pack, k):
            vec = ir.Constant(ir.VectorType(ty, k), ir.Undefined)
            for i, v in enumerate(vals[j:j + k]):
                vec = b.insert_element(vec, v, const(I32, i))
            regs.append(b.bitcast(vec, reg_type(ty)))
        return regs

    def unpack_reg(word, ty) -> list:
        k = per_reg(ty)
        if k == 1:
            return [word]
        vec = b.bitcast(word, ir.VectorType(ty, k))
        return [b.extract_element(vec, const(I32, i)) for i in range(k)]

    arg_tys = [fl.ty(v.type) for v in op.operands]
    ret_regs = [[reg_type(t)] * (pack // per_reg(t)) for t in res_tys]
    flat = [t for regs in ret_regs for t in regs]
    ret = flat[0] if len(flat) == 1 else ir.LiteralStructType(flat)
    outs = [[] for _ in res_tys]
    for r0 in range(0, padded, pack):
        operands = [reg for col, t in zip(cols, arg_tys) for reg in pack_regs(col[r0:r0 + pack], t)]
        fty = ir.FunctionType(ret, [o.type for o in operands])
        call = b.asm(fty, op.asm_string.data, op.constraints.data, operands, not op.pure.value.data)
        words = [call] if len(flat) == 1 else [b.extract_value(call, i) for i in range(len(flat))]
        at = 0
        for k, (regs, t) in enumerate(zip(ret_regs, res_tys)):
            for w in words[at:at + len(regs)]:
                outs[k].extend(unpack_reg(w, t))
            at += len(regs)
    for r, vals in zip(op.results, outs):
        fl.set(r, vals[:n] if tensor_out else vals[0])


@lowers("tt.map_elementwise")
def _map_elementwise(fl: FunctionLowering, op) -> None:
    """The scalar region inlined once per group of ``pack`` consecutive registers of the thread;
    the region's own control flow (``scf.if``) becomes branches around each group."""
    pack = op.pack.value.data
    srcs = [fl.get(v) for v in op.srcs]
    n = len(srcs[0])
    if n % pack:
        raise LoweringError(f"tt.map_elementwise: pack = {pack} must divide the {n} elements each thread holds")
    block = op.scalar_block
    outs = [[None] * n for _ in op.results]
    for g in range(0, n, pack):
        for i, regs in enumerate(srcs):
            for j in range(pack):
                fl.set(block.args[i * pack + j], regs[g + j])
        vals = None
        for inner in block.ops:
            if inner.name == "tt.map_elementwise.return":
                vals = [fl.get(v) for v in inner.operands]
                break
            fl.lower_op(inner)
        for k, out in enumerate(outs):
            for j in range(pack):
                out[g + j] = vals[k * pack + j]
    for r, out in zip(op.results, outs):
        fl.set(r, out)
