"""Run sm_80 code on a newer GPU: kernels compiled for ``cuda:80`` are loaded from their PTX (the
driver compiles it for the GPU at hand) instead of the sm_80 cubin, which only an Ampere-class
GPU loads.  This checks the numbers of the code paths only sm_80 takes (fp8 dots upcast to fp16
``mma.sync``; the sm_90 machine otherwise never runs them) against float64 torch on random
inputs, outputs poisoned with NaN.

    python bench/check_sm80_ptx.py          # prints one line per case, exits 1 on a mismatch
"""
from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from conformance.cases import dot_tiles  # noqa: E402

D = {"tt.divisibility": 16}


def compile_sm80_as_ptx(sig, consts, warps, stages):
    k = tritium.compile(dot_tiles.tiled_matmul_kernel, target="cuda:80", signature=sig, constexprs=consts,
                        attrs={n: D for n in ("a_ptr", "b_ptr", "c_ptr")}, num_warps=warps, num_stages=stages)
    k.asm["cubin"] = k.asm["ptx"].encode() + b"\0"   # the driver JIT-compiles PTX for this GPU
    return k


def main() -> int:
    torch.manual_seed(0)
    bad = 0
    cases = []
    for dt, name in ((torch.float8_e5m2, "fp8e5"), (torch.float16, "fp16")):  # fp8e4nv needs sm_89
        for (m, n, k_, bm, bn, bk, w, s, kmajor) in ((256, 256, 256, 64, 64, 64, 4, 3, False),
                                                     (200, 136, 300, 64, 64, 32, 4, 2, False),
                                                     (128, 128, 512, 128, 64, 64, 8, 4, True),
                                                     (96, 80, 64, 32, 32, 32, 2, 1, False)):
            cases.append((dt, name, m, n, k_, bm, bn, bk, w, s, kmajor))
    for dt, name, m, n, k_, bm, bn, bk, w, s, kmajor in cases:
        sig = {"a_ptr": f"*{name}", "b_ptr": f"*{name}", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
        consts = {"BM": bm, "BN": bn, "BK": bk, "B_KMAJOR": kmajor, "PRECISION": "tf32", "ACC": tl.float32,
                  "A_MMAJOR": False}
        label = f"{name} {m}x{n}x{k_} tile {bm}x{bn}x{bk} w{w} s{s}{' B K-major' if kmajor else ''}"
        try:
            kern = compile_sm80_as_ptx(sig, consts, w, s)
        except Exception as e:  # report and go on
            print(f"FAIL {label}: compile: {type(e).__name__}: {str(e)[:300]}")
            bad += 1
            continue
        a = (torch.randn(m, k_, device="cuda") * 2).to(dt)
        b = (torch.randn(k_, n, device="cuda") * 2).to(dt)
        b_mem = b.T.contiguous() if kmajor else b
        c = torch.full((m, n), float("nan"), device="cuda")
        grid = ((m + bm - 1) // bm, (n + bn - 1) // bn, 1)
        kern.launch(grid, None, [a, b_mem, c, m, n, k_])
        torch.cuda.synchronize()
        ref = a.double() @ b.double()
        err = ((c.double() - ref).norm() / ref.norm()).item()
        ok = not torch.isnan(c).any().item() and err < 1e-5
        mma = "mma.sync" in kern.asm["ptx"]
        print(f"{'ok  ' if ok else 'FAIL'} {label}: relative error {err:.2e}, mma.sync in PTX: {mma}")
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
