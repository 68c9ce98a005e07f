"""The conformance matrix (category x backend), the failure list, JSON and Markdown output."""
from __future__ import annotations

import json
from collections import Counter, defaultdict

from .runner import BAD, COMPILED, EXCLUDED, FAILED, PASSED, XPASS

ORDER = (PASSED, COMPILED, EXCLUDED, FAILED, XPASS)


def _matrix(results) -> tuple[list, list, dict]:
    cats, backends = [], []
    cells: dict = defaultdict(Counter)
    for r in results:
        if r.category not in cats:
            cats.append(r.category)
        if r.backend not in backends:
            backends.append(r.backend)
        cells[(r.category, r.backend)][r.status] += 1
    return cats, backends, cells


def _cell(counter: Counter) -> str:
    return ", ".join(f"{counter[s]} {s}" for s in ORDER if counter[s]) or "-"


def _totals(results, backends) -> dict:
    return {b: Counter(r.status for r in results if r.backend == b) for b in backends}


def text(results, runs: dict, seed: int) -> str:
    cats, backends, cells = _matrix(results)
    header = ["category"] + [f"{b} ({runs[b]['mode']}, {runs[b]['target']})" for b in backends]
    rows = [[c] + [_cell(cells[(c, b)]) for b in backends] for c in cats]
    rows.append(["TOTAL"] + [_cell(t) for t in _totals(results, backends).values()])
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip()
    out = [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]
    bad = [r for r in results if r.status in BAD]
    if bad:
        out += ["", f"{len(bad)} problem(s):"]
        out += [f"  [{r.backend}] {r.id}{'' if r.device is None else f' (device {r.device})'}: {r.status}: "
                f"{r.message}" for r in bad]
    spread = {b: runs[b]["devices"] for b in backends if len(runs[b].get("devices", ())) > 1}
    for b, devices in spread.items():
        counts = {d: sum(1 for r in results if r.backend == b and r.device == d) for d in devices}
        out += ["", f"{b}: cases spread over devices " + ", ".join(f"{d} ({n})" for d, n in counts.items())]
    excluded = [r for r in results if r.status == EXCLUDED]
    if excluded:
        out += ["", f"{len(excluded)} excluded:"]
        out += [f"  [{r.backend}] {r.id}: {r.reason}" for r in excluded]
    out += ["", f"seed {seed} (rerun with --seed {seed}); "
            "'compiled' means built to the final binary and checked without a device, not run"]
    return "\n".join(out)


def markdown(results, runs: dict, seed: int) -> str:
    cats, backends, cells = _matrix(results)
    out = ["# Tritium conformance", "",
           "| category | " + " | ".join(f"{b} ({runs[b]['mode']}, `{runs[b]['target']}`)" for b in backends) + " |",
           "|---|" + "---|" * len(backends)]
    out += [f"| {c} | " + " | ".join(_cell(cells[(c, b)]) for b in backends) + " |" for c in cats]
    out.append("| **total** | " + " | ".join(_cell(t) for t in _totals(results, backends).values()) + " |")
    bad = [r for r in results if r.status in BAD]
    if bad:
        out += ["", "## Problems", ""]
        out += [f"- **{r.backend}** `{r.id}` ({r.status}): {r.message.splitlines()[0] if r.message else ''}"
                for r in bad]
    excluded = [r for r in results if r.status == EXCLUDED]
    if excluded:
        out += ["", "## Excluded", ""] + [f"- **{r.backend}** `{r.id}`: {r.reason}" for r in excluded]
    out += ["", f"Seed: `{seed}`. *compiled*: built to the final binary and checked without a device."]
    return "\n".join(out) + "\n"


def to_json(results, runs: dict, seed: int) -> str:
    return json.dumps({
        "seed": seed,
        "backends": runs,
        "summary": {b: dict(t) for b, t in _totals(results, list(runs)).items()},
        "results": [r.to_dict() for r in results],
    }, indent=1)


def exit_code(results) -> int:
    return 1 if any(r.status in BAD for r in results) else 0


__all__ = ["text", "markdown", "to_json", "exit_code", "FAILED", "XPASS"]
