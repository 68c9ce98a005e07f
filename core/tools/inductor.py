"""Run PyTorch Inductor's generated Triton kernels on Tritium, unchanged.

Inductor writes one Python file per kernel (``torch._inductor.config.benchmark_kernel = True``
adds ``get_args()`` and ``call(args)``).  The kernel is a ``@triton.jit`` function that reads the
module's ``triton``, ``tl``, ``triton_helpers``, ``libdevice`` and ``tl_math``.  Here the
function's own source (with any other ``@triton.jit`` function of the file) is compiled again in
a fresh module whose names are Tritium's, ``triton_helpers`` included: PyTorch's
``torch._inductor.runtime.triton_helpers`` loaded once more while ``import triton`` resolves to
``tritium`` (:func:`triton_as_tritium`).  The file itself is only parsed, never imported, so this
needs neither Triton nor a GPU.

    fn = load_kernel(path)                        # a tritium JITFunction
    args, kwargs = launch_arguments(fn, call_args, config_kwargs, constants)
    fn[grid](*args, **kwargs, num_warps=4)
"""
from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.util
import os
import sys
import tempfile
import types
from typing import Any, Iterator, Sequence
import tritium
import tritium.language as tl

_ALIAS = "triton"
_HELPERS_PACKAGE = "tritium_inductor_runtime"


def _is_alias(name: str) -> bool:
    return name == _ALIAS or name.startswith(_ALIAS + ".")


class _TritonAsTritium(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``triton.X`` -> the module ``tritium.X`` itself (its ``__spec__`` kept)."""

    def __init__(self):
        self._specs: dict[str, Any] = {}

    def find_spec(self, name, path, target=None):
        if not _is_alias(name):
            return None
        real = importlib.import_module("tritium" + name[len(_ALIAS):])
        self._specs[name] = real.__spec__
        is_pkg = getattr(real, "__path__", None) is not None
        return importlib.util.spec_from_loader(name, self, is_package=is_pkg)

    def create_module(self, spec):
        return importlib.import_module("tritium" + spec.name[len(_ALIAS):])

    def exec_module(self, module):
        # the import system stamped the alias spec on the real module: give it its own back
        module.__spec__ = self._specs.pop(module.__spec__.name, module.__spec__)


@contextlib.contextmanager
def triton_as_tritium() -> Iterator[None]:
    """While inside, ``import triton`` (and ``triton.language``, ``triton.runtime.jit`` ...) gives
    Tritium's modules; the ``triton`` modules imported before (a real Triton) come back after.
    (Entered by hand, ``alias = triton_as_tritium(); alias.__enter__()``, keep ``alias``: the
    alias ends when it is collected.)"""
    saved = {k: v for k, v in sys.modules.items() if _is_alias(k)}
    for k in saved:
        del sys.modules[k]
    finder = _TritonAsTritium()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        if sys.meta_path and finder in sys.meta_path:  # None while the interpreter shuts down
            sys.meta_path.remove(finder)
            for k in [k for k in sys.modules if _is_alias(k)]:
                del sys.modules[k]
            sys.modules.update(saved)


def _load_file_as(name: str, path: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tritium_triton_helpers() -> types.ModuleType:
    """PyTorch's ``triton_helpers`` (and the ``triton_compat`` it imports) with ``triton`` resolving
    to ``tritium``: its ``@triton.jit`` helpers are Tritium ``JITFunction`` s.  Loaded once, as
    ``tritium_inductor_runtime.triton_helpers``; PyTorch's own modules are left alone."""
    name = f"{_HELPERS_PACKAGE}.triton_helpers"
    if name in sys.modules:
        return sys.modules[name]
    from torch._inductor.runtime import __file__ as runtime_init
    runtime_dir = os.path.dirname(runtime_init)
    package = types.ModuleType(_HELPERS_PACKAGE)
    package.__path__ = []
    sys.modules[_HELPERS_PACKAGE] = package
    with triton_as_tritium():
        compat = _load_file_as(f"{_HELPERS_PACKAGE}.triton_compat", os.path.join(runtime_dir, "triton_compat.py"))
        if not compat.HAS_TRITON:
            raise ImportError("torch's triton_compat did not accept tritium as triton")
        helpers = _load_file_as(name, os.path.join(runtime_dir, "triton_helpers.py"))
    package.triton_compat, package.triton_helpers = compat, helpers
    return helpers


# --- the kernel file ---------------------------------------------------------------------------------
def _is_jit_decorator(d: ast.expr) -> bool:
    target = d.func if isinstance(d, ast.Call) else d
    return isinstance(target, ast.Attribute) and target.attr == "jit" or \
        isinstance(target, ast.Name) and target.id == "jit"


def jit_functions(source: str) -> list[str]:
    """Names of the ``@triton.jit`` functions of a kernel file, in file order."""
    tree = ast.parse(source)
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and any(map(_is_jit_decorator, n.decorator_list))]


