"""Backends embedded in the ``tritium`` distribution (the interpreter), registered through the
same plugin hooks as any installed backend."""

from dataclasses import dataclass
from typing import Any


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
        from ..hooks import manager
        return {b.name: Backend(_compiler_class(b), _driver_class(b)) for b in manager.list_backends()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
