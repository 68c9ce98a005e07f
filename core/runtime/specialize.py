"""How a launch argument specializes a kernel: its type string (``*fp32``, ``i32``...) and the
facts Triton specializes on (an integer equal to 1 becomes a constant; pointers and integers
divisible by 16 get ``tt.divisibility = 16``).

Each runtime argument maps to a hashable key part:
``("a", type_str, "D" or "")`` a runtime argument (D: divisible by 16), with a fourth element
placing the memory for tensors that carry their device (torch: the CUDA index or the
``torch.device``; DLPack: ``("dlpack", device type, index)``),
``("1",)`` an integer equal to 1 (compiled as the constant 1),
``("n",)`` ``None`` (compiled as the constant None),
``("t", cls, parts)`` a tuple (``cls`` is its named-tuple class, else ``tuple``) whose elements
specialize as arguments do; a ``tl.constexpr`` (or a ``@jit`` function, a dtype, a string) inside
it is ``("c", constexpr_key(value))``.  The kernel takes the tuple's run-time leaves as
parameters, in order (:func:`flatten_tuple_args`).
"""
from __future__ import annotations
from ..language.dtypes import dtype as tl_dtype, ty_to_str, dtype
from ..language.core import constexpr
from .interface import KernelInterface
from ..language import dtypes as tl
from .dlpack import describe

LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "debug", "stream",
                  "launch_cooperative_grid", "matrix_instr_nonkdim", "waves_per_eu", "kpack",
                  "default_dot_input_precision", "sanitize_overflow", "launch_pdl", "enable_reflect_ftz", "arch"}

_TORCH = {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float64": "fp64",
          "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32", "torch.int64": "i64", "torch.uint8": "u8",
          "torch.uint16": "u16", "torch.uint32": "u32", "torch.uint64": "u64", "torch.bool": "i1",
          "torch.float8_e4m3fn": "fp8e4nv", "torch.float8_e5m2": "fp8e5", "torch.float8_e4m3fnuz": "fp8e4b8",
          "torch.float8_e5m2fnuz": "fp8e5b16"}
_NUMPY = {"float32": "fp32", "float16": "fp16", "float64": "fp64", "int8": "i8", "int16": "i16", "int32": "i32",
          "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1",
          "bfloat16": "bf16", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5", "float8_e4m3fnuz": "fp8e4b8",
          "float8_e5m2fnuz": "fp8e5b16"}
_TYPESTR = {"f4": "fp32", "f2": "fp16", "f8": "fp64", "i1": "i8", "i2": "i16", "i4": "i32", "i8": "i64",
            "u1": "u8", "u2": "u16", "u4": "u32", "u8": "u64", "b1": "i1"}


class TensorWrapper:
    """``tritium.reinterpret(t, dtype)``: the same memory seen as another dtype of the same width
    (e.g. raw uint16 data as bf16), or a raw device address (an int) seen as a pointer to
    ``dtype`` — name the backend then (``kernel[grid](..., backend="nvidia")``)."""

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype
        self.data = getattr(base, "data", None)

    def data_ptr(self) -> int:
        return _address(self.base)

    @property
    def shape(self):
        return self.base.shape

    @property
    def device(self):
        return getattr(self.base, "device", None)

    def numel(self):
        n = getattr(self.base, "numel", None)
        return n() if callable(n) else getattr(self.base, "size", 0)

    def __getattr__(self, name):
        return getattr(self.base, name)


def reinterpret(tensor, dtype):
    """``tensor``'s memory seen as ``dtype`` (a ``tritium.language`` dtype, or a torch/numpy
    dtype of the same name); reinterpreting a wrapper as its base tensor's own dtype gives the
    base tensor back."""
    if isinstance(tensor, TensorWrapper):
        if not isinstance(dtype, tl_dtype) and dtype == getattr(tensor.base, "dtype", None):
            return tensor.base
        tensor = tensor.base
    elif not isinstance(tensor, int) and not any(hasattr(tensor, a) for a in (
            "data_ptr", "__array_interface__", "__cuda_array_interface__", "__dlpack__")):
        raise TypeError(f"cannot reinterpret a {type(tensor).__name__}: expected a tensor, an array or a device address")
    if not isinstance(dtype, tl_dtype):
        from .jit import type_canonicalisation_dict
        name = dtype.__name__ if isinstance(dtype, type) else str(dtype).split(".")[-1]  # np.uint8, torch.uint8
        canonical = type_canonicalisation_dict.get(name)
        if canonical is None or canonical == "void":
            raise TypeError(f"reinterpret expects a tritium.language dtype or a torch/numpy dtype, got {dtype!r}")
        dtype = tl_dtype(canonical)
    return TensorWrapper(tensor, dtype)


