"""Control flow and the launch surface as Triton kernels use them: ``range`` with constexpr and
run-time bounds and negative steps, ``tl.range``, ``while``, ``tl.static_range`` and tuples,
device functions returning tuples with defaults and keywords, constexpr globals and functions,
``static_assert``/``static_print``, default kernel arguments, keyword launches, grid lambdas,
``do_not_specialize``, ``noinline``, ``@heuristics``, ``@autotune`` with ``prune_configs_by``."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand
from ._common import BLOCK, GRID, N

SCALE: tl.constexpr = tl.constexpr(3)
OFFSETS = tl.constexpr((1, 2, 4))


def _loop_scalar(which, n, start, step):
    acc = 0
    if which == "const_range":
        for i in range(0, 4):
            acc += i * 3
    elif which == "runtime_range":
        for i in range(start, n):
            acc += i
    elif which == "neg_const_step":
        for i in range(10, 0, -3):
            acc = acc * 2 + i
    elif which == "neg_runtime_bounds":
        for i in range(n, start, -2):
            acc += i
    elif which == "runtime_step":
        for i in range(start, n, step):
            acc += i * i
    elif which == "tl_range":
        for i in range(0, n, 2):
            acc += 1
    elif which == "nested":
        for i in range(n):
            for j in range(3):
                acc += i * j
    elif which == "empty":
        for i in range(n, start):
            acc += 1000
    elif which == "while":
        i = 0
        while i < n:
            acc += i
            i += 3
    elif which == "while_nested":
        i = 0
        while i < 4:
            j = i
            while j < n:
                acc += 1
                j += 2
            i += 1
    elif which == "static_range":
        for i in range(1, 9, 3):
            acc += i * 3
        for v in OFFSETS:
            acc += v * 10
    return acc


@triton.jit
def loops_kernel(x_ptr, out_ptr, n, start, step, WHICH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = 0
    if WHICH == "const_range":
        for i in range(0, 4):
            acc += i * SCALE
    elif WHICH == "runtime_range":
        for i in range(start, n):
            acc += i
    elif WHICH == "neg_const_step":
        for i in range(10, 0, -3):
            acc = acc * 2 + i
    elif WHICH == "neg_runtime_bounds":
        for i in range(n, start, -2):
            acc += i
    elif WHICH == "runtime_step":
        for i in range(start, n, step):
            acc += i * i
    elif WHICH == "tl_range":
        for i in tl.range(0, n, 2, num_stages=2):
            acc += 1
    elif WHICH == "nested":
        for i in range(n):
            for j in tl.static_range(3):
                acc += i * j
    elif WHICH == "empty":
        for i in range(n, start):
            acc += 1000
    elif WHICH == "while":
        i = 0
        while i < n:
            acc += i
            i += 3
    elif WHICH == "while_nested":
        i = 0
        while i < 4:
            j = i
            while j < n:
                acc += 1
                j += 2
            i += 1
    else:
        for i in tl.static_range(1, 9, 3):
            acc += i * SCALE
        for v in tl.static_range(len(OFFSETS)):
            acc += OFFSETS[v] * 10
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + acc)


@triton.jit
def block_loop_kernel(x_ptr, out_ptr, n_rows, ROW: tl.constexpr):
    # a row-reduction loop with a tensor accumulator, iterating down from the last row
    cols = tl.arange(0, ROW)
    acc = tl.zeros([ROW], dtype=tl.float32)
    for r in range(n_rows - 1, -1, -1):
        acc = acc * 0.5 + tl.load(x_ptr + r * ROW + cols)
    tl.store(out_ptr + cols, acc)


def _block_loop_ref(x_ptr, n_rows):
    acc = np.zeros(x_ptr.shape[1])
    for r in range(n_rows - 1, -1, -1):
        acc = acc * 0.5 + x_ptr[r]
    return acc


@triton.jit
def _divmod(a, b):
    return a // b, a % b


@triton.jit
def _stats(x, scale=2.0, center: tl.constexpr = True):
    s = tl.sum(x, axis=0)
    if center:
        x = x - s / x.shape[0]
    return (x * scale, s), tl.max(x, axis=0)


def block_for(n):
    return triton.next_power_of_2(n)


@triton.constexpr_function
def twice(v):
    return v * 2


@triton.jit
def functions_kernel(x_ptr, q_ptr, r_ptr, y_ptr, s_ptr, m_ptr, N_REAL: tl.constexpr):
    B: tl.constexpr = block_for(N_REAL)
    tl.static_assert(B == 256, f"block {B} for {N_REAL}")
    tl.static_assert(twice(B) == 512)
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    q, r = _divmod(offs + 1000, 7)
    (y, s), m = _stats(x.to(tl.float32), center=False, scale=SCALE)
    tl.store(q_ptr + offs, q)
    tl.store(r_ptr + offs, r)
    tl.store(y_ptr + offs, y)
    tl.store(s_ptr, s)
    tl.store(m_ptr, m)


@triton.jit
def defaults_kernel(x_ptr, out_ptr, alpha=2.0, n=N, beta: tl.constexpr = 3, BLOCK: tl.constexpr = 128):
    # launched without alpha/beta/n; the grid lambda reads BLOCK from the meta-parameters
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + beta, mask=mask)


@triton.jit(do_not_specialize=["n", "k"])
def dns_kernel(x_ptr, out_ptr, n, k, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * k, mask=mask)


@triton.jit(noinline=True)
def _affine_noinline(a, b, c):
    return a * b + c


@triton.jit
def noinline_kernel(x_ptr, out_ptr, a, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    s = _affine_noinline(a, 3, tl.program_id(0))
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + s)


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0,
                    "BLOCK2": lambda args: args["BLOCK"] * 2})
@triton.jit
def heuristics_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr, BLOCK2: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n, other=-1.0)
    tl.store(out_ptr + offs, x + BLOCK2)


def _prune(configs, named_args, **kwargs):
    # keep the configs whose block divides the problem, then only the largest
    ok = [c for c in configs if named_args["n"] % c.kwargs["BLOCK"] == 0]
    return sorted(ok, key=lambda c: -c.kwargs["BLOCK"])[:1]


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}),
                          triton.Config({"BLOCK": 1024})],
                 key=["n"], prune_configs_by={"early_config_prune": _prune})
@triton.jit
def autotuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


@triton.jit
def early_exit_kernel(x_ptr, out_ptr, n_programs_active, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if pid >= n_programs_active:
        tl.store(out_ptr + offs, -x)
        return
    if pid == 0:
        y = x * 2
    elif pid == 1:
        y = x + 100
    else:
        y = x
    tl.store(out_ptr + offs, y)


@triton.jit
def assert_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x > 0, "inputs are positive")
    tl.device_assert(offs < 2 * BLOCK)
    assert tl.program_id(0) < 2, "two programs"
    tl.store(out_ptr + offs, tl.sqrt(x))


_LOOPS = ("const_range", "runtime_range", "neg_const_step", "neg_runtime_bounds", "runtime_step", "tl_range",
          "nested", "empty", "while", "while_nested", "static_range")
CASES = []
for w in _LOOPS:
    for n, start, step in ((13, 2, 3), (1, 0, 1), (40, 5, 16)):
        CASES.append(Case(
            id=f"compat/loop-{w}-n{n}", kernel=loops_kernel, grid=GRID, constexprs={"WHICH": w, "BLOCK": BLOCK},
            inputs={"x_ptr": Rand("fp32", (N,), -100, 100), "n": n, "start": start, "step": step},
            outputs={"out_ptr": Out("fp32", (N,))},
            reference=(lambda w: lambda x_ptr, n, start, step: x_ptr + _loop_scalar(w, n, start, step))(w)))
        if w in ("const_range", "neg_const_step", "static_range"):
            break  # no run-time bound: one case is enough
CASES.append(Case(id="compat/loop-tensor-acc-downward", kernel=block_loop_kernel,
                  constexprs={"ROW": 64}, inputs={"x_ptr": Rand("fp32", (7, 64)), "n_rows": 7},
                  outputs={"out_ptr": Out("fp32", (64,))}, reference=_block_loop_ref))
CASES.append(Case(
    id="compat/functions-tuples-defaults-constexpr", kernel=functions_kernel, constexprs={"N_REAL": 200},
    inputs={"x_ptr": Rand("fp16", (256,))},
    outputs={"q_ptr": Out("int32", (256,)), "r_ptr": Out("int32", (256,)), "y_ptr": Out("fp32", (256,)),
             "s_ptr": Out("fp32", (1,)), "m_ptr": Out("fp32", (1,))},
    reference=lambda x_ptr: ((np.arange(256) + 1000) // 7, (np.arange(256) + 1000) % 7, x_ptr * 3,
                             np.array([x_ptr.sum()]), np.array([x_ptr.max()])), rtol=1e-4, atol=1e-4))
for block in (64, 128):
    CASES.append(Case(id=f"compat/launch-defaults-grid-lambda-{block}", kernel=defaults_kernel,
                      grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),),
                      constexprs={"BLOCK": block}, inputs={"x_ptr": Rand("fp32", (N,))},
                      outputs={"out_ptr": Out("fp32", (N,))}, reference=lambda x_ptr: x_ptr * 2.0 + 3))
for n, k in ((1, 1), (16, 16), (N - 1, 3)):
    CASES.append(Case(id=f"compat/do-not-specialize-n{n}-k{k}", kernel=dns_kernel, grid=GRID,
                      constexprs={"BLOCK": BLOCK}, inputs={"x_ptr": Rand("int32", (N,), -1000, 1000), "n": n, "k": k},
                      outputs={"out_ptr": Out("int32", (N,), init=Rand("int32", (N,)))},
                      reference=lambda x_ptr, n, k, out_ptr: np.where(np.arange(N) < n, x_ptr * k, out_ptr)
                      .astype(np.int32)))
CASES.append(Case(id="compat/noinline-scalar-return", kernel=noinline_kernel, grid=GRID, constexprs={"BLOCK": BLOCK},
                  inputs={"x_ptr": Rand("fp32", (N,)), "a": 2.5}, outputs={"out_ptr": Out("fp32", (N,))},
                  reference=lambda x_ptr, a: x_ptr + a * 3 + np.repeat([0, 1], BLOCK)))
for n in (N, N - 10):
    CASES.append(Case(id=f"compat/heuristics-n{n}", kernel=heuristics_kernel, grid=GRID,
                      constexprs={"BLOCK": BLOCK}, inputs={"x_ptr": Rand("fp32", (N,)), "n": n},
                      outputs={"out_ptr": Out("fp32", (N,))},
                      reference=lambda x_ptr, n: np.where(np.arange(N) < n, x_ptr, -1.0) + 2 * BLOCK))
for n in (N, 3 * 128):
    CASES.append(Case(id=f"compat/autotune-prune-n{n}", kernel=autotuned_kernel,
                      grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),),
                      inputs={"x_ptr": Rand("fp32", (N,)), "n": n},
                      outputs={"out_ptr": Out("fp32", (N,), init=Rand("fp32", (N,)))},
                      reference=lambda x_ptr, n, out_ptr: np.where(np.arange(N) < n, x_ptr * 3, out_ptr)))
CASES.append(Case(id="compat/early-return-elif", kernel=early_exit_kernel, grid=(4,), constexprs={"BLOCK": 128},
                  inputs={"x_ptr": Rand("fp32", (512,)), "n_programs_active": 3}, outputs={"out_ptr": Out("fp32", (512,))},
                  reference=lambda x_ptr, n_programs_active: np.concatenate(
                      [x_ptr[:128] * 2, x_ptr[128:256] + 100, x_ptr[256:384], -x_ptr[384:]])))
CASES.append(Case(id="compat/device-assert-debug", kernel=assert_kernel, grid=GRID, constexprs={"BLOCK": BLOCK},
                  options={"debug": True}, inputs={"x_ptr": Rand("fp32", (N,), 0.5, 9)},
                  outputs={"out_ptr": Out("fp32", (N,))}, reference=lambda x_ptr: np.sqrt(x_ptr)))
