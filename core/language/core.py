"""The language's values: ``constexpr``, ``tensor``, and the ``@builtin`` marker.

A builtin is a Python function the code generator calls at compile time with the IR builder
(``_builder=``); it emits IR through ``tritium.frontend.semantic``.  Calling one outside a
``@jit`` function raises.
"""
from __future__ import annotations

import builtins
import functools
from typing import Any

from .dtypes import dtype

TRITON_BUILTIN = "__tritium_builtin__"


def builtin(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if kwargs.get("_builder") is None:
            raise ValueError(f"{fn.__name__}() can only be called inside a @jit function")
        return fn(*args, **kwargs)

    setattr(wrapper, TRITON_BUILTIN, True)
    return wrapper


def must_use_result(fn_or_note=None, note=True):
    """Mark a function whose result must be used: a kernel that calls it as a statement of its own
    (``f(x)`` rather than ``y = f(x)``) is rejected at compile time.  ``@must_use_result`` or
    ``@must_use_result("what to do instead")`` (the text ends the error message), above ``@jit``
    or on a builtin."""
    if isinstance(fn_or_note, str) or fn_or_note is None:
        text = fn_or_note if fn_or_note is not None else True
        return lambda fn: must_use_result(fn, text)
    fn_or_note._must_use_result = note
    return fn_or_note


def is_builtin(fn) -> bool:
    """Marked by ``@builtin`` or by Triton's own marker (``__triton_builtin__``, which libraries
    such as PyTorch Inductor set on their compile-time helpers)."""
    return bool(getattr(fn, TRITON_BUILTIN, False) or getattr(fn, "__triton_builtin__", False))


def builder_keyword(fn) -> str:
    """The keyword a builtin takes the IR builder under: ``_builder``, or ``_semantic`` (Triton's
    later name) for a foreign builtin that declares only that one."""
    if getattr(fn, TRITON_BUILTIN, False):
        return "_builder"
    return _foreign_builder_keyword(getattr(fn, "__func__", fn))


@functools.lru_cache(maxsize=None)
def _foreign_builder_keyword(fn) -> str:
    import inspect
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return "_builder"
    return "_semantic" if "_semantic" in params and "_builder" not in params else "_builder"


class FrontendSemantics:
    """The frontend's semantic modules, which the builtins forward to (``semantics.semantic``,
    ``semantics.semantic_tensor``, ...).  The frontend registers them when it loads
    (``tritium.frontend.codegen``); the language does not import the frontend, which needs xDSL,
    and builtins run only while the frontend generates a kernel."""

    def register(self, *modules) -> None:
        for m in modules:
            setattr(self, m.__name__.rpartition(".")[2], m)

    def __getattr__(self, name):
        raise RuntimeError(f"the frontend's {name} is not loaded: the language's builtins run only "
                           "inside a @jit function being compiled")


#: the frontend's semantic modules (:class:`FrontendSemantics`)
semantics = FrontendSemantics()


def _sem():
    return semantics.semantic


class JITCallable:
    """What ``@jit`` makes (:class:`tritium.runtime.jit.JITFunction` derives from it): the language
    and the frontend recognise a function that a kernel may call by this class, without importing
    the runtime that launches kernels."""

    __slots__ = ()


class const:
    """Annotation of a kernel parameter whose pointer points to constant data (``x_ptr: tl.const``):
    its type is ``pointer_type(..., const=True)`` and nothing may be stored through it.  Constness
    is part of the pointer type, so the usual rules of type consistency apply (both branches of an
    ``if``, every ``return`` of a function)."""


class constexpr:
    """A compile-time value.  Arithmetic between constexprs happens in Python."""

    def __init__(self, value: Any):
        self.value = value.value if isinstance(value, constexpr) else value

    @property
    def type(self) -> "constexpr_type":
        return constexpr_type(self.value)

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __hash__(self):
        return hash(self.value)

    def __index__(self):
        return self.value

    def __bool__(self):
        return bool(self.value)

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    def __iter__(self):  # a constexpr tuple unpacks and iterates as its value (also outside kernels)
        return iter(self.value)

    def __len__(self):
        return len(self.value)

    def __getattr__(self, name):
        if name in ("value", "type"):
            raise AttributeError(name)
        return getattr(self.value, name)


def _binop(op):
    def method(self, other):
        return constexpr(op(self.value, _unwrap_if_constexpr(other)))
    return method


def _rbinop(op):
    def method(self, other):
        return constexpr(op(_unwrap_if_constexpr(other), self.value))
    return method


import operator as _op  # noqa: E402

for _name, _fn in [("add", _op.add), ("sub", _op.sub), ("mul", _op.mul), ("truediv", _op.truediv),
                   ("floordiv", _op.floordiv), ("mod", _op.mod), ("pow", _op.pow), ("and", _op.and_),
                   ("or", _op.or_), ("xor", _op.xor), ("lshift", _op.lshift), ("rshift", _op.rshift)]:
    setattr(constexpr, f"__{_name}__", _binop(_fn))
    setattr(constexpr, f"__r{_name}__", _rbinop(_fn))
for _name, _fn in [("eq", _op.eq), ("ne", _op.ne), ("lt", _op.lt), ("le", _op.le), ("gt", _op.gt),
                   ("ge", _op.ge)]:
    setattr(constexpr, f"__{_name}__", _binop(_fn))
constexpr.__neg__ = lambda self: constexpr(-self.value)
constexpr.__pos__ = lambda self: constexpr(+self.value)
constexpr.__invert__ = lambda self: constexpr(~self.value)
constexpr.__abs__ = lambda self: constexpr(abs(self.value))


def _unwrap_if_constexpr(o):
    return o.value if isinstance(o, constexpr) else o


def _constexpr_to_value(o):
    return _unwrap_if_constexpr(o)


def is_constexpr_value(o) -> bool:
    return isinstance(o, constexpr)


class tensor:
    """A value in a kernel: a scalar (``type`` is a ``dtype``) or a block (``type`` is a
    ``block_type``).  ``handle`` is the IR value."""

    def __init__(self, handle, type: dtype):
        self.handle = handle
        self.type = type
        self.dtype = type.scalar
        self.shape = builtins.tuple(constexpr(s) for s in type.shape) if type.is_block() else ()
        self.numel = constexpr(type.numel if type.is_block() else 1)

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(str(s.value) for s in self.shape)}]"

    def __repr__(self) -> str:
        return f"tensor<{self.type}>"

    def __bool__(self):
        raise ValueError("the truth value of a tensor is only known at run time; use it in `if` "
                         "inside a @jit function, or compare constexprs")

    @property
    def T(self):
        raise ValueError(".T is only available inside a @jit function")

    # Arithmetic dunders are dispatched by the code generator to ``semantic`` with the builder;
    # see ``tritium.frontend.codegen``.  Methods below are builtins callable as ``x.method()``.

    @builtin
    def to(self, dtype, fp_downcast_rounding=None, bitcast=False, _builder=None):
        return _sem().cast(self, _unwrap_if_constexpr(dtype), _builder,
                           _unwrap_if_constexpr(fp_downcast_rounding), _unwrap_if_constexpr(bitcast))

    @builtin
    def __getitem__(self, slices, _builder=None):
        return _sem().getitem(self, slices, _builder)

    @builtin
    def item(self, _builder=None):
        """The one element of a single-element tensor, as a scalar."""
        if not self.type.is_block():
            return self
        if self.type.numel != 1:
            raise ValueError(f"item() needs a tensor of one element, got shape {list(self.type.shape)}")
        return semantics.semantic_tensor.reshape(self, [], False, _builder)

    def _member(name):  # noqa: N805 - helper building methods that forward to tl functions
        def method(self, *args, _builder=None, **kwargs):
            from .. import language
            return getattr(language, name)(self, *args, _builder=_builder, **kwargs)
        method.__name__ = name
        setattr(method, TRITON_BUILTIN, True)
        return method

    for _n in ("reshape", "view", "trans", "permute", "expand_dims", "broadcast_to", "split", "ravel",
               "sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce", "cumsum", "cumprod",
               "associative_scan", "sigmoid", "softmax", "exp", "exp2", "log", "log2", "sqrt", "rsqrt",
               "sin", "cos", "abs", "floor", "ceil", "erf", "store", "logical_and", "logical_or",
               "sort", "flip", "topk", "gather", "histogram", "reduce_or", "cdiv", "fma", "umulhi",
               "join", "interleave", "cast", "advance", "sqrt_rn", "atomic_add", "atomic_and", "atomic_cas",
               "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor"):
        locals()[_n] = _member(_n)
    del _n, _member


