"""Device pointers from the objects users pass: torch CUDA tensors, ``__cuda_array_interface__``
objects (CuPy, Numba), DLPack producers, raw integers and ``None`` — plus a small cuMemAlloc-backed
:class:`DeviceArray` for when torch is absent.

:func:`pointer_getter` resolves, once per Python type, the cheapest way to read a pointer; the
launcher caches it so that a launch costs one dict lookup and one call per pointer argument."""
from __future__ import annotations

import ctypes
import sys

import numpy as np

from tritium.runtime.dlpack import CUDA_DEVICES as _CUDA_DLPACK_DEVICES
from tritium.runtime.dlpack import KDLCUDA as _KDLCUDA
from tritium.runtime.dlpack import pointer as _dlpack_pointer


def _cai_pointer(obj) -> int:
    return obj.__cuda_array_interface__["data"][0] or 0


def _torch_pointer(t) -> int:
    # page-locked host memory is mapped into every device's address space (unified addressing)
    if not t.is_cuda and not _is_pinned(t):
        raise ValueError(f"a pointer argument is a torch tensor on {t.device}, not on a CUDA device "
                         "(nor in pinned host memory)")
    return t.data_ptr()


def _is_pinned(t) -> bool:
    try:
        return t.device.type == "cpu" and bool(t.is_pinned())
    except RuntimeError:  # no CUDA runtime to ask: nothing is pinned
        return False


def _int_pointer(v) -> int:
    return v


def _none_pointer(_v) -> int:
    return 0


def _is_torch_tensor(obj) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def pointer_getter(obj):
    """The function reading a device pointer from objects of ``type(obj)``."""
    if obj is None:
        return _none_pointer
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
        return _int_pointer if type(obj) is int else int
    if _is_torch_tensor(obj):
        return _torch_pointer
    if hasattr(obj, "__cuda_array_interface__"):
        return _cai_pointer
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _dlpack_pointer
    if hasattr(obj, "data_ptr"):
        return lambda o: o.data_ptr()
    raise TypeError(f"cannot pass a {type(obj).__name__} as a pointer argument: expected a torch "
                    "CUDA tensor, an object with __cuda_array_interface__ or __dlpack__, an int "
                    "address or None")


ANYWHERE = -1  #: memory every device can reach (pinned host, managed) or a null pointer


class Unplaceable(ValueError):
    """An argument that claims to be device memory but that no CUDA device can be found for."""


def _torch_device(t) -> int:
    if not t.is_cuda:
        if _is_pinned(t):
            return ANYWHERE
        raise Unplaceable(f"a torch tensor on {t.device}, not on a CUDA device (nor in pinned host memory)")
    return t.device.index


def locate(obj) -> int:
    """The CUDA device ``obj``'s memory lives on, or :data:`ANYWHERE`.  Raises :class:`Unplaceable`
    (saying what ``obj`` is) for host memory CUDA does not know and for unknown pointers, and
    ``TypeError`` for objects that are not memory at all."""
    if obj is None:
        return ANYWHERE
    if _is_torch_tensor(obj):
        return _torch_device(obj)
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
        if not 0 <= int(obj) < 1 << 64:
            raise TypeError(f"{int(obj)} is not an address")
        return pointer_device(int(obj))
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        dev = getattr(obj, "device", None)
        dev = getattr(dev, "id", dev)             # CuPy: a Device with .id; DeviceArray: an int
        if isinstance(dev, int) and not isinstance(dev, bool):
            return dev
        return pointer_device(cai["data"][0] or 0)
    if hasattr(obj, "__dlpack_device__"):
        kind, index = obj.__dlpack_device__()
        kind = int(kind)
        if kind == _KDLCUDA:
            return int(index)
        if kind in _CUDA_DLPACK_DEVICES:           # pinned host or managed memory
            return ANYWHERE
        if kind == 1 and isinstance(obj, np.ndarray):  # kDLCPU
            raise Unplaceable("a host (numpy) array, not CUDA memory (numpy arrays run on the interpreter: "
                              "backend='interpreter')")
        what = "host memory" if kind == 1 else f"memory of DLPack device type {kind}"
        raise Unplaceable(f"a DLPack tensor in {what}, not CUDA memory")
    if hasattr(obj, "data_ptr"):
        return pointer_device(obj.data_ptr())
    raise TypeError(f"cannot pass a {type(obj).__name__} as a pointer argument")


def device_of(obj) -> int | None:
    """CUDA device index ``obj`` lives on, or ``None`` if it is not CUDA memory we recognise
    (memory every device reaches counts as the current device's)."""
    try:
        device = locate(obj)
    except (Unplaceable, TypeError):
        return None
    if device == ANYWHERE:
        return None if obj is None or (isinstance(obj, int) and not obj) else 0
    return device


_POINTER_ATTRIBUTES = None
_CONTEXT_DEVICE: dict[int, int] = {}


