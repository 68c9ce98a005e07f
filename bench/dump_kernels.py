"""Compile the tutorial kernels with Tritium and Triton (no GPU needed) at the benchmark's launch
parameters and write each stage's text to a folder; print convert_layout counts, registers, spills.

    python bench/dump_kernels.py [OUTDIR]
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from kernel_files import load_kernels  # noqa: E402

PTR = "*fp32"
# (kernel, signature, constexprs, num_warps, integer args divisible by 16)
CASES = {
    "add": ("add_kernel", {"x_ptr": PTR, "y_ptr": PTR, "output_ptr": PTR, "n_elements": "i32"},
            {"BLOCK_SIZE": 1024}, 4),
    "softmax1024": ("softmax_kernel", {"output_ptr": PTR, "input_ptr": PTR, "input_row_stride": "i32",
                                       "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                    {"BLOCK_SIZE": 1024}, 4),
    "softmax4096": ("softmax_kernel", None, {"BLOCK_SIZE": 4096}, 8),
    "softmax16384": ("softmax_kernel", None, {"BLOCK_SIZE": 16384}, 16),
    "layer_norm": ("layer_norm_fwd", {"X": PTR, "Y": PTR, "W": PTR, "B": PTR, "Mean": PTR, "Rstd": PTR,
                                      "stride": "i32", "N": "i32", "eps": "fp32"}, {"BLOCK_SIZE": 1024}, 4),
}
CASES["softmax4096"] = (CASES["softmax4096"][0], CASES["softmax1024"][1]) + CASES["softmax4096"][2:]
CASES["softmax16384"] = (CASES["softmax16384"][0], CASES["softmax1024"][1]) + CASES["softmax16384"][2:]


def divisible(sig):
    # the JIT specialises pointers and these benchmark sizes as divisible by 16
    return [n for n, t in sig.items() if t.startswith("*") or (t == "i32" and n not in ("n_rows",))]


def _ptxas_report(ptx: str) -> dict:
    from tritium_nvidia import toolchain
    from tritium_nvidia.binary import _cubin_ptxas, parse_resource_report
    ptxas = toolchain.find_ptxas()
    if ptxas is None:
        return {}
    _, log = _cubin_ptxas(ptx, "90a", "k", 3, True, None, ptxas)
    rep = parse_resource_report(log)
    return next(iter(rep.values()), {})


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/dump"
    os.makedirs(out, exist_ok=True)
    import tritium
    import tritium.language as ttl
    k = load_kernels("dump_k_tritium", tritium, ttl)
    try:
        import triton
        import triton.language as tl
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        kt = load_kernels("dump_k_triton", triton, tl)
    except ImportError:
        kt = None
    for case, (name, sig, consts, warps) in CASES.items():
        div = divisible(sig)
        ck = tritium.compile(getattr(k, name), target="cuda:90", signature=sig, constexprs=consts,
                             attrs={n: {"tt.divisibility": 16} for n in div}, num_warps=warps)
        for st in ("ttgir", "llir", "ptx"):
            with open(f"{out}/{case}.tritium.{st}", "w") as f:
                f.write(str(ck.asm[st]))
        md = ck.metadata
        md = md if isinstance(md, dict) else vars(md)
        cvt = str(ck.asm["ttgir"]).count("ttg.convert_layout")
        line = f"{case:<13} tritium: cvt {cvt:2d} regs {md.get('n_regs')} spills {md.get('n_spills')}"
        ptx = str(ck.asm["ptx"])
        line += f" ld.v4 {len(re.findall(r'ld.global[.a-z0-9]*v4', ptx))} bar {ptx.count('bar.sync')}"
        if kt is not None:
            names = list(sig)
            s = dict(sig, **{c: "constexpr" for c in consts})
            attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in div}
            c2 = triton.compile(ASTSource(getattr(kt, name), s, consts, attrs), target=GPUTarget("cuda", 90, 32),
                                options={"num_warps": warps})
            for st in ("ttgir", "llir", "ptx"):
                with open(f"{out}/{case}.triton.{st}", "w") as f:
                    f.write(c2.asm[st])
            tp = c2.asm["ptx"]
            rep = _ptxas_report(tp)
            line += (f" | triton: cvt {c2.asm['ttgir'].count('ttg.convert_layout'):2d} regs {rep.get('registers')} "
                     f"spills {rep.get('spill_stores', 0)} ld.v4 {len(re.findall(r'ld.global[.a-z0-9]*v4', tp))} "
                     f"bar {tp.count('bar.sync')}")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
