"""Tensor-core benchmarks: matmul and flash attention under Tritium and Triton in one process.

    python bench/bench_matmul.py [--check] [--quick] [--sizes 1024,4096,8192] [--parts matmul,tf32,ieee,fwd,bwd]
    python bench/bench_matmul.py --quick --parts configs --sizes 4096,8192   # every config, same on both sides

``--check`` only runs the correctness sweep (every config x dtype x shape, ragged shapes included,
num_stages 1-4, outputs poisoned with NaN, compared with float64 torch).  Otherwise the table:
fp16/bf16 matmul at each size (the tutorial's grouped kernel over the same config list for both
compilers, best config each: what the autotuner would pick; the two best configs and cuBLAS are
then timed interleaved, A,B,B,A per round, ``bench/interleave.py``, and the table gives the median
of the rounds with the ratio's range), fp8 e4m3 matmul 4096^3 (B given K-contiguous, as fp8
tensor cores need), tf32 matmul 4096^3 (fp32 inputs, B K-contiguous), fp32 matmul with
input_precision="ieee" (FMA dots) at 1024^3 and 2048^3, flash-attention forward and backward (the
tutorial's three backward launches: row dot products, dK/dV per key block, dQ per query block;
causal and not, head dim 64 and 128; gradients checked against float64 autograd; the forward
from two sources, each side taking its best config over both: the pointer kernel and
``attention_kernels.py``'s, whose K and V come through tensor descriptors, its loop
warp-specialized or not; the forward also with fp8 e4m3 Q, K and V, V stored [d, N], from both
sources too), with TFLOP/s,
Tritium/Triton, and a peer timed in the same interleaved rounds where torch has one: cuBLAS
(``torch.matmul``; ``torch._scaled_mm`` for fp8; with TF32 allowed for the tf32 row, without for
the ieee one) for the matmul rows, ``scaled_dot_product_attention`` on its flash backend
(FlashAttention-2) for the fp16 attention forward rows; the fp8 and backward rows have none.  "% peak" is
Tritium's TFLOP/s over the dense peak of an H100/H200 SXM for the row's input type (fp16/bf16 989,
fp8 1979, tf32 495, fp32 FMA 67; nan on other GPUs).  Then the cold compile time of a 128x256x64
fp16 matmul with 8 warps for both.  Printed last.  ``--parts configs`` instead times every config
of the tutorial's list with the same config on both sides (fp16 and bf16 at each size): no config
an autotuner could pick may be weak.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_nvidia import bench  # noqa: E402
from kernel_files import descriptor_frameworks, load_kernels  # noqa: E402
from interleave import host_line, interleaved, ratio_cell, search_order, sm_clock_mhz  # noqa: E402

failures: list[str] = []
CONFIGS = [  # (BM, BN, BK, GROUP_M, num_warps, num_stages): Triton's tutorial list for Hopper
    (128, 256, 64, 8, 8, 3), (64, 256, 32, 8, 4, 4), (128, 128, 32, 8, 4, 4), (128, 64, 32, 8, 4, 4),
    (64, 128, 32, 8, 4, 4), (128, 128, 64, 8, 4, 3), (128, 256, 64, 8, 8, 4),
]
#: fp32 operands take twice the shared memory a stage: K blocks of 32
#: input_precision="ieee": the FMA dot (no tensor cores), small tiles
IEEE_CONFIGS = [(64, 64, 32, 8, 4, 2), (64, 64, 16, 8, 4, 3), (32, 64, 32, 8, 4, 2), (128, 64, 16, 8, 8, 2),
                (64, 32, 32, 8, 2, 2)]
TF32_CONFIGS = [(128, 256, 32, 8, 8, 3), (128, 128, 32, 8, 4, 4), (128, 128, 32, 8, 8, 3), (64, 256, 32, 8, 4, 3)]
CHECK_CONFIGS = [(128, 256, 64, 8, 8, 3), (128, 128, 64, 8, 4, 1), (128, 128, 32, 8, 4, 2), (64, 64, 32, 8, 4, 4),
                 (64, 128, 64, 8, 4, 3), (32, 32, 32, 4, 4, 3), (16, 32, 16, 4, 2, 2), (64, 32, 16, 8, 4, 1)]


def rel_err(out, ref) -> float:
    return ((out.double() - ref).norm() / ref.norm()).item()


def run_matmul(k, a, b, c, cfg, precision=None):
    bm, bn, bk, g, w, s = cfg
    m, kk = a.shape
    n = b.shape[1]
    grid = (triton_cdiv(m, bm) * triton_cdiv(n, bn),)
    k.matmul_kernel[grid](a, b, c, m, n, kk, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                          c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=g,
                          INPUT_PRECISION=precision, num_warps=w, num_stages=s)


def triton_cdiv(a, b):
    return (a + b - 1) // b


def check_sweep(k) -> None:
    shapes = [(512, 512, 512), (200, 130, 300), (256, 192, 160), (1000, 1000, 1000)]
    dtypes = [torch.float16, torch.bfloat16]
    n = 0
    for cfg in CHECK_CONFIGS:
        for dt in dtypes:
            for (m, nn, kk) in shapes:
                a = torch.randn(m, kk, device="cuda", dtype=dt)
                b = torch.randn(kk, nn, device="cuda", dtype=dt)
                c = torch.full((m, nn), float("nan"), device="cuda", dtype=dt)
                ref = a.double() @ b.double()
                try:
                    run_matmul(k, a, b, c, cfg)
                    torch.cuda.synchronize()
                except Exception as e:  # report and go on: one broken config must not hide the rest
                    failures.append(f"matmul {cfg} {dt} {m}x{nn}x{kk}: {type(e).__name__}: {str(e)[:300]}")
                    continue
                err = rel_err(c, ref)
                n += 1
                if not err < 1e-2:
                    failures.append(f"matmul {cfg} {dt} {m}x{nn}x{kk}: relative error {err:.3e}")
    print(f"check sweep: {n} runs, {len(failures)} failures")


#: dense tensor-core (and fp32 FMA) peaks of an H100/H200 SXM, TFLOP/s, by input type
HOPPER_SXM_PEAKS = {"fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9}


def dense_peaks() -> dict:
    """The peaks of the GPU in use where known (an H100 or H200 SXM), else none."""
    name = torch.cuda.get_device_name()
    return HOPPER_SXM_PEAKS if ("H100" in name or "H200" in name) and "PCIe" not in name else {}


def cublas_fp32(a, b, tf32: bool):
    """torch.matmul of fp32 inputs with TF32 tensor cores allowed or not (restored after)."""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        return torch.matmul(a, b)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def flash_sdpa(q, k, v, causal: bool):
    """torch's scaled_dot_product_attention held to its flash backend (FlashAttention-2)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def peer_if_runs(fn) -> dict:
    """``{"peer": fn}`` when ``fn`` runs on this machine (a torch build may lack the kernel), else {}."""
    try:
        fn()
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - any failure means: no peer on this row
        print(f"(no peer: {type(e).__name__}: {str(e)[:120]})")
        return {}
    return {"peer": fn}


