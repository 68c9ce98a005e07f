"""The ``tritium`` command: list backends, compile a kernel ahead of time, run examples and the
conformance suite.

Exit status: 0 success, 1 the kernel failed to compile (the message quotes its source), 2 the
command line or the named file/kernel is wrong (one line on stderr, no traceback).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any, Sequence
from .runtime.autotuner import Autotuner, Heuristics
from .runtime.interface import KernelInterface
from .hooks.manager import parse_target, TritiumPluginWarning, failed_plugins, list_backends
from .hooks import manager
from .hooks.hookspecs import PLUGIN_API_VERSION

_SCALAR_TYPES = ("i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64",
                 "fp8e4nv", "fp8e4b15", "fp8e4b8", "fp8e5", "fp8e5b16",
                 "fp16", "bf16", "fp32", "fp64")

#: common spellings of the signature's types (torch/numpy names) -> the type they mean
_TYPE_ALIASES = {"int1": "i1", "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int": "i32",
                 "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
                 "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32",
                 "float64": "fp64", "double": "fp64", "f16": "fp16", "f32": "fp32", "f64": "fp64"}

SIGNATURE_HELP = """\
Comma-separated entries, one per kernel parameter that needs one, in the order of the kernel's
parameters.  An entry is either a type -- a scalar (i1 i8 i16 i32 i64 u8 u16 u32 u64 fp16 bf16
fp32 fp64 fp8e4nv fp8e5 ...) or a pointer to one ('*fp32') -- or a constant (16, 0.5, True,
None; any other word is a string, accepted only for a tl.constexpr parameter).
Two layouts are accepted:
  * one entry per parameter that is neither tl.constexpr nor given with --constexpr
    (e.g. '*fp32,*fp32,*fp32,i32' for add_kernel(x, y, out, n, BLOCK: tl.constexpr)
    with --constexpr BLOCK=1024);
  * one entry per parameter, all of them, as in Triton's AOT compiler, where constexpr
    parameters take a constant ('*fp32,*fp32,*fp32,i32,1024').
