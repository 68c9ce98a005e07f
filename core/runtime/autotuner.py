"""``@autotune`` and ``@heuristics``: Triton's meta-parameter search and derivation.

Both wrap another :class:`KernelInterface` (a ``JITFunction`` or another wrapper) and forward to
its ``run``.  The autotuner benchmarks every (pruned) :class:`Config` once per distinct value of
the ``key`` arguments (plus the dtypes of array arguments) and launches the fastest from then on.
"""
from __future__ import annotations

import builtins
import contextlib
import inspect
import json
import os
import time
from typing import Any, Callable, Iterable, Sequence

from .errors import OutOfResources, PTXASError  # noqa: F401  (triton.runtime.autotuner.OutOfResources)
from .. import knobs as _knobs
from .interface import KernelInterface
from .jit import JITFunction


def _forward(fn: KernelInterface, args: tuple, kwargs: dict) -> Any:
    """``fn.run(*args, **kwargs)``; a launch (not a warm-up) of a ``@jit`` function goes through
    its launch fast path (``fn[grid](...)``, as a direct launch would: a few microseconds where
    ``run`` binds, specializes and looks up afresh), which ends in ``run`` for anything it does
    not take."""
    if type(fn) is JITFunction and not kwargs.get("warmup", False) and "grid" in kwargs:
        kwargs = dict(kwargs)
        grid = kwargs.pop("grid")
        kwargs.pop("warmup", None)
        return fn[grid](*args, **kwargs)
    return fn.run(*args, **kwargs)

# Benchmark failures that mean "this config does not fit", not "the kernel is wrong".  Matched by
# class name so that each backend may define its own without the autotuner importing it.
_UNFIT_CONFIG_ERRORS = ("OutOfResources", "CompileTimeAssertionFailure", "PTXASError")


class Config:
    """One point of the autotuning space: meta-parameters plus launch options."""

    def __init__(self, kwargs: dict, num_warps: int = 4, num_stages: int = 3, num_ctas: int = 1,
                 maxnreg: int | None = None, pre_hook: Callable | None = None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict:
        opts = (("num_warps", self.num_warps), ("num_ctas", self.num_ctas),
                ("num_stages", self.num_stages), ("maxnreg", self.maxnreg))
        return {**self.kwargs, **{k: v for k, v in opts if v is not None}}

    def _identity(self) -> tuple:
        return (tuple(sorted(self.kwargs.items())), self.num_warps, self.num_stages, self.num_ctas,
                self.maxnreg, self.pre_hook)

    def __hash__(self) -> int:
        return hash(self._identity())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self._identity() == other._identity()

    def __str__(self) -> str:
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}",
                  f"num_stages: {self.num_stages}", f"maxnreg: {self.maxnreg}"]
        return ", ".join(parts)

    __repr__ = __str__


def _device_of_arguments(nargs: dict):
    """Benchmark on the arguments' GPU: events, the cache flush and synchronisation in
    ``do_bench`` use torch's current device, which need not be the one the arguments are on."""
    for v in nargs.values():
        dev = getattr(v, "device", None)
        if getattr(dev, "type", None) == "cuda" and dev.index is not None:
            import torch
            return torch.cuda.device(dev.index)
    return contextlib.nullcontext()


def _zero(arg: Any) -> None:
    if hasattr(arg, "zero_"):
        arg.zero_()
    else:
        arg[...] = 0


def _snapshot(arg: Any) -> Any:
    return arg.clone() if hasattr(arg, "clone") else arg.copy()


def _restore(arg: Any, saved: Any) -> None:
    if hasattr(arg, "copy_"):
        arg.copy_(saved)
    else:
        arg[...] = saved