#: the descriptor attention's modules by the matmul module of the same framework (``attn_run``)
ATTN_DESC: dict = {}
#: attention forward configs: (BLOCK_M, BLOCK_N, num_warps, num_stages) of the pointer kernel, and
#: ("desc", BLOCK_M, BLOCK_N, num_warps, num_stages, warp_specialize) of the descriptor kernel
#: (attention_kernels.py: K and V through TMA, the loop warp-specialized or not)
ATTN_CONFIGS = [(128, 64, 4, 3), (128, 128, 8, 3), (64, 64, 4, 3),
                ("desc", 128, 128, 8, 3, True), ("desc", 128, 64, 8, 3, False), ("desc", 128, 128, 8, 3, False)]


def attn_configs(d: int, descriptors: bool = True) -> list:
    """The forward configs for head dim ``d``: the pointer kernel's 128-wide K/V blocks do not fit
    d128's registers; the descriptor kernel where both frameworks have it loaded."""
    return [c for c in ATTN_CONFIGS if (c[0] == "desc" and descriptors and ATTN_DESC)
            or (c[0] != "desc" and not (d == 128 and c[1] == 128))]


def attn_run(k, q, kk, v, o, causal, *cfg):
    """One forward launch of config ``cfg`` (``ATTN_CONFIGS``) with framework module ``k``."""
    z, h, n_ctx, d = q.shape
    if cfg[0] == "desc":
        _, bm, bn, w, s, ws = cfg
        ATTN_DESC[id(k)].attn_fwd_desc[(triton_cdiv(n_ctx, bm), z * h)](
            q, kk, v, o, lse_buffer(q), 1.0 / d ** 0.5, z, h, n_ctx, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn,
            CAUSAL=causal, WS=ws, num_warps=w, num_stages=s, **({"V_T": True} if v.stride(2) == 1 else {}))
        return
    bm, bn, w, s = cfg
    grid = (triton_cdiv(n_ctx, bm), z * h)
    k.attn_fwd[grid](q, kk, v, 1.0 / d ** 0.5, o, *q.stride(), *kk.stride(), *v.stride(), *o.stride(), h, n_ctx,
                     HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, num_warps=w, num_stages=s)


