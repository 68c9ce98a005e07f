"""The driver interface a backend plugin returns from ``tritium_driver``.

A driver turns a compiled binary into something launchable and launches it.  The core calls it
on the launch path, so implementations keep per-launch work small: ``make_launcher`` is called
once per compiled kernel and returns a closure that does only argument marshalling and the
launch call.
"""
from __future__ import annotations

import abc
from typing import Any, Callable, Sequence


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

    def set_current_device(self, device: int) -> None:
        pass

    def get_current_stream(self, device: int | None = None) -> Any:
        return None

    def current_device_and_stream(self) -> tuple[int, Any]:
        """Both answers at once, on every launch: override with something cheaper where the
        platform allows (the default asks twice)."""
        device = self.get_current_device()
        return device, self.get_current_stream(device)

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
