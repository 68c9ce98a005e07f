"""``tritium.compiler.source``: what a compile starts from.

:class:`ASTSource` is a ``@jit`` function with one specialization: its signature (parameter name
-> type string such as ``*fp32``), constexpr values and per-argument attributes;
:func:`decode_key_parts` reads that specialization from the key parts the JIT computed for a
launch's arguments.

:class:`IRSource` is a kernel given as IR instead of Python: ``tritium.compile("kernel.ttgir")`` (Triton's ``IRSource``).

A source is a file path or the text itself, in one of the stages' languages: ``ttir``, ``ttgir``
(Tritium's or Triton's spelling, old and new: :mod:`tritium.ttgir.triton_syntax`), ``llir`` (LLVM
IR) or ``ptx``.  Compilation starts at the stage *after* the source's (as in Triton, the source
stage's own optimisations are not run, so a hand-written ``ttg.convert_layout`` stays what it is);
a TTGIR source still gets shared-memory allocation and barriers (``finalize_ttgir``), which
Tritium's TTGIR stage does and Triton's LLVM stage does.  A backend without a TTGIR stage (the
interpreter) reads TTGIR as TTIR: layouts only say where elements live.

The kernel is the module's public ``tt.func`` (the first, if several); its launch signature comes
from the function's arguments (``!tt.ptr<f32>`` -> ``*fp32``, ``i32`` -> ``i32``), and a TTGIR
module's ``ttg.num-warps`` / ``ttg.threads-per-warp`` / ``ttg.num-ctas`` attributes are its
options.  PTX gives its entry's name, parameters (``.ptr`` parameters are pointers) and
``.maxntid``; its dynamic shared memory size is the ``shared=`` option (default 0).
"""
from __future__ import annotations

import hashlib
import inspect
import os
import re
from pathlib import Path

from xdsl.dialects.builtin import (BFloat16Type, Float8E4M3FNType, Float8E4M3FNUZType, Float8E5M2FNUZType,
                                   Float8E5M2Type, Float16Type, Float32Type, Float64Type, IntegerType,
                                   Signedness)
from .. import knobs
from ..ttir.types import PointerType
from ..ttgir.ir import parse_module
from ..ttgir.encodings import DistributedEncoding


# --- a @jit function and its specialization --------------------------------------------------------

class ASTSource:
    """A kernel to compile: the function, its signature (parameter name -> type string such as
    ``*fp32`` or ``constexpr``), constexpr values and per-argument attributes
    (``{name: {"tt.divisibility": 16}}``)."""

    def __init__(self, fn, signature: dict, constexprs: dict | None = None, attrs: dict | None = None):
        self.fn = fn
        self.signature = {_name(fn, k): _sig_value(v) for k, v in signature.items()}
        self.constexprs = {_name(fn, k): v for k, v in (constexprs or {}).items()}
        # values as {name: value} or as Triton 3.x writes them, [[name, value], ...]
        self.attrs = {_name(fn, k): dict(v) if isinstance(v, (list, tuple)) else v for k, v in (attrs or {}).items()}
        for name in self.constexprs:
            if isinstance(name, tuple):  # inside a tuple argument: (argument index, index, ...)
                top = fn.arg_names[name[0]]
                if top in self.signature:
                    self.signature[top] = _set_path(self.signature[top], name[1:], "constexpr")
                continue
            self.signature[name] = "constexpr"
        for p in fn.params:  # a constexpr parameter left out takes its default
            if p.name not in self.signature and p.is_constexpr and p.default is not _EMPTY:
                self.signature[p.name] = "constexpr"
        missing = [n for n in fn.arg_names if n not in self.signature]
        if missing:
            raise TypeError(f"{fn.__name__}: no type or constexpr value given for {', '.join(missing)}")
        for n, t in self.signature.items():
            if t == "constexpr" and n not in self.constexprs and fn.params[fn.arg_names.index(n)].default is _EMPTY:
                raise TypeError(f"{fn.__name__}: constexpr parameter '{n}' needs a value")

    @property
    def constants(self) -> dict:
        """The constexpr values keyed by path, as Triton's ``ASTSource.constants``: ``(i,)`` for
        parameter ``i``, ``(i, j, ...)`` for an element of a tuple argument."""
        return {((self.fn.arg_names.index(k),) if isinstance(k, str) else tuple(k)): v
                for k, v in self.constexprs.items()}

    @property
    def name(self) -> str:
        """The compiled kernel's symbol: the function's name, or what its ``@jit(repr=...)`` makes
        of this specialization (Triton's hook), reduced to identifier characters.  The hook sees
        ``.signature`` (parameter -> type string, ``"constexpr"`` for constants), ``.constants``
        (parameter name -> value, as Triton's hook sees them), ``.constexprs`` and ``.attrs``."""
        repr_fn = getattr(self.fn, "repr", None)
        if repr_fn is None:
            return self.fn.__name__
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in str(repr_fn(_Specialization(self))))
        return name if name and not name[0].isdigit() else "_" + name

    def key(self) -> str:
        parts = (self.fn.cache_key, sorted(self.signature.items()),
                 sorted(((k, repr(v)) for k, v in self.constexprs.items()), key=_by_key),
                 sorted(((k, sorted(v.items())) for k, v in self.attrs.items()), key=_by_key))
        if knobs.compilation.allow_non_constexpr_globals:
            # a kernel reading a plain global compiles only under this knob: its entry must not
            # answer a lookup made without it (which has to raise)
            parts += ("allow_non_constexpr_globals",)
        return repr(parts)


