"""``tritium.compiler.kernel``: a compiled kernel: every stage's text (``kernel.asm["ttir"]``), its
metadata (``kernel.metadata.shared``) and its launch (``kernel[grid](*args)``), which loads the
binary through the backend's driver once per device."""
from __future__ import annotations

from ..runtime._allocation import ScratchLauncher
from ..runtime.interface import grid3
from ..runtime.launch_api import LaunchInterface
from ..runtime.specialize import TensorWrapper


class KernelMetadata(dict):
    """A compiled kernel's metadata: a dict that also reads as attributes, as Triton's does
    (``kernel.metadata.shared``, ``kernel.metadata.num_warps``)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"kernel metadata has no {name!r} (has: {', '.join(sorted(self))})") from None


def _with_global_scratch(driver, handle, metadata, signature: dict, size: int) -> ScratchLauncher:
    """The launcher of a kernel with global scratch (``global_scratch_size`` bytes a program): the
    backend's launcher of the signature with one more pointer, last, in a ``ScratchLauncher``."""
    extended = dict(signature)
    extended[max(signature, default=-1) + 1] = "*i8"
    return ScratchLauncher(driver.make_launcher(handle, metadata, extended), size,
                           int(metadata.get("global_scratch_align", 1) or 1),
                           int(metadata.get("num_ctas", 1) or 1), getattr(handle, "device", None))


class CompiledKernel(LaunchInterface):
    def __init__(self, backend, target, asm: dict, metadata: dict, runtime_signature: dict):
        self.backend = backend
        self.target = target
        self.asm = asm
        self.metadata = metadata if isinstance(metadata, KernelMetadata) else KernelMetadata(metadata)
        self.metadata.setdefault("shared", 0)
        self.name = metadata.get("name", "")
        self.runtime_signature = runtime_signature
        self._launchers: dict = {}
        # the devices whose launcher the backend has no direct form of (direct_binder.fill)
        self.no_direct: set = set()
        self._driver = None
        # registers and spilled words per thread: from the assembler's report where the backend has
        # one (NVIDIA), else from the loaded function; None on the interpreter (no registers)
        self.n_regs = self.metadata.get("n_regs")
        self.n_spills = self.metadata.get("n_spills")

    @property
    def binary(self):
        return self.asm[self.backend.info.binary_ext]

    def _launcher(self, device):
        launcher = self._launchers.get(device)
        if launcher is None:
            driver = self.backend.driver()
            handle = driver.load_binary(self.name, self.binary, self.metadata, device)
            self.n_regs = getattr(handle, "n_regs", self.n_regs)
            self.n_spills = getattr(handle, "n_spills", self.n_spills)
            size = int(self.metadata.get("global_scratch_size", 0) or 0)
            if size:
                launcher = _with_global_scratch(driver, handle, self.metadata, self.runtime_signature, size)
            else:
                launcher = driver.make_launcher(handle, self.metadata, self.runtime_signature)
            self._launchers[device] = launcher
        return launcher

    def launch(self, grid, stream, args, device=None):
        """Launch on ``device`` (default: the device of the pointer arguments, else the current
        one) on ``stream`` (default: that device's current stream); the current device is left
        as it was."""
        if type(grid) is not tuple or len(grid) != 3:
            grid = grid3(grid)
        driver = self._driver
        if driver is None:
            driver = self._driver = self.backend.driver()
        if device is None:
            device = driver.select_device(self._pointer_args(args))
            if device is None:
                device = driver.get_current_device()
        current_stream, current = driver.stream_and_current_device(device)
        launcher = self._launchers.get(device) or self._launcher(device)
        if grid[0] * grid[1] * grid[2] == 0:
            return
        if stream is None:
            stream = current_stream
        if current == device:
            launcher(grid, stream, args)
        else:
            driver.launch_on(device, launcher, grid, stream, args)

    def _pointer_args(self, args) -> list:
        names = self.metadata.get("arg_names") or [str(i) for i in range(len(args))]
        return [(names[i] if i < len(names) else str(i), a) for i, a in enumerate(args)
                if str(self.runtime_signature.get(i, "")).startswith("*")]

    def __getitem__(self, grid):
        # ``kernel[grid](*args)``: every parameter, constexprs included (as Triton 3.6 takes them),
        # or only the runtime ones
        def run(*args):
            return self.launch(grid, None, [a.base if type(a) is TensorWrapper else a for a in self._runtime_args(args)])
        return run
