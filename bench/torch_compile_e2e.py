"""``torch.compile`` end to end with Triton and with Tritium as Inductor's Triton, side by side.

Two worker processes, one per side, each with its own fresh ``TORCHINDUCTOR_CACHE_DIR`` (and kernel
caches): in one ``import triton`` is Triton, in the other ``tritium.install_as_triton()`` made it
Tritium (both call themselves ``triton`` in ``sys.modules``, so they cannot share a process).  Each
worker builds every model with the same seed, compiles it with ``torch.compile`` (default mode) and
compares its outputs, and for training models its gradients, with eager PyTorch.  Then the parent
times a step (forward, and backward where the model trains) in both workers alternately, A,B,B,A
per round, and prints the median of the rounds::

    python3 bench/torch_compile_e2e.py                  # every model, 3 rounds of 20 steps
    python3 bench/torch_compile_e2e.py -m mlp,lm_decode --rounds 5 --steps 50

Columns: ``match`` is whether Tritium's outputs are as close to eager as Triton's (the error of
each side is the largest ``|compiled - eager| / (atol + rtol |eager|)`` over the outputs, with
atol = rtol = 1e-4 for fp32 and 2e-2 for 16-bit types; Tritium matches when its error is at most
max(1, 2 x Triton's)); ``kernels`` the Triton kernels Inductor generated for the model.  A model
that fails on one side prints the first line of its error and the run goes on; each worker's log
(full tracebacks) is kept in the run's folder, printed at the end.  Needs a CUDA device, torch,
Triton and Tritium with its nvidia plugin.
"""
from __future__ import annotations

import argparse
import json
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

SIDES = ("triton", "tritium")


# --- the models (built in the workers) ---------------------------------------------------------------
# Each factory takes torch and returns (callable, inputs, train): ``train`` says whether a step
# runs backward too (gradients of the inputs that require them and of the module's parameters).

def m_mlp(torch, dev):
    nn = torch.nn
    m = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.SiLU(), nn.Linear(512, 256))
    return m.to(dev), (torch.randn(64, 256, device=dev, requires_grad=True),), True


def m_transformer_block(torch, dev):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d=256, heads=4):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            s = (q @ k.transpose(-1, -2)) * (d // self.heads) ** -0.5
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ v
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
    return Block().to(dev), (torch.randn(4, 64, 256, device=dev, requires_grad=True),), True


def m_layer_norm(torch, dev):
    return torch.nn.LayerNorm(1024).to(dev), (torch.randn(256, 1024, device=dev, requires_grad=True),), True


def m_group_norm(torch, dev):
    m = torch.nn.Sequential(torch.nn.GroupNorm(8, 64), torch.nn.SiLU())
    return m.to(dev), (torch.randn(8, 64, 16, 16, device=dev, requires_grad=True),), True


def m_rms_norm(torch, dev):
    class RMSNorm(torch.nn.Module):
        def __init__(self, d):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.rand(d) + 0.5)

        def forward(self, x):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * self.weight
    return RMSNorm(1024).to(dev), (torch.randn(256, 1024, device=dev, requires_grad=True),), True


def m_softmax_cross_entropy(torch, dev):
    F = torch.nn.functional
    target = torch.randint(0, 1000, (128,), device=dev)

    def f(logits):
        return F.cross_entropy(logits, target, label_smoothing=0.1) + torch.softmax(logits, -1).amax(-1).mean()
    return f, (torch.randn(128, 1000, device=dev, requires_grad=True),), True


def m_embedding_bag(torch, dev):
    class Bags(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bag = torch.nn.EmbeddingBag(5000, 128, mode="sum")
            self.out = torch.nn.Linear(128, 64)

        def forward(self, idx, offsets, scale):
            return torch.relu(self.out(self.bag(idx, offsets) * scale))
    idx = torch.randint(0, 5000, (2048,), device=dev)
    offsets = torch.arange(0, 2048, 8, device=dev)
    return Bags().to(dev), (idx, offsets, torch.rand(256, 1, device=dev, requires_grad=True)), True


def m_conv_epilogues(torch, dev):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32)
            self.c2, self.b2 = nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32)
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            h = torch.relu(self.b1(self.c1(x)))
            h = torch.relu(self.b2(self.c2(h)) + h)
            return self.head(torch.nn.functional.adaptive_avg_pool2d(h, 1).flatten(1))
    return Net().to(dev).train(), (torch.randn(16, 16, 32, 32, device=dev, requires_grad=True),), True


