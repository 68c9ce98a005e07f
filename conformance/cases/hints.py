"""What a kernel tells the compiler beyond its computation: pointers to constant data
(``tl.const`` parameters, ``tl.pointer_type(..., const=True)``), facts it may assume
(``tl.assume``), the ``maxnreg`` launch option (a register cap: the results must not change), and
the launch's shape as ``tl.extra.cuda`` reports it (``num_warps``, ``num_threads``).

Categories ``const/``, ``assume/``, ``maxnreg/`` and ``extra_cuda/``."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Err, Out, Rand, Scalar

BLOCK, N = 256, 512


@triton.jit
def scale_from_const(x_ptr: tl.const, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3.0, mask=m)


@triton.jit
def pick_const_source(a_ptr: tl.const, b_ptr: tl.const, y_ptr, use_b, BLOCK: tl.constexpr):
    # both branches are pointers to const: the merged value is one too, and loads through it work
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if use_b > 0:
        src = b_ptr
    else:
        src = a_ptr
    tl.store(y_ptr + offs, tl.load(src + offs) - 1.0)


@triton.jit
def cast_to_const_pointer(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    src = x_ptr.to(tl.pointer_type(tl.float32, const=True))
    tl.store(y_ptr + offs, tl.load(src + offs) + 2.0)


@triton.jit
def store_through_const(x_ptr: tl.const, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)


@triton.jit
def store_through_const_cast(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ro = x_ptr.to(tl.pointer_type(tl.float32, const=True))
    tl.store(ro + offs, tl.load(x_ptr + offs))


@triton.jit
def atomic_through_const(x_ptr: tl.const, BLOCK: tl.constexpr):
    tl.atomic_add(x_ptr + tl.arange(0, BLOCK), 1.0)


@triton.jit
def mixed_constness(x_ptr: tl.const, y_ptr, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if flag > 0:
        dst = x_ptr
    else:
        dst = y_ptr
    tl.store(y_ptr + offs, tl.load(dst + offs))


@triton.jit
def assume_bounds(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(stride > 0)
    tl.assume(n % BLOCK == 0)
    rest = n - pid * BLOCK
    tl.assume(rest >= BLOCK)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    # the branch the assumption makes dead must not be taken, and the live one must be
    if rest >= BLOCK:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs * stride) * 2.0)
    else:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs * stride) * -1.0)


@triton.jit
def many_live_values(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # enough values live at once that a tight register cap forces ptxas to spill
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    a = x * 1.5
    b = a * x + 0.25
    c = b * a - x
    d = c * b + a
    e = d * c - b
    f = e * d + c
    tl.store(y_ptr + offs, a + b + c + d + e + f)


@triton.jit
def launch_shape(out_ptr):
    # one slot per thread of the program, each holding the warp count
    nt: tl.constexpr = tl.extra.cuda.num_threads()
    offs = tl.arange(0, nt)
    tl.store(out_ptr + offs, tl.full((nt,), tl.extra.cuda.num_warps(), tl.int32) + offs * 0)


def _many_ref(x_ptr):
    x = x_ptr.astype(np.float32)
    a = x * np.float32(1.5)
    b = a * x + np.float32(0.25)
    c = b * a - x
    d = c * b + a
    e = d * c - b
    f = e * d + c
    return (a + b + c + d + e + f).astype(np.float64)


def _cases():
    x = Rand("fp32", (N,))
    cases = [
        Case(id="const/load-through-const-parameter", kernel=scale_from_const, grid=(2,), constexprs={"BLOCK": BLOCK},
             inputs={"x_ptr": x, "n": N - 7}, outputs={"y_ptr": Out("fp32", (N,), init=Rand("fp32", (N,)))},
             reference=lambda x_ptr, n, y_ptr: np.concatenate([x_ptr[:n] * 3.0, y_ptr[n:]])),
        Case(id="const/if-merges-const-pointers", kernel=pick_const_source, grid=(2,), constexprs={"BLOCK": BLOCK},
             inputs={"a_ptr": x, "b_ptr": Rand("fp32", (N,)), "use_b": Scalar("int32", 1, 5)},
             outputs={"y_ptr": Out("fp32", (N,))}, reference=lambda a_ptr, b_ptr, use_b: b_ptr - 1.0),
        Case(id="const/cast-to-const-pointer-type", kernel=cast_to_const_pointer, grid=(2,),
             constexprs={"BLOCK": BLOCK}, inputs={"x_ptr": x}, outputs={"y_ptr": Out("fp32", (N,))},
             reference=lambda x_ptr: x_ptr + 2.0),
        Case(id="const/store-through-const-parameter", kernel=store_through_const, constexprs={"BLOCK": 64},
             inputs={"x_ptr": Rand("fp32", (64,))},
             expect_error=Err("Cannot store to a constant pointer", line="tl.store(x_ptr + offs")),
        Case(id="const/store-through-const-cast", kernel=store_through_const_cast, constexprs={"BLOCK": 64},
             inputs={"x_ptr": Rand("fp32", (64,))},
             expect_error=Err("Cannot store to a constant pointer", line="tl.store(ro + offs")),
        Case(id="const/atomic-through-const-parameter", kernel=atomic_through_const, constexprs={"BLOCK": 64},
             inputs={"x_ptr": Rand("fp32", (64,))},
             expect_error=Err("const", line="tl.atomic_add(x_ptr")),
        Case(id="const/branches-differ-in-constness", kernel=mixed_constness, constexprs={"BLOCK": 64},
             # never 1: an integer argument equal to 1 is specialised to a constant, and the branch
             # on it (whose two sides differ in constness) is then decided at compile time
             inputs={"x_ptr": Rand("fp32", (64,)), "y_ptr": Rand("fp32", (64,)), "flag": Scalar("int32", 2, 100)},
             expect_error=Err("Mismatched type for dst", "const_pointer<fp32>", line="if flag > 0")),
        Case(id="assume/facts-about-scalars", kernel=assume_bounds, grid=(N // BLOCK,), constexprs={"BLOCK": BLOCK},
             inputs={"x_ptr": Rand("fp32", (N,)), "n": N, "stride": 1}, outputs={"y_ptr": Out("fp32", (N,))},
             reference=lambda x_ptr, n, stride: x_ptr * 2.0),
    ]
    for cap in (32, 64, 255):
        cases.append(Case(id=f"maxnreg/live-values-{cap}", kernel=many_live_values, grid=(2,),
                          constexprs={"BLOCK": BLOCK}, options={"maxnreg": cap}, inputs={"x_ptr": Rand("fp32", (N,), -2, 2)},
                          outputs={"y_ptr": Out("fp32", (N,))}, reference=_many_ref, rtol=1e-5, atol=1e-5))
    for warps in (1, 4, 8):
        n = 32 * warps
        cases.append(Case(id=f"extra_cuda/num-threads-{warps}-warps", kernel=launch_shape, options={"num_warps": warps},
                          outputs={"out_ptr": Out("int32", (512,), poison="sentinel")},
                          check=lambda out, inp, n=n, warps=warps: _check_launch_shape(out["out_ptr"], n, warps)))
    return cases


def _check_launch_shape(out, n, warps):
    if not (out[:n] == warps).all():
        return f"the first {n} slots (num_threads) should hold {warps} (num_warps): got {out[:n][:8]}..."
    if (out[n:] == warps).any():
        return f"num_threads is larger than {n}: slot {n + int(np.argmax(out[n:] == warps))} was written"


CASES = _cases()