def _address(v) -> int:
    if isinstance(v, int):  # a raw device address, passed as tritium.reinterpret(address, dtype)
        return v
    if hasattr(v, "data_ptr"):
        return v.data_ptr()
    ai = getattr(v, "__array_interface__", None)
    if ai is not None:
        return ai["data"][0]
    cai = getattr(v, "__cuda_array_interface__", None)
    if cai is not None:
        return cai["data"][0]
    return 0


def pointer_type_str(v) -> str | None:
    if isinstance(v, TensorWrapper):
        return "*" + ty_to_str(v.dtype)
    dt = getattr(v, "dtype", None)
    if dt is not None and hasattr(v, "data_ptr") and str(dt).startswith("torch."):
        s = _TORCH.get(str(dt))
        if s is None:
            raise TypeError(f"unsupported tensor dtype {dt}")
        return "*" + s
    if hasattr(v, "__array_interface__") and dt is not None:
        s = _NUMPY.get(str(dt))
        if s is None:
            raise TypeError(f"unsupported array dtype {dt}")
        return "*" + s
    cai = getattr(v, "__cuda_array_interface__", None)
    if cai is not None:
        s = _TYPESTR.get(cai["typestr"][1:])
        if s is None:
            raise TypeError(f"unsupported __cuda_array_interface__ typestr {cai['typestr']}")
        return "*" + s
    return None


_FAST: dict = {}  # type -> key function, for the argument types seen most (tensors, arrays)


def _tensor_key(v, param):
    # The fourth element places the tensor: a CUDA device index (an int hashes far faster than a
    # torch.device), else the torch.device.  The launch path relies on it (a key that carries
    # every pointer's place fixes the launch device); binder.py inlines the same expression.
    ty = _TORCH_BY_DTYPE.get(v.dtype)
    if ty is None:
        name = _TORCH.get(str(v.dtype))
        if name is None:
            raise TypeError(f"argument '{param.name}': unsupported tensor dtype {v.dtype}")
        ty = _TORCH_BY_DTYPE[v.dtype] = "*" + name
    return ("a", ty, "" if v.data_ptr() & 15 else "D", v.get_device() if v.is_cuda else v.device)


class _TorchTypes(dict):
    """torch dtype -> pointer type string, filled on first sight (KeyError when unsupported)."""

    def __missing__(self, dtype):
        name = _TORCH.get(str(dtype))
        if name is None:
            raise KeyError(dtype)
        self[dtype] = "*" + name
        return self[dtype]


_TORCH_BY_DTYPE: dict = _TorchTypes()
_NUMPY_BY_DTYPE: dict = {}


def _ndarray_key(v, param):
    ty = _NUMPY_BY_DTYPE.get(v.dtype)
    if ty is None:
        name = _NUMPY.get(str(v.dtype))
        if name is None:
            raise TypeError(f"argument '{param.name}': unsupported array dtype {v.dtype}")
        ty = _NUMPY_BY_DTYPE[v.dtype] = "*" + name
    return ("a", ty, "" if v.__array_interface__["data"][0] & 15 else "D")


def int_type_str(v: int) -> str:
    """The type an integer launch argument is passed as, by its value: ``i32`` when it fits,
    else ``i64``, else ``u64`` (2**63 .. 2**64-1).  Outside [-2**63, 2**64) no kernel parameter
    can hold it: ``OverflowError``."""
    if -2**31 <= v < 2**31:
        return "i32"
    if -2**63 <= v < 2**63:
        return "i64"
    if 2**63 <= v < 2**64:
        return "u64"
    raise OverflowError(f"integer {v} is out of range for a kernel argument (it must lie in [-2**63, 2**64))")


def _int_key(v: int, param):
    ty = int_type_str(v)
    # A multiple of 16 (0 included) gets the divisibility fact; otherwise a 1 is compiled as the
    # constant 1.  do_not_specialize turns both off, do_not_specialize_on_alignment only the first.
    if v % 16 == 0 and not param.do_not_specialize and not param.do_not_specialize_on_alignment:
        return ("a", ty, "D")
    if v == 1 and not param.do_not_specialize:
        return ("1",)
    return ("a", ty, "")


_FAST.update({int: _int_key, bool: lambda v, p: ("a", "i1", ""), float: lambda v, p: ("a", "fp32", ""),
              type(None): lambda v, p: ("n",)})


def constexpr_key(v) -> tuple:
    """The key part of a constexpr argument: its type and value (a ``@jit`` function: its
    source hash; anything else: its repr)."""
    if type(v) is int:  # the usual constexpr: a block size
        return ("int", v)
    v = v.value if type(v) is constexpr else v
    if isinstance(v, (int, float, bool, str, type(None), tuple)):
        return (type(v).__name__, v)
    if isinstance(v, KernelInterface) and hasattr(type(v), "cache_key"):
        return ("fn", v.cache_key)
    return (type(v).__name__, repr(v))


def is_namedtuple_type(cls) -> bool:
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")