def m_lm_decode(torch, dev):
    """One decode step of a small language model: embedding, RMS norm, rotary attention over a KV
    cache, SwiGLU, logits, the next token's probabilities (no gradients)."""
    nn, F = torch.nn, torch.nn.functional
    vocab, d, heads, layers, cache = 2000, 256, 4, 2, 128
    hd = d // heads

    def rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    def rope(x, pos):
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, device=x.device, dtype=torch.float32) / hd))
        ang = pos[:, None, None, None].float() * inv
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * ang.cos() - x2 * ang.sin(), x1 * ang.sin() + x2 * ang.cos()), -1).flatten(-2)

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.norms = nn.Parameter(torch.rand(layers * 2 + 1, d) + 0.5)
            self.qkv = nn.ModuleList(nn.Linear(d, 3 * d, bias=False) for _ in range(layers))
            self.o = nn.ModuleList(nn.Linear(d, d, bias=False) for _ in range(layers))
            self.up = nn.ModuleList(nn.Linear(d, 2 * 512, bias=False) for _ in range(layers))
            self.down = nn.ModuleList(nn.Linear(512, d, bias=False) for _ in range(layers))
            self.out = nn.Linear(d, vocab, bias=False)

        def forward(self, token, pos, k_cache, v_cache):
            b = token.shape[0]
            x = self.emb(token)
            for i in range(layers):
                q, k, v = self.qkv[i](rms(x, self.norms[2 * i])).view(b, 1, 3, heads, hd).unbind(2)
                q, k = rope(q, pos), rope(k, pos)
                keys = torch.cat([k_cache[i], k.transpose(1, 2)], dim=2)
                values = torch.cat([v_cache[i], v.transpose(1, 2)], dim=2)
                att = torch.softmax((q.transpose(1, 2) @ keys.transpose(-1, -2)) * hd ** -0.5, dim=-1) @ values
                x = x + self.o[i](att.transpose(1, 2).reshape(b, 1, d))
                gate, up = self.up[i](rms(x, self.norms[2 * i + 1])).chunk(2, -1)
                x = x + self.down[i](F.silu(gate) * up)
            logits = self.out(rms(x, self.norms[-1])).float()
            return logits, torch.softmax(logits / 0.8, dim=-1)
    b = 8
    inputs = (torch.randint(0, vocab, (b, 1), device=dev), torch.full((b,), cache, device=dev),
              torch.randn(layers, b, heads, cache, hd, device=dev), torch.randn(layers, b, heads, cache, hd, device=dev))
    return LM().to(dev).eval(), inputs, False


def m_reductions_scan(torch, dev):
    def f(x, y):
        v, m = torch.var_mean(x, dim=1)
        return (x.cumsum(1), torch.logsumexp(x, 1), x.amax(0), v, m, (y * x[:, :64]).sum(), torch.cumprod(y.sigmoid(), 0),
                x.argmax(1).float())
    return f, (torch.randn(256, 513, device=dev), torch.randn(256, 64, device=dev)), False


MODELS = {name[2:]: fn for name, fn in list(globals().items()) if name.startswith("m_")}


# --- the worker ---------------------------------------------------------------------------------------
class _Model:
    def __init__(self, torch, name, dev):
        torch.manual_seed(0)
        self.torch = torch
        self.fn, self.inputs, self.train = MODELS[name](torch, dev)
        self.params = [p for p in getattr(self.fn, "parameters", lambda: [])() if p.requires_grad] if self.train else []
        self.grad_inputs = [x for x in self.inputs if getattr(x, "requires_grad", False)] if self.train else []
        self.compiled = None

    def outputs(self, fn) -> list:
        torch = self.torch
        if not self.train:
            with torch.no_grad():
                out = fn(*self.inputs)
            return [o for o in (out if isinstance(out, (tuple, list)) else [out])]
        out = fn(*self.inputs)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        loss = sum((o.float() * o.float()).mean() for o in outs if o.is_floating_point())
        grads = torch.autograd.grad(loss, self.grad_inputs + self.params, allow_unused=True)
        return [o.detach() for o in outs] + [g for g in grads if g is not None]


def _error(torch, got: list, ref: list) -> float:
    """Largest |got - ref| / (atol + rtol |ref|) over the floating-point outputs."""
    worst = 0.0
    if len(got) != len(ref):
        return float("inf")
    for g, r in zip(got, ref):
        if not r.is_floating_point():
            continue
        tol = 1e-4 if r.dtype in (torch.float32, torch.float64) else 2e-2
        g, r = g.double(), r.double()
        both_inf = torch.isinf(r) & (g == r)
        d = ((g - r).abs() / (tol + tol * r.abs())).masked_fill(both_inf, 0.0)
        d = torch.nan_to_num(d, nan=float("inf"))
        worst = max(worst, float(d.max()) if d.numel() else 0.0)
    return worst


