"""Runs cases on one backend: makes fresh inputs, poisons outputs, launches or compiles, checks.

A backend whose device is present *runs* each case and compares its outputs with the case's
reference; one whose device is absent (or asked for another target) *compiles* each case to its
final binary and hands it to ``Driver.check_binary``.  Error cases must raise
``tritium.CompilationError`` in both modes.
"""
from __future__ import annotations

import fnmatch
import inspect
import time
import traceback
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import dtypes
from .case import Case, CopyOf, Out

PASSED, COMPILED, FAILED, EXCLUDED, XPASS = "passed", "compiled", "failed", "excluded", "unexpected-pass"
#: statuses that make a run exit non-zero
BAD = (FAILED, XPASS)


@dataclass
class Result:
    id: str
    backend: str
    status: str
    message: str = ""
    seconds: float = 0.0
    reason: str = ""  # the exclusion's reason, when excluded
    device: int | None = None  # the device its inputs were placed on (run mode)
    #: compile mode: a short sha256 of each stage's text or binary and the launch metadata that
    #: shapes code (shared bytes, warps), so two runs show whether a change altered any kernel
    digest: dict | None = None

    @property
    def category(self) -> str:
        return self.id.split("/", 1)[0]

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class BackendRun:
    """One backend as the runner uses it: the contract's InstalledBackend object and what was chosen."""

    name: str
    backend: object
    target: object
    mode: str  # "run" or "compile"
    exclusions: list = field(default_factory=list)
    device: int = 0  # where inputs are placed in run mode; the launch follows them

    @classmethod
    def open(cls, name: str, target_text: str | None = None, compile_only: bool = False,
             device: int = 0) -> "BackendRun":
        from tritium.hooks import manager
        backend = manager.get_backend(name)
        present = bool(backend.device_present())
        target = backend.parse_target(target_text) if target_text else backend.default_target()
        native = present and (not target_text or str(target) == str(backend.default_target()))
        mode = "run" if native and not compile_only else "compile"
        excl = [e for e in (backend.conformance_exclusions(target) or [])
                if not getattr(e, "targets", ()) or str(target) in e.targets]
        return cls(name, backend, target, mode, excl, device)

    def exclusion(self, case_id: str) -> str | None:
        for e in self.exclusions:
            if e.case == case_id or fnmatch.fnmatchcase(case_id, e.case):
                return e.reason or "excluded by the backend"
        return None


def case_seed(seed: int, case_id: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(case_id.encode())])


def param_names(kernel) -> list[str]:
    if hasattr(kernel, "arg_names") and not hasattr(kernel, "fn"):  # an IRKernel
        return list(kernel.arg_names)
    fn = kernel
    while hasattr(fn, "fn"):
        fn = fn.fn
    return list(inspect.signature(fn).parameters)


@dataclass
class Prepared:
    host: dict      # name -> storage array (inputs and outputs) or Python scalar
    ref_args: dict  # name -> exact values handed to the reference
    out_start: dict  # output name -> its storage before launch (poison or init)


def prepare(case: Case, rng: np.random.Generator) -> Prepared:
    host, ref_args, out_start = {}, {}, {}
    copies = {}
    for name, spec in case.inputs.items():
        if isinstance(spec, CopyOf):
            copies[name] = spec
        elif hasattr(spec, "values"):
            v = spec.values(rng)
            if isinstance(v, np.ndarray):
                host[name] = dtypes.encode(v, spec.dtype)
                ref_args[name] = dtypes.decode(host[name], spec.dtype)
            else:
                host[name] = ref_args[name] = v
        else:  # a fixed Python value
            host[name] = ref_args[name] = spec
    for name, out in case.outputs.items():
        if out.init is not None:
            host[name] = dtypes.encode(out.init.values(rng), out.dtype)
            ref_args[name] = dtypes.decode(host[name], out.dtype)
        else:
            host[name] = dtypes.poison(out.dtype, out.shape, out.poison)
        out_start[name] = host[name].copy()
    for name, spec in copies.items():
        host[name] = host[spec.name].copy()
        ref_args[name] = dtypes.decode(host[name], spec.dtype)
    return Prepared(host, ref_args, out_start)


def _arg_tags(case: Case) -> dict:
    tags = {n: s.dtype for n, s in case.inputs.items() if hasattr(s, "dtype") and hasattr(s, "shape")}
    tags.update({n: o.dtype for n, o in case.outputs.items()})
    return tags


def _as_kernel_arg(arr, tag):
    """bf16 and fp8 buffers hold raw bits: the kernel sees them through ``tritium.reinterpret``."""
    if tag not in dtypes.RAW_BITS:
        return arr
    import tritium
    import tritium.language as tl
    return tritium.reinterpret(arr, getattr(tl, dtypes.LANG_NAME[tag]))


