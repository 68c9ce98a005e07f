"""Process-wide settings: ``tritium.knobs`` (``triton.knobs`` under ``import tritium as triton``).

Each group of settings is a module-level object (``cache``, ``compilation``, ``runtime``,
``language``, ``autotuning``, ``build``, ``nvidia``, ``amd``) whose attributes are *knobs*.  A knob
is backed by one or more environment variables: until it is assigned, reading it reads the
environment (at each read, so a variable set later in the process counts); once assigned, the
assigned value wins.  Where Tritium and Triton each have a name for a variable, both are read and
Tritium's wins when both are set (``TRITIUM_CACHE_DIR`` over ``TRITON_CACHE_DIR``).  An empty
variable counts as unset.

    from tritium import knobs
    knobs.cache.dir = "/tmp/kernels"          # also exported to the environment (propagate_env)
    with knobs.runtime.scope():               # every value and variable of the group restored on exit
        knobs.runtime.interpret = True        # launches that name no backend use the interpreter
    knobs.cache.dir = knobs.env               # back to reading the environment

``knob_descriptors`` maps a group's knob names to their descriptors; a descriptor's ``key`` is the
variable Triton reads (Tritium's own name where Triton has none) and ``keys`` every variable it
reads, the winning one first.  ``docs/environment.md`` lists them all.

Importing this module is cheap: tools (``ptxas``) are looked for only when a knob naming one is
read.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from .runtime.launch_api import HookChain

__all__ = ["Env", "env", "propagate_env", "base_knobs", "NvidiaTool", "JitFunctionInfo", "cache", "compilation",
           "runtime", "language", "autotuning", "build", "nvidia", "amd", "selected_backend", "compile_token",
           "refresh_knobs"]


class Env:
    """Assign ``knobs.env`` to a knob to forget its assigned value (it reads the environment again)."""

    def __repr__(self) -> str:
        return "knobs.env"


env = Env()

#: when true, assigning a knob also sets its environment variables (so subprocesses, and code
#: that reads the variables directly, agree); assigning ``None`` removes them
propagate_env: bool = True

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

# called as f(group, name) after any knob is assigned, deleted, reset or restored by a scope
_listeners: list[Callable[[str, str], None]] = []


def _notify(group: "base_knobs", name: str) -> None:
    for f in list(_listeners):
        f(type(group).__name__, name)


def _getenv(keys: tuple[str, ...]) -> tuple[Optional[str], Optional[str]]:
    """(value, variable) of the first of ``keys`` set to a non-empty value, else (None, None)."""
    for k in keys:
        v = os.environ.get(k)
        if v is not None and v != "":
            return v, k
    return None, None


def _to_env_text(value: Any) -> Optional[str]:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (str, int)):
        return str(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return None


class env_base:
    """A knob: a data descriptor on a ``base_knobs`` subclass.  ``tritium`` and ``triton`` are the
    variable names (either may be None); ``default`` is a value or ``f(group)``."""

    def __init__(self, tritium: Optional[str] = None, triton: Optional[str] = None, default: Any = None,
                 doc: str = ""):
        if tritium is None and triton is None:
            raise ValueError("a knob needs at least one environment variable")
        self.keys: tuple[str, ...] = tuple(k for k in (tritium, triton) if k)
        self.key: str = triton or tritium
        self.default = default
        self.doc = doc

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    # -- reading ------------------------------------------------------------------------------
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        d = obj.__dict__
        if self.name in d:
            return self.transform(d[self.name], obj)
        text, var = _getenv(self.keys)
        if text is not None:
            return self.parse(text, var, obj)
        return self.default(obj) if callable(self.default) else self.default

    def raw(self, obj):
        """The assigned value, else the environment's text, else None (no default, no lookup)."""
        if self.name in obj.__dict__:
            return obj.__dict__[self.name]
        return _getenv(self.keys)[0]

    def source(self, obj) -> str:
        """Where the current value comes from, for messages: ``knobs.nvidia.ptxas`` or a variable."""
        if self.name in obj.__dict__:
            return f"knobs.{_group_name(obj)}.{self.name}"
        var = _getenv(self.keys)[1]
        return var or f"knobs.{_group_name(obj)}.{self.name} (default)"

    def parse(self, text: str, var: str, obj):
        return text

    def transform(self, value, obj):
        return value

    def check(self, value):
        return value

    # -- writing ------------------------------------------------------------------------------
    def __set__(self, obj, value) -> None:
        if isinstance(value, Env):
            obj.__dict__.pop(self.name, None)
        else:
            value = self.check(value)
            obj.__dict__[self.name] = value
            if propagate_env:
                text = _to_env_text(value)
                if value is None:
                    for k in self.keys:
                        os.environ.pop(k, None)
                elif text is not None:
                    for k in self.keys:
                        os.environ[k] = text
        _notify(obj, self.name)

    def __delete__(self, obj) -> None:
        obj.__dict__.pop(self.name, None)
        _notify(obj, self.name)


