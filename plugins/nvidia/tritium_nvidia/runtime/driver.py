"""``CudaDriver``: load cubins and launch them through ``cuda.bindings.driver`` (no C compiler,
no torch needed; torch tensors are accepted when the user passes them).

Every device is used through its *primary* context, the one torch, CuPy and the runtime API use,
so pointers they hand out are valid in our kernels and ours in theirs.  A kernel's module is
loaded once per device (a CUmodule belongs to one context); a launch runs on the device of its
pointer arguments, on that device's current stream, with that device's context pushed for the
call when another one is current (docs/hooks.md, "Devices and streams")."""
from __future__ import annotations

import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from tritium import knobs
from tritium.hooks import GPUTarget
from tritium.runtime.driver import Driver, LaunchDeviceError, one_device
from tritium.runtime.errors import OutOfResources
from tritium.runtime.interface import grid3

from . import device_pointers, launcher as _launcher, queries
from .tensor_map import encode, template_map
from ..options import WARP_SIZE


_STATIC_SHARED_LIMIT = 48 * 1024


@dataclass
class KernelHandle:
    """What :meth:`CudaDriver.load_binary` returns."""

    name: str
    device: int
    module: Any            # CUmodule
    function: Any          # CUfunction
    n_regs: int
    n_spills: int          # local (spill) memory per thread, in 4-byte words
    max_threads: int       # the most threads per block this kernel can be launched with
    shared: int


