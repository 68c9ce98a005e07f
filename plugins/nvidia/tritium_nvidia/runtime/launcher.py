"""Kernel launchers: argument packing decided once per kernel, a few Python statements per launch.

``build_launcher`` generates, from the signature, a ``launch(grid, stream, args)`` function whose
body writes each argument into a preallocated ctypes slot (the kernel-parameter array already
points at them) and calls ``cuLaunchKernel`` with the parameter array's address.
``build_direct`` generates, for the same slots, the launch fast path's entry point
``direct(grid, *values)``: pointer arguments arrive as addresses, the stream and the current
device are asked inline (:mod:`.queries`), anything unusual goes to a fallback.

How each kind of parameter is stored is one :class:`ArgKind` in :data:`ARG_KINDS`: its slot and
the statements writing an argument into it; a new kind of kernel parameter is one entry there.

Two call paths: ``"bindings"`` (``cuda.bindings.driver.cuLaunchKernel``) and ``"ctypes"``
(``cuLaunchKernel`` from ``libcuda.so.1`` through ctypes); the default is the one measured
fastest (see ``bench/driver_check.py``), overridable with ``TRITIUM_CUDA_LAUNCH=bindings|ctypes``.

A launcher made with ``pair_above`` (``driver.py``: sm_90 kernels with a dot) launches a grid of an
even x size and more than ``pair_above`` programs through ``cuLaunchKernelEx`` as clusters of two
CTAs along x: programs ``2i`` and ``2i + 1`` start together on the two SMs of one TPC.  Nothing in
the kernel changes; only where and when its programs start.
"""
from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
from dataclasses import dataclass
from typing import Callable

from tritium import knobs
from tritium.runtime.interface import grid3

from . import c_launch, queries
from .device_pointers import pointer_getter


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


# Per-type pointer readers, shared by all launchers (resolved on first sight of a type).
_POINTER_GETTERS: dict = {}


def _resolve_pointer(obj):
    getter = pointer_getter(obj)
    _POINTER_GETTERS[type(obj)] = getter
    return getter


def read_pointer(obj) -> int:
    return (_POINTER_GETTERS.get(type(obj)) or _resolve_pointer(obj))(obj)


@dataclass(frozen=True)
class ArgKind:
    """How a kernel parameter of one kind is passed.  ``store`` and ``store_direct`` are
    statements (``{s}``: the slot, ``{a}``: the argument) for what a user passes and for what the
    fast path passes (pointers as addresses); ``convert`` is the same as a function, for the
    slow launch paths.  ``store_direct`` None: kernels with such a parameter have no fast path."""

    slot: Callable[[str], ctypes._SimpleCData]
    store: str
    store_direct: str | None
    convert: Callable


_POINTER = ArgKind(
    slot=lambda ty: ctypes.c_void_p(),
    # torch CUDA tensors inline (the common case); everything else through its reader
    store="{s}.value = {a}.data_ptr() if type({a}) is Tensor and {a}.is_cuda "
          "else (getters.get(type({a})) or resolve({a}))({a})",
    store_direct="{s}.value = {a}",
    convert=read_pointer)
_SCALAR = ArgKind(slot=lambda ty: _SCALAR_CTYPES[ty](), store="{s}.value = {a}", store_direct="{s}.value = {a}",
                  convert=lambda v: v)
_FP16 = ArgKind(slot=lambda ty: ctypes.c_uint32(), store="{s}.value = fp16_bits({a})",
                store_direct="{s}.value = fp16_bits({a})", convert=fp16_bits)
_BF16 = ArgKind(slot=lambda ty: ctypes.c_uint32(), store="{s}.value = bf16_bits({a})",
                store_direct="{s}.value = bf16_bits({a})", convert=bf16_bits)

