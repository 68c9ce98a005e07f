"""Name resolution for the code generator: locals, the function's globals and closure, and the
Python builtins a kernel may use."""
from __future__ import annotations

import builtins
import types

from ..language import dtypes as tl
from ..language.core import constexpr, tensor
from ..runtime.interface import KernelInterface

_ALLOWED_GLOBAL_TYPES = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type, tl.dtype,
                         constexpr, types.MethodType, staticmethod)


def is_plain_data(value) -> bool:
    """A global that is a plain Python value (a number, string, bool, None, or a tuple/list of
    them), not a ``tl.constexpr``: what Triton 3.6 does not let a compiled kernel read."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return True
    return isinstance(value, (tuple, list)) and all(is_plain_data(v) for v in value)


def non_constexpr_global_message(name: str) -> str:
    return (f"Cannot access global variable {name} from within @jit'ed function. Triton kernels can only "
            f"access global variables that are instantiated as constexpr (`x = triton.language.constexpr(42)`). "
            f"Note that this is different from annotating a variable as constexpr "
            f"(`x: triton.language.constexpr = 42`), which is not supported. Alternatively, set the envvar "
            f"TRITON_ALLOW_NON_CONSTEXPR_GLOBALS=1 (knobs.compilation.allow_non_constexpr_globals), but this "
            f"is not promised to stay supported.")


def global_value(name: str, value):
    """What a global (or closure) variable means inside a kernel, or raise NameError-like
    TypeError for values a kernel cannot use."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return constexpr(value)
    if isinstance(value, _ALLOWED_GLOBAL_TYPES) or isinstance(value, KernelInterface) or callable(value):
        return value
    if isinstance(value, (tuple, list)) and all(isinstance(v, (bool, int, float, str, tl.dtype)) or v is None for v in value):
        return constexpr(tuple(value))
    raise TypeError(f"cannot use global variable '{name}' of type {type(value).__name__} inside a kernel; "
                    f"declare it as tl.constexpr or pass it as an argument")


PY_BUILTINS = {name: getattr(builtins, name) for name in (
    "range", "len", "min", "max", "abs", "int", "float", "bool", "isinstance", "getattr", "hasattr", "zip",
    "enumerate", "tuple", "list", "print", "ValueError", "TypeError", "AssertionError", "RuntimeError", "str",
    "repr", "round", "divmod", "pow", "sum", "any", "all", "reversed", "sorted", "type", "hash", "slice")}


def is_value(x) -> bool:
    return isinstance(x, (tensor, constexpr))
