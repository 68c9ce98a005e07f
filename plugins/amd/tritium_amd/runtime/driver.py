"""``HipDriver``: load hsaco code objects and launch them through hip-python
(``hipModuleLoadData``, ``hipModuleGetFunction``, ``hipModuleLaunchKernel``).

hip-python loads ROCm's ``libamdhip64.so`` when imported, so it is imported on first use only;
without it (or without a device) the backend is compile-only and :meth:`inactive_reason` says why.
:meth:`check_binary` needs neither: it reads the code object's ELF header and ``amdhsa`` metadata."""
from __future__ import annotations

import ctypes
import struct
import sys
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from tritium.hooks import GPUTarget
from tritium.runtime.driver import Driver

from . import device_pointers
from ..toolchain.elf import check_hsaco
from .device_pointers import HipDeviceArray
from ..options import ARCHS, TARGET_KIND

HIP_PACKAGE = "hip-python"


@dataclass
class KernelHandle:
    name: str
    device: int
    module: Any
    function: Any
    shared: int
    n_regs: int
    n_spills: int


_HALF = struct.Struct("<e")


def _fp16_bits(v) -> int:
    return int.from_bytes(_HALF.pack(v), "little")


def _bf16_bits(v) -> int:
    bits = int.from_bytes(struct.pack("<f", v), "little")
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


#: kernel argument type -> (ctypes type, conversion); sizes match the AMDGPU kernarg layout
_SCALARS = {
    "i1": (ctypes.c_bool, bool), "i8": (ctypes.c_int8, int), "u8": (ctypes.c_uint8, int),
    "i16": (ctypes.c_int16, int), "u16": (ctypes.c_uint16, int), "i32": (ctypes.c_int32, int),
    "u32": (ctypes.c_uint32, int), "i64": (ctypes.c_int64, int), "u64": (ctypes.c_uint64, int),
    "fp16": (ctypes.c_uint16, _fp16_bits), "bf16": (ctypes.c_uint16, _bf16_bits),
    "fp32": (ctypes.c_float, float), "fp64": (ctypes.c_double, float),
}


def arg_packers(signature: dict[int, str]) -> list:
    """One ``value -> ctypes object`` function per kernel argument, in order."""
    out = []
    for idx in sorted(signature):
        ty = signature[idx]
        if ty == "constexpr":
            continue
        if ty.startswith("*"):
            cache: dict = {}

            def pack_ptr(v, cache=cache):
                getter = cache.get(type(v))
                if getter is None:
                    getter = cache[type(v)] = device_pointers.pointer_getter(v)
                return ctypes.c_void_p(getter(v))
            out.append(pack_ptr)
        elif ty in _SCALARS:
            cty, conv = _SCALARS[ty]
            out.append(lambda v, cty=cty, conv=conv: cty(conv(v)))
        else:
            raise ValueError(f"unsupported type {ty!r} for a kernel argument")
    return out