class CudaDriver(Driver):
    backend = "nvidia"
    torch_device_type = "cuda"  # driver.active.get_active_torch_device() -> torch.device("cuda", n)

    def __init__(self):
        self._lock = threading.Lock()
        self._active: bool | None = None
        self._init_error: str | None = None
        self._props: dict[int, dict] = {}
        self._cu = None

    # ---------------------------------------------------------------------------------- setup
    @property
    def cu(self):
        if self._cu is None:
            from cuda.bindings import driver
            self._cu = driver
        return self._cu

    def check(self, result, what: str, kernel: str | None = None):
        """Unwrap a cuda-bindings result tuple, raising ``RuntimeError`` naming the error."""
        err = result[0]
        if err != self.cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(self._error_text(err, what, kernel))
        if len(result) == 1:
            return None
        return result[1] if len(result) == 2 else result[1:]

    def _error_text(self, err, what: str, kernel: str | None) -> str:
        try:
            _, name = self.cu.cuGetErrorName(err)
            _, desc = self.cu.cuGetErrorString(err)
            text = f"{name.decode()} ({desc.decode()})"
        except Exception:
            text = str(err)
        where = f" for kernel {kernel!r}" if kernel else ""
        return f"{what}{where} failed: {text}"

    def _init(self) -> bool:
        with self._lock:
            if self._active is None:
                try:
                    self.check(self.cu.cuInit(0), "cuInit")
                    count = self.check(self.cu.cuDeviceGetCount(), "cuDeviceGetCount")
                    self._active = count > 0
                    if not self._active:
                        self._init_error = "no CUDA device"
                except Exception as e:  # no libcuda.so, no device, driver too old
                    self._active = False
                    self._init_error = _no_driver_text(e)
        return self._active

    def _require(self):
        if not self._init():
            raise RuntimeError(f"no usable CUDA device: {self._init_error}")

    def activate(self, device: int = 0):
        """Make ``device``'s primary context current on this thread (retaining it once)."""
        self._require()
        ctx = device_pointers.primary_context(device)
        if device_pointers.current_context() != int(ctx):
            self.check(self.cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        return ctx

    def on_device(self, device: int):
        """``with driver.on_device(d):`` -- ``d`` current for the body, then what was before."""
        self._require()
        return device_pointers.on_device(device)

    # ---------------------------------------------------------------------- Driver interface
    def is_active(self) -> bool:
        return self._init()

    def inactive_reason(self) -> str | None:
        return None if self._init() else self._init_error

    def device_count(self) -> int:
        return int(self.check(self.cu.cuDeviceGetCount(), "cuDeviceGetCount")) if self._init() else 0

    def get_current_device(self) -> int:
        if not self._init():
            return 0
        err, dev = self.cu.cuCtxGetDevice()
        return int(dev) if err == self.cu.CUresult.CUDA_SUCCESS else 0

    def set_current_device(self, device: int) -> None:
        self.activate(device)

    def get_current_target(self, device: int | None = None) -> GPUTarget:
        props = self.get_device_properties(self.get_current_device() if device is None else device)
        major, minor = props["compute_capability"]
        return GPUTarget("cuda", 10 * major + minor, props["warp_size"])

    def get_current_stream(self, device: int | None = None) -> int:
        """torch's current stream of ``device`` when torch is imported and has initialised CUDA,
        else 0 (the legacy default stream of the device's context)."""
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            if device is None:
                device = torch.cuda.current_device()
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            return raw(device) if raw is not None else torch.cuda.current_stream(device).cuda_stream
        return 0

    def current_device_and_stream(self) -> tuple[int, int]:
        device = self.get_current_device()
        return device, self.get_current_stream(device)

    def stream_and_current_device(self, device: int) -> tuple[int, int]:
        """On every launch: ``device``'s current stream and the thread's current device (-1 when
        no context is current); see :mod:`.queries`."""
        ns = queries.NAMESPACE
        return ns["stream_of"](device), ns["current_device"]()

    # --------------------------------------------------------------------- choosing a device
    def select_device(self, pointers) -> int | None:
        """The device of the pointer arguments ``(name, value)``: torch / CuPy / DLPack /
        ``__cuda_array_interface__`` objects say where they live, raw addresses are looked up
        (``cuPointerGetAttributes``); null, pinned-host and managed memory fit any device."""
        found: dict[str, int] = {}
        for name, value in pointers:
            try:
                device = device_pointers.locate(value)
            except device_pointers.Unplaceable as e:
                raise LaunchDeviceError(f"pointer argument {name!r} is {e}; pass CUDA device memory") from None
            if device != device_pointers.ANYWHERE:
                found[name] = device
        return one_device(found, lambda d: f"cuda:{d}")

    def launch_on(self, device: int, launcher, grid, stream, args) -> None:
        """Launch with ``device``'s primary context pushed (popped after): the current device
        stays what it was."""
        with device_pointers.on_device(device):
            launcher(grid, stream, args)

    def make_direct_launcher(self, launcher, device: int, arity: int, positions: tuple[int, ...]):
        """The launch fast path's entry (:func:`.launcher.build_direct`) for ``launcher``, which
        was made for ``device``; None for ``num_ctas`` cluster and cooperative launchers."""
        state = getattr(launcher, "state", None)
        if state is None:
            return None

        def fallback(grid, args):
            # another thread than the slots' owner, or another device current
            grid = grid3(grid)
            stream, current = self.stream_and_current_device(device)
            if current == device:
                launcher(grid, stream, args)
            else:
                self.launch_on(device, launcher, grid, stream, args)
        return _launcher.build_direct(state, device, arity, positions, fallback)

    def device_target(self, device: int) -> GPUTarget:
        return self.get_current_target(device)

    def get_device_properties(self, device: int) -> dict:
        props = self._props.get(device)
        if props is not None:
            return props
        self._require()
        cu = self.cu
        dev = self.check(cu.cuDeviceGet(device), "cuDeviceGet")
        A = cu.CUdevice_attribute

        def attr(name: str, default=None):
            a = getattr(A, name, None)
            if a is None:
                return default
            err, value = cu.cuDeviceGetAttribute(a, dev)
            return int(value) if err == cu.CUresult.CUDA_SUCCESS else default

        name = self.check(cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
        props = {
            "name": name.split(b"\0", 1)[0].decode(),
            "compute_capability": (attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"),
                                   attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")),
            "multiprocessor_count": attr("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
            "max_shared_mem": attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
            "max_shared_mem_static": attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"),
            "warp_size": attr("CU_DEVICE_ATTRIBUTE_WARP_SIZE", WARP_SIZE),
            "max_threads_per_block": attr("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
            "max_registers_per_block": attr("CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK"),
            "l2_cache_size": attr("CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE"),
            "sm_clock_rate": attr("CU_DEVICE_ATTRIBUTE_CLOCK_RATE"),            # kHz
            "mem_clock_rate": attr("CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE"),    # kHz
            "mem_bus_width": attr("CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH"),  # bits
            "cluster_launch": bool(attr("CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH", 0)),
            "cooperative_launch": bool(attr("CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH", 0)),
        }
        props["total_memory"] = int(self.check(cu.cuDeviceTotalMem(dev), "cuDeviceTotalMem"))
        self._props[device] = props
        return props

    def load_binary(self, name: str, binary: bytes, metadata: dict, device: int) -> KernelHandle:
        """Load into ``device``'s primary context (pushed for the call, so the current device
        does not change)."""
        self._require()
        with device_pointers.on_device(device):
            return self._load(name, binary, metadata, device)

    def _load(self, name: str, binary: bytes, metadata: dict, device: int) -> KernelHandle:
        cu = self.cu
        module = self.check(cu.cuModuleLoadData(binary), "cuModuleLoadData", name)
        function = self.check(cu.cuModuleGetFunction(module, name.encode()), "cuModuleGetFunction", name)
        FA = cu.CUfunction_attribute

        def fattr(a):
            return int(self.check(cu.cuFuncGetAttribute(a, function), "cuFuncGetAttribute", name))

        n_regs = fattr(FA.CU_FUNC_ATTRIBUTE_NUM_REGS)
        n_spills = fattr(FA.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) // 4
        static_shared = fattr(FA.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        shared = int(metadata.get("shared", 0) or 0)
        if shared > _STATIC_SHARED_LIMIT:
            limit = self.get_device_properties(device)["max_shared_mem"]
            if shared > limit:
                raise OutOfResources(shared, limit, "shared memory")
            self.check(cu.cuFuncSetAttribute(
                function, FA.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared - static_shared),
                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", name)
        max_threads = fattr(FA.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        for t in metadata.get("tensormap_templates") or ():
            self._fill_map_template(module, t, name)
        return KernelHandle(name, device, module, function, n_regs, n_spills, max_threads, shared)

    def _fill_map_template(self, module, template: dict, kernel: str) -> None:
        """Encode the map template a device-built map starts from into its global in the loaded
        module (``lowering/tma.py``).  A template left zero still makes right maps: warn only."""
        cu = self.cu
        try:
            data = encode(template_map(template["elem_type"], template["box_dim"], template["swizzle_mode"],
                                       template["fill_mode"]))
            err, dptr, size = cu.cuModuleGetGlobal(module, template["name"].encode())
            if err != cu.CUresult.CUDA_SUCCESS or int(size) < len(data):
                raise RuntimeError(f"cuModuleGetGlobal({template['name']}) returned {err.name}")
            self.check(cu.cuMemcpyHtoD(dptr, data, len(data)), "cuMemcpyHtoD", kernel)
        except Exception as exc:  # noqa: BLE001 - the zero template is a slower, still correct map
            warnings.warn(f"kernel {kernel!r}: tensor map template not encoded ({exc}); its in-kernel maps "
                          "are built without it", RuntimeWarning, stacklevel=3)

    def unload(self, handle: KernelHandle) -> None:
        with device_pointers.on_device(handle.device):
            self.check(self.cu.cuModuleUnload(handle.module), "cuModuleUnload", handle.name)

    def make_launcher(self, handle: KernelHandle, metadata: dict, signature: dict[int, str],
                      impl: str | None = None):
        """``launch(grid, stream, args)``; see :mod:`tritium_nvidia.runtime.launcher`.  Shared memory is
        ``metadata["shared"]`` (static shared memory in the cubin already counts toward it)."""
        num_warps = int(metadata.get("num_warps", 4))
        tpw = int(metadata.get("threads_per_warp", WARP_SIZE))
        block = num_warps * tpw
        if block > handle.max_threads:
            raise RuntimeError(f"kernel {handle.name!r} cannot run {block} threads per block "
                               f"(at most {handle.max_threads} with {handle.n_regs} registers)")
        num_ctas = int(metadata.get("num_ctas", 1))
        cooperative = bool(metadata.get("launch_cooperative_grid", False))
        dynamic_shared = max(handle.shared - self._static_shared(handle), 0)
        if num_ctas != 1 or cooperative:
            return self._launcher_ex(handle, signature, block, dynamic_shared, num_ctas, cooperative)

        def on_error(err, grid, stream, retry):
            err = self._retry_in_context(handle, err, retry)
            if err:
                self._launch_failed(handle, err, grid)
        if metadata.get("cluster_pairs"):
            # the kernel shares copies within a pair (``passes/cluster_pairs.py``) on every grid of
            # an even x size, and runs alone on the others: it finds out which at run time
            pair_above = 0
        elif metadata.get("pair_programs"):
            pair_above = self._pair_above(handle, block, dynamic_shared)
        else:
            pair_above = None
        launch = _launcher.build_launcher(handle.function, handle.name, signature, num_warps, tpw,
                                          dynamic_shared, on_error, impl, pair_above=pair_above)
        launch.device = handle.device
        return launch

    def _pair_above(self, handle: KernelHandle, block: int, dynamic_shared: int) -> int | None:
        """How many programs a launch of a kernel marked ``pair_programs`` (``passes/pair_programs.py``)
        needs before its programs ``2i`` and ``2i + 1`` start as one cluster of two CTAs (both SMs
        of a TPC, at the same moment); None: never (``knobs.nvidia.pair_programs`` off, no
        cluster launch, fewer than two blocks an SM, or clusters of two would leave a block slot
        of the device empty).

        The answer is the device's block slots (blocks an SM x SMs): a grid of one wave or less
        starts every program at once anyway, and there a pair costs a little.  In longer grids,
        programs that start together read their shared operand tiles together, and each pair
        stays in step (``docs/performance.md``, "Paired programs", has the figures).
        The kernel itself is the same either way (its wgmma descriptors take the address bits
        of the CTA's own shared window, ``lowering/tensor_cores.py``)."""
        props = self.get_device_properties(handle.device)
        if not knobs.nvidia.pair_programs or not props["cluster_launch"]:
            return None
        cu = self.cu
        with device_pointers.on_device(handle.device):
            err, per_sm = cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(handle.function, block, dynamic_shared)
            if err != cu.CUresult.CUDA_SUCCESS or per_sm < 2:  # one block an SM: no gain measured
                return None
            config = _launcher.cluster_config(block, dynamic_shared)
            config.gridDimX, config.gridDimY, config.gridDimZ = 2, 1, 1
            err, clusters = cu.cuOccupancyMaxActiveClusters(handle.function, config)
        slots = int(per_sm) * props["multiprocessor_count"]
        if err != cu.CUresult.CUDA_SUCCESS or 2 * int(clusters) < slots:
            return None
        return slots

    def _retry_in_context(self, handle: KernelHandle, err, retry) -> int:
        """A launcher called directly on a thread where the kernel's context is not current
        (none at all, or another device's) fails; run it again with the context pushed.
        Returns the error left (0: launched)."""
        cu = self.cu
        if int(err) not in (int(cu.CUresult.CUDA_ERROR_INVALID_CONTEXT), int(cu.CUresult.CUDA_ERROR_INVALID_HANDLE)):
            return int(err)
        if device_pointers.current_context() == int(device_pointers.primary_context(handle.device)):
            return int(err)
        with device_pointers.on_device(handle.device):
            return int(retry())

    def _static_shared(self, handle: KernelHandle) -> int:
        FA = self.cu.CUfunction_attribute
        return int(self.check(self.cu.cuFuncGetAttribute(FA.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                                         handle.function), "cuFuncGetAttribute"))

    def _launch_failed(self, handle: KernelHandle, err, grid) -> None:
        if 0 in grid:
            return  # an empty grid launches nothing (CUDA rejects it; Triton skips it)
        if any(g < 0 for g in grid):
            raise ValueError(f"launch grid {grid} of kernel {handle.name!r} has a negative size")
        raise RuntimeError(self._error_text(err, f"cuLaunchKernel(grid={grid})", handle.name))

    def _launcher_ex(self, handle, signature, block, dynamic_shared, num_ctas, cooperative):
        """Cluster (num_ctas > 1) or cooperative launches through ``cuLaunchKernelEx``: slower
        per call, and rare."""
        cu = self.cu
        arg_types = _launcher.kernel_arg_types(signature)
        attrs = []
        if num_ctas > 8:  # 16-CTA clusters are beyond the portable size: the kernel must opt in
            self.check(cu.cuFuncSetAttribute(
                handle.function, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)", handle.name)
        if num_ctas != 1:
            attrs.append(_launcher.cluster_attribute(num_ctas))
        if cooperative:
            a = cu.CUlaunchAttribute()
            a.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
            a.value.cooperative = 1
            attrs.append(a)
        buf = _launcher.ParamBuffer([t for _, t in arg_types])
        converts = [_launcher.arg_kind(ty).convert for _, ty in arg_types]

        def launch(grid, stream, args):
            gx, gy, gz = (tuple(grid) + (1, 1))[:3]
            for slot, (pos, ty), convert in zip(buf.slots, arg_types, converts):
                slot.value = convert(args[pos])
            cfg = cu.CUlaunchConfig()
            cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = gx * num_ctas, gy, gz
            cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block, 1, 1
            cfg.sharedMemBytes = dynamic_shared
            cfg.hStream = cu.CUstream(stream or 0)
            cfg.attrs = attrs
            cfg.numAttrs = len(attrs)
            err, = cu.cuLaunchKernelEx(cfg, handle.function, buf.address, 0)
            if err != cu.CUresult.CUDA_SUCCESS:
                err = self._retry_in_context(
                    handle, err, lambda: cu.cuLaunchKernelEx(cfg, handle.function, buf.address, 0)[0])
                if err:
                    self._launch_failed(handle, err, (gx, gy, gz))
        launch.params = buf
        launch.impl = "ex"
        return launch

    def owns(self, arg) -> bool:
        return device_pointers.device_of(arg) is not None

    def device_of(self, arg) -> int | None:
        return device_pointers.device_of(arg)

    def synchronize(self, device: int | None = None) -> None:
        """Wait for ``device``, or for every device this process has used through us."""
        if not self._init():
            return
        devices = [device] if device is not None else sorted(device_pointers._CONTEXTS) or [self.get_current_device()]
        for d in devices:
            with device_pointers.on_device(d):
                self.check(self.cu.cuCtxSynchronize(), "cuCtxSynchronize")

    # ------------------------------------------------------------------------ memory helpers
    @staticmethod
    def _torch():
        try:
            import torch
        except ImportError:
            return None
        return torch if torch.cuda.is_available() else None

    def empty(self, shape, dtype, device: int = 0):
        torch = self._torch()
        name = device_pointers.dtype_name(dtype)
        if torch is not None:
            return torch.empty(tuple(np.atleast_1d(shape)), dtype=getattr(torch, name), device=f"cuda:{device}")
        self._require()
        return device_pointers.DeviceArray(shape, name, device)

    def from_numpy(self, array, device: int = 0):
        torch = self._torch()
        if torch is not None:
            return torch.from_numpy(np.ascontiguousarray(array)).to(f"cuda:{device}")
        self._require()
        return device_pointers.DeviceArray(array.shape, array.dtype, device).copy_from_host(array)

    def to_numpy(self, arg):
        if isinstance(arg, device_pointers.DeviceArray):
            return arg.copy_to_host()
        if device_pointers._is_torch_tensor(arg):
            return arg.detach().cpu().numpy()
        if hasattr(arg, "get"):          # CuPy
            return arg.get()
        if hasattr(arg, "copy_to_host"):  # Numba
            return arg.copy_to_host()
        raise TypeError(f"cannot copy a {type(arg).__name__} to the host")


def _no_driver_text(exc: Exception) -> str:
    """Why the CUDA driver could not be used, in Tritium's words (cuda-python's own message
    for a missing libcuda talks about system search)."""
    text = str(exc)
    if "NVIDIA driver library" in text or "libcuda" in text or "display driver" in text \
            or isinstance(exc, (ImportError, OSError)):
        return ("no NVIDIA driver found (libcuda.so could not be loaded); the nvidia backend can still "
                "compile ahead of time with a target, e.g. tritium compile ... --target cuda:90")
    return text
