"""Programs launched as thread-block clusters (``num_ctas`` > 1, NVIDIA sm_90+): program ids and
counts are the clusters', every program runs exactly once (side effects included), and a
tensor-core matmul gives the same result as with one CTA.  Backends without clusters reject the
option at compile time (AMD, NVIDIA before sm_90), as Triton does."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Gen, Out, Rand, tol
from .grids import _grid_case


@triton.jit
def once_kernel(x_ptr, z_ptr, count_ptr, n, BLOCK: tl.constexpr):
    # every program counts itself once into a shared counter and into its own slot, and scales its block
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(count_ptr, 1)
    tl.atomic_add(count_ptr + 1 + pid, pid + 1)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3 - tl.num_programs(0), mask=offs < n)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def _once_case(ctas, programs=37, block=64):
    n = programs * block - 5

    def ref(x_ptr):
        return x_ptr * 3 - programs
    counts = np.concatenate([[programs], np.arange(1, programs + 1)]).astype(np.int32)

    def check(out, inp):
        got = out["count_ptr"].astype(np.int64)
        if not np.array_equal(got, counts):
            bad = int(np.argwhere(got != counts)[0][0])
            return (f"counter {bad}: got {int(got[bad])}, expected {int(counts[bad])} "
                    "(a program ran more or less than once)")
        want = ref(inp["x_ptr"][:n].astype(np.float64))
        if not np.allclose(out["z_ptr"][:n], want, rtol=1e-6, atol=1e-5):
            bad = int(np.argwhere(~np.isclose(out["z_ptr"][:n], want, rtol=1e-6, atol=1e-5))[0][0])
            return f"z[{bad}]: got {out['z_ptr'][bad]}, expected {want[bad]}"
    return Case(id=f"clusters/each-program-once-ctas{ctas}", kernel=once_kernel, grid=(programs,),
                constexprs={"BLOCK": block}, inputs={"x_ptr": Rand("fp32", (programs * block,)), "n": n},
                outputs={"z_ptr": Out("fp32", (programs * block,)),
                         "count_ptr": Out("int32", (programs + 1,),
                                          init=Gen("int32", (programs + 1,), lambda rng, shape: np.zeros(shape)))},
                check=check, options={"num_ctas": ctas})


def _matmul_case(ctas, m=128, n=128, k=64, bm=64, bn=64, bk=32):
    def ref(a_ptr, b_ptr):
        a = a_ptr.astype(np.float64).reshape(m, k)
        b = b_ptr.astype(np.float64).reshape(k, n)
        return (a @ b).reshape(-1)
    return Case(id=f"clusters/matmul-fp16-{m}x{n}x{k}-ctas{ctas}", kernel=matmul_kernel, grid=(m // bm, n // bn),
                constexprs={"BM": bm, "BN": bn, "BK": bk},
                inputs={"a_ptr": Rand("fp16", (m * k,), -1, 1), "b_ptr": Rand("fp16", (k * n,), -1, 1),
                        "M": m, "N": n, "K": k},
                outputs={"c_ptr": Out("fp32", (m * n,))}, reference=ref,
                options={"num_ctas": ctas, "num_warps": 4}, **tol(dtypes.ACCUM_TOLERANCE, "fp32"))


CASES = ([_grid_case(g, c) for g, c in (((4, 1, 1), 2), ((3, 5, 1), 2), ((2, 3, 4), 4), ((5, 1, 3), 8))]
         + [_once_case(c) for c in (2, 4, 16)]
         + [_matmul_case(c) for c in (2, 4)])