#: (does this kind take type string ``ty``, the kind), first match wins
ARG_KINDS: list[tuple[Callable[[str], bool], ArgKind]] = [
    (lambda ty: ty.startswith("*"), _POINTER),
    (lambda ty: ty in ("fp16", "f16"), _FP16),
    (lambda ty: ty == "bf16", _BF16),
    (lambda ty: ty in _SCALAR_CTYPES, _SCALAR),
]


def arg_kind(ty) -> ArgKind | None:
    if isinstance(ty, str):
        for takes, kind in ARG_KINDS:
            if takes(ty):
                return kind
    return None


def kernel_arg_types(signature: dict) -> list[tuple[int, str]]:
    """``(position in args, type)`` of the arguments that become kernel parameters.  ``args`` holds
    one value per signature entry, in index order; ``constexpr`` entries are skipped."""
    out = []
    for pos, idx in enumerate(sorted(signature)):
        ty = signature[idx]
        if ty == "constexpr":
            continue
        if arg_kind(ty) is None:
            raise ValueError(f"argument {idx}: unsupported type {ty!r} in the kernel signature")
        out.append((pos, ty))
    return out


class ParamBuffer:
    """Preallocated ctypes slots for one kernel and the ``void*[]`` array pointing at them."""

    def __init__(self, types: list[str], extra_null_params: int = 0):
        self.slots = [arg_kind(t).slot(t) for t in types]
        self.slots += [ctypes.c_void_p() for _ in range(extra_null_params)]
        self.array = (ctypes.c_void_p * max(len(self.slots), 1))(
            *[ctypes.addressof(s) for s in self.slots])
        self.address = ctypes.addressof(self.array)


def _libcuda_launch():
    fn = _libcuda_symbol("cuLaunchKernel")
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    return fn


def _libcuda_symbol(name: str):
    return getattr(ctypes.CDLL("libcuda.so.1"), name)


def _launch_call(impl: str, paired: bool = False) -> list[str]:
    """The statements launching with ``gx, gy, gz`` and ``stream`` (an int) set."""
    if paired:
        return ["    if not gx % 2 and gx * gy * gz > PAIR_ABOVE:",
                "        return pair_launch(gx, gy, gz, stream)"] + _launch_call(impl)
    if impl == "ctypes":
        return ["    err = cu_launch(FUNC, gx, gy, gz, BLOCK, 1, 1, SHARED, stream or None, PARAMS, None)",
                "    if err:",
                "        fail(err, gx, gy, gz, stream)"]
    # The binding wraps an int stream in a CUstream on every call; reuse the last wrapper.
    return ["    if stream != last_stream[0]:",
            "        last_stream[1] = CUstream(int(stream or 0))",
            "        last_stream[0] = stream",
            "    err, = cu_launch(FUNC, gx, gy, gz, BLOCK, 1, 1, SHARED, last_stream[1], PARAMS, 0)",
            "    if err is not SUCCESS and err != SUCCESS:",
            "        fail(err, gx, gy, gz, stream)"]


def _source(n_args: int, arg_types: list[tuple[int, str]], impl: str, paired: bool = False) -> str:
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
        lines.append("    " + arg_kind(ty).store.format(s=f"s{j}", a=f"a{idx}"))
    return "\n".join(lines + _launch_call(impl, paired)) + "\n"


def _direct_source(arity: int, positions: tuple[int, ...], arg_types: list[tuple[int, str]], impl: str,
                   paired: bool = False) -> str:
    """Body of the fast path's launcher: values ``v0 .. v{arity-1}``, of which ``positions``
    are the kernel's parameters in order (where the C extension is built, the fallback of its
    ``Direct``, ``c_launch.py``)."""
    values = [f"v{i}" for i in range(arity)]
    runtime = "(" + "".join(f"v{p}, " for p in positions) + ")"
    lines = [f"def direct(grid{''.join(', ' + v for v in values)}):",
             "    if get_ident() != owner[0]:",
             f"        return fallback(grid, {runtime})",
             "    stream = stream_of(DEVICE)",
             "    if current_device() != DEVICE:",
             f"        return fallback(grid, {runtime})"]
    lines += ["    if len(grid) == 1:",
             "        gx = grid[0]",
             "        gy = gz = 1",
             "    elif len(grid) == 3:",
             "        gx, gy, gz = grid",
             "    else:",
             "        gx, gy, gz = grid3(grid)"]
    for j, ((_, ty), p) in enumerate(zip(arg_types, positions)):
        lines.append("    " + arg_kind(ty).store_direct.format(s=f"s{j}", a=f"v{p}"))
    return "\n".join(lines + _launch_call(impl, paired)) + "\n"


