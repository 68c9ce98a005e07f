"""``tritium.testing.perf_report`` / ``Benchmark``: Triton's benchmark-table helper.

``@perf_report(Benchmark(...))`` turns ``fn(**x_args, **{line_arg: line_val}, **args)`` into a
``Mark`` whose ``run(print_data=True, show_plots=False, save_path=...)`` evaluates it on the grid
of ``x_vals`` by ``line_vals``, prints a table on stdout, and (with ``save_path`` or
``show_plots``) draws one line per ``line_vals`` entry with matplotlib and saves
``<plot_name>.png`` and ``<plot_name>.csv``.  ``fn`` returns a number, or a tuple
``(value, min, max)`` whose spread is shaded.  matplotlib is optional: only plotting needs it.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Benchmark:
    x_names: list
    x_vals: list
    line_arg: str
    line_vals: list
    line_names: list
    plot_name: str
    args: dict = field(default_factory=dict)
    xlabel: str = ""
    ylabel: str = ""
    x_log: bool = False
    y_log: bool = False
    styles: Any = None


class Mark:
    def __init__(self, fn: Callable, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def _table(self, bench: Benchmark, **kwargs) -> tuple[list[str], list[list]]:
        columns = list(bench.x_names) + [f"{n}" for n in bench.line_names]
        rows, spreads = [], []
        progress = _Progress(len(bench.x_vals) * len(bench.line_vals), bench.plot_name)
        for x in bench.x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            x_args = dict(zip(bench.x_names, xs))
            row, spread = list(xs), []
            for y in bench.line_vals:
                ret = self.fn(**x_args, **{bench.line_arg: y}, **bench.args, **kwargs)
                progress.step()
                value, lo, hi = (ret + (None, None))[:3] if isinstance(ret, tuple) else (ret, None, None)
                row.append(value)
                spread.append((lo, hi))
            rows.append(row)
            spreads.append(spread)
        progress.done()
        self._spreads = spreads
        return columns, rows

    def _run(self, bench: Benchmark, save_path: str, show_plots: bool, print_data: bool, return_df: bool, **kwargs):
        columns, rows = self._table(bench, **kwargs)
        text = _format(columns, rows)
        if print_data:
            print(bench.plot_name + ":")
            print(text)
        if save_path or show_plots:
            self._plot(bench, columns, rows, save_path, show_plots)
        if save_path:
            with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w") as f:
                f.write(",".join(columns) + "\n")
                f.writelines(",".join(str(v) for v in r) + "\n" for r in rows)
        if return_df:
            try:
                import pandas as pd
            except ImportError:
                return columns, rows
            return pd.DataFrame(rows, columns=columns)
        return None

    def _plot(self, bench, columns, rows, save_path, show_plots):
        try:
            import matplotlib
            if not show_plots:
                matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("perf_report plots need matplotlib: `pip install matplotlib` "
                              "(or call run(save_path='', show_plots=False) for the table only)") from None
        fig, ax = plt.subplots()
        xs = [r[0] for r in rows]
        nx = len(bench.x_names)
        for i, name in enumerate(bench.line_names):
            ys = [r[nx + i] for r in rows]
            style = bench.styles[i] if bench.styles else None
            color, ls = (style if style else (None, "-"))
            ax.plot(xs, ys, label=name, color=color, ls=ls)
            lo = [s[i][0] for s in self._spreads]
            hi = [s[i][1] for s in self._spreads]
            if all(v is not None for v in lo + hi):
                ax.fill_between(xs, lo, hi, alpha=0.15, color=color)
        ax.legend()
        ax.set_xlabel(bench.xlabel or bench.x_names[0])
        ax.set_ylabel(bench.ylabel)
        if bench.x_log:
            ax.set_xscale("log")
        if bench.y_log:
            ax.set_yscale("log")
        if show_plots:
            plt.show()
        if save_path:
            fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
        plt.close(fig)

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "", return_df: bool = False,
            **kwargs):
        benchmarks = [self.benchmarks] if isinstance(self.benchmarks, Benchmark) else self.benchmarks
        if save_path:
            os.makedirs(save_path, exist_ok=True)
        results = [self._run(b, save_path, show_plots, print_data, return_df, **kwargs) for b in benchmarks]
        if return_df:
            return results[0] if isinstance(self.benchmarks, Benchmark) else results
        return None


def perf_report(benchmarks):
    """Decorator: ``@perf_report(Benchmark(...))`` (or a list of them) makes ``fn`` a :class:`Mark`."""
    return lambda fn: Mark(fn, benchmarks)


def _format(columns, rows) -> str:
    def cell(v):
        if isinstance(v, float):
            return f"{v:.6g}"
        return str(v)
    table = [[str(c) for c in columns]] + [[cell(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in table]
    return "\n".join([" " * len(str(len(rows))) + " " + lines[0]] +
                     [f"{i:>{len(str(len(rows)))}} {line}" for i, line in enumerate(lines[1:])])


class _Progress:
    """A one-line counter on stderr while a long run works, only when it is a terminal."""

    def __init__(self, total: int, what: str, stream=None):
        self.total, self.what, self.n = total, what, 0
        self.stream = stream if stream is not None else sys.stderr
        self.live = total > 1 and getattr(self.stream, "isatty", lambda: False)()

    def step(self, label: str = "") -> None:
        self.n += 1
        if self.live:
            self.stream.write(f"\r{self.what}: {self.n}/{self.total} {label}"[:120].ljust(40))
            self.stream.flush()

    def done(self) -> None:
        if self.live:
            self.stream.write("\r" + " " * 120 + "\r")
            self.stream.flush()
