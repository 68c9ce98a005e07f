"""Control flow: for/while/if/else on runtime values, early return, static_range, loops
carrying tensors, nested loops."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand, Scalar

B = 128


@triton.jit
def for_carry_kernel(x_ptr, z_ptr, n_chunks, B: tl.constexpr):
    # a tensor carried through a loop with a runtime trip count
    r = tl.arange(0, B)
    acc = tl.zeros((B,), dtype=tl.float32)
    for i in range(n_chunks):
        acc = acc * 0.5 + tl.load(x_ptr + i * B + r)
    tl.store(z_ptr + r, acc)


@triton.jit
def while_kernel(x_ptr, z_ptr, B: tl.constexpr):
    # a data-dependent while loop: halve each program's value until it is below 1
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    steps = 0
    while v >= 1.0:
        v = v * 0.5
        steps += 1
    tl.store(z_ptr + pid, steps)


@triton.jit
def if_else_kernel(x_ptr, z_ptr, threshold, B: tl.constexpr):
    pid = tl.program_id(0)
    r = pid * B + tl.arange(0, B)
    x = tl.load(x_ptr + r)
    if tl.sum(x) > threshold:
        y = x * 2
    elif pid % 2 == 0:
        y = x - 1
    else:
        y = -x
    tl.store(z_ptr + r, y)


@triton.jit
def early_return_kernel(x_ptr, z_ptr, B: tl.constexpr):
    pid = tl.program_id(0)
    if pid == 1:
        return
    r = pid * B + tl.arange(0, B)
    tl.store(z_ptr + r, tl.load(x_ptr + r) + 1)


@triton.jit
def static_range_kernel(x_ptr, z_ptr, B: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, B)
    acc = tl.load(x_ptr + r)
    for i in tl.static_range(N):
        acc = acc + (i + 1) * tl.load(x_ptr + (i + 1) * B + r)
    tl.store(z_ptr + r, acc)


@triton.jit
def nested_loop_kernel(x_ptr, z_ptr, rows, cols, B: tl.constexpr):
    # z[j] = sum over i < rows, k < cols of x[i, k, j] * (k + 1), with loops nested two deep
    r = tl.arange(0, B)
    acc = tl.zeros((B,), dtype=tl.int32)
    for i in range(rows):
        for k in range(0, cols):
            acc += tl.load(x_ptr + (i * cols + k) * B + r) * (k + 1)
    tl.store(z_ptr + r, acc)


@triton.jit
def loop_step_kernel(z_ptr, start, stop, B: tl.constexpr):
    # range with a start and a step; the induction variable keeps counting after a skipped body
    total = 0
    for i in range(start, stop, 3):
        total += i
    tl.store(z_ptr + tl.arange(0, B), tl.full((B,), 0, tl.int32) + total)


def _decay(x_ptr, n):
    acc = np.zeros(B)
    for i in range(n):
        acc = acc * 0.5 + x_ptr[i * B:(i + 1) * B]
    return acc


def _halvings(x_ptr):
    out = []
    for v in x_ptr:
        s = 0
        while v >= 1.0:
            v, s = v * 0.5, s + 1
        out.append(s)
    return np.array(out, dtype=np.int32)


def _branches(x_ptr, threshold):
    rows = x_ptr.reshape(4, B)
    out = [r * 2 if r.sum() > threshold else (r - 1 if p % 2 == 0 else -r) for p, r in enumerate(rows)]
    return np.concatenate(out)


CASES = [
    Case(id="control_flow/for-carry-tensor", kernel=for_carry_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("fp32", (6 * B,)), "n_chunks": Scalar("int32", 2, 6)}, outputs={"z_ptr": Out("fp32", (B,))},
         reference=lambda x_ptr, n_chunks: _decay(x_ptr, n_chunks)),
    Case(id="control_flow/while-data-dependent", kernel=while_kernel, grid=(16,), constexprs={"B": 16},
         inputs={"x_ptr": Rand("fp32", (16,), 0.1, 5000)}, outputs={"z_ptr": Out("int32", (16,))}, reference=_halvings),
    Case(id="control_flow/if-elif-else", kernel=if_else_kernel, grid=(4,), constexprs={"B": B},
         inputs={"x_ptr": Rand("fp32", (4 * B,), -1, 1.2), "threshold": 5.0}, outputs={"z_ptr": Out("fp32", (4 * B,))},
         reference=_branches),
    Case(id="control_flow/early-return", kernel=early_return_kernel, grid=(3,), constexprs={"B": B},
         inputs={"x_ptr": Rand("fp32", (3 * B,))}, outputs={"z_ptr": Out("fp32", (3 * B,), init=Rand("fp32", (3 * B,)))},
         # program 1 returns before storing: its slice keeps its initial values
         reference=lambda x_ptr, z_ptr: np.concatenate([x_ptr[:B] + 1, z_ptr[B:2 * B], x_ptr[2 * B:] + 1])),
    Case(id="control_flow/static-range", kernel=static_range_kernel, constexprs={"B": B, "N": 3},
         inputs={"x_ptr": Rand("int32", (4 * B,), -1000, 1000)}, outputs={"z_ptr": Out("int32", (B,))},
         reference=lambda x_ptr: sum((i + 1) * x_ptr[(i + 1) * B:(i + 2) * B] for i in range(3)) + x_ptr[:B]),
    Case(id="control_flow/nested-loops", kernel=nested_loop_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("int32", (3 * 4 * B,), -1000, 1000), "rows": 3, "cols": 4},
         outputs={"z_ptr": Out("int32", (B,))},
         reference=lambda x_ptr: (x_ptr.reshape(3, 4, B) * np.arange(1, 5, dtype=np.int32)[None, :, None]).sum((0, 1))),
    Case(id="control_flow/range-start-step", kernel=loop_step_kernel, constexprs={"B": 16},
         inputs={"start": Scalar("int32", 1, 10), "stop": Scalar("int32", 20, 60)}, outputs={"z_ptr": Out("int32", (16,))},
         reference=lambda start, stop: np.full(16, sum(range(start, stop, 3)), dtype=np.int32)),
    Case(id="control_flow/range-empty", kernel=loop_step_kernel, constexprs={"B": 16},
         inputs={"start": Scalar("int32", 30, 40), "stop": Scalar("int32", 1, 20)}, outputs={"z_ptr": Out("int32", (16,))},
         reference=lambda start, stop: np.zeros(16, dtype=np.int32)),
]
