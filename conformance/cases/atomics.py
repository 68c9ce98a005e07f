"""Atomics: add/max/min/and/or/xor/xchg/cas, masked, many programs on one counter.  Results are
checked without assuming any order among programs."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, CopyOf, Gen, Out, Rand, tol

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


@triton.jit
def atomic_result_broadcast_kernel(x_ptr, z_ptr, old_ptr, S: tl.constexpr, OP: tl.constexpr):
    # an atomic on an [S, 1] column: many threads hold each element, one runs its atomic, and all
    # of them use the old value (broadcast along columns, stored as a full [S, S] tile)
    rows = tl.arange(0, S)[:, None]
    if OP == "add":
        old = tl.atomic_add(z_ptr + rows, tl.load(x_ptr + rows), sem="relaxed")
    else:
        old = tl.atomic_cas(z_ptr + rows, tl.load(x_ptr + rows), tl.load(x_ptr + rows) + 1, sem="relaxed")
    tl.store(old_ptr + rows * S + tl.arange(0, S)[None, :], old + tl.zeros((S, S), dtype=old.dtype))


def _broadcast_case(op, tag, s):
    def check(out, inp):
        z0, x = inp["z_ptr"].astype(np.float64), inp["x_ptr"].astype(np.float64)
        want_old = np.repeat(z0[:, None], s, axis=1)
        want_z = z0 + x if op == "add" else np.where(z0 == x, x + 1, z0)
        got_old = out["old_ptr"].astype(np.float64).reshape(s, s)
        if not np.array_equal(got_old, want_old):
            r, c = (int(v) for v in np.argwhere(got_old != want_old)[0])
            return f"old[{r}, {c}]: got {got_old[r, c]}, expected {want_old[r, c]} (a holder missed the result)"
        if not np.array_equal(out["z_ptr"].astype(np.float64), want_z):
            r = int(np.argwhere(out["z_ptr"].astype(np.float64) != want_z)[0][0])
            return f"z[{r}]: got {out['z_ptr'][r]}, expected {want_z[r]} (an atomic ran more or less than once)"
    # small integers: exact in fp16 too; for cas, values that match on about half the rows
    hi = 64 if op == "add" else 2
    x = Gen(tag, (s,), lambda rng, shape: rng.integers(0, hi, shape))
    z = Gen(tag, (s,), lambda rng, shape: rng.integers(0, hi, shape))
    return Case(id=f"atomics/{op}-result-to-every-holder-{tag}-{s}", kernel=atomic_result_broadcast_kernel,
                grid=(1,), constexprs={"S": s, "OP": op}, inputs={"x_ptr": x},
                outputs={"z_ptr": Out(tag, (s,), init=z), "old_ptr": Out(tag, (s * s,))}, check=check)


CASES += [_broadcast_case(op, tag, s) for op in ("add", "cas") for tag in ("int32", "fp16") for s in (1, 4, 16)]


# --- compare-and-swap on 16-bit elements, and its bitwise comparison ------------------------------

@triton.jit
def cas_race_kernel(z_ptr, init_ptr, old_ptr, B: tl.constexpr):
    # every program tries to swap its id (converted to the element type) into slots that still
    # hold their initial value: exactly one wins each slot
    r = tl.arange(0, B)
    pid = tl.program_id(0)
    ids = (tl.full((B,), 1, tl.int32) + pid).to(z_ptr.dtype.element_ty)
    old = tl.atomic_cas(z_ptr + r, tl.load(init_ptr + r), ids)
    tl.store(old_ptr + pid * B + r, old)


@triton.jit
def cas_bits_kernel(z_ptr, cmp_ptr, val_ptr, old_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    old = tl.atomic_cas(z_ptr + r, tl.load(cmp_ptr + r), tl.load(val_ptr + r), sem="relaxed")
    tl.store(old_ptr + r, old)


def _raw(a, tag):
    """Bit patterns of the decoded values (floats arrive as float64: -0.0 and NaN keep their
    own patterns, so equal patterns here are equal patterns in the element type)."""
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def _check_cas_race(tag):
    def check(out, inp):
        init = inp["init_ptr"].astype(np.float64)
        olds, final = out["old_ptr"].astype(np.float64).reshape(G, B), out["z_ptr"].astype(np.float64)
        for i in range(B):
            winners = [p for p in range(G) if olds[p, i] == init[i]]
            if len(winners) != 1 or final[i] != winners[0] + 1:
                return f"slot {i}: {len(winners)} programs saw the initial value {init[i]}; final {final[i]}"
            if any(olds[p, i] != final[i] for p in range(G) if p != winners[0]):
                return f"slot {i}: a losing program did not see the winner's value"
    return check


_CAS_POOL = {"fp16": [0.0, -0.0, np.nan, 1.5, -2.25], "bf16": [0.0, -0.0, np.nan, 1.5, -2.25],
             "fp32": [0.0, -0.0, np.nan, 1.5, -2.25], "int16": [0, 1, -1, 300, -32768],
             "uint16": [0, 1, 65535, 300, 32768]}
CB = 256  # slots of the bitwise case: each pairing of the pools' values shows up


def _check_cas_bits(tag):
    def check(out, inp):
        z0, cmp, val = (_raw(inp[k], tag) for k in ("z_ptr", "cmp_ptr", "val_ptr"))
        want_z = np.where(z0 == cmp, val, z0)
        for name, got, want in (("old", _raw(out["old_ptr"], tag), z0), ("z", _raw(out["z_ptr"], tag), want_z)):
            bad = np.flatnonzero(got != want)
            if bad.size:
                i = int(bad[0])
                v = inp["z_ptr"], inp["cmp_ptr"]
                return (f"{name}[{i}]: got {out[name + '_ptr'][i]!r}, expected the value with bits {int(want[i]):#x} "
                        f"(z {v[0][i]!r}, cmp {v[1][i]!r}: the swap compares bit patterns)")
    return check


def _pool_gen(tag):
    pool = np.array(_CAS_POOL[tag], dtype=np.float64 if dtypes.is_float(tag) else np.int64)
    return Gen(tag, (CB,), lambda rng, shape: pool[rng.integers(0, len(pool), shape)])


for _tag in ("fp16", "bf16", "int16", "uint16"):
    CASES.append(Case(id=f"atomics/cas-race-{_tag}", kernel=cas_race_kernel, grid=(G,), constexprs={"B": B},
                      inputs={"init_ptr": CopyOf("z_ptr", _tag, (B,))},
                      outputs={"z_ptr": Out(_tag, (B,), init=Rand(_tag, (B,), 100, 1000)),
                               "old_ptr": Out(_tag, (G * B,))},
                      check=_check_cas_race(_tag)))
for _tag in ("fp16", "bf16", "fp32", "int16", "uint16"):
    CASES.append(Case(id=f"atomics/cas-bitwise-{_tag}", kernel=cas_bits_kernel, grid=(1,), constexprs={"B": CB},
                      inputs={"cmp_ptr": _pool_gen(_tag), "val_ptr": Rand(_tag, (CB,), 1, 100)},
                      outputs={"z_ptr": Out(_tag, (CB,), init=_pool_gen(_tag)), "old_ptr": Out(_tag, (CB,))},
                      check=_check_cas_bits(_tag)))


# --- float adds on runs of consecutive elements (vector atomics where the target has them) ---------

VB = 128  # slots: with 4 warps, a thread holds a run of consecutive slots


@triton.jit
def add_runs_kernel(x_ptr, z_ptr, old_ptr, n, B: tl.constexpr):
    # every program adds its row into the same slots below n and keeps the values it replaced; n a
    # multiple of 16 lets a thread update its run of slots with one instruction, 37 does not
    r = tl.arange(0, B)
    pid = tl.program_id(0)
    old = tl.atomic_add(z_ptr + r, tl.load(x_ptr + pid * B + r), mask=r < n, sem="relaxed")
    tl.store(old_ptr + pid * B + r, old, mask=r < n)


def _check_add_runs(n):
    def check(out, inp):
        # small positive integers: every partial sum is exact, so per slot the programs' values
        # form one chain: z0 -> old + x of each program in turn -> the final value
        z0, x = inp["z_ptr"].astype(np.float64), inp["x_ptr"].astype(np.float64).reshape(G, VB)
        olds, final = out["old_ptr"].astype(np.float64).reshape(G, VB), out["z_ptr"].astype(np.float64)
        for i in range(VB):
            if i >= n:
                if final[i] != z0[i] or not np.isnan(olds[:, i]).all():
                    return f"slot {i} (masked off): z {final[i]} (was {z0[i]}), old values {olds[:, i]}"
                continue
            before = sorted([z0[i]] + list(olds[:, i] + x[:, i]))
            after = sorted(list(olds[:, i]) + [final[i]])
            if before != after:
                return (f"slot {i}: the old values {olds[:, i]} with the addends {x[:, i]} do not chain from "
                        f"{z0[i]} to the final {final[i]} (an add lost, repeated or reported wrong)")
    return check


def _small(tag, shape, low, high):
    return Gen(tag, shape, lambda rng, s: rng.integers(low, high, s))


for _tag in ("fp32", "fp16", "bf16"):
    for _n in (VB, 37):
        CASES.append(Case(id=f"atomics/add-runs-{_tag}-n{_n}", kernel=add_runs_kernel, grid=(G,),
                          constexprs={"B": VB}, inputs={"x_ptr": _small(_tag, (G * VB,), 1, 16), "n": _n},
                          outputs={"z_ptr": Out(_tag, (VB,), init=_small(_tag, (VB,), 0, 64)),
                                   "old_ptr": Out(_tag, (G * VB,))},
                          check=_check_add_runs(_n)))