class constexpr_type:
    """The type of a compile-time value (``x.type`` of a constexpr ``x``), carrying the value."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __eq__(self, other):
        return isinstance(other, constexpr_type) and type(self.value) is type(other.value) \
            and self.value == other.value

    def __hash__(self):
        try:
            return hash(("constexpr_type", self.value))
        except TypeError:
            return hash(("constexpr_type", repr(self.value)))

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value!r}]"

    __str__ = __repr__

    def mangle(self) -> str:
        return repr(self)


def _type_of(v):
    if isinstance(v, (tensor, constexpr, tuple)):
        return v.type
    if isinstance(v, builtins.tuple):
        return tuple_type([_type_of(x) for x in v], getattr(type(v), "_fields", None))
    t = getattr(v, "type", None)
    return t if t is not None and not callable(t) else constexpr_type(v)


class tuple_type:
    """The type of a tuple of kernel values: its element types (``constexpr_type`` for the
    compile-time ones) and, for a named tuple, its field names."""

    def __init__(self, types, fields=None):
        self.types = list(types)
        self.fields = list(fields) if fields else [""] * len(self.types)
        self.name = "[" + ",".join(f"{k}:{v}" for k, v in zip(self.fields, self.types)) + "]"

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__

    def __iter__(self):
        return iter(self.types)

    def __len__(self):
        return len(self.types)

    def __getitem__(self, index):
        return self.types[_unwrap_if_constexpr(index)]

    def __eq__(self, other):
        return type(self) is type(other) and self.types == other.types and self.fields == other.fields

    def __hash__(self):
        return hash((builtins.tuple(map(str, self.types)), builtins.tuple(self.fields)))

    def mangle(self) -> str:
        return "T" + "_".join(t.mangle() if hasattr(t, "mangle") else str(t) for t in self.types) + "T"


class tuple(builtins.tuple):
    """``tl.tuple(values)``: a tuple of kernel values (tensors, constexprs, nested tuples).

    It is a Python tuple: indexing with a constexpr, ``len``, iteration, unpacking, ``+`` and
    ``==`` work at compile time as they do on tuples.  ``type`` is its ``tuple_type``; a tuple
    made with a ``tuple_type`` that names fields answers those names as attributes, as a named
    tuple does."""

    def __new__(cls, args=(), type=None):
        obj = super().__new__(cls, _unwrap_if_constexpr(args))
        fields = None
        if isinstance(type, tuple_type):
            fields = type.fields
        elif type is not None:
            fields = getattr(type, "_fields", None)
        obj._fields_names = builtins.tuple(fields) if fields and any(fields) else None
        return obj

    def __init__(self, args=(), type=None):
        pass

    @property
    def values(self) -> list:
        return list(self)

    @property
    def type(self) -> tuple_type:
        return tuple_type([_type_of(v) for v in self], self._fields_names)

    def __getattr__(self, name):
        fields = self.__dict__.get("_fields_names")
        if fields and name in fields:
            return self[fields.index(name)]
        raise AttributeError(f"'tuple' object has no attribute '{name}'")

    def __getitem__(self, idx):
        idx = _unwrap_if_constexpr(idx)
        if isinstance(idx, slice):
            return tuple(super().__getitem__(idx))
        return super().__getitem__(idx)

    def __add__(self, other):
        return tuple(list(self) + list(_unwrap_if_constexpr(other)))

    def __radd__(self, other):
        return tuple(list(_unwrap_if_constexpr(other)) + list(self))

    def __mul__(self, other):
        return tuple(list(self) * int(_unwrap_if_constexpr(other)))

    def __eq__(self, other):
        other = _unwrap_if_constexpr(other)
        return isinstance(other, builtins.tuple) and list(self) == list(other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return builtins.tuple.__hash__(self)

    def __repr__(self) -> str:
        return f"({', '.join(repr(x) for x in self)}{',' if len(self) == 1 else ''})"


class slice_:  # placeholder type name used in messages
    pass


def is_block(x) -> bool:
    return isinstance(x, tensor) and x.type.is_block()


class static_range:
    """``for i in tl.static_range(...)``: the loop is unrolled at compile time."""

    def __init__(self, arg1, arg2=None, step=None):
        self.step = constexpr(1) if step is None else constexpr(step)
        if arg2 is None:
            self.start, self.end = constexpr(0), constexpr(arg1)
        else:
            self.start, self.end = constexpr(arg1), constexpr(arg2)

    def __iter__(self):
        raise RuntimeError("static_range can only be used in @jit'd functions")


class range:
    """``for i in tl.range(start, end, step, num_stages=..., loop_unroll_factor=...)``: a loop in
    the IR (like ``range``) carrying scheduling hints.  ``num_stages`` pipelines this loop with that
    many stages (GPU backends); ``loop_unroll_factor`` unrolls it in TTIR.  ``flatten=True`` on a
    loop holding one loop (``tt.flatten`` in TTIR) runs the nest as one loop on every backend (the
    ``fuse-nested-loops`` pass).  ``disallow_acc_multi_buffer`` and ``warp_specialize`` are
    recorded on the loop as Triton does and otherwise change nothing: no backend here
    multi-buffers accumulators or specialises warps.  ``disable_licm=True``
    keeps loop-invariant code inside this loop (no hoisting by the ``licm`` pass, nor by LLVM:
    ``llvm.loop_annotation`` on the loop, ``llvm.licm.disable`` on its back edge), which keeps
    long-lived values out of the loop's registers."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False, disable_licm=False):
        self.step = constexpr(1) if step is None else step
        if arg2 is None:
            self.start, self.end = constexpr(0), arg1
        else:
            self.start, self.end = arg1, arg2
        self.num_stages = num_stages
        self.loop_unroll_factor = loop_unroll_factor
        self.disallow_acc_multi_buffer = disallow_acc_multi_buffer
        self.flatten = flatten
        self.warp_specialize = warp_specialize
        self.disable_licm = disable_licm

    def __iter__(self):
        raise RuntimeError("tl.range can only be used in @jit'd functions")