def bind(case: Case, values: dict) -> tuple[list, dict]:
    """Positional arguments in the kernel's order while they are known, the rest by keyword."""
    given = dict(values)
    given.update(case.constexprs)
    args, kwargs = [], {}
    for p in param_names(case.kernel):
        if p in given and not kwargs:
            args.append(given.pop(p))
        elif p in given:
            kwargs[p] = given.pop(p)
        else:
            kwargs["__gap__"] = None  # a parameter left to its default: the rest go by keyword
    kwargs.pop("__gap__", None)
    kwargs.update(case.options)
    return args, kwargs


def launch(kernel, grid, args, kwargs, backend: str):
    return kernel[grid](*args, backend=backend, **kwargs)


def compile_only(kernel, grid, args, kwargs, backend: str, target: str):
    return kernel.warmup(*args, grid=grid, backend=backend, target=target, **kwargs)


def _expected(case: Case, prep: Prepared) -> dict:
    ref = case.reference
    params = inspect.signature(ref).parameters
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        got = ref(**prep.ref_args)
    else:
        got = ref(**{k: v for k, v in prep.ref_args.items() if k in params})
    names = list(case.outputs)
    if isinstance(got, dict):
        return got
    if isinstance(got, tuple) and len(names) > 1:
        return dict(zip(names, got))
    return {names[0]: got}


