"""``tl.range`` with its options, and ``tl.dot(..., max_num_imprecise_acc=...)`` in such loops.

``loop_unroll_factor`` unrolls the loop (a main loop of ``F`` body copies and an epilogue for the
remainder): trip counts that are and are not multiples of ``F``, zero trips, a start and a step,
negative steps, 64-bit induction variables, nested unrolled loops, side effects in the body.
``num_stages`` on one loop pipelines that loop; ``flatten`` on a loop holding one loop fuses the nest
into one loop (a counter carried through it, bounds that depend on the outer index, empty inner
and outer ranges, a prologue and an epilogue with carried tensors); ``flatten`` on a loop alone,
``disallow_acc_multi_buffer`` and ``warp_specialize`` are scheduling hints the result must not
depend on.  The dot cases run the
K loop of Triton's ``test_dot_max_num_imprecise_acc``: fp8 operands, fp32 accumulation bounded to
``max_num_imprecise_acc`` products between fp32 additions, B given K- or N-contiguous."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Err, Out, Rand, Scalar

B = 64


@triton.jit
def unroll_sum_kernel(x_ptr, z_ptr, start, stop, STEP: tl.constexpr, UF: tl.constexpr, B: tl.constexpr):
    # z = sum over i in range(start, stop, STEP) of x[i] * (i + 1), carried as a tensor
    r = tl.arange(0, B)
    acc = tl.zeros((B,), dtype=tl.float32)
    for i in tl.range(start, stop, STEP, loop_unroll_factor=UF):
        acc = acc * 0.5 + tl.load(x_ptr + i * B + r) * (i + 1)
    tl.store(z_ptr + r, acc)


def _unroll_ref(start, stop, step):
    def ref(x_ptr, **_):
        acc = np.zeros(B)
        x = x_ptr.reshape(-1, B)
        for i in range(start, stop, step):
            acc = acc * 0.5 + x[i] * (i + 1)
        return acc
    return ref


@triton.jit
def unroll_atomic_kernel(z_ptr, UF: tl.constexpr):
    # Triton's test_unroll_attr: side effects in every copy, a constant trip count of 10
    pid = tl.program_id(axis=0)
    for i in tl.range(0, 10, loop_unroll_factor=UF):
        tl.atomic_add(z_ptr + pid, i + pid)


@triton.jit
def unroll_iv64_kernel(z_ptr, lo, hi, UF: tl.constexpr):
    # a 64-bit induction variable (lo beyond int32), summed as int64
    acc = tl.zeros((1,), dtype=tl.int64)
    for i in tl.range(lo, hi, loop_unroll_factor=UF):
        acc += i
    tl.store(z_ptr + tl.arange(0, 1), acc)


@triton.jit
def unroll_nested_kernel(x_ptr, z_ptr, rows, cols, UO: tl.constexpr, UI: tl.constexpr, B: tl.constexpr):
    r = tl.arange(0, B)
    acc = tl.zeros((B,), dtype=tl.int32)
    for i in tl.range(0, rows, loop_unroll_factor=UO):
        for k in tl.range(0, cols, loop_unroll_factor=UI):
            acc = acc * 3 + tl.load(x_ptr + (i * cols + k) * B + r) * (k + 1)
    tl.store(z_ptr + r, acc)


def _nested_ref(rows, cols):
    def ref(x_ptr, **_):
        x = x_ptr.reshape(rows, cols, B).astype(np.int32)
        acc = np.zeros(B, np.int32)
        with np.errstate(over="ignore"):
            for i in range(rows):
                for k in range(cols):
                    acc = acc * np.int32(3) + x[i, k] * np.int32(k + 1)
        return acc
    return ref


@triton.jit
def hinted_loop_kernel(x_ptr, z_ptr, n, NS: tl.constexpr, FLAT: tl.constexpr, NOMB: tl.constexpr,
                       B: tl.constexpr):
    r = tl.arange(0, B)
    acc = tl.zeros((B,), dtype=tl.float32)
    for i in tl.range(0, n, num_stages=NS, flatten=FLAT, disallow_acc_multi_buffer=NOMB):
        acc += tl.load(x_ptr + i * B + r)
    tl.store(z_ptr + r, acc)


@triton.jit
def flatten_counter_kernel(ub, out_ptr):
    # Triton's test_tl_range_fuse: the nest runs as one loop, the counter carried through it
    k = 1
    for i in tl.range(0, ub, flatten=True):
        for j in tl.range(0, ub):
            tl.store(out_ptr + i * 32 + j, k)
            k += 1


@triton.jit
def flatten_dependent_kernel(ub, out_i_ptr, out_j_ptr):
    # Triton's test_tl_range_fuse_dependent: inner bounds computed from the outer index
    k = 0
    for i in tl.range(0, ub, flatten=True):
        lower_bound = i * 2
        upper_bound = lower_bound + i + 1
        tl.assume(upper_bound > lower_bound)
        for j in tl.range(lower_bound, upper_bound):
            tl.store(out_i_ptr + k, i)
            tl.store(out_j_ptr + k, j)
            k += 1


@triton.jit
def flatten_rows_kernel(x_ptr, z_ptr, t_ptr, start, rows, step, lo, cols, DEP: tl.constexpr, NS: tl.constexpr,
                        B: tl.constexpr):
    # a prologue (scale, row), an inner loop carrying a tensor, an epilogue that stores and folds
    # into the outer loop's own carried value; DEP: the inner loop starts at the outer index
    r = tl.arange(0, B)
    total = tl.zeros((B,), dtype=tl.float32)
    for i in tl.range(start, rows, step, flatten=True, num_stages=NS):
        scale = (i + 1).to(tl.float32)
        row = tl.zeros((B,), dtype=tl.float32) + scale
        first = lo + i if DEP else lo
        for k in tl.range(first, cols):
            row = row * 0.5 + tl.load(x_ptr + (i * cols + k) * B + r)
        tl.store(z_ptr + i * B + r, row * scale)
        total = total * 0.75 + row
    tl.store(t_ptr + r, total)


def _flatten_rows_ref(start, rows, step, lo, cols, dep):
    def ref(x_ptr, **_):
        x = x_ptr.reshape(rows, cols, B).astype(np.float64)
        z = np.full((rows, B), np.nan)
        total = np.zeros(B)
        for i in range(start, rows, step):
            scale = float(i + 1)
            row = np.zeros(B) + scale
            for k in range(lo + i if dep else lo, cols):
                row = row * 0.5 + x[i, k]
            z[i] = row * scale
            total = total * 0.75 + row
        return {"z_ptr": z, "t_ptr": total}
    return ref


_SENTINEL32 = 0x5A5A5A5A  # an int32 output's poison: the elements the kernel must leave unwritten


def _flatten_counter_ref(ub):
    out = np.full((32, 32), _SENTINEL32, np.int32)
    out[:ub, :ub] = np.arange(1, ub * ub + 1).reshape(ub, ub)
    return out


def _flatten_dependent_ref(ub):
    pairs = [(i, j) for i in range(ub) for j in range(2 * i, 3 * i + 1)]
    out_i, out_j = np.full(1024, _SENTINEL32, np.int32), np.full(1024, _SENTINEL32, np.int32)
    out_i[:len(pairs)] = [p[0] for p in pairs]
    out_j[:len(pairs)] = [p[1] for p in pairs]
    return {"out_i_ptr": out_i, "out_j_ptr": out_j}


@triton.jit
def imprecise_matmul_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                            IMPRECISE: tl.constexpr, B_KMAJOR: tl.constexpr, NS: tl.constexpr):
    # Triton's test_dot_max_num_imprecise_acc kernel: one tile, pointers advanced by the loop
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    if B_KMAJOR:
        b_ptrs = b_ptr + rk[:, None] + rn[None, :] * K
    else:
        b_ptrs = b_ptr + rk[:, None] * BN + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=NS):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc=acc, max_num_imprecise_acc=IMPRECISE)
        a_ptrs += BK
        if B_KMAJOR:
            b_ptrs += BK
        else:
            b_ptrs += BK * BN
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@triton.jit
def no_licm_kernel(x_ptr, z_ptr, n, m, OUTER_OFF: tl.constexpr, INNER_OFF: tl.constexpr, B: tl.constexpr):
    # loop-invariant work (exp of a constant ramp, a scale from the outer index) stays in the loops
    # marked disable_licm; the result must not depend on where it is computed
    r = tl.arange(0, B)
    acc = tl.zeros((B,), dtype=tl.float32)
    for i in tl.range(0, n, disable_licm=OUTER_OFF):
        ramp = tl.exp(r.to(tl.float32) * 0.01)
        for k in tl.range(0, m, disable_licm=INNER_OFF):
            scale = (i + 1).to(tl.float32) * ramp
            acc += scale * tl.load(x_ptr + (i * m + k) * B + r)
    tl.store(z_ptr + r, acc)


def _no_licm_ref(x_ptr, n, m):
    x = x_ptr.reshape(-1, m, B).astype(np.float64)
    ramp = np.exp(np.arange(B) * 0.01)
    return sum(((i + 1) * ramp * x[i].sum(0) for i in range(n)), np.zeros(B))


@triton.jit
def while_no_licm_kernel(x_ptr, z_ptr, n, OFF: tl.constexpr, B: tl.constexpr):
    r = tl.arange(0, B)
    acc = tl.zeros((B,), dtype=tl.float32)
    i = 0
    while tl.condition(i < n, disable_licm=OFF):
        acc += tl.load(x_ptr + i * B + r) * tl.sqrt(r.to(tl.float32) + 1.0)
        i += 1
    tl.store(z_ptr + r, acc)


def _mm_ref(m, n, k, kmajor):
    def ref(a_ptr, b_ptr, **_):
        a = a_ptr.reshape(m, k)
        b = b_ptr.reshape(n, k).T if kmajor else b_ptr.reshape(k, n)
        return a @ b
    return ref


def _unroll_case(name, start, stop, step, uf):
    n_rows = max(start, stop, 0) + 1
    return Case(id=f"loops_options/unroll-{name}-uf{uf}", kernel=unroll_sum_kernel,
                constexprs={"STEP": step, "UF": uf, "B": B},
                inputs={"x_ptr": Rand("fp32", (n_rows * B,), -1, 1), "start": start, "stop": stop},
                outputs={"z_ptr": Out("fp32", (B,))}, reference=_unroll_ref(start, stop, step), rtol=1e-5, atol=1e-5)


def _imprecise_case(tag, m, n, k, bm, bn, bk, imprecise, kmajor, warps=8, stages=3):
    return Case(
        id=f"loops_options/dot-imprecise{imprecise}-{tag}-{bm}x{bn}x{bk}-k{k}{'-bk' if kmajor else ''}",
        kernel=imprecise_matmul_kernel,
        constexprs={"BM": bm, "BN": bn, "BK": bk, "IMPRECISE": imprecise, "B_KMAJOR": kmajor, "NS": stages},
        inputs={"a_ptr": Rand(tag, (m * k,), -2, 2), "b_ptr": Rand(tag, (k * n,), -2, 2), "K": k},
        outputs={"c_ptr": Out("fp32", (m, n))}, reference=_mm_ref(m, n, k, kmajor),
        options={"num_warps": warps}, rtol=1e-2, atol=1e-2)


CASES = [
    _unroll_case("div", 0, 12, 1, 4),
    _unroll_case("rem", 0, 11, 1, 4),
    _unroll_case("rem", 3, 20, 2, 3),
    _unroll_case("fewer-than-factor", 2, 5, 1, 8),
    _unroll_case("zero-trip", 9, 4, 1, 2),
    _unroll_case("negative-step", 17, 2, -3, 2),
    _unroll_case("one", 0, 7, 1, 1),
    *[Case(id=f"loops_options/unroll-atomic-uf{uf}", kernel=unroll_atomic_kernel, grid=(3,), constexprs={"UF": uf},
           outputs={"z_ptr": Out("fp32", (3,), init=Rand("fp32", (3,), -1, 1))},
           reference=lambda z_ptr: z_ptr + np.array([sum(i + p for i in range(10)) for p in range(3)]),
           rtol=1e-6, atol=1e-6)
      for uf in (1, 2, 4, 5, 8)],
    Case(id="loops_options/unroll-iv64", kernel=unroll_iv64_kernel, constexprs={"UF": 4},
         inputs={"lo": 2 ** 35, "hi": 2 ** 35 + 23}, outputs={"z_ptr": Out("int64", (1,), poison="sentinel")},
         reference=lambda lo, hi: np.array([sum(range(lo, hi))], np.int64)),
    Case(id="loops_options/unroll-nested", kernel=unroll_nested_kernel, constexprs={"UO": 2, "UI": 3, "B": B},
         inputs={"x_ptr": Rand("int32", (5 * 7 * B,), -50, 50), "rows": 5, "cols": 7},
         outputs={"z_ptr": Out("int32", (B,), poison="sentinel")}, reference=_nested_ref(5, 7)),
    Case(id="loops_options/unroll-dynamic-trip", kernel=unroll_sum_kernel, constexprs={"STEP": 1, "UF": 4, "B": B},
         inputs={"x_ptr": Rand("fp32", (101 * B,), -1, 1), "start": 0, "stop": Scalar("int32", 1, 100)},
         outputs={"z_ptr": Out("fp32", (B,))},
         reference=lambda x_ptr, start, stop: _unroll_ref(start, stop, 1)(x_ptr), rtol=1e-5, atol=1e-5),
    *[Case(id=f"loops_options/hints-s{ns}{'-flatten' if fl else ''}{'-no-acc-multibuffer' if nomb else ''}",
           kernel=hinted_loop_kernel, constexprs={"NS": ns, "FLAT": fl, "NOMB": nomb, "B": B},
           inputs={"x_ptr": Rand("fp32", (9 * B,), -1, 1), "n": 9}, outputs={"z_ptr": Out("fp32", (B,))},
           reference=lambda x_ptr, n: x_ptr.reshape(-1, B)[:n].sum(0), rtol=1e-5, atol=1e-5)
      for ns, fl, nomb in ((1, False, False), (2, True, False), (4, False, True), (3, True, True))],
    # disable_licm on either loop of a nest, on both, on neither; zero trips; a while loop
    *[Case(id=f"loops_options/disable-licm-outer{int(o)}-inner{int(i)}-n{n}", kernel=no_licm_kernel,
           constexprs={"OUTER_OFF": o, "INNER_OFF": i, "B": B},
           inputs={"x_ptr": Rand("fp32", (max(n, 1) * 3 * B,), -1, 1), "n": n, "m": 3},
           outputs={"z_ptr": Out("fp32", (B,))}, reference=_no_licm_ref, rtol=1e-5, atol=1e-5)
      for o, i, n in ((True, False, 4), (False, True, 4), (True, True, 5), (False, False, 4), (True, True, 0))],
    *[Case(id=f"loops_options/while-condition-disable-licm{int(off)}-n{n}", kernel=while_no_licm_kernel,
           constexprs={"OFF": off, "B": B}, inputs={"x_ptr": Rand("fp32", (max(n, 1) * B,), -1, 1), "n": n},
           outputs={"z_ptr": Out("fp32", (B,))},
           reference=lambda x_ptr, n: x_ptr.reshape(-1, B)[:n].astype(np.float64).sum(0) * np.sqrt(np.arange(B) + 1.0),
           rtol=1e-5, atol=1e-5)
      for off, n in ((True, 6), (False, 6), (True, 0))],
    # flatten=True on a loop nest: one fused loop (prologue, guarded body, epilogue)
    *[Case(id=f"loops_options/flatten-counter-ub{ub}", kernel=flatten_counter_kernel, inputs={"ub": ub},
           outputs={"out_ptr": Out("int32", (32, 32))},
           reference=lambda ub, ub_=ub: _flatten_counter_ref(ub_))
      for ub in (10, 1, 0)],
    Case(id="loops_options/flatten-dependent-bounds", kernel=flatten_dependent_kernel, inputs={"ub": 10},
         outputs={"out_i_ptr": Out("int32", (1024,)), "out_j_ptr": Out("int32", (1024,))},
         reference=lambda ub: _flatten_dependent_ref(ub)),
    *[Case(id=f"loops_options/flatten-rows-{tag}", kernel=flatten_rows_kernel,
           constexprs={"DEP": dep, "NS": ns, "B": B},
           inputs={"x_ptr": Rand("fp32", (rows * cols * B,), -1, 1), "start": start, "rows": rows, "step": step,
                   "lo": lo, "cols": cols},
           outputs={"z_ptr": Out("fp32", (rows, B)), "t_ptr": Out("fp32", (B,))},
           reference=_flatten_rows_ref(start, rows, step, lo, cols, dep), rtol=1e-5, atol=1e-5)
      for tag, start, rows, step, lo, cols, dep, ns in (
          ("basic", 0, 5, 1, 0, 4, False, 1), ("start-step", 1, 8, 3, 1, 6, False, 3),
          ("empty-inner", 0, 4, 1, 3, 3, False, 1), ("no-outer-trip", 4, 4, 1, 0, 3, False, 1),
          ("dependent", 0, 6, 1, 0, 4, True, 2), ("dependent-start-step", 2, 9, 2, 1, 7, True, 1))],
    _imprecise_case("fp16", 64, 64, 256, 64, 64, 64, 0, False, warps=4, stages=5),
    _imprecise_case("fp8e5", 64, 64, 256, 64, 64, 128, 32, True, warps=4),
    _imprecise_case("fp8e5", 64, 64, 256, 64, 64, 128, 128, True, warps=4),
    _imprecise_case("fp8e4nv", 64, 64, 256, 64, 64, 64, 64, True),
    _imprecise_case("fp8e4nv", 64, 64, 256, 64, 64, 64, 0, True),
    _imprecise_case("fp8e5", 64, 64, 256, 64, 64, 64, 32, False),
    _imprecise_case("fp8e4nv", 64, 64, 256, 64, 64, 64, 64, False),
    Case(id="loops_options/dot-imprecise-above-k", kernel=imprecise_matmul_kernel,
         constexprs={"BM": 64, "BN": 64, "BK": 32, "IMPRECISE": 64, "B_KMAJOR": True, "NS": 2},
         inputs={"a_ptr": Rand("fp8e5", (64 * 64,)), "b_ptr": Rand("fp8e5", (64 * 64,)), "K": 64},
         outputs={"c_ptr": Out("fp32", (64, 64))},
         expect_error=Err("max_num_imprecise_acc (64) must be <= K (32)", line="tl.dot(")),
]
