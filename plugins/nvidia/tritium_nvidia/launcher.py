"""Kernel launchers: argument packing decided once per kernel, a few Python statements per launch.

``make_launcher`` generates, from the signature, a ``launch(grid, stream, args)`` function whose
body writes each argument into a preallocated ctypes scalar (the kernel-parameter array already
points at them) and calls ``cuLaunchKernel`` with the parameter array's address.  Two call paths:
``"bindings"`` (``cuda.bindings.driver.cuLaunchKernel``) and ``"ctypes"`` (``cuLaunchKernel`` from
``libcuda.so.1`` through ctypes); the default is the one measured fastest (see
``bench/driver_check.py``), overridable with ``TRITIUM_CUDA_LAUNCH=bindings|ctypes``.
"""
from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading

from .memory import pointer_getter

# Storage for each scalar kind.  Narrow integers live in 32-bit slots: the driver copies as many
# bytes as the kernel's parameter declares, and on little-endian hosts those are the low ones.
_SCALAR_CTYPES = {
    "i1": ctypes.c_int32, "i8": ctypes.c_int32, "i16": ctypes.c_int32, "i32": ctypes.c_int32,
    "u1": ctypes.c_uint32, "u8": ctypes.c_uint32, "u16": ctypes.c_uint32, "u32": ctypes.c_uint32,
    "i64": ctypes.c_int64, "u64": ctypes.c_uint64,
    "fp32": ctypes.c_float, "f32": ctypes.c_float, "fp64": ctypes.c_double, "f64": ctypes.c_double,
    "fp16": ctypes.c_uint32, "f16": ctypes.c_uint32, "bf16": ctypes.c_uint32,
}
_HALF = struct.Struct("<e")
_FLOAT = struct.Struct("<f")


def fp16_bits(v) -> int:
    return int.from_bytes(_HALF.pack(v), "little")


def bf16_bits(v) -> int:
    """Round-to-nearest-even float32 -> bfloat16 bit pattern (NaN stays NaN)."""
    bits = int.from_bytes(_FLOAT.pack(v), "little")
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


_CONVERT = {"fp16": "fp16_bits", "f16": "fp16_bits", "bf16": "bf16_bits"}

# Per-type pointer readers, shared by all launchers (resolved on first sight of a type).
_POINTER_GETTERS: dict = {}


def _resolve_pointer(obj):
    getter = pointer_getter(obj)
    _POINTER_GETTERS[type(obj)] = getter
    return getter


def kernel_arg_types(signature: dict) -> list[tuple[int, str]]:
    """``(position in args, type)`` of the arguments that become kernel parameters.  ``args`` holds
    one value per signature entry, in index order; ``constexpr`` entries are skipped."""
    out = []
    for pos, idx in enumerate(sorted(signature)):
        ty = signature[idx]
        if ty == "constexpr":
            continue
        if not isinstance(ty, str) or not (ty.startswith("*") or ty in _SCALAR_CTYPES):
            raise ValueError(f"argument {idx}: unsupported type {ty!r} in the kernel signature")
        out.append((pos, ty))
    return out


class ParamBuffer:
    """Preallocated ctypes slots for one kernel and the ``void*[]`` array pointing at them."""

    def __init__(self, types: list[str], extra_null_params: int = 0):
        self.slots = [ctypes.c_void_p() if t.startswith("*") else _SCALAR_CTYPES[t]() for t in types]
        self.slots += [ctypes.c_void_p() for _ in range(extra_null_params)]
        self.array = (ctypes.c_void_p * max(len(self.slots), 1))(
            *[ctypes.addressof(s) for s in self.slots])
        self.address = ctypes.addressof(self.array)


def _libcuda_launch():
    lib = ctypes.CDLL("libcuda.so.1")
    fn = lib.cuLaunchKernel
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    return fn