def worker(side: str, dev: str) -> None:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to the log, not into the protocol
    sys.stdout = sys.stderr
    if side == "tritium":
        import tritium
        tritium.install_as_triton()
    import torch
    import triton
    import torch._inductor.config as inductor_config
    from torch._inductor import metrics
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cuda = dev == "cuda"
    if not cuda:  # Inductor's kernels for CPU tensors in Triton too (Tritium: on its interpreter)
        inductor_config.cpu_backend = "triton"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    print(f"worker {side}: triton {triton.__version__} from {getattr(triton, '__file__', '?')}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name() if cuda else 'cpu'}", flush=True)
    models: dict[str, _Model] = {}

    def reply(**kw):
        proto.write(json.dumps(kw) + "\n")

    for line in sys.stdin:
        req = json.loads(line)
        cmd, name = req["cmd"], req.get("model")
        try:
            if cmd == "quit":
                reply(ok=True)
                return
            if cmd == "setup":
                t0 = time.perf_counter()
                model = _Model(torch, name, dev)
                ref = model.outputs(model.fn)
                metrics.reset()
                model.compiled = torch.compile(model.fn)
                got = model.outputs(model.compiled)
                sync()
                models[name] = model
                reply(ok=True, err=_error(torch, got, ref), kernels=metrics.generated_kernel_count,
                      seconds=time.perf_counter() - t0)
            elif cmd == "time":
                model = models[name]
                steps = int(req["steps"])
                for _ in range(3):
                    model.outputs(model.compiled)
                sync()
                t0 = time.perf_counter()
                for _ in range(steps):
                    model.outputs(model.compiled)
                sync()
                reply(ok=True, ms=(time.perf_counter() - t0) * 1e3 / steps)
            else:
                reply(ok=False, error=f"unknown command {cmd!r}")
        except Exception as e:  # noqa: BLE001 - reported to the parent, the worker goes on
            traceback.print_exc()
            models.pop(name, None)
            try:
                sync()
                fatal = False
            except Exception:  # noqa: BLE001 - the CUDA context is gone: the parent starts a new worker
                fatal = True
            first = (str(e).strip().splitlines() or [""])[0]
            reply(ok=False, error=f"{type(e).__name__}: {first}"[:300], fatal=fatal)
        sys.stderr.flush()