class condition:
    """``while tl.condition(c, disable_licm=True):`` a while loop's condition ``c`` with loop
    hints: ``disable_licm`` keeps loop-invariant code inside the loop, as for ``tl.range``."""

    def __init__(self, arg1, disable_licm=False):
        self.condition = arg1
        self.disable_licm = disable_licm


class PropagateNan:
    NONE = 0x0000
    ALL = 0xFFFF


def constexpr_function(fn):
    """``@triton.constexpr_function``: a plain Python function a kernel may call on constexpr
    arguments; it runs at compile time and its result is a constexpr.  (Any Python function called
    with only constexpr arguments already runs this way; the decorator documents the intent.)"""
    setattr(fn, "__tritium_constexpr_function__", True)
    return fn


def extern(fn):
    """``@tl.core.extern``: marks a function that emits IR itself (a device-library wrapper).
    It receives the code generator's builder as ``_builder`` (or ``_semantic``, Triton's name)."""
    import inspect
    takes_semantic = "_semantic" in inspect.signature(fn).parameters

    @functools.wraps(fn)
    def wrapper(*args, _builder=None, **kwargs):
        if _builder is None and kwargs.get("_semantic") is None:
            raise ValueError(f"{fn.__name__}() can only be called inside a @jit function")
        if takes_semantic:
            kwargs["_semantic"] = _builder if _builder is not None else kwargs.get("_semantic")
            return fn(*args, **kwargs)
        return fn(*args, _builder=_builder, **kwargs)

    setattr(wrapper, TRITON_BUILTIN, True)
    return wrapper