def _source(n_args: int, arg_types: list[tuple[int, str]], impl: str) -> str:
    """Body of the generated launcher.  Argument ``k`` of ``args`` is written into slot ``j``."""
    lines = ["def launch(grid, stream, args):",
             "    if get_ident() != owner[0]:",
             "        if owner[0] is not None:",
             "            return launch_fresh(grid, stream, args)",
             "        owner[0] = get_ident()",
             "    try:",
             "        gx, gy, gz = grid",
             "    except ValueError:",
             "        gx, gy, gz = (tuple(grid) + (1, 1))[:3]",
             "        if not grid:",
             "            raise ValueError('empty launch grid')"]
    if n_args:
        names = ", ".join(f"a{i}" for i in range(n_args))
        lines.append(f"    {names}, = args")
    for j, (idx, ty) in enumerate(arg_types):
        a = f"a{idx}"
        if ty.startswith("*"):
            # torch CUDA tensors inline (the common case); everything else through its reader
            lines.append(f"    s{j}.value = {a}.data_ptr() if type({a}) is Tensor and {a}.is_cuda "
                         f"else (getters.get(type({a})) or resolve({a}))({a})")
        elif ty in _CONVERT:
            lines.append(f"    s{j}.value = {_CONVERT[ty]}({a})")
        else:
            lines.append(f"    s{j}.value = {a}")
    if impl == "ctypes":
        lines.append("    err = cu_launch(FUNC, gx, gy, gz, BLOCK, 1, 1, SHARED, stream or None, PARAMS, None)")
        lines.append("    if err:")
    else:
        # The binding wraps an int stream in a CUstream on every call; reuse the last wrapper.
        lines.append("    if stream != last_stream[0]:")
        lines.append("        last_stream[1] = CUstream(int(stream or 0))")
        lines.append("        last_stream[0] = stream")
        lines.append("    err, = cu_launch(FUNC, gx, gy, gz, BLOCK, 1, 1, SHARED, last_stream[1], PARAMS, 0)")
        lines.append("    if err is not SUCCESS and err != SUCCESS:")
    lines.append("        fail(err, gx, gy, gz, stream)")
    return "\n".join(lines) + "\n"


class _NoTensor:  # torch was not imported when the launcher was built
    pass


def build_launcher(function, name: str, signature: dict, num_warps: int, threads_per_warp: int,
                   shared: int, on_error, impl: str | None = None, extra_null_params: int = 0):
    """Generate the launcher for one loaded kernel (see the module docstring).  ``on_error(err,
    grid, stream, retry)`` handles a failed launch: it raises, or calls ``retry()`` (the same
    call again, returning its error code) after fixing what was wrong."""
    from cuda.bindings import driver as cu

    impl = impl or os.environ.get("TRITIUM_CUDA_LAUNCH") or DEFAULT_IMPL
    if impl not in ("bindings", "ctypes"):
        raise ValueError(f"launcher implementation must be 'bindings' or 'ctypes', got {impl!r}")
    arg_types = kernel_arg_types(signature)
    n_args = len(signature)
    types = [t for _, t in arg_types]
    buf = ParamBuffer(types, extra_null_params)
    namespace = {f"s{j}": s for j, s in enumerate(buf.slots)}
    torch = sys.modules.get("torch")
    namespace.update(
        getters=_POINTER_GETTERS, resolve=_resolve_pointer, fp16_bits=fp16_bits, bf16_bits=bf16_bits,
        BLOCK=num_warps * threads_per_warp, SHARED=int(shared), PARAMS=buf.address,
        SUCCESS=cu.CUresult.CUDA_SUCCESS, get_ident=threading.get_ident, owner=[None],
        Tensor=getattr(torch, "Tensor", _NoTensor))
    block = num_warps * threads_per_warp
    if impl == "ctypes":
        raw = _libcuda_launch()
        namespace.update(cu_launch=raw, FUNC=int(function))

        def call(gx, gy, gz, stream):
            return raw(int(function), gx, gy, gz, block, 1, 1, int(shared), stream or None, buf.address, None)
    else:
        namespace.update(cu_launch=cu.cuLaunchKernel, FUNC=function, CUstream=cu.CUstream,
                         last_stream=[0, cu.CUstream(0)])

        def call(gx, gy, gz, stream):
            return cu.cuLaunchKernel(function, gx, gy, gz, block, 1, 1, int(shared), cu.CUstream(int(stream or 0)),
                                     buf.address, 0)[0]

    def fail(err, gx, gy, gz, stream):
        on_error(err, (gx, gy, gz), stream, lambda: call(gx, gy, gz, stream))

    per_thread = threading.local()

    def launch_fresh(grid, stream, args):
        # A thread other than the first launching one: its own buffers, so that concurrent
        # launches of one kernel never share parameter slots.
        own = getattr(per_thread, "launch", None)
        if own is None:
            own = per_thread.launch = build_launcher(function, name, signature, num_warps,
                                                     threads_per_warp, shared, on_error, impl,
                                                     extra_null_params)
        return own(grid, stream, args)

    namespace.update(fail=fail, launch_fresh=launch_fresh)
    src = _source(n_args, arg_types, impl)
    exec(compile(src, f"<tritium launcher {name}>", "exec"), namespace)
    launch = namespace["launch"]
    launch.params = buf  # keep the slots alive as long as the launcher
    launch.impl = impl
    launch.source = src
    launch.function = function
    return launch


DEFAULT_IMPL = "bindings"