class Autotuner(KernelInterface):
    def __init__(self, fn: KernelInterface, arg_names: Sequence[str], configs: Sequence[Config],
                 key: Sequence[str], reset_to_zero: Sequence[str] | None = None,
                 restore_value: Sequence[str] | None = None, pre_hook: Callable | None = None,
                 post_hook: Callable | None = None, prune_configs_by: dict | None = None,
                 warmup: float | None = None, rep: float | None = None, use_cuda_graph: bool = False,
                 do_bench: Callable | None = None, cache_results: bool = False):
        self.fn = fn
        self.arg_names = list(arg_names)
        self.configs = list(configs) or [Config({})]
        self.keys = list(key)
        self.cache: dict[tuple, Config] = {}
        self.configs_timings: dict[Config, Any] | None = None
        self.best_config: Config | None = None
        self.bench_time = 0.0
        self.nargs: dict[str, Any] | None = None
        for label, names in (("key", self.keys), ("reset_to_zero", reset_to_zero or ()),
                             ("restore_value", restore_value or ())):
            bad = [n for n in names if n not in self.arg_names]
            if bad:
                raise ValueError(f"autotune {label} names {', '.join(bad)}, which are not parameters of "
                                 f"{self._name()} (its parameters: {', '.join(self.arg_names)})")
        self.reset_to_zero = list(reset_to_zero or ())
        self.restore_value = list(restore_value or ())
        self._restore_copies: dict[str, Any] = {}
        # As in Triton, a user hook replaces the built-in reset/restore behaviour.
        self.pre_hook = pre_hook or self._reset_and_save
        self.post_hook = post_hook or self._restore_saved
        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        prune = prune_configs_by or {}
        self.perf_model = prune.get("perf_model")
        self.configs_top_k = prune.get("top_k", 1.0)
        self.early_config_prune = prune.get("early_config_prune")
        self.warmup_ms, self.rep_ms = warmup, rep
        self.num_warmups, self.num_reps = warmup, rep
        # CUDA-graph benchmarking is not implemented; the flag is accepted for source compatibility.
        self.use_cuda_graph = use_cuda_graph
        self.do_bench = do_bench or self._default_bench
        self.cache_results = cache_results

    @property
    def base_fn(self) -> Callable:
        """The Python function under every decorator (heuristics, jit) this autotuner wraps."""
        return _base_fn(self.fn)

    def _name(self) -> str:
        return getattr(self.fn, "__name__", None) or getattr(getattr(self.fn, "fn", None), "__name__", "kernel")

    def _default_bench(self, fn: Callable, quantiles: Sequence[float]) -> Any:
        from ..testing import do_bench

        return do_bench(fn, warmup=self.warmup_ms or 25, rep=self.rep_ms or 100, quantiles=quantiles)

    # -- hooks around each benchmarked launch ---------------------------------------------------
    def _reset_and_save(self, nargs: dict, reset_only: bool = False) -> None:
        for name in self.reset_to_zero:
            _zero(nargs[name])
        if not reset_only:
            self._restore_copies = {name: _snapshot(nargs[name]) for name in self.restore_value}

    def _restore_saved(self, nargs: dict, exception: BaseException | None) -> None:
        for name, saved in self._restore_copies.items():
            _restore(nargs[name], saved)
        self._restore_copies = {}

    # -- benchmarking ---------------------------------------------------------------------------
    def _bench(self, *args: Any, config: Config, **meta: Any) -> Any:
        conflicts = sorted(meta.keys() & config.kwargs.keys())
        if conflicts:
            raise ValueError(f"{self._name()}: {', '.join(conflicts)} given at the call site but also set by "
                             "the autotune configs; do not pass autotuned parameters when launching")
        current = {**meta, **config.all_kwargs()}
        full_nargs = {**self.nargs, **current}

        def kernel_call() -> None:
            if config.pre_hook:
                config.pre_hook(full_nargs)
            self.pre_hook(full_nargs)
            try:
                self.fn.run(*args, **current)
            except Exception as exc:
                self.post_hook(full_nargs, exception=exc)
                raise
            self.post_hook(full_nargs, exception=None)

        try:
            with _device_of_arguments(full_nargs):
                return self.do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))
        except Exception as exc:
            if type(exc).__name__ in _UNFIT_CONFIG_ERRORS:
                return [float("inf")] * 3
            raise

    def _key(self, args: tuple, kwargs: dict) -> tuple:
        all_args = {**self.nargs, **kwargs}
        named = {k: v for k, v in all_args.items() if k in self.arg_names}
        key = [named[k] for k in self.keys if k in named]
        key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        return tuple(key)

    def prune_configs(self, kwargs: dict) -> list[Config]:
        pruned = self.configs
        if self.early_config_prune:
            pruned = list(self.early_config_prune(self.configs, self.nargs, **kwargs))
        if self.perf_model:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(self.configs) * top_k))
            elif not isinstance(top_k, int):
                raise TypeError(f"prune_configs_by['top_k'] must be an int or a float <= 1.0, got {top_k!r}")
            if len(pruned) > top_k:
                est = {c: self.perf_model(**self.nargs, **kwargs, **c.all_kwargs()) for c in pruned}
                pruned = sorted(est, key=est.get)[:top_k]
        return pruned

    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.nargs = dict(zip(self.arg_names, args))
        if len(self.configs) > 1:
            key = self._key(args, kwargs)
            if key not in self.cache and not self._load_disk(key):
                pruned = self.prune_configs(kwargs)
                start = time.perf_counter()
                from ..perf_report import _Progress
                progress = _Progress(len(pruned), f"autotuning {self._name()}")  # only on a terminal
                timings = {}
                for c in pruned:
                    timings[c] = self._bench(*args, config=c, **kwargs)
                    progress.step(str(c))
                progress.done()
                self.bench_time = time.perf_counter() - start
                self.cache[key] = builtins.min(timings, key=lambda c: _first(timings[c]))
                self.configs_timings = timings
                if self.pre_hook == self._reset_and_save:
                    # the benchmark runs accumulated into these outputs; the real launch starts clean
                    self._reset_and_save(self.nargs, reset_only=True)
                self._store_disk(key)
                if _knobs.autotuning.print:
                    print(f"Autotuning {self._name()} finished after {self.bench_time:.2f}s; "
                          f"best config for key {key}: {self.cache[key]}")
            config = self.cache[key]
        else:
            config = self.configs[0]
        self.best_config = config
        if config.pre_hook is not None:
            config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
        try:
            return _forward(self.fn, args, {**kwargs, **config.all_kwargs()})
        finally:
            self.nargs = None

    def warmup(self, *args: Any, **kwargs: Any) -> list:
        """Compile every (pruned) config for these arguments without benchmarking."""
        self.nargs = dict(zip(self.arg_names, args))
        try:
            return [self.fn.warmup(*args, **kwargs, **c.all_kwargs()) for c in self.prune_configs(kwargs)]
        finally:
            self.nargs = None

    # -- optional on-disk memo of tuning results (cache_results=True) ---------------------------
    def _disk_entry(self, key: tuple):
        fn_key = getattr(self.fn, "cache_key", None)
        if not (self.cache_results or _knobs.autotuning.cache) or fn_key is None:
            return None  # without a source hash a stored result could outlive an edited kernel
        from .cache import CacheManager, make_key

        return CacheManager(make_key("autotune", fn_key, repr(key), [str(c) for c in self.configs]))

    def _load_disk(self, key: tuple) -> bool:
        entry = self._disk_entry(key)
        data = entry.get_file("autotune.json") if entry else None
        if data is None:
            return False
        index = json.loads(data)["best"]
        if not 0 <= index < len(self.configs):
            return False
        self.cache[key] = self.configs[index]
        return True

    def _store_disk(self, key: tuple) -> None:
        entry = self._disk_entry(key)
        if entry is not None:
            entry.put_group({"autotune.json": json.dumps({"best": self.configs.index(self.cache[key])})})