class _NoTensor:  # torch was not imported when the launcher was built
    pass


@dataclass
class LaunchState:
    """What a launcher and the fast path's launchers built on it share: the slots, the launch
    constants, the thread that owns the slots, the last stream wrapper."""

    function: object
    name: str
    arg_types: list
    buf: ParamBuffer
    block: int
    shared: int
    impl: str
    cu_launch: object
    owner: list
    last_stream: list
    fail: Callable
    #: pair programs 2i, 2i+1 (a cluster of two) in grids of an even x size and more programs
    #: than this; None: never
    pair_above: int | None = None
    #: ``pair_launch(gx, gy, gz, stream)``: that launch through ``cuLaunchKernelEx``
    pair_launch: Callable | None = None

    def namespace(self) -> dict:
        """Globals for the generated launcher: this kernel's slots and constants, and helpers."""
        from cuda.bindings import driver as cu
        torch = sys.modules.get("torch")
        ns = {f"s{j}": s for j, s in enumerate(self.buf.slots)}
        ns.update(
            getters=_POINTER_GETTERS, resolve=_resolve_pointer, fp16_bits=fp16_bits, bf16_bits=bf16_bits,
            BLOCK=self.block, SHARED=self.shared, PARAMS=self.buf.address, SUCCESS=cu.CUresult.CUDA_SUCCESS,
            get_ident=threading.get_ident, owner=self.owner, Tensor=getattr(torch, "Tensor", _NoTensor),
            cu_launch=self.cu_launch, CUstream=cu.CUstream, last_stream=self.last_stream, fail=self.fail,
            grid3=grid3, FUNC=int(self.function) if self.impl == "ctypes" else self.function,
            PAIR_ABOVE=self.pair_above, pair_launch=self.pair_launch)
        return ns