class env_str(env_base):
    def check(self, value):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"knob {self.name} takes a string or None, got {value!r}")
        return os.fspath(value) if isinstance(value, os.PathLike) else value


class env_bool(env_base):
    def __init__(self, tritium=None, triton=None, default: Any = False, doc: str = ""):
        super().__init__(tritium, triton, default, doc)

    def parse(self, text, var, obj):
        t = text.strip().lower()
        if t in _TRUE:
            return True
        if t in _FALSE:
            return False
        raise ValueError(f"{var}={text!r}: expected one of 1/0, true/false, yes/no, on/off")

    def check(self, value):
        if not isinstance(value, (bool, int)) or isinstance(value, int) and value not in (0, 1):
            raise TypeError(f"knob {self.name} takes a bool, got {value!r}")
        return bool(value)


class env_opt_bool(env_bool):
    """A bool that may also be None (unset: the consumer decides)."""

    def check(self, value):
        return None if value is None else super().check(value)


class env_int(env_base):
    def parse(self, text, var, obj):
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{var}={text!r}: expected an integer") from None

    def check(self, value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"knob {self.name} takes an int, got {value!r}")
        return value


class env_dump(env_base):
    """``TRITIUM_DUMP_IR``: off (False), every kernel (True) or the kernels whose name contains a text."""

    def parse(self, text, var, obj):
        t = text.strip().lower()
        if t in _TRUE or t == "all":
            return True
        if t in _FALSE:
            return False
        return text

    def transform(self, value, obj):
        return self.parse(value, self.name, obj) if isinstance(value, str) else bool(value)

    def check(self, value):
        if not isinstance(value, (bool, str)):
            raise TypeError(f"knob {self.name} takes a bool or a kernel name, got {value!r}")
        return value


@dataclass(frozen=True)
class NvidiaTool:
    """A CUDA tool: its path (None where none is found) and the CUDA release it belongs to ("13.0")."""
    path: Optional[str]
    version: str


class env_tool(env_base):
    """A CUDA tool (``ptxas``, ``nvdisasm``, ``cuobjdump``): assign a path (a string); read an
    :class:`NvidiaTool`.  The path comes from the knob, its variables, else the search of the
    NVIDIA plugin's toolchain (CUDA wheels, ``CUDA_HOME``, ``PATH``, ``/usr/local/cuda``)."""

    def __init__(self, binary: str, tritium=None, triton=None, doc: str = ""):
        super().__init__(tritium, triton, None, doc)
        self.binary = binary

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return _resolve_tool(self.binary, self.raw(obj), self.source(obj))

    def check(self, value):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"knob {self.name} takes a path (string), got {value!r}")
        return os.fspath(value) if isinstance(value, os.PathLike) else value


_TOOLS: dict = {}


def _tool_version(path: str) -> Optional[str]:
    import re
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