A constant given to a non-constexpr parameter specializes the kernel on that value.
"""


class UsageError(Exception):
    """A mistake on the command line or in the named file; printed as one line, exit 2."""


def parse_constant(text: str) -> Any:
    """``16`` -> int, ``0.5`` -> float, ``True``/``False`` -> bool, ``None`` -> None, else str."""
    low = text.strip()
    if low in ("True", "true"):
        return True
    if low in ("False", "false"):
        return False
    if low in ("None", "none"):
        return None
    for conv in (int, float):
        try:
            return conv(low, 0) if conv is int else conv(low)
        except ValueError:
            pass
    return low


def is_type(entry: str) -> bool:
    entry = entry.strip()
    return entry.lstrip("*") in _SCALAR_TYPES and entry.count("*") <= 1


def _constexpr_params(fn: Any) -> set[str]:
    """Names of the ``tl.constexpr`` parameters of a JIT function."""
    params = getattr(fn, "params", None)
    if params and all(hasattr(p, "is_constexpr") for p in params):
        return {p.name for p in params if p.is_constexpr}
    names: set[str] = set()
    for name, param in _py_signature(fn).items():
        ann = param.annotation
        ann_name = ann if isinstance(ann, str) else getattr(ann, "__name__", "")
        if str(ann_name).split(".")[-1] == "constexpr":
            names.add(name)
    return names


def _py_signature(fn: Any) -> dict[str, inspect.Parameter]:
    target = getattr(fn, "fn", fn)
    try:
        return dict(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return {}


def map_signature(fn: Any, signature: str, constexprs: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """Split ``--signature`` into (name -> type, name -> constant) for ``fn``; see SIGNATURE_HELP."""
    arg_names = list(fn.arg_names)
    unknown = [n for n in constexprs if n not in arg_names]
    if unknown:
        raise UsageError(f"--constexpr names {', '.join(unknown)} are not parameters of the kernel "
                         f"(its parameters: {', '.join(arg_names)})")
    entries = [e.strip() for e in signature.split(",")] if signature.strip() else []
    if any(not e for e in entries):
        raise UsageError(f"--signature has an empty entry: {signature!r}")
    cexpr = _constexpr_params(fn)
    runtime = [n for n in arg_names if n not in cexpr and n not in constexprs]
    if len(entries) == len(runtime):
        names = runtime
    elif len(entries) == len(arg_names):
        names = arg_names
    else:
        raise UsageError(f"--signature has {len(entries)} entries; expected {len(runtime)} (one per "
                         f"parameter {', '.join(runtime) or '(none)'}) or {len(arg_names)} (one per parameter)")
    types: dict[str, str] = {}
    consts = dict(constexprs)
    for name, entry in zip(names, entries):
        if ":" in entry:
            raise UsageError(f"signature entry {entry!r} for {name}: specialization hints ('*fp32:16') "
                             "are not supported; Tritium specializes from the values at launch")
        if is_type(entry):
            if name in cexpr:
                raise UsageError(f"parameter {name} is tl.constexpr and needs a constant, got the type {entry!r}")
            types[name] = entry
        elif entry.startswith("*"):
            raise UsageError(f"signature entry {entry!r} for {name}: unknown pointee type "
                             f"(expected one of {', '.join(_SCALAR_TYPES)})")
        else:
            value = parse_constant(entry)
            if isinstance(value, str) and name not in cexpr and name not in constexprs:
                # a word for a run-time parameter is a mistyped type far more often than a string
                hint = _TYPE_ALIASES.get(entry.lower().lstrip("*"))
                hint = f" (did you mean {('*' if entry.startswith('*') else '') + hint!r}?)" if hint else ""
                raise UsageError(f"signature entry {entry!r} for {name} is not a type{hint}: expected one of "
                                 f"{', '.join(_SCALAR_TYPES)}, a pointer to one ('*fp32'), or a number "
                                 f"(a string constant only for a tl.constexpr parameter)")
            consts[name] = value
    defaults = _py_signature(fn)
    missing = [n for n in sorted(cexpr) if n not in consts
               and (n not in defaults or defaults[n].default is inspect.Parameter.empty)]
    if missing:
        raise UsageError(f"constexpr parameter(s) {', '.join(missing)} have no value; "
                         f"pass --constexpr {missing[0]}=VALUE")
    return types, consts


def load_kernel(spec: str) -> tuple[Any, str]:
    """Import ``FILE:KERNEL`` and return the JIT function (unwrapping autotune/heuristics)."""
    path_text, sep, kernel = spec.rpartition(":")
    if not sep and Path(spec).suffix == ".py" and Path(spec).is_file():
        names = _jit_names(spec)
        raise UsageError(f"expected FILE:KERNEL, got {spec!r}: name the kernel, "
                         + (f"e.g. {spec}:{names[0]} ({spec} defines {', '.join(names)})" if names
                            else f"but {spec} defines no @jit function"))
    if not sep or not path_text or not kernel:
        raise UsageError(f"expected FILE:KERNEL (e.g. kernels.py:add_kernel), got {spec!r}")
    path = Path(path_text)
    if not path.is_file():
        raise UsageError(f"file not found: {path_text}")
    sys.path.insert(0, str(path.resolve().parent))
    mod_name = f"_tritium_cli_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(mod_name, path)
    if module_spec is None or module_spec.loader is None:
        raise UsageError(f"cannot import {path_text}: not a Python source file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[mod_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        where = _where(exc, path)
        raise UsageError(f"importing {path_text} failed{where}: {type(exc).__name__}: {exc}") from None
    if not hasattr(module, kernel):
        names = [n for n, v in vars(module).items() if _is_kernel(v)]
        raise UsageError(f"{path_text} has no kernel {kernel!r} ("
                         + (f"its @jit functions: {', '.join(names)})" if names else "it defines no @jit function)"))
    fn = getattr(module, kernel)

    while isinstance(fn, (Autotuner, Heuristics)):
        fn = fn.fn

    if not isinstance(fn, KernelInterface) or not hasattr(fn, "arg_names"):
        raise UsageError(f"{path_text}:{kernel} is not a @tritium.jit function "
                         f"(found {type(fn).__name__})")
    return fn, kernel


def _is_kernel(v: Any) -> bool:
    return isinstance(v, KernelInterface)


def _jit_names(path_text: str) -> list[str]:
    """The @jit functions (and autotuned kernels) of a Python file, by name."""
    try:
        fn, _ = load_kernel(f"{path_text}:__tritium_no_such_kernel__")
    except UsageError as exc:
        m = str(exc)
        if "its @jit functions: " in m:
            return m.split("its @jit functions: ", 1)[1].rstrip(")").split(", ")
        if "defines no @jit function" in m:
            return []
        raise
    return []


def _where(exc: BaseException, path: Path) -> str:
    if isinstance(exc, SyntaxError) and exc.lineno:
        return f" at line {exc.lineno}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == path.resolve()]
    return f" at line {frames[-1].lineno}" if frames else ""


def _is_compilation_error(exc: BaseException) -> bool:
    # Matched by name so the CLI need not import the frontend to recognise its error class.
    return any(cls.__name__ == "CompilationError" for cls in type(exc).__mro__)


def cmd_compile(ns: argparse.Namespace) -> int:
    from .compiler.source import EXTENSIONS
    ir_file = Path(ns.kernel).suffix[1:] in EXTENSIONS
    if ir_file:
        if not Path(ns.kernel).is_file():
            raise UsageError(f"no IR file {ns.kernel!r}")
        fn, kernel, signature, consts = ns.kernel, Path(ns.kernel).stem, None, None
    else:
        fn, kernel = load_kernel(ns.kernel)
        if ns.signature is None:
            raise UsageError(f"compiling a Python kernel needs --signature: one type per parameter of {kernel} "
                             f"({', '.join(fn.arg_names)}), e.g. -s '*fp32,i32' (see tritium compile -h)")
        constexprs: dict[str, Any] = {}
        for item in ns.constexpr or ():
            name, sep, value = item.partition("=")
            if not sep or not name.strip():
                raise UsageError(f"--constexpr expects NAME=VALUE, got {item!r}")
            constexprs[name.strip()] = parse_constant(value)
        signature, consts = map_signature(fn, ns.signature, constexprs)
    target = None
    if ns.target:

        try:
            target = parse_target(ns.target)
        except ValueError as exc:
            raise UsageError(f"--target: {exc}") from None
    options = {k: v for k, v in (("num_warps", ns.num_warps), ("num_stages", ns.num_stages)) if v is not None}
    try:
        compiler = importlib.import_module("tritium.compiler")
    except ImportError as exc:
        raise UsageError(f"the compiler is not available in this installation ({exc})") from None
    if ns.stage is not None:
        _check_stage(ns.stage, target, ns.kernel if ir_file else None)
    try:
        if ir_file:  # the signature and options come from the IR itself
            compiled = compiler.compile(fn, target=target, stage=ns.stage, options=options)
        else:
            compiled = compiler.compile(fn, signature=signature, constexprs=consts, target=target,
                                        stage=ns.stage, options=options)
    except Exception as exc:
        if _is_compilation_error(exc):
            print(str(exc), file=sys.stderr)
            return 1
        if isinstance(exc, (ValueError, TypeError, NotImplementedError)):
            # an input the compiler refuses (an IR file's layout that does not fit the target...)
            print(f"tritium compile: error: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        raise
    out = Path(ns.output)
    out.mkdir(parents=True, exist_ok=True)
    name = compiled.metadata.get("name") or kernel
    written = []
    for stage, asm in compiled.asm.items():
        dest = out / f"{name}.{stage}"
        if isinstance(asm, (bytes, bytearray)):
            dest.write_bytes(asm)
        else:
            dest.write_text(str(asm))
        written.append(dest)
    meta = out / f"{name}.json"
    meta.write_text(json.dumps(compiled.metadata, indent=2, sort_keys=True, default=str) + "\n")
    written.append(meta)
    for dest in written:
        print(dest)
    return 0


def _check_stage(stage: str, target, ir_path: str | None) -> None:
    try:
        from .compiler.compiler import check_stage
    except ImportError:  # a compiler without the check (tests replace it): it reports the stage itself
        return
    try:
        if target is None:
            backend = manager.select_backend(None, ())
            target = backend.default_target()
        else:
            backend = manager.get_plugin_manager().backend_for_target(target)
        src = type("IR", (), {"ext": Path(ir_path).suffix[1:]})() if ir_path else None
        check_stage(stage, backend, target, src)
    except ValueError as exc:
        raise UsageError(f"--stage: {exc}") from None


def version_text() -> str:
    from importlib import metadata
    try:
        core = metadata.version("tritium")
    except metadata.PackageNotFoundError:
        core = getattr(importlib.import_module("tritium"), "__version__", "unknown")
    return f"tritium {core} (plugin API {PLUGIN_API_VERSION})"


def cmd_backends(ns: argparse.Namespace) -> int:

    with warnings.catch_warnings():
        # the failures are listed below; repeating them as warnings would only add noise
        warnings.simplefilter("ignore", TritiumPluginWarning)
        backends, failed = list_backends(), failed_plugins()
    print(f"Tritium plugin API {PLUGIN_API_VERSION}")
    rows = [("backend", "version", "targets", "device", "api", "plugin")]
    reasons = []
    for b in backends:
        present = b.device_present()
        if not present and (why := b.device_unavailable_reason()):
            reasons.append(f"{b.name}: no device: {why} (compile-only)")
        device = f"yes ({b.current_target()})" if present else "no"
        targets = ", ".join(b.info.targets) or ", ".join(b.info.target_kinds)
        rows.append((b.name, b.info.version, targets, device, str(b.info.api_version),
                     f"{b.plugin} ({b.distribution})"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    if not backends:
        print("(no backend installed)")
    for line in reasons:
        print(line)
    for f in failed:
        print(f"failed plugin {f.name} ({f.distribution}): {f.reason}")
    return 0


def _delegate(module: str, argv: Sequence[str], command: str) -> int:
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            # `conformance` lives beside core/ in a source checkout and is not installed.
            root = Path(__file__).resolve().parent.parent
            if module.startswith("conformance") and (root / "conformance").is_dir() and str(root) not in sys.path:
                sys.path.insert(0, str(root))
                return _delegate(module, argv, command)
            raise UsageError(f"'tritium {command}' needs the module {module}, which is not installed") from None
        raise
    rc = mod.main(list(argv))
    return rc if isinstance(rc, int) else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tritium", description="Tritium: a multi-backend compiler for Triton kernels.")
    p.add_argument("--version", action="version", version=version_text())
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("backends", help="list installed backends, their targets and devices, and broken plugins")
    c = sub.add_parser("compile", help="compile one kernel ahead of time and write every stage",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Compile FILE:KERNEL for a target and write <kernel>.<stage> files and "
                                   "<kernel>.json (metadata).\n\n--signature:\n" + SIGNATURE_HELP)
    c.add_argument("kernel", metavar="FILE:KERNEL",
                   help="Python file and the name of a @jit function in it, or an IR file "
                        "(.ttir, .ttgir, .llir, .ptx: its signature and options come from the IR)")
    c.add_argument("--signature", "-s", help="parameter types/constants (see above; Python kernels only)")
    c.add_argument("--constexpr", "-c", action="append", metavar="NAME=VALUE",
                   help="value of a constexpr parameter (int, float, True/False, None or string); repeatable")
    c.add_argument("--target", "-t", help="target such as cuda:90 or hip:gfx942 (default: the selected backend's)")
    c.add_argument("--stage", help="stop after this stage (e.g. ttir, ttgir, llir, ptx)")
    c.add_argument("-o", "--output", default=".", metavar="DIR", help="output directory (default: .)")
    c.add_argument("--num-warps", type=int, help="warps per program")
    c.add_argument("--num-stages", type=int, help="software pipelining stages")
    for name, text in (("examples", "run the bundled examples (tritium.examples)"),
                       ("conformance", "run the cross-backend conformance suite (conformance.cli)")):
        d = sub.add_parser(name, help=text, add_help=False)
        d.add_argument("args", nargs=argparse.REMAINDER, help="passed on unchanged")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    # The delegating commands own their options (including -h), so they skip argparse.
    if argv and argv[0] in ("examples", "conformance"):
        module = "tritium.examples" if argv[0] == "examples" else "conformance.cli"
        try:
            return _delegate(module, argv[1:], argv[0])
        except UsageError as exc:
            print(f"tritium: error: {exc}", file=sys.stderr)
            return 2
    ns = parser.parse_args(argv)
    try:
        return {"backends": cmd_backends, "compile": cmd_compile}[ns.command](ns)
    except UsageError as exc:
        print(f"tritium {ns.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