def build_launcher(function, name: str, signature: dict, num_warps: int, threads_per_warp: int,
                   shared: int, on_error, impl: str | None = None, extra_null_params: int = 0,
                   pair_above: int | None = None):
    """Generate the launcher for one loaded kernel (see the module docstring).  ``on_error(err,
    grid, stream, retry)`` handles a failed launch: it raises, or calls ``retry()`` (the same
    call again, returning its error code) after fixing what was wrong.  ``pair_above``: launch
    grids of an even x size and more programs than this as clusters of two CTAs."""
    from cuda.bindings import driver as cu

    if not impl:
        impl = knobs.nvidia.launch_impl  # TRITIUM_CUDA_LAUNCH
    impl = impl if impl and impl != "c" else DEFAULT_IMPL
    if impl not in ("bindings", "ctypes"):
        raise ValueError(f"launcher implementation must be 'bindings' or 'ctypes', got {impl!r}")
    arg_types = kernel_arg_types(signature)
    buf = ParamBuffer([t for _, t in arg_types], extra_null_params)
    block = num_warps * threads_per_warp
    if impl == "ctypes":
        raw = _libcuda_launch()

        def call(gx, gy, gz, stream):
            return raw(int(function), gx, gy, gz, block, 1, 1, int(shared), stream or None, buf.address, None)
    else:
        raw = cu.cuLaunchKernel

        def call(gx, gy, gz, stream):
            return cu.cuLaunchKernel(function, gx, gy, gz, block, 1, 1, int(shared), cu.CUstream(int(stream or 0)),
                                     buf.address, 0)[0]

    def fail(err, gx, gy, gz, stream):
        on_error(err, (gx, gy, gz), stream, lambda: call(gx, gy, gz, stream))

    pair_launch = _pair_launch(function, block, int(shared), buf, on_error) if pair_above is not None else None
    state = LaunchState(function, name, arg_types, buf, block, int(shared), impl, raw, owner=[None],
                        last_stream=[0, cu.CUstream(0)], fail=fail, pair_above=pair_above, pair_launch=pair_launch)
    per_thread = threading.local()

    def launch_fresh(grid, stream, args):
        # A thread other than the first launching one: its own buffers, so that concurrent
        # launches of one kernel never share parameter slots.
        own = getattr(per_thread, "launch", None)
        if own is None:
            own = per_thread.launch = build_launcher(function, name, signature, num_warps,
                                                     threads_per_warp, shared, on_error, impl,
                                                     extra_null_params, pair_above)
        return own(grid, stream, args)

    namespace = state.namespace()
    namespace["launch_fresh"] = launch_fresh
    src = _source(len(signature), arg_types, impl, pair_above is not None)
    exec(compile(src, f"<tritium launcher {name}>", "exec"), namespace)  # noqa: S102 - generated launcher
    launch = namespace["launch"]
    launch.params = buf  # keep the slots alive as long as the launcher
    launch.impl = impl
    launch.source = src
    launch.function = function
    launch.state = state
    return launch


_CLOSURE = ("FUNC", "BLOCK", "SHARED", "PARAMS", "owner", "last_stream", "cu_launch", "fail", "DEVICE", "fallback",
            "PAIR_ABOVE", "pair_launch")


def cluster_attribute(x: int):
    """The ``cuLaunchKernelEx`` attribute that runs a launch's CTAs in clusters of ``x`` along x."""
    from cuda.bindings import driver as cu

    attr = cu.CUlaunchAttribute()
    attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = x, 1, 1
    return attr


def cluster_config(block: int, shared: int, x: int = 2):
    """A ``CUlaunchConfig`` of ``block`` threads and ``shared`` dynamic bytes a block, its CTAs in
    clusters of ``x`` along x; the grid and the stream are the caller's to set."""
    from cuda.bindings import driver as cu

    config = cu.CUlaunchConfig()
    config.blockDimX, config.blockDimY, config.blockDimZ = block, 1, 1
    config.sharedMemBytes = shared
    config.attrs = [cluster_attribute(x)]
    config.numAttrs = 1
    return config


def _pair_launch(function, block: int, shared: int, buf: ParamBuffer, on_error):
    """``pair_launch(gx, gy, gz, stream)``: the kernel on that grid as clusters of two CTAs along
    x (``cuLaunchKernelEx``), the parameters already in ``buf``'s slots."""
    from cuda.bindings import driver as cu

    config = cluster_config(block, shared)

    def call(gx, gy, gz, stream):
        config.gridDimX, config.gridDimY, config.gridDimZ = gx, gy, gz
        config.hStream = cu.CUstream(int(stream or 0))
        return cu.cuLaunchKernelEx(config, function, buf.address, 0)[0]

    def pair_launch(gx, gy, gz, stream):
        err = call(gx, gy, gz, stream)
        if err != cu.CUresult.CUDA_SUCCESS:
            on_error(err, (gx, gy, gz), stream, lambda: call(gx, gy, gz, stream))
    return pair_launch


def _direct_globals() -> dict:
    """Globals of every direct launcher: :data:`queries.NAMESPACE` (so that switching the
    queries to torch's reaches them all at once) plus fixed helpers; a kernel's own constants
    are the generated function's closure."""
    ns = queries.NAMESPACE
    if "SUCCESS" not in ns:
        from cuda.bindings import driver as cu
        ns.update(SUCCESS=cu.CUresult.CUDA_SUCCESS, CUstream=cu.CUstream, get_ident=threading.get_ident,
                  grid3=grid3, fp16_bits=fp16_bits, bf16_bits=bf16_bits)
    return ns


