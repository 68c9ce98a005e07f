"""Triton's dtypes: scalar types, pointer types and block (tensor) types.

Pure Python: importing this module must not import xDSL.  Conversion to IR types lives in
``tritium.frontend.builder``.
"""
from __future__ import annotations



class dtype:
    # the type names by kind (lists, as Triton's ``tl.dtype`` has them: code concatenates them)
    SINT_TYPES = ["int8", "int16", "int32", "int64"]
    UINT_TYPES = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES = ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64"]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES = ["void"]

    class KIND:  # promotion order: a Python scalar of a lower or equal kind adopts the tensor's type
        BOOLEAN, INTEGRAL, FLOATING = 0, 1, 2

    def __init__(self, name: str):
        name = _ALIASES.get(name, name)
        if name not in (*self.SINT_TYPES, *self.UINT_TYPES, *self.FP_TYPES, *self.OTHER_TYPES):
            raise ValueError(f"unknown dtype {name!r}")
        self.name = name
        if name in self.SINT_TYPES:
            self.int_signedness, self.int_bitwidth = "signed", int(name[3:])
            self.primitive_bitwidth = self.int_bitwidth
        elif name in self.UINT_TYPES:
            self.int_signedness = "unsigned"
            self.int_bitwidth = 1 if name == "int1" else int(name[4:])
            self.primitive_bitwidth = self.int_bitwidth
        elif name in self.FP_TYPES:
            self.primitive_bitwidth = {"fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64}.get(name, 8)
            self.fp_mantissa_width = {"fp8e4nv": 3, "fp8e5": 2, "fp8e4b15": 3, "fp8e4b8": 3, "fp8e5b16": 2,
                                      "fp16": 10, "bf16": 7, "fp32": 23, "fp64": 52}[name]
            self.exponent_bias = {"fp8e4nv": 7, "fp8e5": 15, "fp8e4b15": 15, "fp8e4b8": 8, "fp8e5b16": 16,
                                  "fp16": 15, "bf16": 127, "fp32": 127, "fp64": 1023}[name]
        else:
            self.primitive_bitwidth = 0

    # -- predicates --------------------------------------------------------------------------
    def is_fp8(self): return self.name.startswith("fp8")
    def is_fp8e4nv(self): return self.name == "fp8e4nv"
    def is_fp8e5(self): return self.name == "fp8e5"
    def is_fp16(self): return self.name == "fp16"
    def is_bf16(self): return self.name == "bf16"
    def is_fp32(self): return self.name == "fp32"
    def is_fp64(self): return self.name == "fp64"
    def is_int1(self): return self.name == "int1"
    def is_int8(self): return self.name == "int8"
    def is_int16(self): return self.name == "int16"
    def is_int32(self): return self.name == "int32"
    def is_int64(self): return self.name == "int64"
    def is_uint8(self): return self.name == "uint8"
    def is_uint16(self): return self.name == "uint16"
    def is_uint32(self): return self.name == "uint32"
    def is_uint64(self): return self.name == "uint64"
    def is_floating(self): return self.name in self.FP_TYPES
    def is_standard_floating(self): return self.name in self.STANDARD_FP_TYPES
    def is_int_signed(self): return self.name in self.SINT_TYPES
    def is_int_unsigned(self): return self.name in self.UINT_TYPES
    def is_int(self): return self.name in self.SINT_TYPES + self.UINT_TYPES
    def is_bool(self): return self.is_int1()
    def is_void(self): return self.name == "void"
    def is_ptr(self): return False
    def is_block(self): return False
    def is_dtype(self): return True

    def kind(self) -> int:
        if self.is_bool():
            return dtype.KIND.BOOLEAN
        if self.is_int():  # signed and unsigned are one kind: `u8 + 1` stays uint8, as in Triton
            return dtype.KIND.INTEGRAL
        return dtype.KIND.FLOATING

    def get_int_max_value(self) -> int:
        if self.is_int_signed():
            return 2 ** (self.int_bitwidth - 1) - 1
        return 2 ** self.int_bitwidth - 1

    def get_int_min_value(self) -> int:
        return -(2 ** (self.int_bitwidth - 1)) if self.is_int_signed() else 0

    @property
    def scalar(self) -> "dtype":
        return self

    def to_int_type(self) -> "dtype":
        """The unsigned integer type of the same width (used by bitcasts)."""
        return dtype({1: "int1", 8: "uint8", 16: "uint16", 32: "uint32", 64: "uint64"}[self.primitive_bitwidth])

    def with_element_ty(self, ty: "dtype") -> "dtype":
        return ty

    def __eq__(self, other) -> bool:
        return isinstance(other, dtype) and type(other) is type(self) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self):
        return (self.name,)

    @property
    def cache_key_part(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"triton.language.{_REPR.get(self.name, self.name)}"

    # tl.float32(x) casts in kernels; handled by the code generator
    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self!r} can only be called inside a @jit function")