# --- the parent ---------------------------------------------------------------------------------------
class Worker:
    def __init__(self, side: str, root: str, timeout: float, dev: str):
        self.side, self.root, self.timeout, self.dev = side, root, timeout, dev
        self.log_path = os.path.join(root, f"{side}.log")
        self.proc = None
        self.start()

    def start(self) -> None:
        caches = {k: os.path.join(self.root, self.side, k.lower()) for k in
                  ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TRITIUM_CACHE_DIR")}
        env = dict(os.environ, **caches, TORCHINDUCTOR_COMPILE_THREADS="1", PYTHONUNBUFFERED="1")
        for k in ("TRITON_INTERPRET", "TRITIUM_BACKEND"):
            env.pop(k, None)
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", self.side, "--device", self.dev],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)

    def send(self, **req) -> bool:
        """Send a request; False (and a new worker) when this one is gone: :meth:`receive` then
        answers with the error."""
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            self.restart()
            self._lost = {"ok": False, "error": f"worker exited; see {self.log_path}", "fatal": True}
            return False

    def receive(self) -> dict:
        lost, self._lost = getattr(self, "_lost", None), None
        if lost is not None:
            return lost
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        ready = sel.select(self.timeout)
        sel.close()
        line = self.proc.stdout.readline() if ready else ""
        if line:
            return json.loads(line)
        error = "timed out" if not ready else f"worker exited ({self.proc.wait(timeout=30)})"
        self.restart()
        return {"ok": False, "error": f"{error}; see {self.log_path}", "fatal": True}

    def ask(self, **req) -> dict:
        self.send(**req)
        out = self.receive()
        if out.get("fatal") and self.proc.poll() is None:
            self.restart()
        return out

    def restart(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:  # unflushed bytes for a worker that is gone
                pass
        self.log.close()
        self.start()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def rounds_order(rounds: int) -> list:
    """A,B,B,A then B,A,A,B ...: each side opens as often as it closes."""
    out = []
    for r in range(rounds):
        seq = list(SIDES) if r % 2 == 0 else list(reversed(SIDES))
        out.append(seq + list(reversed(seq)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", choices=SIDES, help=argparse.SUPPRESS)
    ap.add_argument("-m", "--models", default=",".join(MODELS), help="comma-separated, of: " + ", ".join(MODELS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20, help="steps per timed slot")
    ap.add_argument("--timeout", type=float, default=240, help="seconds one worker request may take")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: Inductor's cpu_backend='triton' (Tritium runs it on its interpreter; small models only)")
    ap.add_argument("--budget", type=float, default=300,
                    help="seconds after which no further model is compiled (those compiled are still timed)")
    ap.add_argument("--keep", metavar="DIR", help="put the caches and logs here (default: a fresh temporary folder)")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.device)
        return
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    root = args.keep or tempfile.mkdtemp(prefix="torch_compile_e2e.")
    os.makedirs(root, exist_ok=True)
    t_start = time.perf_counter()
    workers = {s: Worker(s, root, args.timeout, args.device) for s in SIDES}
    setup: dict = {s: {} for s in SIDES}
    try:
        for name in names:  # both sides compile at once; timing comes after, one side at a time
            if time.perf_counter() - t_start > args.budget:
                for s in SIDES:
                    setup[s][name] = {"ok": False, "error": f"not compiled: past the {args.budget:.0f}s budget"}
                print(f"[setup] {name}: skipped, past the {args.budget:.0f}s budget", flush=True)
                continue
            for s in SIDES:
                workers[s].send(cmd="setup", model=name)
            for s in SIDES:
                setup[s][name] = workers[s].receive()
            line = "  ".join(f"{s}: " + (f"{r['seconds']:.1f}s, {r['kernels']} kernels" if r["ok"] else r["error"])
                             for s, r in ((s, setup[s][name]) for s in SIDES))
            print(f"[setup] {name}: {line}", flush=True)
            for s in SIDES:
                if setup[s][name].get("fatal"):  # the restarted worker lost its models: set them up again
                    for prev in names[:names.index(name)]:
                        if setup[s][prev]["ok"]:
                            setup[s][prev] = workers[s].ask(cmd="setup", model=prev)
        times: dict = {s: {n: [] for n in names} for s in SIDES}
        for r, order in enumerate(rounds_order(args.rounds)):
            for name in names:
                slots = {s: [] for s in SIDES}
                for s in order:
                    if setup[s][name]["ok"]:
                        out = workers[s].ask(cmd="time", model=name, steps=args.steps)
                        if out["ok"]:
                            slots[s].append(out["ms"])
                        else:
                            setup[s][name] = out
                for s in SIDES:
                    if slots[s]:
                        times[s][name].append(statistics.median(slots[s]))
            print(f"[round {r + 1}/{args.rounds}] {time.perf_counter() - t_start:.0f}s", flush=True)
    finally:
        for w in workers.values():
            w.close()
    header = f"{'model':<22} {'match':<6} {'err Triton':>10} {'err Tritium':>11} {'kernels':>8} " \
             f"{'Triton ms/step':>15} {'Tritium ms/step':>16} {'ratio':>6}"
    print("\n" + header + "\n" + "-" * len(header))
    ratios, matched = [], 0
    for name in names:
        a, b = setup["triton"][name], setup["tritium"][name]
        ta = statistics.median(times["triton"][name]) if times["triton"][name] else None
        tb = statistics.median(times["tritium"][name]) if times["tritium"][name] else None
        if a["ok"] and b["ok"]:
            ok = b["err"] <= max(1.0, 2.0 * a["err"])
            matched += ok
            match = "yes" if ok else "NO"
        else:
            match = "-" if not b["ok"] else "?"
        ratio = tb / ta if ta and tb else None
        if ratio:
            ratios.append(ratio)
        fmt = lambda v, spec: format(v, spec) if v is not None else "-"  # noqa: E731
        print(f"{name:<22} {match:<6} {fmt(a.get('err'), '10.3g'):>10} {fmt(b.get('err'), '11.3g'):>11} "
              f"{fmt(b.get('kernels', a.get('kernels')), 'd'):>8} {fmt(ta, '15.3f'):>15} {fmt(tb, '16.3f'):>16} "
              f"{fmt(ratio, '6.2f'):>6}")
        for s, r in (("Triton", a), ("Tritium", b)):
            if not r["ok"]:
                print(f"    {s} failed: {r['error']}")
    geo = (statistics.geometric_mean(ratios) if ratios else float("nan"))
    print(f"\n{matched}/{len(names)} models match; geometric mean ratio Tritium/Triton {geo:.2f} "
          f"({args.rounds} rounds x {args.steps} steps, A,B,B,A); {time.perf_counter() - t_start:.0f}s in all")
    print(f"caches and worker logs: {root}")


if __name__ == "__main__":
    main()
