"""Atomics: add/max/min/and/or/xor/xchg/cas, masked, many programs on one counter.  Results are
checked without assuming any order among programs."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, CopyOf, Out, Rand, tol

B, G = 64, 8  # elements per program, programs


@triton.jit
def atomic_rmw_kernel(x_ptr, z_ptr, OP: tl.constexpr, B: tl.constexpr):
    # every program combines its own row of x into the same B slots of z
    r = tl.arange(0, B)
    x = tl.load(x_ptr + tl.program_id(0) * B + r)
    if OP == "add":
        tl.atomic_add(z_ptr + r, x)
    elif OP == "max":
        tl.atomic_max(z_ptr + r, x)
    elif OP == "min":
        tl.atomic_min(z_ptr + r, x)
    elif OP == "and":
        tl.atomic_and(z_ptr + r, x)
    elif OP == "or":
        tl.atomic_or(z_ptr + r, x)
    else:
        tl.atomic_xor(z_ptr + r, x)


@triton.jit
def masked_atomic_add_kernel(x_ptr, z_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + tl.program_id(0) * B + r)
    tl.atomic_add(z_ptr + r, x, mask=(r < n) & (x > 0))


@triton.jit
def ticket_kernel(counter_ptr, old_ptr):
    # every program takes a ticket from one counter; the tickets must be all distinct
    old = tl.atomic_add(counter_ptr, 1)
    tl.store(old_ptr + tl.program_id(0), old)


@triton.jit
def xchg_kernel(z_ptr, old_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    pid = tl.program_id(0)
    old = tl.atomic_xchg(z_ptr + r, tl.full((B,), 1, tl.int32) + pid)
    tl.store(old_ptr + pid * B + r, old)


@triton.jit
def cas_kernel(z_ptr, init_ptr, old_ptr, B: tl.constexpr):
    # every program tries to swap its id into slots that still hold their initial value
    r = tl.arange(0, B)
    pid = tl.program_id(0)
    old = tl.atomic_cas(z_ptr + r, tl.load(init_ptr + r), tl.full((B,), 1, tl.int32) + pid)
    tl.store(old_ptr + pid * B + r, old)


_NP = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
       "or": np.bitwise_or, "xor": np.bitwise_xor}


def _rmw_case(op, tag):
    src = Rand(tag, (G * B,), -100, 100) if dtypes.is_float(tag) else Rand(tag, (G * B,))

    def ref(x_ptr, z_ptr):
        acc = z_ptr.copy()
        for row in x_ptr.reshape(G, B):
            acc = _NP[op](acc, row)
        return acc
    return Case(id=f"atomics/{op}-{tag}", kernel=atomic_rmw_kernel, grid=(G,), constexprs={"OP": op, "B": B},
                inputs={"x_ptr": src}, outputs={"z_ptr": Out(tag, (B,), init=Rand(tag, (B,), src.low, src.high))},
                reference=ref, **(tol(dtypes.ACCUM_TOLERANCE, tag) if dtypes.is_float(tag) else {}))


def _check_tickets(out, inp):
    start = int(inp["counter_ptr"][0])
    if sorted(out["old_ptr"].astype(np.int64)) != list(range(start, start + 256)):
        return f"tickets are not {start}..{start + 255} each once: got {sorted(out['old_ptr'])[:6]}..."
    if int(out["counter_ptr"][0]) != start + 256:
        return f"counter ends at {out['counter_ptr'][0]}, expected {start + 256}"


def _check_xchg(out, inp):
    # per slot, the old values and the final value are the initial value and every program's id, once each
    for i in range(B):
        seen = sorted([int(v) for v in out["old_ptr"].reshape(G, B)[:, i]] + [int(out["z_ptr"][i])])
        want = sorted([int(inp["z_ptr"][i])] + list(range(1, G + 1)))
        if seen != want:
            return f"slot {i}: old values and final value {seen} are not {want}"


def _check_cas(out, inp):
    olds = out["old_ptr"].reshape(G, B).astype(np.int64)
    for i in range(B):
        init, final = int(inp["init_ptr"][i]), int(out["z_ptr"][i])
        winners = [p for p in range(G) if olds[p, i] == init]
        if len(winners) != 1 or final != winners[0] + 1:
            return f"slot {i}: {len(winners)} programs saw the initial value; final {final}"
        if any(olds[p, i] != final for p in range(G) if p != winners[0]):
            return f"slot {i}: a losing program did not see the winner's value"


CASES = [_rmw_case(op, t) for op in ("add", "max", "min") for t in ("int32", "uint32", "fp32", "int64")]
CASES += [_rmw_case(op, t) for op in ("and", "or", "xor") for t in ("int32", "uint32", "int64")]
_init = Rand("int32", (1,), 1, 1 << 20)
CASES += [
    Case(id="atomics/add-masked-fp32", kernel=masked_atomic_add_kernel, grid=(G,), constexprs={"B": B},
         inputs={"x_ptr": Rand("fp32", (G * B,)), "n": 40}, outputs={"z_ptr": Out("fp32", (B,), init=Rand("fp32", (B,)))},
         reference=lambda x_ptr, z_ptr: z_ptr + np.concatenate(
             [np.where(x_ptr.reshape(G, B)[:, :40] > 0, x_ptr.reshape(G, B)[:, :40], 0).sum(0), np.zeros(B - 40)]),
         **tol(dtypes.ACCUM_TOLERANCE, "fp32")),
    Case(id="atomics/add-counter-256-programs", kernel=ticket_kernel, grid=(256,),
         outputs={"counter_ptr": Out("int32", (1,), init=_init), "old_ptr": Out("int32", (256,))},
         check=_check_tickets),
    Case(id="atomics/xchg-int32", kernel=xchg_kernel, grid=(G,), constexprs={"B": B},
         outputs={"z_ptr": Out("int32", (B,), init=Rand("int32", (B,), 100, 1000)), "old_ptr": Out("int32", (G * B,))},
         check=_check_xchg),
    Case(id="atomics/cas-int32", kernel=cas_kernel, grid=(G,), constexprs={"B": B},
         inputs={"init_ptr": CopyOf("z_ptr", "int32", (B,))},
         outputs={"z_ptr": Out("int32", (B,), init=Rand("int32", (B,), 100, 1000)), "old_ptr": Out("int32", (G * B,))},
         check=_check_cas),
]