class HipDriver(Driver):
    backend = "amd"

    def __init__(self):
        self._lock = threading.Lock()
        self._active: bool | None = None
        self._reason: str | None = None
        self._hip = None
        self._props: dict[int, dict] = {}

    # ---------------------------------------------------------------------------------- setup
    @property
    def hip(self):
        if self._hip is None:
            from hip import hip  # noqa: PLC0415 - loads libamdhip64.so: only on first use
            self._hip = hip
        return self._hip

    def check(self, result, what: str, kernel: str | None = None):
        """Unwrap a hip-python result tuple, raising ``RuntimeError`` naming the error."""
        if not isinstance(result, tuple):
            result = (result,)
        err = result[0]
        if err != self.hip.hipError_t.hipSuccess:
            where = f" for kernel {kernel!r}" if kernel else ""
            try:
                name = self.hip.hipGetErrorName(err)
                name = name.decode() if isinstance(name, bytes) else str(name)
            except Exception:
                name = str(err)
            raise RuntimeError(f"{what}{where} failed: {name}")
        if len(result) == 1:
            return None
        return result[1] if len(result) == 2 else result[1:]

    def _init(self) -> bool:
        with self._lock:
            if self._active is None:
                try:
                    hip = self.hip
                except ImportError as e:
                    self._active = False
                    self._reason = (f"hip-python is not installed ({e}); install ROCm and "
                                    f"`pip install {HIP_PACKAGE}` (or `pip install tritium-amd[hip]`) "
                                    "matching its version")
                except OSError as e:
                    self._active = False
                    self._reason = f"hip-python cannot load the ROCm runtime (libamdhip64.so): {e}"
                except Exception as e:  # noqa: BLE001 - anything else hip-python raises on import
                    self._active = False
                    self._reason = f"hip-python failed to import: {type(e).__name__}: {e}"
                else:
                    try:
                        count = self.check(hip.hipGetDeviceCount(), "hipGetDeviceCount")
                        self._active = count > 0
                        if not self._active:
                            self._reason = "the HIP runtime reports no device"
                    except Exception as e:  # noqa: BLE001 - no driver, no device
                        self._active = False
                        self._reason = str(e)
        return bool(self._active)

    def inactive_reason(self) -> str | None:
        """Why no device is usable (``None`` when one is)."""
        return None if self._init() else self._reason

    def _require(self):
        if not self._init():
            raise RuntimeError(f"no usable AMD GPU: {self._reason}")

    # ---------------------------------------------------------------------- Driver interface
    def is_active(self) -> bool:
        return self._init()

    def get_current_device(self) -> int:
        if not self._init():
            return 0
        return int(self.check(self.hip.hipGetDevice(), "hipGetDevice"))

    def set_current_device(self, device: int) -> None:
        self._require()
        self.check(self.hip.hipSetDevice(device), "hipSetDevice")

    def get_current_target(self, device: int | None = None) -> GPUTarget:
        props = self.get_device_properties(self.get_current_device() if device is None else device)
        arch = props["arch"]
        if arch not in ARCHS:
            raise RuntimeError(f"the device is {arch} ({props['name']}); Tritium generates code for "
                               f"{', '.join(ARCHS)}")
        return GPUTarget(TARGET_KIND, arch, props["warp_size"])

    def get_current_stream(self, device: int | None = None) -> int:
        torch = sys.modules.get("torch")
        if torch is not None and getattr(torch.version, "hip", None) and torch.cuda.is_initialized():
            return torch.cuda.current_stream(device).cuda_stream
        return 0

    def current_device_and_stream(self) -> tuple[int, int]:
        torch = sys.modules.get("torch")
        if torch is not None and getattr(torch.version, "hip", None) and torch.cuda.is_initialized():
            dev = torch.cuda.current_device()
            return dev, torch.cuda.current_stream(dev).cuda_stream
        return self.get_current_device(), 0

    def get_device_properties(self, device: int) -> dict:
        props = self._props.get(device)
        if props is not None:
            return props
        self._require()
        p = self.check(self.hip.hipGetDeviceProperties(device), "hipGetDeviceProperties")

        def text(v):
            v = bytes(v) if not isinstance(v, (bytes, str)) else v
            return (v.split(b"\0", 1)[0].decode() if isinstance(v, bytes) else v).strip()

        gcn = text(p.gcnArchName)
        props = {
            "name": text(p.name),
            "arch": gcn.split(":", 1)[0],
            "gcn_arch_name": gcn,
            "multiprocessor_count": int(p.multiProcessorCount),
            "max_shared_mem": int(p.sharedMemPerBlock),
            "warp_size": int(p.warpSize),
            "max_threads_per_block": int(p.maxThreadsPerBlock),
            "total_memory": int(p.totalGlobalMem),
            "l2_cache_size": int(p.l2CacheSize),
            "sm_clock_rate": int(p.clockRate),
            "mem_clock_rate": int(p.memoryClockRate),
            "mem_bus_width": int(p.memoryBusWidth),
        }
        self._props[device] = props
        return props

    def load_binary(self, name: str, binary: bytes, metadata: dict, device: int) -> KernelHandle:
        self.set_current_device(device)
        module = self.check(self.hip.hipModuleLoadData(bytes(binary)), "hipModuleLoadData", name)
        function = self.check(self.hip.hipModuleGetFunction(module, name.encode()), "hipModuleGetFunction", name)
        shared = int(metadata.get("shared", 0) or 0)
        limit = self.get_device_properties(device)["max_shared_mem"]
        if shared > limit:
            raise RuntimeError(f"kernel {name!r} needs {shared} bytes of LDS; the device allows {limit} per workgroup")
        return KernelHandle(name, device, module, function, shared, int(metadata.get("n_regs", 0) or 0),
                            int(metadata.get("n_spills", 0) or 0))

    def make_launcher(self, handle: KernelHandle, metadata: dict, signature: dict[int, str]):
        """``launch(grid, stream, args)``: the arguments packed as ctypes values into hip-python's
        ``extra`` buffer (each naturally aligned, the AMDGPU kernarg layout).  The LDS is static
        (the code object states it), so no dynamic LDS is requested."""
        block = int(metadata.get("num_warps", 4)) * int(metadata.get("threads_per_warp", 64))
        packers = arg_packers(signature)
        hip, fn, name = self.hip, handle.function, handle.name
        success = hip.hipError_t.hipSuccess

        def launch(grid, stream, args):
            gx, gy, gz = grid
            if gx * gy * gz == 0:
                return
            extra = tuple(p(v) for p, v in zip(packers, args))
            err = hip.hipModuleLaunchKernel(fn, gx, gy, gz, block, 1, 1, 0, stream or None, None, extra)
            err = err[0] if isinstance(err, tuple) else err
            if err != success:
                self.check((err,), f"hipModuleLaunchKernel(grid={grid})", name)
        return launch

    def owns(self, arg) -> bool:
        return device_pointers.device_of(arg) is not None

    def device_of(self, arg) -> int | None:
        return device_pointers.device_of(arg)

    def synchronize(self) -> None:
        if self._init():
            self.check(self.hip.hipDeviceSynchronize(), "hipDeviceSynchronize")

    # ------------------------------------------------------------------------ checks
    def check_binary(self, binary: bytes, metadata: dict) -> None:
        """The code object is what the HIP runtime will load for this kernel: an AMDGPU ELF for the
        target's ``gfx``, whose ``amdhsa`` metadata names the kernel with the kernarg layout of its
        signature, the target's wavefront size, the allocation pass's LDS size and a workgroup size
        that admits ``num_warps`` wavefronts."""
        check_hsaco(binary, metadata)

    # ------------------------------------------------------------------------ memory helpers
    @staticmethod
    def _torch():
        try:
            import torch
        except ImportError:
            return None
        return torch if getattr(torch.version, "hip", None) and torch.cuda.is_available() else None

    def empty(self, shape, dtype, device: int = 0):
        torch = self._torch()
        if torch is not None:
            return torch.empty(tuple(np.atleast_1d(shape)), dtype=getattr(torch, device_pointers.dtype_name(dtype)),
                               device=f"cuda:{device}")
        self.set_current_device(device)
        return HipDeviceArray(self, shape, device_pointers.dtype_name(dtype), device)

    def from_numpy(self, array, device: int = 0):
        torch = self._torch()
        if torch is not None:
            return torch.from_numpy(np.ascontiguousarray(array)).to(f"cuda:{device}")
        self.set_current_device(device)
        return HipDeviceArray(self, array.shape, array.dtype, device).copy_from_host(array)

    def to_numpy(self, arg):
        if isinstance(arg, HipDeviceArray):
            return arg.copy_to_host()
        if device_pointers._torch_rocm(arg):
            return arg.detach().cpu().numpy()
        if hasattr(arg, "get"):  # CuPy
            return arg.get()
        raise TypeError(f"cannot copy a {type(arg).__name__} to the host")