def build_direct(state: LaunchState, device: int, arity: int, positions: tuple[int, ...], fallback):
    """The fast path's launcher for ``state``'s kernel on ``device``: ``direct(grid, v0, ...,
    v{arity-1})`` writes ``v[positions[k]]`` (pointers as addresses) into slot ``k`` and launches
    on ``device``'s current stream.  ``grid`` is a tuple of 1 to 3 ints.  On a thread other than
    the slots' owner, or when ``device`` is not current, it calls ``fallback(grid, runtime
    values)`` instead.  None when a parameter kind has no direct form."""
    if len(positions) != len(state.arg_types) or any(
            arg_kind(ty).store_direct is None for _, ty in state.arg_types):
        return None
    claunch = _c_launch(state)
    body = _direct_source(arity, positions, state.arg_types, state.impl, state.pair_above is not None)
    slots = [f"s{j}" for j in range(len(state.buf.slots))]
    src = (f"def make({', '.join(slots + list(_CLOSURE))}):\n"
           + "".join("    " + line + "\n" for line in body.splitlines()) + "    return direct\n")
    scope = {}
    exec(compile(src, f"<tritium direct launcher {state.name} on device {device}>", "exec"),  # noqa: S102
         _direct_globals(), scope)
    constants = dict(FUNC=int(state.function) if state.impl == "ctypes" else state.function, BLOCK=state.block,
                     SHARED=state.shared, PARAMS=state.buf.address, owner=state.owner,
                     last_stream=state.last_stream, cu_launch=state.cu_launch, fail=state.fail, DEVICE=device,
                     fallback=fallback, PAIR_ABOVE=state.pair_above, pair_launch=state.pair_launch)
    direct = scope["make"](*state.buf.slots, *[constants[n] for n in _CLOSURE])
    if claunch is not None:  # the C ``Direct`` around the slot writer; the Python launcher its fallback
        direct = c_launch.load().Direct(claunch, direct, tuple(positions), arity, state.owner, queries.NAMESPACE,
                                        device)
        body = ("# c_launch.Direct: the owner, device and stream checks, the slot writes and the launch in C;\n"
                "# where it declines, this:\n" + body)
    direct.source = body
    direct.params = state.buf  # the slots live as long as the launcher
    return direct


def _c_launch(state: LaunchState):
    """The C slot writer and launcher for ``state`` (``c_launch.py``), or None: no extension, the
    ctypes launch path, or a parameter the C function cannot write as its slot's type (fp16/bf16
    scalars, whose slots take converted bits)."""
    if state.impl != "bindings":
        return None
    slots = state.buf.slots[:len(state.arg_types)]
    kinds = [c_launch.SLOT_KINDS.get(type(slot)) if arg_kind(ty) in (_SCALAR, _POINTER) else None
             for (_, ty), slot in zip(state.arg_types, slots)]
    mod = c_launch.load() if None not in kinds else None
    if mod is None:
        return None
    try:
        address = ctypes.cast(_libcuda_launch(), ctypes.c_void_p).value
        # the paired launches' entry (0: none); grids of an even x and more programs than
        # ``pair_above`` go through it
        ex = ctypes.cast(_libcuda_symbol("cuLaunchKernelEx"), ctypes.c_void_p).value if state.pair_above is not None else 0
    except (OSError, AttributeError):
        return None
    return mod.Launch(address, int(state.function), state.block, state.shared, state.buf.address,
                      tuple(ctypes.addressof(slot) for slot in slots), "".join(kinds), ex or 0,
                      state.pair_above or 0)


DEFAULT_IMPL = "bindings"
