"""Frontend benchmark: ``import tritium`` time and TTIR compile time per tutorial kernel.

    python bench/bench_frontend.py [--triton]

Prints a table.  ``import tritium`` is timed in fresh interpreters (median of 7) and must not
import torch, xDSL or numpy.  Compile times are cold (empty cache) to TTIR, median of 5; with
``--triton`` and Triton installed, Triton's own time to TTIR for the same kernels is shown beside.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

IMPORT_PROBE = ("import time, sys; t = time.perf_counter(); import tritium; dt = time.perf_counter() - t; "
                "heavy = [m for m in ('torch', 'xdsl', 'numpy', 'llvmlite') if m in sys.modules]; "
                "print(dt, ','.join(heavy))")


def import_time() -> tuple[float, str]:
    runs = []
    heavy = ""
    for _ in range(7):
        out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True).stdout
        t, heavy = out.split(" ", 1) if " " in out else (out, "")
        runs.append(float(t))
    return statistics.median(runs), heavy.strip()


def kernels():
    from tritium.examples import attention, fused_softmax, layer_norm, matmul, vector_add
    f32 = lambda names: {n: "*fp32" for n in names}  # noqa: E731
    return [
        ("vector add", vector_add.add_kernel, {**f32(["x_ptr", "y_ptr", "output_ptr"]), "n_elements": "i32"},
         {"BLOCK_SIZE": 1024}),
        ("fused softmax", fused_softmax.softmax_kernel,
         {**f32(["output_ptr", "input_ptr"]), **{k: "i32" for k in ["input_row_stride", "output_row_stride", "n_rows",
                                                                     "n_cols"]}}, {"BLOCK_SIZE": 1024, "num_stages": 3}),
        ("layer norm fwd", layer_norm._layer_norm_fwd_fused,
         {**f32(["X", "Y", "W", "B", "Mean", "Rstd"]), "stride": "i32", "N": "i32", "eps": "fp32"}, {"BLOCK_SIZE": 1024}),
        ("matmul", matmul.matmul_kernel.fn,
         {**{n: "*fp16" for n in ["a_ptr", "b_ptr", "c_ptr"]},
          **{k: "i32" for k in ["M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn"]}},
         {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "ACTIVATION": ""}),
        ("flash attention fwd", attention._fwd_kernel,
         {**{n: "*fp16" for n in ["Q", "K", "V", "Out"]}, "sm_scale": "fp32", "L": "*fp32",
          **{n: "i32" for n in attention._fwd_kernel.arg_names if n.startswith("stride_")}, "Z": "i32", "H": "i32",
          "N_CTX": "i32"},
         {"BLOCK_M": 128, "BLOCK_DMODEL": 64, "BLOCK_N": 64, "IS_CAUSAL": True}),
    ]


def tritium_ttir_time(fn, sig, consts) -> float:
    import tritium
    runs = []
    for _ in range(5):
        with tempfile.TemporaryDirectory() as d:
            os.environ["TRITIUM_CACHE_DIR"] = d
            t = time.perf_counter()
            tritium.compile(fn, signature=sig, constexprs=consts, target="interpreter", stage="ttir")
            runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def triton_ttir_time(name, fn, sig, consts) -> float | None:
    """Triton compiling the same source (its own frontend) to TTIR, for comparison."""
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
    except ImportError:
        return None
    import importlib.util
    import inspect
    src = inspect.getsource(inspect.getmodule(fn.fn)).replace("import tritium as triton", "import triton") \
        .replace("import tritium.language as tl", "import triton.language as tl")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, f"k_{abs(hash(name))}.py")
        with open(path, "w") as f:
            f.write(src)
        spec = importlib.util.spec_from_file_location(f"k_{abs(hash(name))}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        tfn = getattr(mod, fn.__name__)
        while not isinstance(tfn, triton.runtime.JITFunction):  # unwrap autotune/heuristics
            tfn = tfn.fn
        full_sig = {n: sig.get(n, "constexpr") for n in fn.arg_names}
        runs = []
        for _ in range(5):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["TRITON_CACHE_DIR"] = cache
                from triton.compiler.compiler import make_backend
                target = GPUTarget("cuda", 90, 32)
                backend = make_backend(target)
                t = time.perf_counter()
                ast_src = ASTSource(tfn, full_sig, consts)
                opts = backend.parse_options({})
                from triton._C.libtriton import ir
                ctx = ir.context()
                ir.load_dialects(ctx)
                backend.load_dialects(ctx)
                codegen_fns = backend.get_codegen_implementation(opts)
                module_map = backend.get_module_map()
                mod_ir = ast_src.make_ir(target, opts, codegen_fns, module_map, ctx)
                backend.make_ttir(mod_ir, {}, opts, 90)
                runs.append(time.perf_counter() - t)
        return statistics.median(runs)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--triton", action="store_true", help="also time Triton's frontend to TTIR")
    args = p.parse_args(argv)
    t, heavy = import_time()
    print(f"import tritium: {t * 1e3:.1f} ms (goal < 300 ms); heavy modules imported: {heavy or 'none'}")
    print()
    print(f"{'kernel':<22}{'tritium TTIR (ms)':>19}{'triton TTIR (ms)':>18}{'ratio':>8}")
    for name, fn, sig, consts in kernels():
        ours = tritium_ttir_time(fn, sig, consts)
        theirs = None
        if args.triton:
            try:
                theirs = triton_ttir_time(name, fn, sig, consts)
            except Exception as e:  # noqa: BLE001 - the comparison is optional
                print(f"  (triton comparison failed for {name}: {type(e).__name__}: {e})")
        ratio = f"{ours / theirs:.2f}" if theirs else "-"
        tt = f"{theirs * 1e3:.1f}" if theirs else "-"
        print(f"{name:<22}{ours * 1e3:>19.1f}{tt:>18}{ratio:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
