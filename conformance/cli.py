"""``tritium conformance`` / ``python -m conformance``: run the suite on installed backends."""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import fnmatch
import multiprocessing
import os
import sys
from collections import Counter, defaultdict

from . import report
from .runner import BackendRun, Result, run_case


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tritium conformance",
                                description="Run the cross-backend conformance suite and print a matrix.")
    p.add_argument("--backend", default="all", help="'all' (default) or a backend name")
    p.add_argument("--target", help="compile for this target (e.g. cuda:90); compile-only unless it is the device's")
    p.add_argument("--compile-only", action="store_true", help="compile and check binaries even if a device is present")
    p.add_argument("-k", dest="patterns", action="append", default=[],
                   help="only cases whose id matches (fnmatch pattern or substring); repeatable")
    p.add_argument("--skip", dest="skip", action="append", default=[], metavar="PATTERN",
                   help="leave out cases whose id matches (fnmatch pattern); repeatable. The run names "
                        "how many it left out")
    p.add_argument("--category", action="append", default=[], help="only this category; repeatable")
    p.add_argument("--seed", type=int, help="input seed (default: a fresh one per run, printed in the report)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the matrix as Markdown")
    p.add_argument("-j", "--jobs", type=int, default=None,
                   help="worker processes (default: the CPUs this process may use; 1 for a selection of "
                        f"fewer than {_SMALL} cases)")
    p.add_argument("--devices", default=None,
                   help="spread the cases over these devices: 'all' or a list such as 0,1 (default: device 0); "
                        "the inputs of a group of cases are placed on one device and the launch follows them")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE:ATTR",
                   help="also load this backend plugin object, not installed (a plugin under development); "
                        "repeatable; the same as listing it in TRITIUM_PLUGINS")
    p.add_argument("--list", action="store_true", help="list the selected case ids and exit")
    return p


def _backend_names(choice: str) -> list[str]:
    from tritium.hooks import manager
    if choice != "all":
        return [choice]
    return [b.name for b in manager.list_backends()]


#: selections smaller than this run in one process by default (starting workers costs more)
_SMALL = 48


def default_jobs(n_cases: int) -> int:
    if n_cases < _SMALL:
        return 1
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class _Progress:
    """Cases done / total, the time elapsed and an estimate of the time left: a counter on a
    terminal, otherwise one line per finished category."""

    def __init__(self, backend: str, total: int, per_category: Counter):
        import time
        self.backend, self.total, self.done = backend, total, 0
        self.left = Counter(per_category)
        self.tty = sys.stderr.isatty()
        self._now = time.monotonic
        self.start = self._now()

    def status(self) -> str:
        elapsed = self._now() - self.start
        text = f"[{self.backend}] {self.done}/{self.total} cases, {_clock(elapsed)} elapsed"
        if 0 < self.done < self.total:
            text += f", about {_clock(elapsed / self.done * (self.total - self.done))} left"
        return text

    def __call__(self, res: Result) -> None:
        self.done += 1
        self.left[res.category] -= 1
        if self.tty:
            sys.stderr.write(f"\r{self.status()} {res.id[:40]:40s}")
            if self.done == self.total:
                sys.stderr.write("\n")
        elif self.left[res.category] == 0:
            sys.stderr.write(f"{self.status()} ({res.category} done)\n")
        sys.stderr.flush()


def _worker(backend: str, target: str | None, compile_only: bool, seed: int, ids: list[str],
            device: int = 0) -> list[dict]:
    from .cases import by_id
    ctx = BackendRun.open(backend, target, compile_only, device)
    cases = by_id()
    return [run_case(cases[i], ctx, seed).to_dict() for i in ids]


_CHUNK = 8


def _chunks(cases) -> list[list[str]]:
    """Cases of one kernel stay together, so that each process compiles a kernel once; a kernel
    with many cases (each usually a specialization of its own) is cut into chunks of ``_CHUNK``
    so that the workers share it, and the larger groups go first."""
    groups = defaultdict(list)
    for c in cases:
        groups[id(c.kernel)].append(c.id)
    largest_first = sorted(groups.values(), key=len, reverse=True)
    return [g[i:i + _CHUNK] for g in largest_first for i in range(0, len(g), _CHUNK)]


