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
from tritium.runtime.dlpack import pointer as _dlpack_pointer


def _cai_pointer(obj) -> int:
    return obj.__cuda_array_interface__["data"][0] or 0


def _torch_pointer(t) -> int:
    if not t.is_cuda:
        raise ValueError(f"a pointer argument is a torch tensor on {t.device}, not on a CUDA device")
    return t.data_ptr()


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


def device_of(obj) -> int | None:
    """CUDA device index ``obj`` lives on, or ``None`` if it is not CUDA memory we recognise."""
    if _is_torch_tensor(obj):
        return obj.device.index if obj.is_cuda else None
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        dev = getattr(obj, "device", None)
        dev_id = getattr(dev, "id", None)
        if isinstance(dev_id, int):
            return dev_id
        return _pointer_device(cai["data"][0])
    if hasattr(obj, "__dlpack_device__"):
        try:
            kind, index = obj.__dlpack_device__()
        except Exception:
            return None
        return int(index) if int(kind) in _CUDA_DLPACK_DEVICES else None
    return None


def _pointer_device(ptr: int) -> int | None:
    if not ptr:
        return 0
    from cuda.bindings import driver as cu
    err, ordinal = cu.cuPointerGetAttribute(cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
    return int(ordinal) if err == cu.CUresult.CUDA_SUCCESS else None


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
        _check((cu.cuMemcpyHtoD(self._ptr, host.ctypes.data, self.nbytes)[0], None), "cuMemcpyHtoD")
        return self

    def copy_to_host(self) -> np.ndarray:
        from cuda.bindings import driver as cu
        host = np.empty(self.shape, self.dtype)
        _check((cu.cuMemcpyDtoH(host.ctypes.data, self._ptr, self.nbytes)[0], None), "cuMemcpyDtoH")
        return host

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr=0x{self._ptr:x})"

    def __del__(self):
        if getattr(self, "_ptr", 0):
            try:
                self._free(self._ptr)
            except Exception:
                pass
            self._ptr = 0