class _Specialization:
    """What a ``@jit(repr=...)`` hook is given: the ASTSource's names, with ``constants`` keyed by
    parameter name (nested tuple constants stay under their paths)."""

    def __init__(self, src: ASTSource):
        self.fn, self.signature, self.constexprs, self.attrs = src.fn, src.signature, src.constexprs, src.attrs
        self.constants = dict(src.constexprs)


_EMPTY = inspect.Parameter.empty


def _name(fn, k):
    """A parameter's name from its name or index; a path ``(index, i, j, ...)`` names an element of a
    tuple argument (Triton's keys), one of length 1 the parameter itself."""
    if isinstance(k, tuple):
        if len(k) == 1:
            return _name(fn, k[0])
        return (fn.arg_names.index(k[0]) if isinstance(k[0], str) else int(k[0]),) + tuple(int(i) for i in k[1:])
    return fn.arg_names[k] if isinstance(k, int) else k


def _by_key(item):
    return repr(item[0]) if isinstance(item[0], tuple) else item[0]


def _sig_value(v):
    """A signature entry: a type string, or for a tuple argument a tuple of entries (a list, as
    JSON gives it back, is read as one)."""
    if isinstance(v, list):
        return tuple(_sig_value(x) for x in v)
    if isinstance(v, tuple) and not hasattr(type(v), "_fields"):
        return tuple(_sig_value(x) for x in v)
    return v


def _set_path(ty, path, value):
    if not path:
        return value
    if not isinstance(ty, tuple):
        raise TypeError(f"a constexpr path goes into {ty!r}, which is not a tuple")
    items = list(ty)
    items[path[0]] = _set_path(items[path[0]], path[1:], value)
    return type(ty)(*items) if hasattr(type(ty), "_fields") else tuple(items)


def runtime_leaves(signature: dict, arg_names) -> list:
    """``(name, type)`` of each run-time parameter of the compiled kernel, tuple arguments
    flattened into their leaves (``x[1][0]``), constexprs left out."""
    out = []

    def go(name, ty):
        if isinstance(ty, tuple):
            for i, t in enumerate(ty):
                go(f"{name}[{i}]", t)
        elif ty != "constexpr":
            out.append((name, ty))
    for n in arg_names:
        go(n, signature[n])
    return out


# --- the JIT's key parts ---------------------------------------------------------------------------

def decode_key_parts(fn, bound, key_parts) -> tuple[dict, dict, dict]:
    """The specialization the JIT's key parts describe for these launch arguments: the
    ``(signature, constexprs, attrs)`` an :class:`ASTSource` of ``fn`` takes."""
    signature, constexprs, attrs = {}, {}, {}
    for p, v, k in zip(fn.params, bound, key_parts):
        if k[0] == "c":
            constexprs[p.name] = v.value if hasattr(v, "value") and type(v).__name__ == "constexpr" else v
        elif k[0] == "1":
            constexprs[p.name] = 1
        elif k[0] == "n":
            constexprs[p.name] = None
        elif k[0] == "t":  # a tuple: its structure in the signature, its constexprs and facts by path
            signature[p.name] = _tuple_signature(v, k, (p.num,), p, constexprs, attrs)
        else:
            ty = k[1]
            if getattr(p, "is_const", False) and ty.startswith("*") and not ty.startswith("*k"):
                ty = "*k" + ty[1:]  # ``tl.const``: a pointer to constant data
            signature[p.name] = ty
            if k[2] == "D":
                attrs[p.name] = {"tt.divisibility": 16}
    return signature, constexprs, attrs


