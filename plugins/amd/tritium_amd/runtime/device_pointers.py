"""Device pointers from what users pass on ROCm: torch tensors on a ROCm build of torch (their
device type is still ``cuda``), ``__cuda_array_interface__`` objects (CuPy on ROCm exposes it),
DLPack producers on a ROCm device, raw integers and ``None``; and :class:`HipDeviceArray`, device
memory for when torch is absent.  hip-python is never imported here: the array uses its driver's."""
from __future__ import annotations

import sys

import numpy as np

from tritium.runtime.dlpack import KDLROCM
from tritium.runtime.dlpack import pointer as _dlpack_pointer

KDLROCMHOST = 11
ROCM_DLPACK_DEVICES = (KDLROCM, KDLROCMHOST)


def _torch_rocm(obj) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor) and getattr(torch.version, "hip", None) is not None


def _torch_pointer(t) -> int:
    if not t.is_cuda:
        raise ValueError(f"a pointer argument is a torch tensor on {t.device}, not on a ROCm device")
    return t.data_ptr()


def pointer_getter(obj):
    """The function reading a device address from objects of ``type(obj)``."""
    if obj is None:
        return lambda _v: 0
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
        return int
    if _torch_rocm(obj):
        return _torch_pointer
    if hasattr(obj, "__cuda_array_interface__"):
        return lambda o: o.__cuda_array_interface__["data"][0] or 0
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _dlpack_pointer
    if hasattr(obj, "data_ptr"):
        return lambda o: o.data_ptr()
    raise TypeError(f"cannot pass a {type(obj).__name__} as a pointer argument: expected a torch ROCm "
                    "tensor, an object with __cuda_array_interface__ or __dlpack__, an int address or None")


def device_of(obj) -> int | None:
    """ROCm device index ``obj`` lives on, or ``None`` if it is not ROCm memory we recognise."""
    if _torch_rocm(obj):
        return obj.device.index if obj.is_cuda else None
    if isinstance(obj, HipDeviceArray):
        return obj.device
    if hasattr(obj, "__dlpack_device__") and not hasattr(obj, "__cuda_array_interface__"):
        try:
            kind, index = obj.__dlpack_device__()
        except Exception:
            return None
        return int(index) if int(kind) in ROCM_DLPACK_DEVICES else None
    return None


_DTYPES = {"fp16": "float16", "fp32": "float32", "fp64": "float64", "bf16": "bfloat16", "i1": "bool",
           "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16",
           "u32": "uint32", "u64": "uint64"}


def dtype_name(dtype) -> str:
    text = str(dtype).replace("torch.", "")
    return _DTYPES.get(text, text)


class HipDeviceArray:
    """A contiguous device array owning ``hipMalloc`` memory, for when torch is absent; exposes
    ``__cuda_array_interface__`` (v3), which the launcher reads."""

    def __init__(self, drv, shape, dtype, device: int = 0):
        self._drv = drv
        self.device = device
        self.shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self._mem = drv.check(drv.hip.hipMalloc(max(self.nbytes, 1)), "hipMalloc")
        self._ptr = int(self._mem)

    def data_ptr(self) -> int:
        return self._ptr

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self._ptr, False), "strides": None,
                "version": 3, "stream": None}

    def copy_from_host(self, array) -> "HipDeviceArray":
        host = np.ascontiguousarray(array, dtype=self.dtype)
        if host.nbytes != self.nbytes:
            raise ValueError(f"size mismatch: {host.nbytes} host bytes for {self.nbytes} device bytes")
        hip = self._drv.hip
        self._drv.check(hip.hipMemcpy(self._mem, host, self.nbytes, hip.hipMemcpyKind.hipMemcpyHostToDevice),
                        "hipMemcpy(host to device)")
        return self

    def copy_to_host(self) -> np.ndarray:
        host = np.empty(self.shape, self.dtype)
        hip = self._drv.hip
        self._drv.check(hip.hipMemcpy(host, self._mem, self.nbytes, hip.hipMemcpyKind.hipMemcpyDeviceToHost),
                        "hipMemcpy(device to host)")
        return host

    def __len__(self):
        return self.shape[0]

    def __del__(self):
        if getattr(self, "_ptr", 0):
            try:
                self._drv.hip.hipFree(self._mem)
            except Exception:
                pass
            self._ptr = 0