class pointer_type(dtype):
    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        if not isinstance(element_ty, dtype):
            raise TypeError(f"pointer element type must be a dtype, got {element_ty!r}")
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = const
        self.name = f"{'const_' if const else ''}pointer<{element_ty}>"
        self.primitive_bitwidth = 64

    def is_ptr(self): return True
    def is_floating(self): return False
    def is_int(self): return False
    def is_const(self): return self.const
    def is_fp8(self): return False
    def is_bool(self): return False

    def kind(self):
        return -1

    def _key(self):
        return ("ptr", self.element_ty._key(), self.address_space, self.const)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return str(self)

    @property
    def scalar(self):
        return self


#: the most elements a tensor (a block) may have, as in Triton
TRITON_MAX_TENSOR_NUMEL = 1048576


class block_type(dtype):
    """The type of a tensor: element type plus a static shape of powers of two."""

    def __init__(self, element_ty: dtype, shape):
        self.element_ty = element_ty
        self.shape = tuple(int(s) for s in shape)
        if not self.shape:
            raise TypeError("0-d block types are not allowed")
        self.numel = 1
        for s in self.shape:
            self.numel *= s
        if self.numel > TRITON_MAX_TENSOR_NUMEL:
            # Triton's limit and wording: a larger block compiles to unbounded code per thread
            raise ValueError(f"numel ({self.numel}) exceeds triton maximum tensor numel ({TRITON_MAX_TENSOR_NUMEL})")
        self.name = f"<{'x'.join(map(str, self.shape))}, {element_ty}>"
        self.primitive_bitwidth = element_ty.primitive_bitwidth

    def is_block(self): return True
    def is_ptr(self): return False
    def is_floating(self): return self.element_ty.is_floating()
    def is_int(self): return self.element_ty.is_int()

    def get_block_shapes(self):
        return self.shape

    @property
    def scalar(self):
        return self.element_ty

    def with_element_ty(self, ty: dtype) -> "block_type":
        return block_type(ty, self.shape)

    def _key(self):
        return ("block", self.element_ty._key(), self.shape)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    def __getattr__(self, name):
        # element-type predicates (is_fp16, is_int_signed...) answer for the elements
        if name.startswith("is_"):
            return getattr(self.element_ty, name)
        raise AttributeError(name)


class function_type(dtype):
    def __init__(self, ret_types, param_types):
        self.ret_types = list(ret_types)
        self.param_types = list(param_types)
        self.name = "function"
        self.primitive_bitwidth = 0

    def _key(self):
        return ("fn", tuple(t._key() for t in self.ret_types), tuple(t._key() for t in self.param_types))


_ALIASES = {"bool": "int1", "float16": "fp16", "float32": "fp32", "float64": "fp64", "bfloat16": "bf16",
            "float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
            "float8e4b15": "fp8e4b15", "float8e4b8": "fp8e4b8", "float8e5b16": "fp8e5b16",
            "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2fnuz": "fp8e5b16",
            "half": "fp16", "float": "fp32", "double": "fp64", "i1": "int1", "i8": "int8", "i16": "int16",
            "i32": "int32", "i64": "int64", "u1": "int1", "u8": "uint8", "u16": "uint16", "u32": "uint32",
            "u64": "uint64"}
_REPR = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
         "fp8e4nv": "float8e4nv", "fp8e5": "float8e5", "fp8e4b15": "float8e4b15", "fp8e4b8": "float8e4b8",
         "fp8e5b16": "float8e5b16"}

void = dtype("void")
int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float8e5 = dtype("fp8e5")
float8e4nv = dtype("fp8e4nv")
float8e4b15 = dtype("fp8e4b15")
float8e4b8 = dtype("fp8e4b8")
float8e5b16 = dtype("fp8e5b16")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
pi32_t = pointer_type(int32)


def str_to_ty(name: str, c=None) -> dtype:
    """The type a signature string names: ``*fp32``, ``*kfp16`` (const pointer), ``i32``, ``u64``,
    ``fp16``, ``u1`` (bool), or ``constexpr`` (the type of the constant ``c``, as Triton's
    ``tl.str_to_ty(name, c)``); a tuple of names is a tuple type."""
    if isinstance(name, tuple):
        from .core import tuple_type
        return tuple_type([str_to_ty(x, c) for x in name], getattr(type(name), "_fields", None))
    if name.startswith("*"):
        rest = name[1:]
        const = rest.startswith("k")
        if const:
            rest = rest[1:]
        return pointer_type(str_to_ty(rest), const=const)
    if name.startswith("constexpr"):
        from .core import constexpr_type
        return constexpr_type(c)
    return dtype(name)


def ty_to_str(ty: dtype) -> str:
    if ty.is_ptr():
        return ("*k" if ty.const else "*") + ty_to_str(ty.element_ty)
    return {"int1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
            "uint16": "u16", "uint32": "u32", "uint64": "u64"}.get(ty.name, ty.name)
