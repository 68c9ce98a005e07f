"""The driver interface a backend plugin returns from ``tritium_driver``.

A driver turns a compiled binary into something launchable and launches it.  The core calls it
on the launch path, so implementations keep per-launch work small: ``make_launcher`` is called
once per compiled kernel and returns a closure that does only argument marshalling and the
launch call.
"""
from __future__ import annotations

import abc
from typing import Any, Callable, Sequence
from ..hooks import manager


class LaunchDeviceError(ValueError):
    """A launch whose pointer arguments live on different devices, or whose device memory the
    driver cannot place on any device.  Raised before anything is launched."""


class Driver(abc.ABC):
    #: the backend name this driver belongs to (``BackendInfo.name``)
    backend: str = ""

    @abc.abstractmethod
    def is_active(self) -> bool:
        """A device is present and usable."""

    @abc.abstractmethod
    def get_current_target(self):
        """``GPUTarget`` of the current device."""

    def inactive_reason(self) -> str | None:
        """Why no device is usable, for users (``tritium backends``): e.g. the runtime library
        that is missing and what to install.  ``None`` when a device is usable or the driver
        cannot say."""
        return None

    def get_current_device(self) -> int:
        return 0

    def device_count(self) -> int:
        """How many devices of this backend there are (``--devices all`` of the conformance runner)."""
        return 1

    def set_current_device(self, device: int) -> None:
        pass

    def get_current_stream(self, device: int | None = None) -> Any:
        return None

    def current_device_and_stream(self) -> tuple[int, Any]:
        """The current device and its current stream."""
        device = self.get_current_device()
        return device, self.get_current_stream(device)

    # -- choosing the device of a launch (see docs/hooks.md, "Devices and streams") -------------
    def select_device(self, pointers: Sequence[tuple[str, Any]]) -> int | None:
        """The device a launch must run on, from its pointer arguments ``(parameter name,
        value)``: the one device every argument that lives on a device lives on, or ``None``
        when none does (the launch then runs on the current device).  Raise
        :class:`LaunchDeviceError` naming the arguments and their devices when they disagree
        or when a device pointer cannot be placed.  The default asks :meth:`device_of`."""
        found: dict[str, int] = {}
        for name, value in pointers:
            device = self.device_of(value)
            if device is not None:
                found[name] = device
        return one_device(found)

    def stream_and_current_device(self, device: int) -> tuple[Any, int]:
        """``(the stream to launch on for device, the calling thread's current device)``; called
        on every launch, so keep it to a query or two."""
        return self.get_current_stream(device), self.get_current_device()

    def launch_on(self, device: int, launcher: Callable, grid, stream, args) -> None:
        """Run ``launcher(grid, stream, args)`` with ``device`` current, leaving the current
        device as it was.  The launch path calls it only when ``device`` is not current."""
        previous = self.get_current_device()
        if previous == device:
            launcher(grid, stream, args)
            return
        self.set_current_device(device)
        try:
            launcher(grid, stream, args)
        finally:
            self.set_current_device(previous)

    def make_direct_launcher(self, launcher: Callable, device: int, arity: int,
                             positions: tuple[int, ...]) -> Callable | None:
        """Optional: the launch fast path's entry for ``launcher`` (from :meth:`make_launcher`,
        for ``device``), or None (the default: the core then calls ``launcher``).

        Return ``direct(grid, v0, ..., v{arity-1})``, called on every fast launch once the core
        knows the launch runs on ``device`` with no stream given: ``grid`` is a tuple of 1 to 3
        ints; the kernel's runtime arguments are ``v[positions[0]], v[positions[1]], ...``, with
        pointer arguments as integer addresses.  It launches on ``device``'s current stream and
        handles every case ``launcher`` does (another device current, another thread)."""
        return None

    def device_target(self, device: int):
        """``GPUTarget`` of ``device`` (kernels are compiled for the device they launch on)."""
        return self.get_current_target()

    @abc.abstractmethod
    def get_device_properties(self, device: int) -> dict:
        """At least ``multiprocessor_count``, ``max_shared_mem`` (bytes per block),
        ``warp_size`` and ``name``."""

    @abc.abstractmethod
    def load_binary(self, name: str, binary: bytes, metadata: dict, device: int) -> Any:
        """Load a kernel binary on ``device``; returns an opaque handle (module, function)."""

    @abc.abstractmethod
    def make_launcher(self, handle: Any, metadata: dict, signature: dict[int, str]) -> Callable:
        """Return ``launch(grid: tuple[int, int, int], stream, args: Sequence) -> None``.

        ``signature`` maps the index of every runtime (non-constexpr) argument to its type string
        (``*fp32``, ``i32``, ``fp16``...); ``args`` are the runtime arguments in that order.
        """

    def owns(self, arg: Any) -> bool:
        """Whether ``arg`` (a tensor/array) lives in this backend's device memory.  Used to pick
        the backend from where a kernel's arguments live."""
        return False

    def device_of(self, arg: Any) -> int | None:
        """The device index ``arg`` lives on, if it is one of ours."""
        return None

    def synchronize(self) -> None:
        pass

    def check_binary(self, binary: bytes, metadata: dict) -> None:
        """Check, without a device, that ``binary`` is a well-formed kernel binary for this
        backend (right container format, the kernel symbol ``metadata["name"]`` present).
        Raise ``ValueError`` saying what is wrong.  Used by compile-only conformance runs."""
        if not binary:
            raise ValueError("empty binary")

    # Memory helpers used by benchmarks and the conformance runner; optional.
    def empty(self, shape: Sequence[int], dtype: str, device: int = 0) -> Any:
        raise NotImplementedError

    def from_numpy(self, array, device: int = 0) -> Any:
        raise NotImplementedError

    def to_numpy(self, arg) -> Any:
        raise NotImplementedError

    # Triton's driver surface, as tutorials call it (``driver.active.utils.get_device_properties``,
    # ``driver.active.get_active_torch_device()``...).  Built on the methods above.
    #: the torch device type of this backend's memory (``"cuda"`` for NVIDIA, ``"cpu"`` here)
    torch_device_type: str = "cpu"

    @property
    def utils(self) -> "DriverUtils":
        return DriverUtils(self)

    def get_active_torch_device(self):
        import torch
        return torch.device(self.torch_device_type, self.get_current_device()) \
            if self.torch_device_type != "cpu" else torch.device("cpu")

    def get_device_interface(self):
        """``torch.cuda`` for CUDA backends (``torch.cpu`` otherwise)."""
        import torch
        return getattr(torch, self.torch_device_type)

    def get_benchmarker(self):
        from ..testing import do_bench
        return do_bench

    def get_empty_cache_for_benchmark(self):
        """A 256 MB buffer that ``clear_cache`` overwrites to flush the L2 cache between runs."""
        import torch
        return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device=self.get_active_torch_device())

    def clear_cache(self, cache) -> None:
        cache.zero_()


