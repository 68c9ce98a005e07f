"""Triton idioms for values and arithmetic: ``tl.full``/``zeros_like``/``full_like``, ``tl.where``
with scalars, integer wrap-around, ``//`` and ``%`` sign rules with scalars, mixed scalar/tensor
promotion (int64 and fp64 arguments, uint32 tensors), ``tl.cast``/``.to(bitcast=True)``,
``tl.math.*`` names, ``tl.cdiv`` in a kernel and constexpr arithmetic."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, Scalar, tol
from ._common import BLOCK, GRID, N, no_min, nonzero_small, trunc_div, trunc_mod

_LANG = {t: getattr(tl, dtypes.LANG_NAME[t]) for t in dtypes.ALL_DTYPES}


def _wrap(x, tag):
    """Python ints to the fixed-width type of ``tag`` (two's complement)."""
    return np.asarray(x).astype(np.int64).astype(dtypes.STORAGE[tag]) if dtypes.is_int(tag) else np.asarray(x)


@triton.jit
def full_add_kernel(x_ptr, out_ptr, V: tl.constexpr, DT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.full((BLOCK,), V, dtype=DT)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + c)


@triton.jit
def like_kernel(x_ptr, out_ptr, WHICH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if WHICH == "zeros_like":
        y = tl.zeros_like(x) + x * 2
    elif WHICH == "full_like":
        y = tl.full_like(x, 3) - x
    else:
        acc = tl.zeros([BLOCK], dtype=x.dtype)
        acc += x
        y = acc + x
    tl.store(out_ptr + offs, y)


@triton.jit
def where_scalar_kernel(x_ptr, out_ptr, WHICH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if WHICH == "relu":
        y = tl.where(x > 0, x, 0.0)
    elif WHICH == "sign":
        y = tl.where(x > 0, 1, -1)
    elif WHICH == "lhs_scalar":
        y = tl.where(x < 1, 2.5, x)
    else:  # a scalar condition broadcasts too
        y = tl.where(tl.program_id(0) == 0, x, -x)
    tl.store(out_ptr + offs, y)


@triton.jit
def int_ops_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "add":
        z = x + y
    elif OP == "mul":
        z = x * y
    elif OP == "sub":
        z = x - y
    elif OP == "floordiv":
        z = x // y
    elif OP == "mod":
        z = x % y
    elif OP == "floordiv_c":
        z = x // 7
    elif OP == "mod_c":
        z = x % -5
    elif OP == "rfloordiv_c":
        z = -1000 // y
    elif OP == "rmod_c":
        z = 1000 % y
    elif OP == "neg":
        z = -x
    else:
        z = x + 1
    tl.store(out_ptr + offs, z)


def _int_ref(op, tag):
    def ref(x_ptr, y_ptr):
        with np.errstate(over="ignore"):
            if op == "add":
                return x_ptr + y_ptr
            if op == "mul":
                return x_ptr * y_ptr
            if op == "sub":
                return x_ptr - y_ptr
            if op == "floordiv":
                return trunc_div(x_ptr, y_ptr)
            if op == "mod":
                return trunc_mod(x_ptr, y_ptr)
            t = x_ptr.dtype.type
            if op == "floordiv_c":
                return trunc_div(x_ptr, np.full_like(x_ptr, 7))
            if op == "mod_c":
                return trunc_mod(x_ptr, np.full_like(x_ptr, -5))
            if op == "rfloordiv_c":
                return trunc_div(np.full_like(y_ptr, -1000), y_ptr)
            if op == "rmod_c":
                return trunc_mod(np.full_like(y_ptr, 1000), y_ptr)
            if op == "neg":
                return (t(0) - x_ptr).astype(x_ptr.dtype)
            return (x_ptr + t(1)).astype(x_ptr.dtype)
    return ref


@triton.jit
def promote_kernel(x_ptr, s, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if OP == "add":
        z = x + s
    elif OP == "mul":
        z = x * s
    elif OP == "truediv":
        z = x / s
    else:
        z = s - x
    tl.store(out_ptr + offs, z)


@triton.jit
def mixed_tensor_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


@triton.jit
def cast_kernel(x_ptr, out_ptr, DT: tl.constexpr, BITCAST: tl.constexpr, VIA: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if VIA == "method":
        y = x.to(DT, bitcast=BITCAST)
    else:
        y = tl.cast(x, DT, bitcast=BITCAST)
    tl.store(out_ptr + offs, y)


@triton.jit
def cast_rtz_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float16, fp_downcast_rounding="rtz"))


def _cast_ref(x, src, dst):
    if dst == "int1":
        return (x != 0).astype(np.int8)
    if dtypes.is_int(dst):
        return _wrap(np.trunc(x) if dtypes.is_float(src) else x.astype(np.int64), dst)
    return dtypes.round_to(x.astype(np.float64), dst)


def _rtz_fp16(x):
    h = x.astype(np.float16)
    over = np.abs(h.astype(np.float64)) > np.abs(x)
    return np.where(over, np.nextafter(h, np.float16(0)), h).astype(np.float64)


@triton.jit
def math_names_kernel(x_ptr, y_ptr, out_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if FN == "exp":
        z = tl.math.exp(x)
    elif FN == "exp2":
        z = tl.math.exp2(x)
    elif FN == "log":
        z = tl.math.log(y)
    elif FN == "log2":
        z = tl.math.log2(y)
    elif FN == "sqrt":
        z = tl.math.sqrt(y)
    elif FN == "sqrt_rn":
        z = tl.math.sqrt_rn(y)
    elif FN == "rsqrt":
        z = tl.math.rsqrt(y)
    elif FN == "sin":
        z = tl.math.sin(x)
    elif FN == "cos":
        z = tl.math.cos(x)
    elif FN == "erf":
        z = tl.math.erf(x)
    elif FN == "floor":
        z = tl.math.floor(x)
    elif FN == "ceil":
        z = tl.math.ceil(x)
    elif FN == "abs":
        z = tl.math.abs(x)
    elif FN == "fma":
        z = tl.math.fma(x, y, x)
    elif FN == "div_rn":
        z = tl.math.div_rn(x, y)
    elif FN == "fdiv":
        z = tl.math.fdiv(x, y)
    elif FN == "method_exp":
        z = x.exp() + y.sqrt()
    else:  # clamp
        z = tl.clamp(x, -1.0, 1.5)
    tl.store(out_ptr + offs, z)


_MATH_REF = {
    "exp": lambda x, y: np.exp(x), "exp2": lambda x, y: np.exp2(x), "log": lambda x, y: np.log(y),
    "log2": lambda x, y: np.log2(y), "sqrt": lambda x, y: np.sqrt(y), "sqrt_rn": lambda x, y: np.sqrt(y),
    "rsqrt": lambda x, y: 1 / np.sqrt(y), "sin": lambda x, y: np.sin(x), "cos": lambda x, y: np.cos(x),
    "erf": None, "floor": lambda x, y: np.floor(x), "ceil": lambda x, y: np.ceil(x),
    "abs": lambda x, y: np.abs(x), "fma": lambda x, y: x * y + x, "div_rn": lambda x, y: x / y,
    "fdiv": lambda x, y: x / y, "method_exp": lambda x, y: np.exp(x) + np.sqrt(y),
    "clamp": lambda x, y: np.clip(x, -1.0, 1.5),
}


def _erf(x):
    import math
    return np.vectorize(math.erf)(x)


@triton.jit
def umulhi_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.math.umulhi(tl.load(x_ptr + offs), tl.load(y_ptr + offs)))


@triton.jit
def cdiv_constexpr_kernel(out_ptr, n, K: tl.constexpr, BLOCK: tl.constexpr):
    # tl.cdiv on a run-time scalar, on constexprs, and constexpr arithmetic shaping a range
    pid = tl.program_id(0)
    nblocks = tl.cdiv(n, BLOCK)
    HALF: tl.constexpr = BLOCK // 2
    offs = pid * BLOCK + tl.arange(0, HALF * 2)
    k2 = K * 3 + 1
    kb = tl.cdiv(K, 4)
    val = offs * k2 + nblocks * 1000 + kb
    tl.store(out_ptr + offs, val, mask=offs < n)


def _cdiv_ref(n, K):
    offs = np.arange(N, dtype=np.int64)
    val = offs * (K * 3 + 1) + ((n + BLOCK - 1) // BLOCK) * 1000 + (K + 3) // 4
    return val.astype(np.int32)


CASES = []
for t, v in (("int8", 100), ("int16", -300), ("int32", 7), ("int64", 2**40), ("uint8", 200),
             ("fp16", 1.5), ("fp32", -2.25), ("fp64", 0.1)):
    CASES.append(Case(id=f"compat/full-{t}", kernel=full_add_kernel, grid=GRID,
                      constexprs={"V": v, "DT": _LANG[t], "BLOCK": BLOCK},
                      inputs={"x_ptr": Rand(t, (N,))}, outputs={"out_ptr": Out(t, (N,))},
                      reference=(lambda v, t: lambda x_ptr: _wrap_add(x_ptr, v, t))(v, t)))


def _wrap_add(x, v, t):
    if dtypes.is_int(t):
        with np.errstate(over="ignore"):
            return (x + np.asarray(v).astype(x.dtype)).astype(x.dtype)
    return x + dtypes.round_to(np.float64(v), t)


for t in ("int32", "fp32", "fp16"):
    for w in ("zeros_like", "full_like", "zeros_acc"):
        ref = {"zeros_like": lambda x_ptr: (x_ptr * 2).astype(x_ptr.dtype),
               "full_like": lambda x_ptr: (3 - x_ptr).astype(x_ptr.dtype),
               "zeros_acc": lambda x_ptr: (x_ptr * 2).astype(x_ptr.dtype)}[w]
        lo, hi = (-1000, 1000) if t == "int32" else (None, None)
        CASES.append(Case(id=f"compat/{w}-{t}", kernel=like_kernel, grid=GRID,
                          constexprs={"WHICH": w, "BLOCK": BLOCK}, inputs={"x_ptr": Rand(t, (N,), lo, hi)},
                          outputs={"out_ptr": Out(t, (N,))}, reference=ref))

for t in ("fp32", "fp16", "int32"):
    CASES += [
        Case(id=f"compat/where-relu-{t}", kernel=where_scalar_kernel, grid=GRID,
             constexprs={"WHICH": "relu", "BLOCK": BLOCK}, inputs={"x_ptr": Rand(t, (N,), -100, 100)},
             outputs={"out_ptr": Out("fp32" if t == "int32" else t, (N,))},
             reference=lambda x_ptr: np.where(x_ptr > 0, x_ptr, 0.0)),
        Case(id=f"compat/where-scalar-cond-{t}", kernel=where_scalar_kernel, grid=GRID,
             constexprs={"WHICH": "scalar_cond", "BLOCK": BLOCK}, inputs={"x_ptr": Rand(t, (N,), -100, 100)},
             outputs={"out_ptr": Out(t, (N,))},
             reference=lambda x_ptr: np.concatenate([x_ptr[:BLOCK], -x_ptr[BLOCK:]])),
    ]
CASES += [
    Case(id="compat/where-both-scalars", kernel=where_scalar_kernel, grid=GRID,
         constexprs={"WHICH": "sign", "BLOCK": BLOCK}, inputs={"x_ptr": Rand("fp32", (N,))},
         outputs={"out_ptr": Out("int32", (N,))},
         reference=lambda x_ptr: np.where(x_ptr > 0, 1, -1).astype(np.int32)),
    Case(id="compat/where-lhs-scalar-fp16", kernel=where_scalar_kernel, grid=GRID,
         constexprs={"WHICH": "lhs_scalar", "BLOCK": BLOCK}, inputs={"x_ptr": Rand("fp16", (N,))},
         outputs={"out_ptr": Out("fp16", (N,))}, reference=lambda x_ptr: np.where(x_ptr < 1, 2.5, x_ptr)),
]

for t, ops in (("int32", ("add", "mul", "sub", "floordiv", "mod", "floordiv_c", "mod_c", "rfloordiv_c",
                          "rmod_c", "neg", "inc")),
               ("int8", ("add", "mul", "floordiv", "mod", "mod_c", "inc")),
               ("int16", ("mul", "floordiv_c", "rmod_c")),
               ("int64", ("mul", "floordiv", "mod", "neg")),
               ("uint8", ("add", "sub", "neg", "floordiv", "mod", "inc")),
               ("uint32", ("mul", "sub", "floordiv", "mod", "floordiv_c", "rmod_c"))):
    for op in ops:
        if t.startswith("uint") and op in ("mod_c", "rfloordiv_c"):
            continue
        div = op in ("floordiv", "mod", "rfloordiv_c", "rmod_c")
        CASES.append(Case(
            id=f"compat/int-{op}-{t}", kernel=int_ops_kernel, grid=GRID, constexprs={"OP": op, "BLOCK": BLOCK},
            inputs={"x_ptr": no_min(t), "y_ptr": nonzero_small(t) if div else Rand(t, (N,))},
            outputs={"out_ptr": Out(t, (N,))}, reference=_int_ref(op, t)))

# mixed scalar/tensor promotion: the scalar argument is a run-time value of its own type
_PROMOTE = [
    # (id, x dtype, scalar value, op, out dtype)
    ("i32-plus-i64-arg", "int32", 2**40 + 3, "add", "int64"),
    ("i32-times-i64-arg", "int32", -(2**33), "mul", "int64"),
    ("i8-plus-i32-arg", "int8", 1000, "add", "int32"),
    ("u8-plus-i32-arg", "uint8", 77, "add", "int32"),
    ("fp16-times-fp32-arg", "fp16", 1.75, "mul", "fp32"),
    ("fp64-plus-fp32-arg", "fp64", 0.3, "add", "fp64"),
    ("i32-div-i32-arg", "int32", 7, "truediv", "fp32"),
    ("i64-rsub-i32-arg", "int64", 5, "rsub", "int64"),
]


def _promote_ref(op, out_tag, s):
    def ref(x_ptr):
        v = np.float64(np.float32(s)) if isinstance(s, float) else s  # a Python float argument is fp32
        x = x_ptr.astype(np.int64) if dtypes.is_int(out_tag) else x_ptr.astype(np.float64)
        if op == "add":
            r = x + v
        elif op == "mul":
            r = x * v
        elif op == "truediv":
            r = x / v
        else:
            r = v - x
        return _wrap(r, out_tag) if dtypes.is_int(out_tag) else r
    return ref


for name, t, s, op, out in _PROMOTE:
    lo, hi = (-1000, 1000) if dtypes.is_int(t) and t not in ("int8", "uint8") else (None, None)
    CASES.append(Case(id=f"compat/promote-{name}", kernel=promote_kernel, grid=GRID,
                      constexprs={"OP": op, "BLOCK": BLOCK}, inputs={"x_ptr": Rand(t, (N,), lo, hi), "s": s},
                      outputs={"out_ptr": Out(out, (N,))}, reference=_promote_ref(op, out, s)))

for a, b, out in (("int32", "uint32", "uint32"), ("int8", "int64", "int64"), ("uint16", "int32", "int32"),
                  ("fp16", "bf16", "fp16"), ("bf16", "int32", "fp32"), ("fp32", "fp64", "fp64"),
                  ("int16", "fp16", "fp16")):
    CASES.append(Case(id=f"compat/promote-tensors-{a}-{b}", kernel=mixed_tensor_kernel, grid=GRID,
                      constexprs={"BLOCK": BLOCK},
                      inputs={"x_ptr": Rand(a, (N,), -100 if not a.startswith("u") else 1, 100),
                              "y_ptr": Rand(b, (N,), -100 if not b.startswith("u") else 1, 100)},
                      outputs={"out_ptr": Out(out, (N,))},
                      reference=(lambda out: lambda x_ptr, y_ptr: _wrap(x_ptr.astype(np.int64) + y_ptr.astype(np.int64), out)
                                 if dtypes.is_int(out) else x_ptr + y_ptr)(out)))

_BITCASTS = [("fp32", "int32", np.int32), ("fp32", "uint32", np.uint32), ("fp16", "int16", np.int16),
             ("int32", "fp32", np.float32), ("fp64", "int64", np.int64), ("uint16", "fp16", np.float16)]
for i, (src, dst, npdst) in enumerate(_BITCASTS):
    if src == "int32":
        x_spec = Rand(src, (N,), 0x3F000000, 0x40800000)  # bit patterns of normal floats in [0.5, 4]
    elif src == "uint16":
        x_spec = Rand(src, (N,), 0x3000, 0x5000)
    else:
        x_spec = Rand(src, (N,))
    CASES.append(Case(id=f"compat/bitcast-{src}-{dst}", kernel=cast_kernel, grid=GRID,
                      constexprs={"DT": _LANG[dst], "BITCAST": True, "VIA": "method" if i % 2 else "tl.cast",
                                  "BLOCK": BLOCK},
                      inputs={"x_ptr": x_spec},
                      outputs={"out_ptr": Out(dst, (N,))},
                      reference=(lambda src, npdst: lambda x_ptr: np.asarray(
                          x_ptr.astype(dtypes.STORAGE[src])).view(npdst).astype(
                          np.float64 if np.issubdtype(npdst, np.floating) else npdst))(src, npdst)))

for src, dst, lo, hi in (("fp32", "int8", -127, 127), ("fp32", "uint8", 0, 255), ("fp16", "int32", -1000, 1000),
                         ("int32", "fp16", -2000, 2000), ("int64", "fp32", -2**40, 2**40), ("fp64", "fp32", None, None),
                         ("fp32", "int1", -2, 2), ("int8", "uint32", None, None), ("uint8", "int8", None, None)):
    ref = (lambda src, dst: lambda x_ptr: _cast_ref(x_ptr, src, dst))(src, dst)
    out = "int8" if dst == "int1" else dst
    kern_dt = tl.int1 if dst == "int1" else _LANG[dst]
    CASES.append(Case(id=f"compat/cast-{src}-{dst}", kernel=cast_kernel, grid=GRID,
                      constexprs={"DT": kern_dt, "BITCAST": False, "VIA": "tl.cast", "BLOCK": BLOCK},
                      inputs={"x_ptr": Rand(src, (N,), lo, hi)}, outputs={"out_ptr": Out(out, (N,))},
                      reference=ref, rtol=0, atol=0))
CASES.append(Case(id="compat/cast-fp32-fp16-rtz", kernel=cast_rtz_kernel, grid=GRID, constexprs={"BLOCK": BLOCK},
                  inputs={"x_ptr": Rand("fp32", (N,), -1000, 1000)}, outputs={"out_ptr": Out("fp16", (N,))},
                  reference=lambda x_ptr: _rtz_fp16(x_ptr), rtol=0, atol=0))

for fn, ref in _MATH_REF.items():
    ref = ref or (lambda x, y: _erf(x))
    tag = "fp64" if fn in ("exp", "sqrt", "floor", "fma") else "fp32"
    CASES.append(Case(id=f"compat/math-{fn}-{tag}", kernel=math_names_kernel, grid=GRID,
                      constexprs={"FN": fn, "BLOCK": BLOCK},
                      inputs={"x_ptr": Rand(tag, (N,), -3, 3), "y_ptr": Rand(tag, (N,), 0.1, 8)},
                      outputs={"out_ptr": Out(tag, (N,))},
                      reference=(lambda ref: lambda x_ptr, y_ptr: ref(x_ptr, y_ptr))(ref),
                      **tol(dtypes.MATH_TOLERANCE, tag)))
CASES.append(Case(id="compat/math-umulhi-int32", kernel=umulhi_kernel, grid=GRID, constexprs={"BLOCK": BLOCK},
                  inputs={"x_ptr": Rand("int32", (N,)), "y_ptr": Rand("int32", (N,))},
                  outputs={"out_ptr": Out("int32", (N,))},
                  reference=lambda x_ptr, y_ptr: ((x_ptr.astype(np.uint32).astype(np.uint64) *
                                                   y_ptr.astype(np.uint32).astype(np.uint64)) >> 32)
                  .astype(np.uint32).view(np.int32)))
CASES.append(Case(id="compat/cdiv-constexpr-arith", kernel=cdiv_constexpr_kernel, grid=GRID,
                  constexprs={"K": 5, "BLOCK": BLOCK}, inputs={"n": N - 3},
                  outputs={"out_ptr": Out("int32", (N,), init=Rand("int32", (N,)))},
                  reference=lambda n, out_ptr: np.where(np.arange(N) < n, _cdiv_ref(n, 5), out_ptr)))