def parse_devices(text: str | None, backend) -> list[int]:
    """``--devices``: None -> [0]; 'all' -> every device of the backend; '0,1' -> [0, 1]."""
    if not text:
        return [0]
    if text == "all":
        count = backend.driver().device_count() if backend.device_present() else 1
        return list(range(max(count, 1)))
    try:
        devices = [int(d) for d in text.split(",") if d.strip()]
    except ValueError:
        raise ValueError(f"--devices takes 'all' or a comma-separated list of device indices, got {text!r}") from None
    return devices or [0]


def run_backend(name: str, cases, args, seed: int, progress) -> tuple[list[Result], dict]:
    ctx = BackendRun.open(name, args.target, args.compile_only)
    devices = parse_devices(getattr(args, "devices", None), ctx.backend) if ctx.mode == "run" else [0]
    info = {"mode": "run" if ctx.mode == "run" else "compile-only", "target": str(ctx.target),
            "exclusions": [{"case": e.case, "reason": e.reason} for e in ctx.exclusions]}
    if ctx.mode == "run":
        info["devices"] = devices
    results: list[Result] = []
    chunks = _chunks(cases)
    by_id = {c.id: c for c in cases}
    if args.jobs is None:
        args.jobs = default_jobs(len(cases))
    if args.jobs <= 1:
        contexts = {d: BackendRun.open(name, args.target, args.compile_only, d) for d in devices}
        for i, chunk in enumerate(chunks):
            run = contexts[devices[i % len(devices)]]
            for cid in chunk:
                results.append(run_case(by_id[cid], run, seed))
                progress(results[-1])
        order = {c.id: i for i, c in enumerate(cases)}
        results.sort(key=lambda r: order[r.id])
        return results, info
    order = {c.id: i for i, c in enumerate(cases)}
    mp = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=args.jobs, mp_context=mp) as pool:
        futures = [pool.submit(_worker, name, args.target, args.compile_only, seed, chunk, devices[i % len(devices)])
                   for i, chunk in enumerate(chunks)]
        for fut in cf.as_completed(futures):
            for d in fut.result():
                results.append(Result(**d))
                progress(results[-1])
    results.sort(key=lambda r: order[r.id])
    return results, info


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.plugin:
        # through the environment, so that the worker processes load them too
        from tritium.hooks.manager import PLUGINS_ENV, reset_plugin_manager
        os.environ[PLUGINS_ENV] = ",".join([*filter(None, os.environ.get(PLUGINS_ENV, "").split(",")), *args.plugin])
        reset_plugin_manager()
    from .cases import select
    cases = select(args.patterns, args.category)
    if args.skip:
        kept = [c for c in cases if not any(fnmatch.fnmatchcase(c.id, p) for p in args.skip)]
        print(f"left out {len(cases) - len(kept)} case(s) matching --skip {' '.join(args.skip)}", file=sys.stderr)
        cases = kept
    if args.list:
        print("\n".join(c.id for c in cases))
        return 0
    if not cases:
        print("no conformance case matches the selection", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    try:
        names = _backend_names(args.backend)
        if args.backend != "all":
            from tritium.hooks import manager
            manager.get_backend(args.backend)  # an unknown name: one line, before any case runs
    except Exception as exc:
        print(f"tritium conformance: error: --backend: {exc}" if args.backend != "all"
              else f"cannot load backends: {exc}", file=sys.stderr)
        return 2
    if not names:
        print("no Tritium backend is installed", file=sys.stderr)
        return 2
    per_cat = Counter(c.category for c in cases)
    results, runs = [], {}
    for name in names:
        try:
            res, info = run_backend(name, cases, args, seed, _Progress(name, len(cases), per_cat))
        except Exception as exc:  # a backend that cannot even be opened: every case fails
            res = [Result(c.id, name, "failed", f"backend unavailable: {exc}") for c in cases]
            info = {"mode": "unavailable", "target": "-", "exclusions": []}
        results += res
        runs[name] = info
    print(report.text(results, runs, seed))
    if args.json:
        with open(args.json, "w") as f:
            f.write(report.to_json(results, runs, seed))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report.markdown(results, runs, seed))
    return report.exit_code(results)


if __name__ == "__main__":
    sys.exit(main())
