"""Atomics under every memory ordering (``sem``: relaxed, acquire, release, acq_rel) and scope
(``scope``: cta, gpu, sys): tickets from shared counters, compare-and-swap races, every
read-modify-write kind, and a flag that publishes data from one program to another (release on
the writer's side, acquire on the reader's).

A ``cta``-scoped atomic is atomic only among the threads of one program, so those cases run one
program whose elements contend for a few slots; the others run several programs on the same
slots.  Results are checked without assuming any order among the contending threads."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, CopyOf, Gen, Out, Rand, tol

SEMS = ("relaxed", "acquire", "release", "acq_rel")
SCOPES = ("cta", "gpu", "sys")
B, S = 64, 4  # elements per program, slots they contend for


def _programs(scope: str) -> int:
    return 1 if scope == "cta" else 8


@triton.jit
def ticket_kernel(counter_ptr, old_ptr, SEM: tl.constexpr, SCOPE: tl.constexpr, B: tl.constexpr,
                  S: tl.constexpr):
    # element r of every program takes a ticket from counter r % S
    r = tl.arange(0, B)
    old = tl.atomic_add(counter_ptr + r % S, 1, sem=SEM, scope=SCOPE)
    tl.store(old_ptr + tl.program_id(0) * B + r, old)


@triton.jit
def cas_race_kernel(z_ptr, init_ptr, old_ptr, SEM: tl.constexpr, SCOPE: tl.constexpr, B: tl.constexpr,
                    S: tl.constexpr):
    # every element tries to swap its own (distinct, non-zero) id into slot r % S
    r = tl.arange(0, B)
    me = tl.program_id(0) * B + r + 1
    old = tl.atomic_cas(z_ptr + r % S, tl.load(init_ptr + r % S), me, sem=SEM, scope=SCOPE)
    tl.store(old_ptr + me - 1, old)


@triton.jit
def rmw_kinds_kernel(x_ptr, i_ptr, u_ptr, l_ptr, add_ptr, max_ptr, min_ptr, xor_ptr, and_ptr, or_ptr,
                     SEM: tl.constexpr, SCOPE: tl.constexpr, B: tl.constexpr, S: tl.constexpr):
    r = tl.arange(0, B)
    k = tl.program_id(0) * B + r
    slot = r % S
    tl.atomic_add(add_ptr + slot, tl.load(x_ptr + k), sem=SEM, scope=SCOPE)
    tl.atomic_max(max_ptr + slot, tl.load(i_ptr + k), sem=SEM, scope=SCOPE)
    tl.atomic_min(min_ptr + slot, tl.load(u_ptr + k), sem=SEM, scope=SCOPE)
    tl.atomic_xor(xor_ptr + slot, tl.load(l_ptr + k), sem=SEM, scope=SCOPE)
    tl.atomic_and(and_ptr + slot, tl.load(i_ptr + k), sem=SEM, scope=SCOPE)
    tl.atomic_or(or_ptr + slot, tl.load(i_ptr + k), sem=SEM, scope=SCOPE)


@triton.jit
def publish_kernel(src_ptr, data_ptr, flag_ptr, out_ptr, REL: tl.constexpr, ACQ: tl.constexpr,
                   SCOPE: tl.constexpr, B: tl.constexpr):
    # program 0 writes the data, then raises the flag (release); program 1 waits for the flag
    # (acquire), then reads the data: it must see every element program 0 wrote
    r = tl.arange(0, B)
    if tl.program_id(0) == 0:
        tl.store(data_ptr + r, tl.load(src_ptr + r))
        tl.debug_barrier()  # every thread's stores happen before thread 0's release
        tl.atomic_xchg(flag_ptr, 1, sem=REL, scope=SCOPE)
    else:
        while tl.atomic_add(flag_ptr, 0, sem=ACQ, scope=SCOPE) == 0:
            pass
        tl.store(out_ptr + r, tl.load(data_ptr + r))


def _contenders(scope):
    """(program, element) pairs grouped by slot: what contends for slot s."""
    g = _programs(scope)
    return g, [[p * B + r for p in range(g) for r in range(B) if r % S == s] for s in range(S)]


def _check_tickets(scope):
    def check(out, inp):
        g, groups = _contenders(scope)
        olds = out["old_ptr"].astype(np.int64)
        for s, members in enumerate(groups):
            start = int(inp["counter_ptr"][s])
            got = sorted(int(olds[k]) for k in members)
            if got != list(range(start, start + len(members))):
                return f"slot {s}: tickets {got[:4]}... are not {start}..{start + len(members) - 1} each once"
            if int(out["counter_ptr"][s]) != start + len(members):
                return f"slot {s}: counter ends at {out['counter_ptr'][s]}, expected {start + len(members)}"
    return check


def _check_cas(scope):
    def check(out, inp):
        _, groups = _contenders(scope)
        olds = out["old_ptr"].astype(np.int64)
        for s, members in enumerate(groups):
            init, final = int(inp["init_ptr"][s]), int(out["z_ptr"][s])
            winners = [k for k in members if olds[k] == init]
            if len(winners) != 1 or final != winners[0] + 1:
                return f"slot {s}: {len(winners)} elements saw the initial value {init}; final value {final}"
            if any(olds[k] != final for k in members if k != winners[0]):
                return f"slot {s}: an element that lost the race did not see the winner's value {final}"
    return check


def _rmw_reference(scope):
    g = _programs(scope)

    def ref(x_ptr, i_ptr, u_ptr, l_ptr, add_ptr, max_ptr, min_ptr, xor_ptr, and_ptr, or_ptr):
        def by_slot(v):
            return v[:g * B].reshape(g * B // S, S)  # element k lands in slot k % S (B is a multiple of S)
        i = by_slot(i_ptr)
        return {"add_ptr": add_ptr + by_slot(x_ptr).sum(0),
                "max_ptr": np.maximum(max_ptr, i.max(0)),
                "min_ptr": np.minimum(min_ptr, by_slot(u_ptr).min(0)),
                "xor_ptr": np.bitwise_xor.reduce(by_slot(l_ptr), axis=0) ^ xor_ptr,
                "and_ptr": np.bitwise_and.reduce(i, axis=0) & and_ptr,
                "or_ptr": np.bitwise_or.reduce(i, axis=0) | or_ptr}
    return ref


def _cases():
    cases = []
    for sem in SEMS:
        for scope in SCOPES:
            g = _programs(scope)
            c = {"SEM": sem, "SCOPE": scope, "B": B, "S": S}
            name = f"{sem}-{scope}"
            cases.append(Case(
                id=f"atomics_sem/ticket-int32-{name}", kernel=ticket_kernel, grid=(g,), constexprs=c,
                outputs={"counter_ptr": Out("int32", (S,), init=Rand("int32", (S,), 1, 1 << 20)),
                         "old_ptr": Out("int32", (g * B,))},
                check=_check_tickets(scope)))
            cases.append(Case(
                id=f"atomics_sem/cas-int32-{name}", kernel=cas_race_kernel, grid=(g,), constexprs=c,
                inputs={"init_ptr": CopyOf("z_ptr", "int32", (S,))},
                outputs={"z_ptr": Out("int32", (S,), init=Rand("int32", (S,), -1000, -1)),
                         "old_ptr": Out("int32", (g * B,))},
                check=_check_cas(scope)))
            n = g * B
            cases.append(Case(
                id=f"atomics_sem/rmw-kinds-{name}", kernel=rmw_kinds_kernel, grid=(g,), constexprs=c,
                inputs={"x_ptr": Rand("fp32", (n,)), "i_ptr": Rand("int32", (n,)), "u_ptr": Rand("uint32", (n,)),
                        "l_ptr": Rand("int64", (n,))},
                outputs={"add_ptr": Out("fp32", (S,), init=Rand("fp32", (S,))),
                         "max_ptr": Out("int32", (S,), init=Rand("int32", (S,))),
                         "min_ptr": Out("uint32", (S,), init=Rand("uint32", (S,))),
                         "xor_ptr": Out("int64", (S,), init=Rand("int64", (S,))),
                         "and_ptr": Out("int32", (S,), init=Rand("int32", (S,))),
                         "or_ptr": Out("int32", (S,), init=Rand("int32", (S,)))},
                reference=_rmw_reference(scope), **tol(dtypes.ACCUM_TOLERANCE, "fp32")))
    for rel, acq in (("release", "acquire"), ("acq_rel", "acq_rel")):
        for scope in ("gpu", "sys"):
            cases.append(Case(
                id=f"atomics_sem/publish-{rel}-{acq}-{scope}", kernel=publish_kernel, grid=(2,),
                constexprs={"REL": rel, "ACQ": acq, "SCOPE": scope, "B": 256},
                inputs={"src_ptr": Rand("fp32", (256,))},
                outputs={"data_ptr": Out("fp32", (256,)), "flag_ptr": Out("int32", (1,), init=Gen("int32", (1,), lambda rng, shape: np.zeros(shape))),
                         "out_ptr": Out("fp32", (256,))},
                reference=lambda src_ptr, flag_ptr: {"data_ptr": src_ptr, "flag_ptr": np.ones(1, np.int32),
                                                     "out_ptr": src_ptr}))
    return cases


CASES = _cases()
