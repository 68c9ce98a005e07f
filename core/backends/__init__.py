"""Backends embedded in the ``tritium`` distribution (the interpreter), registered through the
same plugin hooks as any installed backend."""

from dataclasses import dataclass
from typing import Any
from ..hooks import manager


@dataclass(frozen=True)
class Backend:
    """``tritium.backends.backends[name]``, Triton's ``triton.backends.Backend``: ``compiler`` is
    a :class:`~tritium.backends.compiler.BaseBackend` factory, ``driver`` a class whose
    ``is_active()`` says whether a device is present, whose instances are the plugin's driver (one
    per backend) and which ``isinstance`` recognises that driver by."""

    compiler: Any
    driver: Any


def _driver_class(b) -> type:
    class _Meta(type):
        def __instancecheck__(cls, obj) -> bool:
            return getattr(obj, "backend", None) == b.name

    class Driver(metaclass=_Meta):
        def __new__(cls):
            return b.driver()

        @staticmethod
        def is_active() -> bool:
            return b.device_present()

    Driver.__name__ = Driver.__qualname__ = f"{b.name.capitalize()}Driver"
    return Driver


def _compiler_class(b) -> type:
    from .compiler import BaseBackend

    class Compiler(BaseBackend):
        def __init__(self, target):
            super().__init__(target, b)

    Compiler.__name__ = Compiler.__qualname__ = f"{b.name.capitalize()}Backend"
    return Compiler


def __getattr__(name):
    # ``tritium.backends.backends``: every installed backend, as Triton lists its own
    if name == "backends":
        return _backends()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _backends() -> dict:
    """Every installed backend by name, the device backends first and the interpreter last (code
    that takes the first active backend, as Inductor's ``set_driver_to_gpu`` does, finds the
    GPU's), then the interpreter once more as ``cpu``: it is the backend for CPU memory, which is
    what Triton's CPU backend is called (Inductor's ``cpu_backend="triton"`` looks it up)."""
    listed = sorted(manager.list_backends(), key=lambda b: b.name == manager.INTERPRETER)
    out = {b.name: Backend(_compiler_class(b), _driver_class(b)) for b in listed}
    if manager.INTERPRETER in out and "cpu" not in out:
        out["cpu"] = out[manager.INTERPRETER]
    return out