def extern_elementwise(lib_name, lib_path, args, arg_type_symbol_dict, is_pure, _builder=None, _semantic=None):
    """Call a device-library function elementwise: ``arg_type_symbol_dict`` maps a tuple of
    argument dtypes to ``(symbol, result dtype)``.  Arguments are broadcast together; when their
    types match no entry they are first converted to their common type."""
    builder = _builder if _builder is not None else _semantic
    if builder is None:
        raise ValueError("extern_elementwise() can only be called inside a @jit function")
    impl = semantics.semantic_extern.extern_elementwise
    return impl(_unwrap_if_constexpr(lib_name), _unwrap_if_constexpr(lib_path), list(args),
                arg_type_symbol_dict, _unwrap_if_constexpr(is_pure), builder)


setattr(extern_elementwise, TRITON_BUILTIN, True)


def get_int_dtype(bitwidth: int, signed: bool) -> dtype:
    """The integer dtype of ``bitwidth`` bits (1 is ``int1``), signed or not."""
    bitwidth, signed = _unwrap_if_constexpr(bitwidth), _unwrap_if_constexpr(signed)
    if bitwidth == 1:
        return dtype("int1")
    if bitwidth not in (8, 16, 32, 64):
        raise ValueError(f"no integer dtype of {bitwidth} bits (expected 1, 8, 16, 32 or 64)")
    return dtype(f"{'' if signed else 'u'}int{bitwidth}")


def __getattr__(name):
    # Triton's ``triton.language.core`` also holds every builtin (``core.view``, ``core.reshape``,
    # ...); Tritium's live in ``.functions``.
    from . import functions
    try:
        return getattr(functions, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