_lse_bufs: dict = {}


def lse_buffer(q):
    """A float32 [Z, H, N_CTX] buffer for the descriptor kernel's row statistics (one per shape)."""
    key = tuple(q.shape[:3])
    if key not in _lse_bufs:
        _lse_bufs.clear()
        _lse_bufs[key] = torch.empty(key, device=q.device, dtype=torch.float32)
    return _lse_bufs[key]


def attn_ref(q, k, v, causal):
    d = q.shape[-1]
    s = (q.double() @ k.double().transpose(-1, -2)) / d ** 0.5
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool, device=q.device), 1), float("-inf"))
    return torch.softmax(s, -1) @ v.double()


def attn_bwd_inputs(bh: int, n_ctx: int, d: int, causal: bool):
    """q, k, v, the output's gradient, the forward's output and each row's log2-sum-exp2 (fp32,
    from torch), for ``bh`` heads; and the float64 reference gradients of the first two heads."""
    q, k, v, do = (torch.randn(bh, n_ctx, d, device="cuda", dtype=torch.float16) for _ in range(4))
    scale = 1.0 / d ** 0.5
    lse, o = [], []
    for i in range(0, bh, 8):  # scores in slices: bh x n_ctx^2 floats would not fit at 16384
        s = (q[i:i + 8].float() @ k[i:i + 8].float().transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(torch.triu(torch.ones(n_ctx, n_ctx, dtype=torch.bool, device="cuda"), 1), float("-inf"))
        lse.append(torch.logsumexp(s, -1) * 1.4426950408889634)
        o.append((torch.softmax(s, -1) @ v[i:i + 8].float()).half())
        del s
    lse, o = torch.cat(lse).contiguous(), torch.cat(o).contiguous()
    ref = None
    if n_ctx <= 4096:
        qq, kk, vv = (t[:2].double().requires_grad_() for t in (q, k, v))
        s = (qq @ kk.transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(torch.triu(torch.ones(n_ctx, n_ctx, dtype=torch.bool, device="cuda"), 1), float("-inf"))
        (torch.softmax(s, -1) @ vv).backward(do[:2].double())
        ref = (qq.grad, kk.grad, vv.grad)
    return q, k, v, do, o, lse, ref


def attn_bwd_run(k, q, kk, v, do, o, lse, delta, dq, dk, dv, causal, bm, bn, w, s):
    """The three launches of the backward pass (``matmul_kernels.attn_bwd_*``)."""
    bh, n_ctx, d = q.shape
    scale = 1.0 / d ** 0.5
    k.attn_bwd_preprocess[(triton_cdiv(n_ctx, 128), bh)](o, do, delta, n_ctx, HEAD_DIM=d, BLOCK_M=128)
    k.attn_bwd_dkdv[(triton_cdiv(n_ctx, bn), bh)](q, kk, v, do, lse, delta, dk, dv, scale, n_ctx, HEAD_DIM=d,
                                                  BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, num_warps=w, num_stages=s)
    k.attn_bwd_dq[(triton_cdiv(n_ctx, bm), bh)](q, kk, v, do, lse, delta, dq, scale, n_ctx, HEAD_DIM=d,
                                                BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, num_warps=w, num_stages=s)


def cold_compile(framework: str, k) -> float:
    """Seconds from source to a finished first launch of the 128x256x64 fp16 tile with 8 warps, as a
    user meets it: a fresh copy of the kernel (no in-memory cache) and an empty on-disk cache, so
    the JIT specializes on the arguments (divisibility, unit strides) exactly as in the table."""
    mod = sys.modules[k.__name__]
    a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    c = torch.empty(512, 512, device="cuda", dtype=torch.float16)
    times = []
    for i in range(3):
        with tempfile.TemporaryDirectory() as d:
            os.environ["TRITIUM_CACHE_DIR" if framework == "tritium" else "TRITON_CACHE_DIR"] = d
            fresh = load_kernels(f"{k.__name__}_cold{i}", mod.triton, mod.tl, "matmul_kernels.py")
            torch.cuda.synchronize()
            t = time.perf_counter()
            run_matmul(fresh, a, a, c, (128, 256, 64, 8, 8, 3))
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="correctness sweep only")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default="1024,4096,8192")
    ap.add_argument("--rounds", type=int, default=0, help="interleaved rounds (default 3 with --quick, else 5)")
    ap.add_argument("--reps", type=int, default=0, help="launches a side per round (default 10 with --quick, else 30)")
    ap.add_argument("--no-attention", action="store_true")
    ap.add_argument("--parts", default="matmul,tf32,ieee,fwd,bwd",
                    help="which tables: matmul (fp16, bf16, fp8), tf32 (fp32 inputs), ieee (fp32, FMA dots), "
                         "fwd (attention forward), bwd (attention backward); also configs (fp16/bf16 matmul, "
                         "every config of the tutorial's list, the same on both sides)")
    args = ap.parse_args()
    import tritium
    import tritium.language as ttl
    impls = {"tritium": load_kernels("mm_tritium", tritium, ttl, "matmul_kernels.py")}
    try:
        import triton
        import triton.language as tl
        impls["triton"] = load_kernels("mm_triton", triton, tl, "matmul_kernels.py")
    except ImportError:
        print("Triton is not installed: Tritium only")
    torch.manual_seed(0)
    check_sweep(impls["tritium"])
    if args.check:
        for f in failures:
            print("FAIL", f)
        return 1 if failures else 0
    reps = args.reps or (10 if args.quick else 30)
    rounds = args.rounds or (3 if args.quick else 5)
    rows = []
    print(host_line())
    clock_before = sm_clock_mhz()

    def runs_right(label, cfg, run, poison, correct):
        """``(name, cfg)`` of each framework whose ``run(k, cfg)`` (after ``poison()``) ran and gave
        a ``correct()`` result; the others are recorded in ``failures``."""
        out = []
        for name, k in impls.items():
            try:
                poison()
                run(k, cfg)
                torch.cuda.synchronize()
            except Exception as e:  # one failing config must not hide the others
                failures.append(f"{name} {label} {cfg}: {type(e).__name__}: {str(e)[:200]}")
                continue
            if not correct():
                failures.append(f"{name} {label} {cfg}: wrong result")
                continue
            out.append((name, cfg))
        return out

    def best_config(label, configs, run, poison, correct, extra=None):
        """Per framework, the fastest config whose output is right (what an autotuner would pick;
        ``poison()`` then ``run(k, cfg)`` then ``correct()``), found by a quick search that times
        the two frameworks' candidates config by config, twice, the second pass in reverse
        (``search_order``: a drifting clock favours no candidate), keeping each one's faster
        pass; then the winners (and ``extra``, e.g. cuBLAS) are timed interleaved.  The poisoning
        is outside the timed region."""
        candidates = [c for cfg in configs for c in runs_right(label, cfg, run, poison, correct)]
        searched = {}
        for name, cfg in search_order(candidates):
            t = bench(lambda: run(impls[name], cfg), max(3, reps // 3))
            searched[(name, cfg)] = min(t, searched.get((name, cfg), t))
        best = {}
        for (name, cfg), t in searched.items():
            if name not in best or t < best[name][0]:
                best[name] = (t, cfg)
        fns = {name: (lambda k=impls[name], cfg=cfg: run(k, cfg)) for name, (_, cfg) in best.items()}
        fns.update(extra or {})
        timed = interleaved(fns, reps=reps, rounds=rounds)
        return timed, {name: cfg for name, (_, cfg) in best.items()}

    parts = set(args.parts.split(","))
    if args.no_attention:
        parts -= {"fwd", "bwd"}
    cfg_rows = []  # the per-config table, after the best-config rows as before
    for dt in (torch.float16, torch.bfloat16) if parts & {"matmul", "configs"} else ():
        for size in [int(s) for s in args.sizes.split(",")]:
            a = torch.randn(size, size, device="cuda", dtype=dt)
            b = torch.randn(size, size, device="cuda", dtype=dt)
            ref = (a.float() @ b.float()).double()
            c = torch.empty((size, size), device="cuda", dtype=dt)
            label = f"matmul {dt} {size}"
            mm = (lambda k, cfg: run_matmul(k, a, b, c, cfg), lambda: c.fill_(float("nan")),
                  lambda: rel_err(c, ref) < 1e-2)
            if "matmul" in parts:
                timed, cfgs = best_config(label, CONFIGS, *mm, extra={"peer": lambda: torch.matmul(a, b)})
                rows.append((f"matmul {str(dt)[6:]}", f"{size}^3", 2 * size ** 3, timed, cfgs, "cuBLAS", "fp16"))
            # every config of the tutorial's list, the same config on both sides (an autotuner may
            # pick any of them: none may be weak)
            for cfg in CONFIGS if "configs" in parts else ():
                fns = {name: (lambda k=impls[name], cfg=cfg: run_matmul(k, a, b, c, cfg))
                       for name, _ in runs_right(label, cfg, *mm)}
                timed = interleaved(fns, reps=reps, rounds=rounds)
                cfg_rows.append((f"matmul {str(dt)[6:]} cfg", f"{size}^3", 2 * size ** 3, timed,
                                 {name: cfg for name in fns}, "-", "fp16"))
            del a, b, c, ref
    rows += cfg_rows
    if hasattr(torch, "float8_e4m3fn") and "matmul" in parts:  # fp8 e4m3, B K-contiguous
        size = 4096
        a = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn).T  # (K, N) view, K contiguous
        ref = (a.float() @ b.float()).double()
        c = torch.empty((size, size), device="cuda", dtype=torch.float16)
        one = torch.ones((), device="cuda")
        # 256x128x128 w8 s4 is Triton's fastest here (1252 TFLOP/s against 1181 for its best of the first three)
        timed, cfgs = best_config("fp8 matmul", [(128, 256, 128, 8, 8, 3), (128, 128, 128, 8, 4, 4), (64, 128, 128, 8, 4, 4),
                                                 (128, 256, 128, 8, 8, 4), (256, 128, 128, 8, 8, 4)],
                                  lambda k, cfg: run_matmul(k, a, b, c, cfg), lambda: c.fill_(float("nan")),
                                  lambda: rel_err(c, ref) < 2e-2,
                                  extra=peer_if_runs(lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.float16)))
        rows.append(("matmul fp8e4m3", f"{size}^3", 2 * size ** 3, timed, cfgs, "cuBLAS", "fp8"))
    if "tf32" in parts:  # fp32 inputs, tl.dot's default precision: tf32 tensor cores on both sides
        size = 4096
        a = torch.randn(size, size, device="cuda")
        b = torch.randn(size, size, device="cuda").T  # (K, N) view, K contiguous: wgmma reads tf32 K-major only
        ref = a.double() @ b.double()
        c = torch.empty((size, size), device="cuda")
        timed, cfgs = best_config("tf32 matmul", TF32_CONFIGS, lambda k, cfg: run_matmul(k, a, b, c, cfg),
                                  lambda: c.fill_(float("nan")), lambda: rel_err(c, ref) < 1e-2,
                                  extra={"peer": lambda: cublas_fp32(a, b, tf32=True)})
        rows.append(("matmul tf32", f"{size}^3", 2 * size ** 3, timed, cfgs, "cuBLAS", "tf32"))
    if "ieee" in parts:  # fp32 inputs, input_precision="ieee": FMA dots on both sides
        for size in (1024, 2048):
            a = torch.randn(size, size, device="cuda")
            b = torch.randn(size, size, device="cuda")
            ref = a.double() @ b.double()
            c = torch.empty((size, size), device="cuda")
            timed, cfgs = best_config(f"ieee matmul {size}", IEEE_CONFIGS,
                                      lambda k, cfg: run_matmul(k, a, b, c, cfg, "ieee"),
                                      lambda: c.fill_(float("nan")), lambda: rel_err(c, ref) < 1e-5,
                                      extra={"peer": lambda: cublas_fp32(a, b, tf32=False)})
            rows.append(("matmul fp32 ieee", f"{size}^3", 2 * size ** 3, timed, cfgs, "cuBLAS", "fp32"))
    if "fwd" in parts:
        try:  # the descriptor kernel for each framework (Triton's in-kernel maps take torch's allocator)
            for name, (mod, _) in descriptor_frameworks("attn", "attention_kernels.py").items():
                if name in impls:
                    ATTN_DESC[id(impls[name])] = mod
        except Exception as e:  # noqa: BLE001 - the pointer kernel's rows still run
            print(f"(no descriptor attention: {type(e).__name__}: {str(e)[:120]})")
            ATTN_DESC.clear()
        for causal in (False, True):
            for d in (64, 128):
                for n_ctx in (1024, 4096, 16384):
                    z, h = max(1, 16384 // n_ctx) * 2, 16
                    q, kk, v = (torch.randn(z, h, n_ctx, d, device="cuda", dtype=torch.float16) for _ in range(3))
                    o = torch.empty_like(q)
                    ref = attn_ref(q[:1, :2], kk[:1, :2], v[:1, :2], causal) if n_ctx <= 4096 else None
                    cfgs = attn_configs(d)
                    timed, chosen = best_config(
                        f"attention d{d} causal={causal}", cfgs,
                        lambda k, cfg: attn_run(k, q, kk, v, o, causal, *cfg), lambda: o.fill_(float("nan")),
                        lambda: not torch.isnan(o).any() and (ref is None or rel_err(o[:1, :2], ref) < 1e-2),
                        extra=peer_if_runs(lambda: flash_sdpa(q, kk, v, causal)))
                    flops = 4 * z * h * n_ctx * n_ctx * d * (0.5 if causal else 1.0)
                    rows.append((f"attn fwd d{d}{' causal' if causal else ''}", f"N_CTX {n_ctx}", flops, timed, chosen,
                                 "SDPA flash", "fp16"))
        if hasattr(torch, "float8_e4m3fn"):
            # fp8 e4m3 Q, K, V (P cast to fp8 for the second dot, as Triton's tutorial does), fp16
            # output; V stored [d, N] so the second dot's B is K-contiguous, which 8-bit wgmma needs
            # (the descriptor kernel reads it with V_T). No peer: torch's SDPA has no fp8 flash kernel
            for d in (64, 128):
                for n_ctx in (4096, 16384):
                    z, h = max(1, 16384 // n_ctx) * 2, 16
                    q, kk = (torch.randn(z, h, n_ctx, d, device="cuda").to(torch.float8_e4m3fn) for _ in range(2))
                    v = torch.randn(z, h, d, n_ctx, device="cuda").to(torch.float8_e4m3fn).transpose(2, 3)
                    o = torch.empty(z, h, n_ctx, d, device="cuda", dtype=torch.float16)
                    # the reference from the same fp8 inputs (in float64): what is left is P's rounding
                    ref = attn_ref(q[:1, :2], kk[:1, :2], v[:1, :2], False) if n_ctx <= 4096 else None
                    cfgs = attn_configs(d)
                    timed, chosen = best_config(
                        f"fp8 attention d{d}", cfgs,
                        lambda k, cfg: attn_run(k, q, kk, v, o, False, *cfg), lambda: o.fill_(float("nan")),
                        lambda: not torch.isnan(o).any() and (ref is None or rel_err(o[:1, :2], ref) < 5e-2))
                    flops = 4 * z * h * n_ctx * n_ctx * d
                    rows.append((f"attn fwd fp8e4m3 d{d}", f"N_CTX {n_ctx}", flops, timed, chosen, "-", "fp8"))
    if "bwd" in parts:  # the backward pass (2.5x the forward's matmul work)
        for causal in (False, True):
            for d in (64, 128):
                for n_ctx in (1024, 4096, 16384) if not args.quick else (4096, 16384):
                    bh = max(1, 16384 // n_ctx) * 32
                    q, kk, v, do, o, lse, ref = attn_bwd_inputs(bh, n_ctx, d, causal)
                    delta = torch.empty(bh, n_ctx, device="cuda", dtype=torch.float32)
                    grads = [torch.empty_like(q) for _ in range(3)]

                    def poison():
                        for g in grads:
                            g.fill_(float("nan"))

                    def correct():
                        if any(torch.isnan(g).any() for g in grads):
                            return False
                        return ref is None or all(rel_err(g[:2], r) < 2e-2 for g, r in zip(grads, ref))
                    cfgs = [(64, 64, 4, 3), (128, 64, 8, 3), (64, 128, 8, 3)] if d == 64 else [(64, 64, 4, 3), (64, 64, 8, 2)]
                    timed, chosen = best_config(
                        f"attention backward d{d} causal={causal}", cfgs,
                        lambda k, cfg: attn_bwd_run(k, q, kk, v, do, o, lse, delta, *grads, causal, *cfg), poison, correct)
                    flops = 10 * bh * n_ctx * n_ctx * d * (0.5 if causal else 1.0)
                    rows.append((f"attn bwd d{d}{' causal' if causal else ''}", f"N_CTX {n_ctx}", flops, timed, chosen,
                                 "-", "fp16"))
                    del q, kk, v, do, o, lse, grads
    compile_t = {name: cold_compile(name, k) for name, k in impls.items()} if "matmul" in parts else {}

    print()
    print(f"SM clock, max, temperature before the table: {clock_before}; after: {sm_clock_mhz()}")
    print(f"interleaved A,B,B,A x {rounds} rounds of {reps} launches; median of round medians, ratio [range]")
    print(f"{'kernel':<22} {'size':<12} {'tritium TF/s':>12} {'triton TF/s':>12} {'tritium/triton [range]':>24}"
          f" {'% peak':>7} {'peer':<11} {'peer TF/s':>10} {'vs peer':>8}  configs (tritium | triton)")
    nan = float("nan")
    peaks = dense_peaks()
    for kernel, size, flops, timed, cfgs, peer, kind in rows:
        tf = {n: flops / (t.median_ms * 1e-3) / 1e12 for n, t in timed.items()}
        mine = tf.get('tritium', nan)
        print(f"{kernel:<22} {size:<12} {mine:>12.1f} {tf.get('triton', nan):>12.1f}"
              f" {ratio_cell(timed):>24} {100 * mine / peaks.get(kind, nan):>6.1f}% {peer if 'peer' in tf else '-':<11}"
              f" {tf.get('peer', nan):>10.1f} {mine / tf.get('peer', nan):>8.3f}  "
              f"{cfgs.get('tritium', '-')} | {cfgs.get('triton', '-')}")
    if compile_t:
        print(f"cold compile 128x256x64 fp16 matmul, 8 warps: " +
              ", ".join(f"{n} {t:.2f} s" for n, t in compile_t.items()))
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