def _first(timing: Any) -> float:
    return timing[0] if isinstance(timing, (list, tuple)) else timing


def autotune(configs: Sequence[Config], key: Sequence[str], prune_configs_by: dict | None = None,
             reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
             pre_hook: Callable | None = None, post_hook: Callable | None = None,
             warmup: float | None = None, rep: float | None = None, use_cuda_graph: bool = False,
             do_bench: Callable | None = None, cache_results: bool = False) -> Callable[[Any], Autotuner]:
    """Decorator: ``@autotune(configs=[Config({"BLOCK": 128}), ...], key=["n"])`` over ``@jit``."""

    def decorator(fn: KernelInterface) -> Autotuner:
        return Autotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench, cache_results=cache_results)

    return decorator


def _base_fn(fn: Any) -> Callable:
    seen = 0
    while not inspect.isfunction(fn) and hasattr(fn, "fn") and seen < 64:
        fn, seen = fn.fn, seen + 1
    return fn


class Heuristics(KernelInterface):
    """Computes meta-parameters from the other arguments before launching ``fn``."""

    def __init__(self, fn: KernelInterface, arg_names: Sequence[str], values: dict[str, Callable[[dict], Any]]):
        self.fn = fn
        self.arg_names = list(arg_names)
        self.values = dict(values)

    @property
    def base_fn(self) -> Callable:
        """The Python function under every decorator this wraps."""
        return _base_fn(self.fn)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        for name, rule in self.values.items():
            kwargs[name] = rule({**dict(zip(self.arg_names, args)), **kwargs})
        return _forward(self.fn, args, kwargs)


def heuristics(values: dict[str, Callable[[dict], Any]]) -> Callable[[Any], Heuristics]:
    """Decorator: ``@heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})``."""

    def decorator(fn: KernelInterface) -> Heuristics:
        return Heuristics(fn, fn.arg_names, values)

    return decorator


__all__: Iterable[str] = ["Config", "Autotuner", "Heuristics", "autotune", "heuristics"]
