"""CPU-only, through the real assembler: FMA dots (``input_precision="ieee"``) fit in registers.

Triton 3.6 compiles these same kernels for sm_90 in 48 (32x32x32, 4 warps), 92 (64x64x32, 4
warps) and 112 (128x64x16, 8 warps) registers without spilling.  Before the operands went through
their own shared buffers (``fma-operands-through-shared``) and the dot kept Triton's result layout,
Tritium's 64x64x32 dot took 255 registers and spilled (10 KB before the layout change).  The bound
below is Triton's count plus a margin, so a return of the old schedule fails."""
import pytest

import tritium as triton
import tritium.language as tl
from tritium_nvidia.toolchain import tools


@triton.jit
def fma_matmul(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, 4):
        a = tl.load(a_ptr + rm[:, None] * (4 * BK) + (k * BK + rk)[None, :])
        b = tl.load(b_ptr + (k * BK + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}


@pytest.mark.skipif(tools.find_ptxas() is None and tools.nvjitlink_version() is None,
                    reason="no PTX assembler (ptxas or nvJitLink) on this machine")
@pytest.mark.parametrize("bm, bn, bk, warps, triton_regs", [(32, 32, 32, 4, 48), (64, 64, 32, 4, 92),
                                                          (128, 64, 16, 8, 112)])
def test_fma_dot_fits_in_registers(bm, bn, bk, warps, triton_regs):
    k = triton.compile(fma_matmul, target="cuda:90", signature=SIG, constexprs={"BM": bm, "BN": bn, "BK": bk},
                       options={"num_warps": warps}, attrs={n: {"tt.divisibility": 16} for n in SIG})
    md = k.metadata
    assert md["n_spills"] == 0, md.get("resource_log")
    assert md["n_regs"] <= triton_regs * 3 // 2, (md["n_regs"], triton_regs)
