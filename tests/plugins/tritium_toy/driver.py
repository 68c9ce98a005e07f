"""The toy driver: no device; a compiled module is checked by LLVM's parser and verifier."""
from __future__ import annotations

import llvmlite.binding as llvm

from tritium.runtime.driver import Driver


class ToyDriver(Driver):
    def is_active(self) -> bool:
        return False

    def inactive_reason(self) -> str:
        return "the toy target is compile-only (it has no device)"

    def get_current_target(self):
        return None

    def get_device_properties(self, device: int) -> dict:
        raise RuntimeError("the toy target has no device")

    def load_binary(self, name, binary, metadata, device):
        raise RuntimeError("the toy target has no device: compile with target='toy:1' instead of launching")

    def make_launcher(self, handle, metadata, signature):
        raise RuntimeError("the toy target has no device")

    def check_binary(self, binary, metadata) -> None:
        text = binary.decode() if isinstance(binary, bytes) else binary
        module = llvm.parse_assembly(text)
        module.verify()
        if module.get_function(metadata["name"]) is None:
            raise ValueError(f"the module has no kernel named {metadata['name']!r}")
