"""The interpreter's :class:`Driver`: its "binary" is the optimized TTIR text, loaded by parsing it
and translating it to closures once; launching binds the arguments into a fresh virtual address
space and runs every program of the grid."""
from __future__ import annotations

import hashlib
import os
import threading

import numpy as np

from ...hooks.types import GPUTarget
from ...runtime.driver import Driver
from ...ttgir.ir import parse_module  # TTIR, or TTGIR (its layouts are ignored)
from .errors import InterpreterError
from .address_space import AddressSpace
from .numerics import rounder
from .ops_arith import wrap_int
from .translate import Kernel

#: ``warp_size`` 1: a program is one logical thread that executes each block-level op whole,
#: vectorised by numpy; there are no lanes to group into warps.
TARGET = GPUTarget("interpreter", "numpy", 1)

_DTYPES = {"fp16": np.float16, "fp32": np.float32, "fp64": np.float64, "bf16": np.uint16,
           "fp8e4nv": np.uint8, "fp8e5": np.uint8, "fp8e4b15": np.uint8, "fp8e4b8": np.uint8,
           "fp8e5b16": np.uint8, "i1": np.bool_, "int1": np.bool_,
           "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
           "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
           "float16": np.float16, "float32": np.float32, "float64": np.float64, "int8": np.int8,
           "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "bool": np.bool_}


def _is_torch(arg) -> bool:
    return type(arg).__module__.startswith("torch")


def _torch_array(t) -> np.ndarray:
    """A numpy view sharing a CPU tensor's memory (bf16/fp8 as their bit patterns)."""
    import torch

    if t.device.type != "cpu":
        raise InterpreterError(f"the interpreter runs on host memory; got a tensor on {t.device}")
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    elif t.element_size() == 1 and t.dtype.is_floating_point:
        t = t.view(torch.uint8)
    return t.numpy()


_PARSED: dict[str, object] = {}


def parse_binary(text: str):
    """The module of an interpreter binary, parsed once per process (a small LRU keyed by hash)."""
    key = hashlib.sha256(text.encode()).hexdigest()
    module = _PARSED.pop(key, None)
    if module is None:
        module = parse_module(text)
    _PARSED[key] = module
    while len(_PARSED) > 64:
        _PARSED.pop(next(iter(_PARSED)))
    return module


def _text(binary) -> str:
    return binary.decode() if isinstance(binary, (bytes, bytearray)) else str(binary)



class NonContiguousArgumentWarning(UserWarning):
    """A non-contiguous numpy view passed for a pointer parameter."""


def _warn_non_contiguous(arg: np.ndarray, name: str, kernel: str) -> None:
    # The kernel addresses the view's underlying buffer from its first element, as a GPU kernel
    # given a strided tensor does: right for a kernel that indexes with the strides, wrong for one
    # that assumes consecutive elements.
    import os
    import sys
    import warnings
    core = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    frame, level = sys._getframe(1), 2
    while frame is not None and (frame.f_code.co_filename.startswith(core)
                                 or frame.f_code.co_filename.startswith("<tritium")):
        frame, level = frame.f_back, level + 1
    strides = tuple(s // arg.itemsize for s in arg.strides)
    warnings.warn(NonContiguousArgumentWarning(
        f"{kernel}: argument {name} is a non-contiguous numpy view (shape {arg.shape}, element strides "
        f"{strides}): the kernel reads and writes its underlying buffer from its first element, as "
        f"a GPU kernel does a strided tensor's; index it with its strides, or pass "
        f"np.ascontiguousarray({name}) (and copy the result back)"), stacklevel=level)

class InterpreterDriver(Driver):
    backend = "interpreter"

    def __init__(self):
        self._kernels: dict[tuple[str, str], Kernel] = {}
        self._lock = threading.Lock()

    def is_active(self) -> bool:
        return True

    def get_current_target(self):
        return TARGET

    def get_device_properties(self, device: int = 0) -> dict:
        return {"multiprocessor_count": os.cpu_count() or 1, "max_shared_mem": 1 << 30,
                "warp_size": TARGET.warp_size, "name": "tritium interpreter (numpy)",
                "max_num_regs": 1 << 16, "mem_clock_rate": 0, "mem_bus_width": 0}

    # -- binaries -----------------------------------------------------------------------------
    def load_binary(self, name: str, binary, metadata: dict, device: int = 0) -> Kernel:
        text = _text(binary)
        key = (name, hashlib.sha256(text.encode()).hexdigest())
        with self._lock:
            kernel = self._kernels.get(key)
            if kernel is None:
                kernel = self._kernels[key] = Kernel(parse_binary(text), name or None)
        return kernel

    def check_binary(self, binary, metadata: dict) -> None:
        text = _text(binary)
        if not text.strip():
            raise ValueError("empty binary")
        try:
            module = parse_binary(text)
        except Exception as exc:
            raise ValueError(f"the interpreter binary is not valid TTIR: {exc}") from exc
        name = (metadata or {}).get("name")
        funcs = {op.sym_name.data for op in module.ops if op.name == "tt.func"}
        if name and name not in funcs:
            raise ValueError(f"kernel {name!r} is not in the binary (it defines {sorted(funcs)})")

    # -- launching ----------------------------------------------------------------------------
    def make_launcher(self, handle: Kernel, metadata: dict, signature: dict):
        kernel = handle
        types = kernel.arg_types
        constexpr = {i for i, t in (signature or {}).items() if str(t) == "constexpr"}
        names = list((metadata or {}).get("arg_names", ()))

        def launch(grid, stream, args):
            if isinstance(grid, int):
                grid = (grid,)
            args = list(args)
            if len(args) != len(types) and constexpr:
                args = [a for i, a in enumerate(args) if i not in constexpr]
            if len(args) != len(types):
                raise InterpreterError(f"expected {len(types)} runtime arguments, got {len(args)}",
                                       kernel=kernel.name)
            space = AddressSpace()
            values = [self._bind(space, a, t, names[i] if i < len(names) else f"#{i}", kernel.name)
                      for i, (a, t) in enumerate(zip(args, types))]
            kernel.run(grid, values, space)
        return launch

    @staticmethod
    def _bind(space: AddressSpace, arg, info, name: str, kernel: str = ""):
        if info.kind == "ptr":
            if not isinstance(arg, np.ndarray) and not _is_torch(arg) and hasattr(arg, "base") \
                    and hasattr(arg, "dtype"):
                arg = arg.base  # a reinterpreting wrapper: the same memory, the kernel's own dtype
            if arg is None:
                return np.int64(0)
            if isinstance(arg, np.ndarray):
                if not arg.flags.c_contiguous and arg.size > 1:
                    _warn_non_contiguous(arg, name, kernel)
                return space.add(arg, name)
            if _is_torch(arg):
                return space.add(_torch_array(arg), name)
            if isinstance(arg, (int, np.integer)):
                return np.int64(arg)
            raise InterpreterError(f"argument {name}: expected an array for a pointer, got {type(arg).__name__}")
        if _is_torch(arg):
            arg = arg.item()
        if info.kind == "bool":
            return np.bool_(arg)
        if info.kind == "int":
            return info.hold(wrap_int(int(arg), info.bits))
        if info.kind == "float":
            return rounder(info)(np.float64(arg))
        raise InterpreterError(f"argument {name}: cannot pass {type(arg).__name__} as {info.name}")

    # -- memory -------------------------------------------------------------------------------
    def owns(self, arg) -> bool:
        if isinstance(arg, np.ndarray):
            return True
        if _is_torch(arg):
            return getattr(getattr(arg, "device", None), "type", None) == "cpu"
        return False

    def device_of(self, arg):
        return 0 if self.owns(arg) else None

    def empty(self, shape, dtype: str, device: int = 0):
        return np.empty(tuple(shape), _DTYPES[str(dtype).replace("torch.", "")])

    def from_numpy(self, array, device: int = 0):
        return np.array(array, copy=True)

    def to_numpy(self, arg):
        if _is_torch(arg):
            import torch

            t = arg.detach().cpu()
            if t.dtype == torch.bfloat16:
                t = t.float()
            return t.numpy().copy()
        return np.array(arg, copy=True)