def _tuple_signature(v, k, path, p, constexprs, attrs):
    items = []
    for i, (x, kx) in enumerate(zip(v, k[2])):
        sub = path + (i,)
        if kx[0] == "t":
            items.append(_tuple_signature(x, kx, sub, p, constexprs, attrs))
        elif kx[0] in ("c", "1", "n"):
            constexprs[sub] = (x.value if type(x).__name__ == "constexpr" and hasattr(x, "value") else x) \
                if kx[0] == "c" else (1 if kx[0] == "1" else None)
            items.append("constexpr")
        else:
            ty = kx[1]
            if getattr(p, "is_const", False) and ty.startswith("*") and not ty.startswith("*k"):
                ty = "*k" + ty[1:]
            items.append(ty)
            if kx[2] == "D":
                attrs[sub] = {"tt.divisibility": 16}
    return k[1](*items) if k[1] is not tuple else tuple(items)


# --- a kernel given as IR --------------------------------------------------------------------------

EXTENSIONS = ("ttir", "ttgir", "llir", "ptx")
_FLOATS = {Float16Type: "fp16", BFloat16Type: "bf16", Float32Type: "fp32", Float64Type: "fp64",
           Float8E4M3FNType: "fp8e4nv", Float8E5M2Type: "fp8e5", Float8E4M3FNUZType: "fp8e4b8",
           Float8E5M2FNUZType: "fp8e5b16"}
_PTX_ENTRY = re.compile(r"\.(?:visible|extern)\s+\.entry\s+([\w$.]+)\s*\(([^)]*)\)", re.M)
_PTX_PARAM = re.compile(r"\.param\s+\.(\w+)(\s+\.ptr)?")
# PTX spells every integer parameter .uN/.bN whatever its signedness (LLVM writes i32 as .u32)
_PTX_TYPES = {f"{k}{n}": f"i{n}" for k in "usb" for n in (8, 16, 32, 64)}
_PTX_TYPES.update({"f16": "fp16", "f32": "fp32", "f64": "fp64"})
_LLIR_DEFINE = re.compile(r"^define\s+(?:[\w()]+\s+)*void\s+@\"?([\w$.]+)\"?\s*\(", re.M)
_LLIR_TYPES = {"i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "half": "fp16",
               "bfloat": "bf16", "float": "fp32", "double": "fp64"}


def type_string(t) -> str:
    """The signature string of an MLIR type: ``*fp32``, ``i32``, ``u8``, ``fp16``..."""
    if isinstance(t, PointerType):
        return "*" + type_string(t.pointee_type)
    if isinstance(t, IntegerType):
        signed = t.signedness.data != Signedness.UNSIGNED
        return f"{'i' if signed else 'u'}{t.width.data}"
    for cls, name in _FLOATS.items():
        if isinstance(t, cls):
            return name
    raise ValueError(f"kernel argument of type {t} cannot be passed at launch")


def _is_path(src) -> bool:
    if isinstance(src, os.PathLike):
        return True
    return isinstance(src, str) and "\n" not in src and len(src) < 4096 and \
        Path(src).suffix[1:] in EXTENSIONS and Path(src).is_file()


def guess_ext(text: str) -> str:
    """The language of IR ``text``: ``ptx``, ``llir``, ``ttgir`` or ``ttir``."""
    if _PTX_ENTRY.search(text) and ".version" in text:
        return "ptx"
    if _LLIR_DEFINE.search(text) or re.search(r"^define\s", text, re.M):
        return "llir"
    if re.search(r"(?:#|\b)(?:ttg|triton_gpu)\.", text):
        return "ttgir"
    if "tt.func" in text:
        return "ttir"
    raise ValueError("cannot tell the IR's language (expected TTIR/TTGIR with a tt.func, LLVM IR "
                     "or PTX); give the file a .ttir/.ttgir/.llir/.ptx name or pass ext=")