def pointer_device(ptr: int) -> int:
    """The device a raw address belongs to, from the driver's pointer attributes (one
    ``cuPointerGetAttributes`` call); :data:`ANYWHERE` for null, pinned host and managed memory.

    The device is read from the context that owns the allocation (cached per context); the
    device-ordinal attribute is used only for memory without one (virtual-memory allocations).
    cuda-bindings 13.3.1 returned ordinal 0 for a device-1 pointer of the fake two-device driver
    whose own answer, called directly, was 1; the context was right."""
    global _POINTER_ATTRIBUTES
    if not ptr:
        return ANYWHERE
    from cuda.bindings import driver as cu
    if _POINTER_ATTRIBUTES is None:
        A = cu.CUpointer_attribute
        _POINTER_ATTRIBUTES = [A.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, A.CU_POINTER_ATTRIBUTE_IS_MANAGED,
                               A.CU_POINTER_ATTRIBUTE_CONTEXT, A.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL]
    # Unlike cuPointerGetAttribute, this does not fail for an unknown address: the memory type
    # reads 0 instead.
    err, values = cu.cuPointerGetAttributes(len(_POINTER_ATTRIBUTES), _POINTER_ATTRIBUTES, ptr)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise Unplaceable(f"address 0x{ptr:x}, whose attributes the driver does not give ({err!r})")
    mem_type, managed, ctx, ordinal = int(values[0]), int(values[1]), values[2], int(values[3])
    if mem_type == 0:
        raise Unplaceable(f"address 0x{ptr:x}, which is not memory CUDA knows (freed, host memory "
                          "not registered with CUDA, or not a pointer)")
    if managed or mem_type == int(cu.CUmemorytype.CU_MEMORYTYPE_HOST):
        return ANYWHERE
    key = int(ctx) if ctx is not None else 0
    if not key:
        return ordinal
    device = _CONTEXT_DEVICE.get(key)
    if device is None:
        device = _CONTEXT_DEVICE[key] = _context_device(ctx)
    return device


def _context_device(ctx) -> int:
    """The device of context ``ctx`` (pushed, asked, popped)."""
    from cuda.bindings import driver as cu
    _check(cu.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
    try:
        return int(_check(cu.cuCtxGetDevice(), "cuCtxGetDevice"))
    finally:
        _check(cu.cuCtxPopCurrent(), "cuCtxPopCurrent")


_CONTEXTS: dict = {}


def primary_context(device: int):
    """``device``'s primary context (the one torch, CuPy and the runtime API use), retained once."""
    ctx = _CONTEXTS.get(device)
    if ctx is None:
        from cuda.bindings import driver as cu
        dev = _check(cu.cuDeviceGet(device), "cuDeviceGet")
        ctx = _CONTEXTS[device] = _check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    return ctx


def current_context() -> int:
    """The calling thread's current context as an int (0: none)."""
    from cuda.bindings import driver as cu
    ctx = _check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
    return int(ctx) if ctx is not None else 0


class on_device:
    """``with on_device(d):`` runs the body with ``d``'s primary context current on this thread,
    then restores what was current (nothing is pushed when it already is)."""

    __slots__ = ("device", "pushed")

    def __init__(self, device: int):
        self.device = device
        self.pushed = False

    def __enter__(self):
        ctx = primary_context(self.device)
        if current_context() != int(ctx):
            from cuda.bindings import driver as cu
            _check(cu.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
            self.pushed = True
        return ctx

    def __exit__(self, *exc):
        if self.pushed:
            from cuda.bindings import driver as cu
            self.pushed = False
            _check(cu.cuCtxPopCurrent(), "cuCtxPopCurrent")
        return False


# --------------------------------------------------------------------------------------------
# dtypes and DeviceArray
# --------------------------------------------------------------------------------------------

_DTYPES = {
    "fp16": "float16", "fp32": "float32", "fp64": "float64", "bf16": "bfloat16",
    "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
}


def dtype_name(dtype) -> str:
    """Canonical numpy-style name for a Triton (``fp32``), numpy or torch dtype."""
    text = str(dtype).replace("torch.", "")
    return _DTYPES.get(text, text)


def _check(result, what: str):
    from cuda.bindings import driver as cu
    err = result[0]
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        raise RuntimeError(f"{what} failed: {name.decode() if name else err}")
    return result[1] if len(result) == 2 else result[1:]


class DeviceArray:
    """A contiguous CUDA array owning ``cuMemAlloc`` memory, exposing ``__cuda_array_interface__``
    (v3), so CuPy, Numba and Tritium's launcher accept it."""

    def __init__(self, shape, dtype, device: int = 0):
        from cuda.bindings import driver as cu
        self.shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype_name(dtype))
        self.device = device
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        with on_device(device):
            self._ptr = int(_check(cu.cuMemAlloc(max(self.nbytes, 1)), "cuMemAlloc"))
        self._free = cu.cuMemFree

    def data_ptr(self) -> int:
        return self._ptr

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self._ptr, False),
                "strides": None, "version": 3, "stream": None}

    def copy_from_host(self, array) -> "DeviceArray":
        from cuda.bindings import driver as cu
        host = np.ascontiguousarray(array, dtype=self.dtype)
        if host.nbytes != self.nbytes:
            raise ValueError(f"size mismatch: {host.nbytes} host bytes for {self.nbytes} device bytes")
        with on_device(self.device):
            _check((cu.cuMemcpyHtoD(self._ptr, host.ctypes.data, self.nbytes)[0], None), "cuMemcpyHtoD")
        return self

    def copy_to_host(self) -> np.ndarray:
        from cuda.bindings import driver as cu
        host = np.empty(self.shape, self.dtype)
        with on_device(self.device):
            _check((cu.cuMemcpyDtoH(host.ctypes.data, self._ptr, self.nbytes)[0], None), "cuMemcpyDtoH")
        return host

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr=0x{self._ptr:x})"

    def __del__(self):
        if getattr(self, "_ptr", 0):
            try:
                with on_device(self.device):
                    self._free(self._ptr)
            except Exception:
                pass
            self._ptr = 0
