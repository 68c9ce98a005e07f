"""Reading a DLPack producer's tensor description (data pointer, dtype, device) without taking
ownership: the capsule is asked for and released, the producer keeps the memory alive.  Used to
specialize kernels on DLPack arguments and by drivers to find their pointers."""
from __future__ import annotations

import ctypes
import sys

KDLCPU, KDLCUDA, KDLCUDAHOST, KDLROCM, KDLCUDAMANAGED = 1, 2, 3, 10, 13
CUDA_DEVICES = (KDLCUDA, KDLCUDAHOST, KDLCUDAMANAGED)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("byte_offset", ctypes.c_uint64)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

# (type code, bits) -> Tritium's type string; codes: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool
_DTYPES = {(0, 8): "i8", (0, 16): "i16", (0, 32): "i32", (0, 64): "i64", (1, 8): "u8", (1, 16): "u16",
           (1, 32): "u32", (1, 64): "u64", (2, 16): "fp16", (2, 32): "fp32", (2, 64): "fp64", (4, 16): "bf16",
           (6, 8): "i1", (1, 1): "i1"}


def describe(obj) -> tuple[int, str | None, int, int]:
    """``(data pointer, dtype string or None, device type, device id)`` of a DLPack producer."""
    kind, index = obj.__dlpack_device__()
    # -1: a CUDA consumer asks for no synchronisation; host producers want no stream at all.
    stream = -1 if int(kind) in CUDA_DEVICES else None
    try:
        capsule = _export(obj, stream)
    except BufferError:
        # Some producers (torch since 2.10) export a CUDA tensor only while its device is
        # current; ask again with it current, as a consumer on that device would.
        guard = _device_guard(int(kind), int(index))
        if guard is None:
            raise
        with guard:
            capsule = _export(obj, stream)
    # A DLManagedTensor starts with its DLTensor (the unversioned capsule asked for above).
    t = DLTensor.from_address(_get_pointer(capsule, b"dltensor"))
    dtype = _DTYPES.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
    return (t.data or 0) + t.byte_offset, dtype, int(kind), int(index)


def _export(obj, stream):
    try:
        return obj.__dlpack__(stream=stream)
    except TypeError:
        return obj.__dlpack__()


def _device_guard(kind: int, index: int):
    """A context making CUDA device ``index`` current through torch, when torch has initialised
    CUDA (the producers that ask for it are torch's tensors); None otherwise."""
    torch = sys.modules.get("torch")
    if kind not in CUDA_DEVICES or torch is None or not torch.cuda.is_initialized():
        return None
    if torch.cuda.current_device() == index:
        return None
    return torch.cuda.device(index)


def pointer(obj) -> int:
    return describe(obj)[0]