def _resolve_tool(binary: str, requested: Optional[str], source: str) -> NvidiaTool:
    key = (binary, requested)
    tool = _TOOLS.get(key)
    if tool is not None:
        return tool
    toolchain = _nvidia_toolchain()
    path = None
    if binary == "ptxas" and toolchain is not None:
        path = toolchain.find_ptxas()  # reads the same knob; raises on a path that is not a tool
    elif requested:
        if not (os.path.isfile(requested) and os.access(requested, os.X_OK)):
            raise RuntimeError(f"{source}={requested!r} is not an executable file")
        path = requested
    else:
        beside = None
        if toolchain is not None and toolchain.find_ptxas():
            beside = os.path.join(os.path.dirname(toolchain.find_ptxas()), binary)
        path = beside if beside and os.access(beside, os.X_OK) else shutil.which(binary)
    version = _tool_version(path) if path else None
    if version is None and binary == "ptxas" and toolchain is not None:
        # no ptxas: the CUDA version of the assembler that will be used instead (nvJitLink)
        jit = toolchain.nvjitlink_version()
        version = f"{jit[0]}.{jit[1]}" if jit else None
    if path is None and binary != "ptxas":
        raise RuntimeError(f"cannot find {binary}: set {source} (or put it on PATH)")
    tool = NvidiaTool(path, version or "0.0")
    _TOOLS[key] = tool
    return tool


def _nvidia_toolchain():
    try:
        from tritium_nvidia.toolchain import tools
    except ImportError:  # the NVIDIA plugin is not installed
        return None
    return tools


def _group_name(obj) -> str:
    return type(obj).__name__.removesuffix("_knobs")


class base_knobs:
    """A group of knobs.  Assigning a name that is not one of its settings is an error (a typo
    would otherwise be silently ignored)."""

    @property
    def knob_descriptors(self) -> dict[str, env_base]:
        out: dict[str, env_base] = {}
        for cls in reversed(type(self).__mro__):
            for k, v in vars(cls).items():
                if isinstance(v, env_base):
                    out[k] = v
        return out

    @property
    def knobs(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.knob_descriptors}

    def copy(self):
        new = type(self)()
        new.__dict__.update(self.__dict__)
        return new

    def reset(self):
        """Forget every assigned knob (each reads the environment again); returns the group."""
        for k in self.knob_descriptors:
            self.__dict__.pop(k, None)
        _notify(self, "*")
        return self

    @contextmanager
    def scope(self) -> Iterator["base_knobs"]:
        """Restore, on exit, every value of this group and every environment variable its knobs read."""
        keys = {k for d in self.knob_descriptors.values() for k in d.keys}
        saved_env = {k: os.environ.get(k) for k in keys}
        saved = dict(self.__dict__)
        try:
            yield self
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)
            for k, v in saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            _notify(self, "*")

    def __setattr__(self, name: str, value) -> None:
        if not name.startswith("_") and not hasattr(type(self), name):
            known = ", ".join(sorted(set(self.knob_descriptors) | _plain_settings(type(self))))
            raise AttributeError(f"knobs.{_group_name(self)} has no setting {name!r} (settings: {known})")
        super().__setattr__(name, value)
        if not isinstance(getattr(type(self), name, None), env_base):
            _notify(self, name)

    def __repr__(self) -> str:
        return f"knobs.{_group_name(self)}({', '.join(f'{k}={v!r}' for k, v in self._cheap_items())})"

    def _cheap_items(self):
        for k, d in self.knob_descriptors.items():
            yield k, (d.raw(self) if isinstance(d, env_tool) else getattr(self, k))


def _plain_settings(cls) -> set[str]:
    return {k for c in cls.__mro__ if issubclass(c, base_knobs) for k, v in vars(c).items()
            if not k.startswith("_") and not callable(v) and not isinstance(v, (property, env_base))}


def _default_cache_dir(group) -> str:
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return os.path.join(xdg, "tritium")
    return os.path.join(group.home_dir, ".cache", "tritium")


def _verify_default(group) -> bool:
    # pytest sets PYTEST_CURRENT_TEST while a test runs: verify there, stay fast elsewhere
    return "PYTEST_CURRENT_TEST" in os.environ


class cache_knobs(base_knobs):
    home_dir = env_str(None, "TRITON_HOME", default=lambda g: os.path.expanduser("~"),
                       doc="home under which the default cache lives (`<home>/.cache/tritium`)")
    dir = env_str("TRITIUM_CACHE_DIR", "TRITON_CACHE_DIR", default=_default_cache_dir,
                  doc="the kernel cache (default `$XDG_CACHE_HOME/tritium`, else `<home_dir>/.cache/tritium`)")
    dump_dir = env_str("TRITIUM_DUMP_IR_DIR", "TRITON_DUMP_DIR",
                       doc="write the IR dumps (`compilation.dump_ir`) as files here instead of to stderr")