def compare(name: str, out: Out, actual: np.ndarray, expected, start: np.ndarray, case: Case) -> str | None:
    actual = np.asarray(actual).reshape(out.shape)
    shown = dtypes.decode(actual, out.dtype)
    if dtypes.is_float(out.dtype):
        exp = np.broadcast_to(np.asarray(expected, dtype=np.float64), out.shape)
        rtol, atol = case.tolerance(out.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            ok = np.isclose(shown, exp, rtol=rtol, atol=atol, equal_nan=True)
        how = f" (rtol={rtol:g}, atol={atol:g})"
    else:
        exp_arr = np.asarray(expected)
        if exp_arr.dtype.kind == "f":
            return f"{name}: the reference returned floats for a {out.dtype} output"
        exp = np.broadcast_to(exp_arr.astype(dtypes.STORAGE[out.dtype]), out.shape)
        ok = shown == exp
        how = ""
    if ok.all():
        return None
    bad = np.argwhere(~ok)
    first = tuple(int(i) for i in bad[0])
    # byte views need at least one dimension (numpy refuses to re-type a 0-d array's bytes)
    same = (np.atleast_1d(actual).view(np.uint8).reshape(*out.shape, -1) ==
            np.atleast_1d(start).view(np.uint8).reshape(*out.shape, -1)).all(axis=-1)
    unwritten = int(np.sum(same & ~ok))
    note = f"; {unwritten} of them still hold the pre-launch value (unwritten?)" if unwritten else ""
    return (f"{name}: {len(bad)}/{ok.size} elements differ{how}{note}; first at {first}: "
            f"got {shown[first]!r}, expected {exp[first]!r}")


def full_message(exc: BaseException) -> str:
    """The error's text followed by the text of the exceptions it was raised from: what a kernel
    author reads in the traceback."""
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        parts.append(str(exc))
        exc = exc.__cause__
    return "\n".join(parts)


def _error_message(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 1500 else text[:1500] + " ..."


def run_case(case: Case, ctx: BackendRun, seed: int) -> Result:
    start = time.perf_counter()
    status, message, *digest = _run(case, ctx, seed)
    res = Result(case.id, ctx.name, status, message, time.perf_counter() - start,
                 device=ctx.device if ctx.mode == "run" else None, digest=digest[0] if digest else None)
    reason = ctx.exclusion(case.id)
    if reason is not None:
        res.reason = reason
        if status in (PASSED, COMPILED):
            res.status, res.message = XPASS, f"excluded ({reason}) but {status}"
        else:
            res.status = EXCLUDED
    return res


def _run(case: Case, ctx: BackendRun, seed: int) -> tuple[str, str]:
    import tritium
    try:
        prep = prepare(case, case_seed(seed, case.id))
        driver = ctx.backend.driver()
        tags = _arg_tags(case)
        on_device = ctx.mode == "run"
        raw = {n: (driver.from_numpy(v, device=ctx.device) if on_device else v)
               for n, v in prep.host.items() if n in tags}
        dev = {n: (_as_kernel_arg(raw[n], tags[n]) if n in tags else v) for n, v in prep.host.items()}
        args, kwargs = bind(case, dev)
    except Exception as exc:  # the suite's own setup failed: report, don't crash the run
        return FAILED, "setting up the case: " + _error_message(exc)
    printed = None
    try:
        if on_device and case.stdout is not None:
            with CapturedStdout() as cap:
                compiled = launch(case.kernel, case.grid, args, kwargs, ctx.name)
                driver.synchronize()
            printed = cap.text
        elif on_device:
            compiled = launch(case.kernel, case.grid, args, kwargs, ctx.name)
        else:
            compiled = compile_only(case.kernel, case.grid, args, kwargs, ctx.name, str(ctx.target))
    except tritium.CompilationError as exc:
        if case.expect_error is None:
            return FAILED, _error_message(exc)
        bad = case.expect_error.mismatch(full_message(exc), exc)
        return (FAILED, f"{bad}: {_error_message(exc)}") if bad else (PASSED, "")
    except Exception as exc:
        kind = "expected CompilationError, got " if case.expect_error else ""
        return FAILED, kind + _error_message(exc) + _where(exc)
    if case.expect_error is not None:
        return FAILED, "the kernel was accepted but must be rejected: " + repr(case.expect_error.fragments)
    if not on_device:
        return _check_compiled(compiled, ctx, driver)
    if printed is not None:
        try:
            bad = case.stdout(printed, prep.ref_args)
        except Exception as exc:
            return FAILED, "checking the printed text: " + _error_message(exc) + _where(exc)
        if bad:
            return FAILED, "printed text: " + bad
    return _check_outputs(case, ctx, driver, prep, raw)


class CapturedStdout:
    """What is written to standard output inside the block, by Python (``sys.stdout``) and by
    native code or the device runtime (file descriptor 1, after a C-level flush)."""

    def __enter__(self):
        import contextlib
        import io
        import os
        import sys
        import tempfile
        sys.stdout.flush()
        self._libc_flush()
        self._file = tempfile.TemporaryFile()
        self._saved = os.dup(1)
        os.dup2(self._file.fileno(), 1)
        self._py = io.StringIO()
        self._redirect = contextlib.redirect_stdout(self._py)
        self._redirect.__enter__()
        return self

    def __exit__(self, *exc):
        import os
        self._redirect.__exit__(*exc)
        self._libc_flush()
        os.dup2(self._saved, 1)
        os.close(self._saved)
        self._file.seek(0)
        native = self._file.read().decode(errors="replace")
        self._file.close()
        self.text = self._py.getvalue() + native
        return False

    @staticmethod
    def _libc_flush():
        import ctypes
        try:
            ctypes.CDLL(None).fflush(None)
        except (OSError, AttributeError):
            pass


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    return f" [at {tb[-1].filename}:{tb[-1].lineno}]" if tb else ""


#: the checkout the cases are read from: IR text names their files (``loc("...")``), so digests
#: drop this prefix to compare runs from two checkouts
_CASES_ROOT = str(Path(__file__).resolve().parents[1])


def digest_of(kernels) -> dict:
    """A short sha256 of every stage each compiled kernel kept (source paths relative to the
    checkout), and its shared-memory size and warp count: equal digests mean the same code."""
    import hashlib
    out = {}
    for i, ck in enumerate(kernels):
        pre = f"{i}." if len(kernels) > 1 else ""
        for stage in sorted(ck.asm):
            data = ck.asm[stage]
            data = data.replace(_CASES_ROOT, "<checkout>").encode() if isinstance(data, str) else bytes(data)
            out[pre + stage] = hashlib.sha256(data).hexdigest()[:16]
        meta = ck.metadata
        for key in ("shared", "num_warps"):
            val = meta.get(key) if isinstance(meta, dict) else getattr(meta, key, None)
            if val is not None:
                out[pre + key] = val
    return out


def _check_compiled(compiled, ctx: BackendRun, driver) -> tuple:
    ext = ctx.backend.info.binary_ext
    kernels = list(compiled) if isinstance(compiled, (list, tuple)) else [compiled]
    for ck in kernels:
        binary = ck.asm.get(ext) if hasattr(ck.asm, "get") else ck.asm[ext]
        if not binary:
            return FAILED, f"no '{ext}' stage in the compiled kernel (stages: {sorted(ck.asm)})"
        try:
            driver.check_binary(binary, ck.metadata)
        except Exception as exc:
            return FAILED, "check_binary: " + _error_message(exc)
    return COMPILED, "", digest_of(kernels)


def _check_outputs(case: Case, ctx: BackendRun, driver, prep: Prepared, raw: dict) -> tuple[str, str]:
    try:
        driver.synchronize()
        actual = {}
        for name in case.outputs:
            arr = driver.to_numpy(raw[name])
            actual[name] = np.asarray(arr).view(dtypes.STORAGE[case.outputs[name].dtype])
        if case.check is not None:
            decoded = {n: dtypes.decode(a, case.outputs[n].dtype) for n, a in actual.items()}
            bad = case.check(decoded, prep.ref_args)
            if bad:
                return FAILED, bad
        if case.reference is not None:
            expected = _expected(case, prep)
            problems = [p for n, o in case.outputs.items()
                        if n in expected and (p := compare(n, o, actual[n], expected[n], prep.out_start[n], case))]
            if problems:
                return FAILED, "; ".join(problems)
    except Exception as exc:
        return FAILED, "checking outputs: " + _error_message(exc) + _where(exc)
    return PASSED, ""
