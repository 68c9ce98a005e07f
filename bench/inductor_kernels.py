"""PyTorch Inductor's generated Triton kernels, run unchanged on Tritium against Triton.

    python3 bench/inductor_kernels.py [--models a,b] [--budget 540] [-j 4] [--json FILE] [--keep DIR]

Needs a GPU, torch and Triton (the reference).  Each model of ``bench/inductor_models.py`` is
compiled with ``torch.compile`` (Triton compiles and autotunes every kernel) in a worker process,
with ``torch._inductor.config.benchmark_kernel = True`` and ``TORCHINDUCTOR_CACHE_DIR`` in a fresh
folder, so each generated kernel is a file with ``get_args()`` and ``call(args)``.  For every
kernel file the worker then

1. imports it (real Triton) and runs ``call(get_args())``: Triton's autotuner picks a config;
2. makes the arguments again from one seed, poisons the ``out_ptr`` buffers (NaN / a sentinel) and
   runs Triton's chosen launcher on them: the reference;
3. makes them again, poisoned the same way, and launches the same ``@triton.jit`` source compiled
   by Tritium (``tritium.tools.inductor``: ``triton``, ``tl``, ``triton_helpers``, ``libdevice``,
   ``tl_math`` rebound to Tritium's) with the chosen config's kwargs, ``num_warps``,
   ``num_stages`` and Inductor's grid for it;
4. compares every tensor argument afterwards (outputs, in-place buffers, untouched inputs).

A kernel that crashes its worker (a sticky CUDA error) is reported and the worker restarted on
the rest.  Prints ``kernel | model | status | detail`` and totals; ``--budget`` seconds bounds the
run (models not started in time are listed as not run).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULT, FILES, START = "@@RESULT ", "@@FILES ", "@@START "


# --- comparing (pure torch: also runs on the CPU) ------------------------------------------------------
def tolerance(dtype, has_dot: bool) -> tuple[float, float]:
    import torch
    if dtype in (torch.float16, torch.bfloat16):
        return 2e-2, 2e-2
    if dtype == torch.float64:
        return 1e-9, 1e-9
    if dtype.is_floating_point:
        return (2e-3, 2e-3) if has_dot else (1e-4, 1e-5)
    return 0.0, 0.0


def poison(args, names) -> None:
    """Fill the ``out_ptr*`` tensors: NaN for floats, an unlikely value for integers."""
    import torch
    for a, n in zip(args, names):
        if isinstance(a, torch.Tensor) and n.startswith("out_ptr"):
            if a.dtype.is_floating_point:
                a.fill_(float("nan"))
            elif a.dtype == torch.bool:
                a.fill_(True)
            else:
                a.fill_(torch.iinfo(a.dtype).max // 3 if a.dtype.is_signed else 0xAB)


def compare(ref, got, names, has_dot: bool) -> str | None:
    """None when every tensor argument agrees, else what differs first."""
    import torch
    for i, (r, g) in enumerate(zip(ref, got)):
        if not isinstance(r, torch.Tensor):
            continue
        name = names[i] if i < len(names) else f"arg{i}"
        rtol, atol = tolerance(r.dtype, has_dot)
        if r.dtype.is_floating_point:
            rf, gf = r.double(), g.double()
            bad = ~torch.isclose(gf, rf, rtol=rtol, atol=atol, equal_nan=True)
        else:
            rf, gf = r.long() if r.dtype != torch.bool else r, g.long() if g.dtype != torch.bool else g
            bad = rf != gf
        if bad.any():
            n = int(bad.sum())
            where = tuple(int(x) for x in bad.nonzero()[0])
            detail = f"{name}: {n}/{bad.numel()} differ, first at {where}: {g[where].item()!r} vs {r[where].item()!r}"
            if r.dtype.is_floating_point:
                finite = bad & torch.isfinite(rf) & torch.isfinite(gf)
                if finite.any():
                    detail += f", max abs err {float((gf - rf).abs()[finite].max()):.3g}"
            return detail
    return None


def first_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[0][:300] if lines else type(exc).__name__


# --- worker: compile a model --------------------------------------------------------------------------
def kernel_files(cache_dir: str) -> set[str]:
    """The generated kernel files under ``cache_dir``: a top-level ``@triton.jit`` function and
    ``get_args`` (the graph's wrapper module holds the same text only inside strings)."""
    from tritium.tools.inductor import jit_functions
    out = set()
    for root, _, files in os.walk(cache_dir):
        for f in files:
            if not f.endswith(".py"):
                continue
            p = os.path.join(root, f)
            try:
                text = open(p).read()
                if "def get_args" in text and jit_functions(text):
                    out.add(p)
            except (OSError, SyntaxError, ValueError):
                continue
    return out


def compile_model(name: str, cache_dir: str) -> list[str]:
    import torch
    import torch._inductor.config as cfg
    sys.path.insert(0, HERE)
    from inductor_models import MODELS
    cfg.benchmark_kernel = True
    before = kernel_files(cache_dir)
    model, inputs, backward, options = MODELS[name]("cuda")
    torch.manual_seed(0)
    compiled = torch.compile(model, options=options or None)
    out = compiled(*inputs)
    if backward:
        outs = out if isinstance(out, (tuple, list)) else (out,)
        loss = sum(o.float().sum() for o in outs if isinstance(o, torch.Tensor) and o.requires_grad)
        loss.backward()
    torch.cuda.synchronize()
    return sorted(kernel_files(cache_dir) - before)


# --- worker: check one kernel file ----------------------------------------------------------------------
def _grid(kernel, fn, args, config):
    """Inductor's own ``(call arguments, grid)`` for ``config``."""
    if hasattr(kernel, "_interpret_args_grid"):
        return kernel._interpret_args_grid(tuple(args), config)
    from torch._inductor.runtime.triton_heuristics import GridExpr
    extra = list(kernel.inductor_meta.get("extra_launcher_args", ()))
    names = [p.name for p in fn.params if not p.is_constexpr] + extra
    grid = GridExpr.from_meta(kernel.inductor_meta, config).eval_slow(dict(zip(names, args)))
    return (tuple(args[:len(args) - len(extra)]) if extra else tuple(args)), grid


def check_file(path: str, index: int) -> dict:
    import importlib.util

    import torch

    from tritium.tools import inductor
    source = open(path).read()
    name = inductor.kernel_name(source)
    result = {"kernel": name, "file": path, "status": "error", "detail": ""}
    spec = importlib.util.spec_from_file_location(f"inductor_kernel_{index}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kernel = getattr(mod, name)

    def fresh():
        torch.manual_seed(1234)
        return list(mod.get_args())

    mod.call(fresh())  # Triton compiles and autotunes
    torch.cuda.synchronize()
    config = kernel.launchers[0].config
    result["config"] = {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}
    fn = inductor.load_kernel(path, name)
    names = [p.name for p in fn.params if not p.is_constexpr]
    has_dot = "tl.dot(" in source
    ref = fresh()
    poison(ref, names)
    mod.call(ref)
    torch.cuda.synchronize()
    got = fresh()
    poison(got, names)
    call_args, grid = _grid(kernel, fn, got, config)
    args, kwargs = inductor.launch_arguments(fn, call_args, config.kwargs, kernel.triton_meta.get("constants"))
    try:
        fn[tuple(grid)](*args, **kwargs, num_warps=config.num_warps, num_stages=config.num_stages)
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - reported per kernel
        result["detail"] = first_line(exc)
        return result
    diff = compare(ref, got, names, has_dot)
    result["status"], result["detail"] = ("mismatch", diff) if diff else ("match", "")
    return result


def worker(argv) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--files", default="")
    ap.add_argument("--cache", required=True)
    a = ap.parse_args(argv)
    files = [f for f in a.files.split(",") if f]
    if a.model:
        try:
            files = compile_model(a.model, a.cache)
        except Exception as exc:  # noqa: BLE001
            print(FILES + json.dumps({"error": first_line(exc)}), flush=True)
            return 0
        print(FILES + json.dumps({"files": files}), flush=True)
    for i, f in enumerate(files):
        print(START + f, flush=True)
        try:
            r = check_file(f, i)
        except Exception as exc:  # noqa: BLE001
            r = {"kernel": os.path.basename(f), "file": f, "status": "error", "detail": first_line(exc)}
        print(RESULT + json.dumps(r), flush=True)
    return 0


# --- the driver: no CUDA in this process -------------------------------------------------------------------
class Job:
    def __init__(self, model: str, args: list[str], env: dict, deadline: float):
        self.model, self.env, self.deadline = model, env, deadline
        self.files: list[str] | None = None
        self.done: dict[str, dict] = {}
        self.current: str | None = None
        self.results: list[dict] = []
        self.start(args)

    def start(self, args):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", *args], env=self.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run_to_end(self, cache: str) -> None:
        """Read the worker's lines; restart it after a crash on the files left."""
        while True:
            remaining = max(1.0, self.deadline - time.time())
            try:
                out, err = self.proc.communicate(timeout=remaining)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, err = self.proc.communicate()
                self._read(out)
                self._fail_current("stopped at the time budget")
                return
            self._read(out)
            if self.files is None:
                self.results.append({"kernel": "-", "model": self.model, "status": "error",
                                     "detail": f"the model did not compile: {_tail(err)}"})
                return
            if self.current is not None:
                self._fail_current(f"worker died (exit {self.proc.returncode}): {_tail(err)}")
            left = [f for f in self.files if f not in self.done]
            if not left or time.time() > self.deadline:
                for f in left:
                    self._add({"kernel": os.path.basename(f), "file": f, "status": "not run", "detail": "time budget"})
                return
            self.start(["--cache", cache, "--files", ",".join(left)])

    def _read(self, out: str) -> None:
        for line in out.splitlines():
            if line.startswith(FILES):
                info = json.loads(line[len(FILES):])
                if "error" in info:
                    self.results.append({"kernel": "-", "model": self.model, "status": "error",
                                         "detail": "the model did not compile: " + info["error"]})
                    self.files = []
                else:
                    self.files = info["files"]
            elif line.startswith(START):
                self.current = line[len(START):]
            elif line.startswith(RESULT):
                self._add(json.loads(line[len(RESULT):]))
                self.current = None

    def _add(self, r: dict) -> None:
        r["model"] = self.model
        self.done[r["file"]] = r
        self.results.append(r)

    def _fail_current(self, why: str) -> None:
        if self.current is not None and self.current not in self.done:
            self._add({"kernel": os.path.basename(self.current), "file": self.current, "status": "error", "detail": why})
        self.current = None


def _tail(err: str) -> str:
    lines = [l for l in (err or "").splitlines() if l.strip()]
    return lines[-1][:300] if lines else "(no output)"


def table(results: list[dict]) -> str:
    rows = [f"{'kernel':<48} | {'model':<20} | {'status':<8} | detail"]
    for r in results:
        rows.append(f"{r['kernel'][:48]:<48} | {r['model'][:20]:<20} | {r['status']:<8} | {r.get('detail', '')}")
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    models = sorted({r["model"] for r in results})
    rows.append(f"TOTAL {len(results)} kernels from {len(models)} models: "
                + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return "\n".join(rows)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        return worker(argv[1:])
    sys.path.insert(0, HERE)
    from inductor_models import MODELS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated, from: " + ", ".join(MODELS))
    ap.add_argument("--budget", type=float, default=540.0, help="seconds for the whole run")
    ap.add_argument("-j", "--jobs", type=int, default=4, help="models compiled and checked at once")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--keep", help="keep the generated kernels in this folder (default: a temporary one)")
    a = ap.parse_args(argv)
    t0 = time.time()
    deadline = t0 + a.budget
    work = a.keep or tempfile.mkdtemp(prefix="inductor-kernels-")
    models = [m for m in a.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        ap.error(f"unknown models {unknown}; known: {', '.join(MODELS)}")
    results: list[dict] = []
    pending = list(models)
    import threading
    threads = []
    lock = threading.Lock()

    def run_job(model: str):
        cache = os.path.join(work, model)
        os.makedirs(cache, exist_ok=True)
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, TRITIUM_CACHE_DIR=os.path.join(work, "tritium-" + model),
                   TRITIUM_BACKEND="nvidia", PYTHONUNBUFFERED="1", TORCHINDUCTOR_COMPILE_THREADS="4")
        job = Job(model, ["--cache", cache, "--model", model], env, deadline)
        job.run_to_end(cache)
        with lock:
            results.extend(job.results)
            print(f"[{time.time() - t0:6.0f}s] {model}: " + ", ".join(
                f"{sum(r['status'] == s for r in job.results)} {s}" for s in ("match", "mismatch", "error", "not run")),
                flush=True)

    while pending or threads:
        threads = [t for t in threads if t.is_alive()]
        while pending and len(threads) < a.jobs and time.time() < deadline - 30:
            t = threading.Thread(target=run_job, args=(pending.pop(0),))
            t.start()
            threads.append(t)
        if pending and time.time() >= deadline - 30:
            for m in pending:
                results.append({"kernel": "-", "model": m, "status": "not run", "detail": "time budget"})
            pending = []
        time.sleep(0.5)
    order = {m: i for i, m in enumerate(models)}
    results.sort(key=lambda r: (order.get(r["model"], 99), r["kernel"]))
    print(table(results))
    print(f"kernels under {work}; {time.time() - t0:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