class compilation_knobs(base_knobs):
    always_compile = env_bool("TRITIUM_ALWAYS_COMPILE", "TRITON_ALWAYS_COMPILE",
                              doc="ignore the kernel cache when looking up (entries are still written)")
    dump_ir = env_dump("TRITIUM_DUMP_IR", "TRITON_KERNEL_DUMP", default=False,
                       doc="print the IR before and after every pass: True for every kernel, or a text that "
                           "the kernel names to dump contain")
    pass_timing = env_bool("TRITIUM_PASS_TIMING", doc="a per-pass timing table after each pipeline")
    allow_non_constexpr_globals = env_bool(
        "TRITIUM_ALLOW_NON_CONSTEXPR_GLOBALS", "TRITON_ALLOW_NON_CONSTEXPR_GLOBALS",
        doc="let compiled kernels read plain Python globals (`N = 42`) as constants; by default, as in "
            "Triton 3.6, only `N = tl.constexpr(42)` may be read (the interpreter reads any global)")
    verify_each = env_bool("TRITIUM_VERIFY_EACH", default=_verify_default,
                           doc="verify the IR after every pass (default: on under pytest)")


class autotuning_knobs(base_knobs):
    print = env_bool("TRITIUM_PRINT_AUTOTUNING", "TRITON_PRINT_AUTOTUNING",
                     doc="print each autotuning result (time taken, best config)")
    cache = env_bool(None, "TRITON_CACHE_AUTOTUNING",
                     doc="keep autotuning results in the kernel cache, as `autotune(cache_results=True)`")


class runtime_knobs(base_knobs):
    backend = env_str("TRITIUM_BACKEND", doc="backend for launches that do not name one")
    interpret = env_bool(None, "TRITON_INTERPRET",
                         doc="launches that name no backend run on the interpreter (`runtime.backend` wins)")
    debug = env_bool(None, "TRITON_DEBUG",
                     doc="compile every kernel with debug=True (device_assert checks on)")
    override_arch = env_str(None, "TRITON_OVERRIDE_ARCH",
                            doc="compile launched kernels for this architecture (`sm80`, `sm90a`, `gfx942`) "
                                "instead of the device's")
    c_binder = env_bool("TRITIUM_C_BINDER", default=True,
                        doc="run the launch fast path's binder in a small C extension (built on first use)")
    torch_reader = env_bool("TRITIUM_TORCH_READER", default=True,
                            doc="read torch tensors through torch's C++ API in the C binder")

    #: ``hook(key=, repr=, fn=, compile=, is_manual_warmup=, already_compiled=)`` before a kernel is
    #: compiled for a new specialization; a true result skips the compile (the launch returns None)
    jit_cache_hook: Optional[Callable[..., Any]] = None
    #: the same arguments, after that compile
    jit_post_compile_hook: Optional[Callable[..., Any]] = None
    #: called as ``hook(launch_metadata)`` before / after a compiled kernel's ``run`` launches
    #: (``.add(fn)``; see :mod:`tritium.runtime.launch_api`); ``launch_metadata`` is
    #: ``kernel.launch_metadata(grid, stream, *args)``
    launch_enter_hook: Any = HookChain()
    launch_exit_hook: Any = HookChain(reversed=True)


class language_knobs(base_knobs):
    default_fp_fusion = env_bool("TRITIUM_DEFAULT_FP_FUSION", "TRITON_DEFAULT_FP_FUSION", default=True,
                                 doc="the default of `enable_fp_fusion` (a launch's own option wins)")
    fp32_default = env_str(None, "TRITON_F32_DEFAULT",
                           doc="the default `input_precision` of fp32 dots (`ieee`, `tf32`, `tf32x3`)")


class build_knobs(base_knobs):
    cc = env_str("CC", doc="C compiler for Tritium's small extensions (the C binder and launcher)")
    cxx = env_str("CXX", doc="C++ compiler for the torch tensor reader extension")


