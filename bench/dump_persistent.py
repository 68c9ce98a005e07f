"""Compile and run one persistent matmul with Tritium and Triton on the GPU (checked against a
float32 torch product) and write each side's TTGIR, PTX and SASS, to compare what the two
compilers made of the same source (``bench_persistent.py``'s kernels, 128x256x64, 8 warps, 3
stages, fp16):

    python bench/dump_persistent.py [version] [size] [outdir]

``version`` is ``host_desc`` (default: host ``TensorDescriptor`` arguments, TMA on both sides) or
``plain`` / ``block_ptr`` / ``device_desc``; files go to ``outdir`` (default ``$OUT`` or /tmp) as
``tritium.ttgir``, ``triton.ptx``, ...  SASS needs ``cuobjdump`` on the PATH."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_persistent import frameworks  # noqa: E402


def main(argv) -> int:
    version = argv[0] if argv else "host_desc"
    size = int(argv[1]) if len(argv) > 1 else 4096
    out = argv[2] if len(argv) > 2 else os.environ.get("OUT", "/tmp")
    bm, bn, bk, g, w, s = 128, 256, 64, 8, 8, 3
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float().T
    grid = (min(sms, (size // bm) * (size // bn)),)
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, NUM_SMS=sms, num_warps=w, num_stages=s)
    status = 0
    for name, (k, Desc) in frameworks().items():
        c = torch.full((size, size), float("nan"), device="cuda", dtype=torch.float16)
        if version == "host_desc":
            args = (Desc.from_tensor(a, [bm, bk]), Desc.from_tensor(b, [bn, bk]), Desc.from_tensor(c, [bm, bn]),
                    size, size, size)
        else:
            args = (a, b, c, size, size, size, a.stride(0), b.stride(0), c.stride(0))
        compiled = getattr(k, f"persistent_{version}")[grid](*args, **meta)
        torch.cuda.synchronize()
        err = ((c.float() - ref).norm() / ref.norm()).item()
        print(f"{name}: relative error {err:.2e}")
        status |= not err < 1e-2
        asm = compiled.asm
        for key in ("ttgir", "ptx"):
            if key in asm:
                text = asm[key] if isinstance(asm[key], str) else asm[key].decode()
                with open(os.path.join(out, f"{name}.{key}"), "w") as f:
                    f.write(text)
        if "cubin" in asm:
            with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
                f.write(asm["cubin"])
                f.flush()
                try:
                    sass = subprocess.run(["cuobjdump", "-sass", f.name], capture_output=True, text=True).stdout
                except OSError:
                    sass = "cuobjdump not found\n"
            with open(os.path.join(out, f"{name}.sass"), "w") as f:
                f.write(sass)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