def kernel_name(source: str) -> str:
    """The kernel of an Inductor file: the ``@triton.jit`` function that Inductor's heuristics
    decorator wraps (``@triton_heuristics.pointwise(...)``), else the last one."""
    tree = ast.parse(source)
    jitted = [n for n in tree.body if isinstance(n, ast.FunctionDef) and any(map(_is_jit_decorator, n.decorator_list))]
    if not jitted:
        raise ValueError("no @triton.jit function in this file")
    for n in jitted:
        if len(n.decorator_list) > 1:
            return n.name
    return jitted[-1].name


def _function_sources(source: str) -> str:
    """Every ``@triton.jit`` function of ``source``, with only its ``@triton.jit`` decorator."""
    tree = ast.parse(source)
    lines = source.splitlines()
    out = []
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) and any(map(_is_jit_decorator, n.decorator_list)):
            body = "\n".join(lines[n.lineno - 1:n.end_lineno])
            out.append("@triton.jit\n" + body)
    return "\n\n\n".join(out) + "\n"


def tritium_namespace() -> dict[str, Any]:
    """The names an Inductor kernel reads, bound to Tritium's."""
    helpers = tritium_triton_helpers()
    return {"triton": tritium, "tl": tl, "triton_helpers": helpers, "libdevice": helpers.libdevice,
            "tl_math": helpers.math}


_LOADED = 0


def load_kernel(path: str, name: str | None = None, directory: str | None = None):
    """The Tritium ``JITFunction`` of the kernel ``name`` (default: :func:`kernel_name`) of the
    Inductor file at ``path``.  Its source is written to a module file under ``directory`` (a
    temporary one by default) so that the compiler can read it and errors point into it."""
    global _LOADED
    with open(path) as f:
        source = f.read()
    name = name or kernel_name(source)
    text = _function_sources(source)
    directory = directory or tempfile.mkdtemp(prefix="tritium-inductor-")
    _LOADED += 1
    mod_name = f"tritium_inductor_kernel_{_LOADED}_{name}"
    file = os.path.join(directory, f"{mod_name}.py")
    with open(file, "w") as f:
        f.write(f"# {name} from {path}, rebound to tritium\n" + text)
    module = types.ModuleType(mod_name)
    module.__file__ = file
    module.__dict__.update(tritium_namespace())
    sys.modules[mod_name] = module
    exec(compile(open(file).read(), file, "exec"), module.__dict__)
    return getattr(module, name)


def launch_arguments(fn, call_args: Sequence[Any], config_kwargs: dict | None = None,
                     constants: dict | None = None) -> tuple[list, dict]:
    """Positional and keyword arguments for launching ``fn`` as Inductor does: ``call_args`` fill
    the parameters that are not ``tl.constexpr`` in order, the config's kwargs (``XBLOCK``,
    ``R0_BLOCK`` ...) and ``triton_meta["constants"]`` give the constexprs (by name or by index)."""
    params = list(fn.params)
    runtime = [p for p in params if not p.is_constexpr]
    config_kwargs = dict(config_kwargs or {})
    kwargs: dict[str, Any] = {}
    for key, value in (constants or {}).items():
        p = params[key] if isinstance(key, int) else next((q for q in params if q.name == key), None)
        if p is not None and p.is_constexpr and p.name not in config_kwargs:
            kwargs[p.name] = value
    for key, value in config_kwargs.items():
        if any(p.name == key for p in params):
            kwargs[key] = value
    if len(call_args) < len(runtime):
        raise ValueError(f"{fn.__name__} takes {len(runtime)} run-time arguments "
                         f"({', '.join(p.name for p in runtime)}), got {len(call_args)}")
    return list(call_args[:len(runtime)]), kwargs


__all__ = ["triton_as_tritium", "tritium_triton_helpers", "jit_functions", "kernel_name", "load_kernel",
           "launch_arguments", "tritium_namespace"]