class DriverUtils:
    """``driver.active.utils``: Triton's device-property helper."""

    def __init__(self, driver: Driver):
        self._driver = driver

    def get_device_properties(self, device=None) -> dict:
        """The driver's properties plus Triton's key names: ``multiprocessor_count``,
        ``max_shared_mem``, ``max_num_regs``, ``warpSize``, ``sm_clock_rate``, ``mem_clock_rate``,
        ``mem_bus_width``."""
        index = getattr(device, "index", device)
        props = dict(self._driver.get_device_properties(self._driver.get_current_device() if index is None else int(index)))
        props.setdefault("max_num_regs", props.get("max_registers_per_block", 65536))
        props.setdefault("warpSize", props.get("warp_size", 32))
        for key in ("sm_clock_rate", "mem_clock_rate", "mem_bus_width"):
            props.setdefault(key, 0)
        return props


class _DriverConfig:
    """``tritium.runtime.driver.active``: the driver of the backend launches default to (the first
    backend with a device present, else the interpreter; ``TRITIUM_BACKEND`` overrides)."""

    def __init__(self):
        self._active: Driver | None = None

    @property
    def default(self) -> Driver:
        return manager.select_backend(None, ()).driver()

    @property
    def active(self) -> Driver:
        return self._active if self._active is not None else self.default

    def set_active(self, driver: Driver) -> None:
        self._active = driver

    def reset_active(self) -> None:
        self._active = None


driver = _DriverConfig()


def __getattr__(name):
    # ``tritium.runtime.driver.active`` (the module stands in for Triton's ``triton.runtime.driver``)
    if name in ("active", "default", "set_active", "reset_active"):
        return getattr(driver, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def one_device(found: dict[str, int], describe: Callable[[int], str] = lambda d: f"device {d}") -> int | None:
    """The single device of ``found`` (argument name -> device), ``None`` when empty; raise
    :class:`LaunchDeviceError` naming every argument and its device when there are several."""
    devices = set(found.values())
    if len(devices) <= 1:
        return next(iter(devices), None)
    where = ", ".join(f"{name} on {describe(d)}" for name, d in found.items())
    raise LaunchDeviceError(f"the pointer arguments are on different devices ({where}); a kernel runs on "
                            "one device: move them to one device first")