class nvidia_knobs(base_knobs):
    ptxas = env_tool("ptxas", "TRITIUM_PTXAS_PATH", "TRITON_PTXAS_PATH",
                     doc="the ptxas to use; `.path`, `.version` (the CUDA release of the ptxas found, else "
                         "of nvJitLink, else \"0.0\")")
    nvdisasm = env_tool("nvdisasm", None, "TRITON_NVDISASM_PATH", doc="the nvdisasm to use")
    cuobjdump = env_tool("cuobjdump", None, "TRITON_CUOBJDUMP_PATH",
                         doc="the cuobjdump to use")
    libdevice_path = env_str("TRITIUM_LIBDEVICE_PATH", "TRITON_LIBDEVICE_PATH",
                             doc="libdevice.10.bc (default: searched beside the CUDA wheels and toolkit)")
    assembler = env_str("TRITIUM_ASSEMBLER", doc="`ptxas` or `nvjitlink`: which turns PTX into a cubin")
    disable_nvjitlink = env_bool("TRITIUM_DISABLE_NVJITLINK", doc="never assemble with nvJitLink")
    tma = env_bool("TRITIUM_TMA", default=True,
                   doc="host tensor descriptors become TMA descriptors on sm_90+ (off: pointer-based copies)")
    launch_impl = env_str("TRITIUM_CUDA_LAUNCH",
                          doc="the launcher: unset/`c` (a C extension), `bindings` or `ctypes` (cuda-python)")
    pair_programs = env_bool("TRITIUM_PAIR_PROGRAMS", default=True,
                             doc="sm_90 kernels with a dot launch programs 2i and 2i+1 together as a cluster of "
                                 "two CTAs (one TPC) where the grid has more than one wave; read when a "
                                 "kernel's launcher is made")


class amd_knobs(base_knobs):
    lld_path = env_str("TRITIUM_LLD_PATH", doc="the ld.lld that links hsaco code objects")
    amdgpu_clang = env_str("TRITIUM_AMDGPU_CLANG", doc="a clang for the AMD plugin's cross-checks")


cache = cache_knobs()
compilation = compilation_knobs()
autotuning = autotuning_knobs()
runtime = runtime_knobs()
language = language_knobs()
build = build_knobs()
nvidia = nvidia_knobs()
amd = amd_knobs()


@dataclass(frozen=True)
class JitFunctionInfo:
    """What a JIT hook is told about the function: its module, its name and the ``JITFunction``."""
    module: str
    name: str
    jit_function: Any


def selected_backend() -> Optional[str]:
    """The backend a launch that names none must use, or None (chosen by its arguments):
    ``runtime.backend`` (``TRITIUM_BACKEND``), else ``"interpreter"`` when ``runtime.interpret``
    (``TRITON_INTERPRET``) is on."""
    g = globals()["runtime"]  # the group object of now: a test fixture may have replaced it
    name = g.backend
    if name:
        return name
    return "interpreter" if g.interpret else None


def compile_token() -> tuple:
    """The knobs that change what a launch compiles: part of a ``JITFunction``'s in-memory cache key."""
    r, lang = globals()["runtime"], globals()["language"]
    return (r.debug, r.override_arch, lang.default_fp_fusion, lang.fp32_default)


def refresh_knobs() -> None:
    """Forget cached tool lookups (``nvidia.ptxas`` and the others), so the next read searches again."""
    _TOOLS.clear()
    tc = _nvidia_toolchain()
    if tc is not None:
        for f in ("find_ptxas", "find_libdevice", "nvjitlink_version"):
            clear = getattr(getattr(tc, f, None), "cache_clear", None)
            if clear is not None:
                clear()


def arch_target(backend, target, arch=None):
    """``target`` with the architecture ``arch`` (a launch's or compile's ``arch=`` option) or else
    ``runtime.override_arch`` applied where it names an architecture of ``backend``'s kind
    (``sm80``/``sm_90a`` for CUDA targets, ``gfx942`` for HIP ones); other targets (the
    interpreter's) are returned as they are."""
    arch = arch or globals()["runtime"].override_arch
    if not arch or target is None:
        return target
    import re
    text = arch.strip().lower()
    m = re.fullmatch(r"sm_?(\d+a?)", text)
    if m and "cuda" in backend.info.target_kinds:
        spec = f"cuda:{m.group(1)}"
    elif text.startswith("gfx") and "hip" in backend.info.target_kinds:
        spec = f"hip:{text}"
    else:
        return target
    if str(target) == spec:
        return target
    return backend.parse_target(spec)