def _tuple_leaf_key(v, param) -> tuple:
    if isinstance(v, constexpr):
        return ("c", constexpr_key(v))
    if isinstance(v, tuple):
        return _tuple_key(v, param)
    if isinstance(v, (str, dtype, type)) or (callable(v) and not hasattr(v, "data_ptr")
                                             and pointer_type_str(v) is None):
        return ("c", constexpr_key(v))  # a function, a @jit function, a dtype: compile-time
    return specialize_arg(v, param)


def _tuple_key(v: tuple, param) -> tuple:
    cls = type(v) if is_namedtuple_type(type(v)) else tuple
    return ("t", cls, tuple([_tuple_leaf_key(x, param) for x in v]))


def flatten_tuple_args(values, key_parts, names) -> tuple[list, list, list]:
    """The launch's arguments with every tuple argument replaced by its leaves, depth first:
    ``(values, key parts, names)``, a leaf named ``x[1][0]``.  The kernel's run-time parameters
    are the leaves whose key part is ``("a", ...)``, in this order."""
    out_v, out_k, out_n = [], [], []

    def go(v, k, name):
        if k[0] == "t":
            for i, (x, kx) in enumerate(zip(v, k[2])):
                go(x, kx, f"{name}[{i}]")
        else:
            out_v.append(v)
            out_k.append(k)
            out_n.append(name)
    for v, k, n in zip(values, key_parts, names):
        go(v, k, n)
    return out_v, out_k, out_n


def specialize_arg(v, param) -> tuple:
    fast = _FAST.get(type(v))
    if fast is not None:
        return fast(v, param)
    if isinstance(v, tuple):
        return _tuple_key(v, param)
    if type(v).__module__ == "torch" and type(v).__name__ in ("Tensor", "Parameter") and hasattr(v, "data_ptr"):
        _FAST[type(v)] = _tensor_key
        return _tensor_key(v, param)
    if type(v).__name__ == "ndarray" and type(v).__module__ == "numpy":
        _FAST[type(v)] = _ndarray_key
        return _ndarray_key(v, param)
    if v is None:
        return ("n",)
    if isinstance(v, bool):
        return ("a", "i1", "")
    if isinstance(v, int):
        return _int_key(int(v), param)
    if isinstance(v, float):
        return ("a", "fp32", "")
    ty = pointer_type_str(v)
    if ty is not None:
        addr = _address(v)
        return ("a", ty, "D" if addr % 16 == 0 else "")
    if hasattr(v, "__dlpack__") and hasattr(v, "__dlpack_device__"):
        addr, dtype, kind, index = describe(v)
        if dtype is None:
            raise TypeError(f"argument '{param.name}': unsupported DLPack dtype")
        return ("a", "*" + dtype, "" if addr & 15 else "D", ("dlpack", kind, index))
    import numpy as _np  # numpy scalars are common in host code
    if isinstance(v, _np.integer):
        return specialize_arg(int(v), param)
    if isinstance(v, _np.floating):
        return ("a", "fp64" if v.dtype == _np.float64 else "fp32", "")
    raise TypeError(f"argument '{param.name}': cannot pass a value of type {type(v).__name__} to a kernel "
                    "(expected a tensor/array, an int, a float, a bool or None)")


def annotation_type(ann) -> str:
    """The scalar signature type a parameter's dtype annotation fixes (``v: tl.int8``,
    ``"tl.float16"``, ``n: int`` -> ``i32``, ``b: bool`` -> ``i1``), or ``""`` when the
    annotation names no scalar dtype (none, ``tl.constexpr``, ``torch.Tensor``, pointers...)."""
    import inspect
    from .jit import type_canonicalisation_dict
    if ann is None or ann is inspect.Parameter.empty:
        return ""
    if isinstance(ann, str):
        name = ann.strip()
        for prefix in ("tl.", "triton.language.", "tritium.language."):
            name = name.removeprefix(prefix)
    elif isinstance(ann, tl.dtype) and not ann.is_ptr() and not ann.is_block():
        name = ann.name
    elif isinstance(ann, type) and ann in (int, float, bool):
        name = ann.__name__
    else:
        return ""
    ty = type_canonicalisation_dict.get(name.replace("_t", ""), "")
    if ty in ("", "void") or ty.startswith("*"):
        return ""
    return "i1" if ty == "u1" else ty


def annotated_specializer(base, ty: str):
    """Wrap ``base`` (a ``specialize_arg``-like function) so that a scalar argument is passed as
    the annotated type ``ty``.  Integers keep their divisibility fact (but a 1 is not made a
    constant); floats and bools are not specialized."""
    keep_attr = not (ty == "i1" or ty.startswith(("fp", "bf")))

    def spec(v, param):
        key = base(v, param)
        if key[0] == "1":
            return ("a", ty, "")
        if key[0] != "a" or key[1].startswith("*") or len(key) > 3:
            return key  # None, tuples, pointers: as they are
        return ("a", ty, key[2] if keep_attr else "")

    return spec
