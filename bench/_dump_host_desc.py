import os, sys, torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_persistent import frameworks
out = os.environ.get("OUT", "/tmp")
size = 4096
a = torch.randn(size, size, device="cuda", dtype=torch.float16)
b = torch.randn(size, size, device="cuda", dtype=torch.float16)
cfg = (128, 256, 64, 8, 8, 3)
sms = torch.cuda.get_device_properties(0).multi_processor_count
for name, (k, Desc) in frameworks().items():
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    bm, bn, bk, g, w, s = cfg
    grid = (min(sms, (size // bm) * (size // bn)),)
    da, db, dc = Desc.from_tensor(a, [bm, bk]), Desc.from_tensor(b, [bn, bk]), Desc.from_tensor(c, [bm, bn])
    ck = k.persistent_host_desc[grid](da, db, dc, size, size, size, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g,
                                      NUM_SMS=sms, num_warps=w, num_stages=s)
    torch.cuda.synchronize()
    print(name, type(ck), (c.float() - (a.float() @ b.float().T)).abs().max().item())
    asm = ck.asm
    for key in ("ttgir", "ptx", "sass"):
        if key in asm:
            with open(f"{out}/{name}.{key}", "w") as f:
                f.write(asm[key] if isinstance(asm[key], str) else asm[key].decode())
    if "sass" not in asm and "cubin" in asm:
        import subprocess, tempfile
        with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
            f.write(asm["cubin"])
        r = subprocess.run(["cuobjdump", "-sass", f.name], capture_output=True, text=True)
        open(f"{out}/{name}.sass", "w").write(r.stdout + r.stderr)
