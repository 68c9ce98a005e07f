"""Grids: program_id and num_programs on axes 0..2, multi-dimensional grids, a grid above 65535
on axis 0, a grid given as a function of the meta-parameters."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand


@triton.jit
def grid3d_kernel(z_ptr, B: tl.constexpr):
    # every program writes its (pid0, pid1, pid2, n0, n1, n2) into its own row
    p0 = tl.program_id(0)
    p1 = tl.program_id(axis=1)
    p2 = tl.program_id(2)
    n0 = tl.num_programs(0)
    n1 = tl.num_programs(1)
    n2 = tl.num_programs(axis=2)
    row = (p2 * n1 + p1) * n0 + p0
    r = tl.arange(0, B)
    v = tl.where(r == 0, p0, tl.where(r == 1, p1, tl.where(r == 2, p2, tl.where(r == 3, n0, tl.where(r == 4, n1, n2)))))
    tl.store(z_ptr + row * B + r, v, mask=r < 6)


@triton.jit
def big_grid_kernel(x_ptr, z_ptr):
    pid = tl.program_id(0)
    tl.store(z_ptr + pid, tl.load(x_ptr + pid) ^ pid)


@triton.jit
def meta_grid_kernel(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def _grid_ref(g0, g1, g2):
    rows = [[p0, p1, p2, g0, g1, g2, 0, 0] for p2 in range(g2) for p1 in range(g1) for p0 in range(g0)]
    return np.array(rows, dtype=np.int32)


def _grid_case(g, ctas=1):
    """Every program records its ids and counts; ``ctas`` > 1 launches each as a cluster (the
    ``clusters`` category: the ids and counts are still the programs')."""
    count = g[0] * g[1] * g[2]

    def check(out, inp):
        got = out["z_ptr"].reshape(count, 8)[:, :6].astype(np.int32)
        want = _grid_ref(*g)[:, :6]
        if not np.array_equal(got, want):
            bad = int(np.argwhere((got != want).any(axis=1))[0][0])
            return f"program row {bad}: got {got[bad].tolist()}, expected {want[bad].tolist()}"
    name = f"grids/grid-{g[0]}x{g[1]}x{g[2]}" if ctas == 1 else f"clusters/grid-{g[0]}x{g[1]}x{g[2]}-ctas{ctas}"
    return Case(id=name, kernel=grid3d_kernel, grid=g, constexprs={"B": 8},
                outputs={"z_ptr": Out("int32", (count * 8,))}, check=check,
                options={"num_ctas": ctas} if ctas != 1 else {})


N_BIG = 65536 + 1000
CASES = [_grid_case(g) for g in ((4, 1, 1), (3, 5, 1), (2, 3, 4), (1, 1, 7), (5, 1, 3))]
CASES += [
    Case(id="grids/axis0-above-65535", kernel=big_grid_kernel, grid=(N_BIG,),
         inputs={"x_ptr": Rand("int32", (N_BIG,))}, outputs={"z_ptr": Out("int32", (N_BIG,))},
         reference=lambda x_ptr: x_ptr ^ np.arange(N_BIG, dtype=np.int32)),
    Case(id="grids/grid-from-meta", kernel=meta_grid_kernel,
         grid=lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),), constexprs={"BLOCK": 64},
         inputs={"x_ptr": Rand("fp32", (1000,)), "n": 1000}, outputs={"z_ptr": Out("fp32", (1000,))},
         reference=lambda x_ptr: x_ptr + 1),
]