class IRSource:
    """A kernel in IR: ``IRSource("k.ttgir")``, ``IRSource(text)`` or ``IRSource(text, ext="ttir")``.

    ``name`` is the kernel's name, ``signature`` ``{index: type string}`` (Triton's form),
    ``arg_names`` the parameter names and ``module`` the parsed module (TTIR/TTGIR only)."""

    def __init__(self, src, ext: str | None = None):
        if _is_path(src):
            self.path = str(src)
            self.text = Path(src).read_text()
            ext = ext or Path(src).suffix[1:]
        else:
            if not isinstance(src, str):
                raise TypeError(f"an IR source is a path or the IR text, got {type(src).__name__}")
            if "\n" not in src and Path(src).suffix[1:] in EXTENSIONS:
                raise FileNotFoundError(f"no IR file {src!r}")
            self.path = None
            self.text = src
            ext = ext or guess_ext(src)
        if ext not in EXTENSIONS:
            raise ValueError(f"IR sources are {', '.join(EXTENSIONS)}; got {ext!r}")
        self.ext = ext
        self.module = None
        if ext in ("ttir", "ttgir"):
            self._read_module()
        elif ext == "ptx":
            self._read_ptx()
        else:
            self._read_llir()

    # -- reading ---------------------------------------------------------------------------------
    def _read_module(self) -> None:
        self.module = parse_module(self.text)
        funcs = [op for op in self.module.ops if op.name == "tt.func"]
        public = [f for f in funcs if f.sym_visibility is None or f.sym_visibility.data != "private"]
        if not public:
            raise ValueError(f"{self.where}: the module has no public tt.func to launch")
        fn = public[0]
        self.name = fn.sym_name.data
        block = fn.body.blocks.first
        self.signature = {i: type_string(a.type) for i, a in enumerate(block.args)}
        self.arg_names = [a.name_hint or f"arg{i}" for i, a in enumerate(block.args)]
        self.options = {}
        attrs = self.module.attributes
        for key, opt in (("ttg.num-warps", "num_warps"), ("ttg.threads-per-warp", "threads_per_warp"),
                         ("ttg.num-ctas", "num_ctas")):
            if key in attrs:
                self.options[opt] = attrs[key].value.data
        if self.ext == "ttgir" and "num_warps" not in self.options:
            raise ValueError(f"{self.where}: a TTGIR module needs the \"ttg.num-warps\" attribute")
        if self.ext == "ttgir":
            self._check_layouts()

    def _check_layouts(self) -> None:
        """Every distributed layout must be laid out for the module's warps (a 64-lane AMD layout
        in a 32-lane module would index past its warp)."""
        from xdsl.dialects.builtin import TensorType
        want = {"threads per warp": self.options.get("threads_per_warp"), "warps": self.options.get("num_warps")}
        seen = set()
        for op in self.module.walk():
            for v in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
                enc = getattr(v.type, "encoding", None) if isinstance(v.type, TensorType) else None
                if not isinstance(enc, DistributedEncoding) or enc in seen:
                    continue
                seen.add(enc)
                try:
                    have = {"threads per warp": enc.warp_size, "warps": enc.num_warps}
                except (NotImplementedError, AttributeError):
                    continue
                for what, n in have.items():
                    if want[what] is not None and n != want[what]:
                        raise ValueError(f"{self.where}: the layout {enc} is laid out for {n} {what}; the module "
                                         f"has {want[what]} (\"ttg.threads-per-warp\", \"ttg.num-warps\")")

    def _read_ptx(self) -> None:
        m = _PTX_ENTRY.search(self.text)
        if m is None:
            raise ValueError(f"{self.where}: no .entry in the PTX")
        self.name = m.group(1)
        self.signature = {}
        for i, (ty, ptr) in enumerate(_PTX_PARAM.findall(m.group(2))):
            self.signature[i] = "*i8" if ptr else _PTX_TYPES.get(ty, ty)
        self.arg_names = [f"arg{i}" for i in self.signature]
        self.options = {}
        ntid = re.search(r"\.maxntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", self.text[m.end():])
        if ntid:
            threads = 1
            for g in ntid.groups():
                threads *= int(g or 1)
            self.options["num_warps"] = max(threads // 32, 1)

    def _read_llir(self) -> None:
        m = _LLIR_DEFINE.search(self.text)
        if m is None:
            raise ValueError(f"{self.where}: no kernel (a `define void @name(...)`) in the LLVM IR")
        self.name = m.group(1)
        depth, end = 1, m.end()
        while depth and end < len(self.text):  # the parameter list: `ptr addrspace(1) %a, i32 %b`
            depth += {"(": 1, ")": -1}.get(self.text[end], 0)
            end += 1
        self.signature = {}
        for i, param in enumerate(p.strip() for p in self.text[m.end():end - 1].split(",") if p.strip()):
            ty = param.split()[0]
            self.signature[i] = "*i8" if ty.startswith("ptr") else _LLIR_TYPES.get(ty, ty)
        self.arg_names = [f"arg{i}" for i in self.signature]
        self.options = {}

    # -- what the compiler asks ------------------------------------------------------------------
    @property
    def where(self) -> str:
        return self.path or f"<{self.ext} text>"

    def key(self) -> str:
        return hashlib.sha256(f"{self.ext}\0{self.text}".encode()).hexdigest()

    def hash(self) -> str:
        """Triton's name for :meth:`key`."""
        return self.key()

    def parse_options(self) -> dict:
        """Options the source fixes (Triton's ``IRSource.parse_options``)."""
        return dict(self.options)

    def __repr__(self) -> str:
        return f"IRSource({self.where!r}, ext={self.ext!r}, name={self.name!r})"
