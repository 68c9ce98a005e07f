"""TMA tensor maps (CUtensorMap) for host tensor descriptors on sm_90.

:func:`tiled_map_arguments` decides whether a descriptor fits the copy engine and spells the
``cuTensorMapEncodeTiled`` arguments (innermost dimension first, strides in bytes, the swizzle
of :func:`map_swizzle`, which the kernel's tile buffers follow, ``passes/tma.py``); :func:`tensor_map` encodes the map with the
driver and keeps it in 128 bytes of device memory, cached per (device, address, dtype, shape,
strides, block, padding), since a kernel receives it as a global pointer (a new map costs one
small copy, waited for on a stream of its own; Triton passes the map by value instead, as a
128-byte ``__grid_constant__`` parameter, which needs no copy).

The path is on by default on sm_90 (``TRITIUM_TMA=0`` switches it off: descriptors then take the
block-pointer lowering).  A K loop's descriptor loads are software-pipelined into the wgmma's
slots, each completing on an mbarrier (``lowering/tma.py``): the persistent matmul's kernel runs within 2%
of Triton's on the H200 (bench NOTES run 25); a descriptor access outside such a loop is one
self-contained copy and wait."""
from __future__ import annotations

import struct
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass

from tritium.runtime.specialize import pointer_type_str

from .device_pointers import DeviceArray, _check, on_device, pointer_getter
from ..options import capability, tma_enabled as enabled  # noqa: F401  (the launch path's switch)


#: element type (signature spelling) -> (CUtensorMapDataType name, bytes, floating point)
DATA_TYPES = {
    "fp16": ("FLOAT16", 2, True), "bf16": ("BFLOAT16", 2, True), "fp32": ("FLOAT32", 4, True),
    "fp64": ("FLOAT64", 8, True),
    "i8": ("UINT8", 1, False), "u8": ("UINT8", 1, False), "i16": ("UINT16", 2, False), "u16": ("UINT16", 2, False),
    "i32": ("INT32", 4, False), "u32": ("UINT32", 4, False), "i64": ("INT64", 8, False), "u64": ("UINT64", 8, False),
    "fp8e4nv": ("UINT8", 1, False), "fp8e5": ("UINT8", 1, False), "fp8e4b15": ("UINT8", 1, False),
}
MAX_BOX = 256          # elements per box dimension
MAX_TILE_BYTES = 64 * 1024
_CACHE_SIZE = 256


@dataclass(frozen=True)
class TiledMap:
    """``cuTensorMapEncodeTiled``'s arguments, innermost dimension first."""

    data_type: str
    global_address: int
    global_dim: tuple[int, ...]
    global_strides: tuple[int, ...]   # bytes, rank - 1 entries (dimension 1 and up)
    box_dim: tuple[int, ...]
    nan_fill: bool
    swizzle: int = 0                  # bytes (32, 64, 128) or 0: see :func:`map_swizzle`


#: the widest swizzle pattern (bytes): a box row longer than this is split into boxes of this width
SWIZZLE_SPAN = 128


def map_swizzle(block_shape, element_bytes: int) -> int:
    """The swizzle a map of boxes ``block_shape`` (outermost first) is encoded with, in bytes: for a
    2-d box, its row's length when that is 32, 64 or 128 bytes, and 128 when the row is a multiple
    of 128 bytes (the map's box is then a 128-byte column of the block, see :func:`map_box`), else 0
    (none).  The compiler applies the same rule to the tile it reads or writes (``passes/tma.py``), so the
    copy engine lays a block out exactly as a ``#ttg.nvmma_shared`` buffer of that swizzle holds it
    (columns of 128 bytes one after another): a software-pipelined loop copies boxes straight into
    the slots a wgmma reads, and a tensor-core result is written into the tile without bank
    conflicts."""
    row = int(block_shape[-1]) * element_bytes
    if len(block_shape) != 2:
        return 0
    return row if row in (32, 64, 128) else SWIZZLE_SPAN if row % SWIZZLE_SPAN == 0 else 0


def map_box(block_shape, element_bytes: int) -> tuple[int, ...]:
    """The box the map is encoded with (outermost first): the block, with its outermost dimension
    cut to 256 elements (the most a box dimension may have), and for a 2-d block whose rows are a
    multiple of 128 bytes longer than 128, a 128-byte column of it; the kernel then moves the block
    as the boxes :func:`map_boxes` lists."""
    block = tuple(int(b) for b in block_shape)
    box = (min(block[0], MAX_BOX),) + block[1:]
    if map_swizzle(block, element_bytes) == SWIZZLE_SPAN and block[-1] * element_bytes > SWIZZLE_SPAN:
        box = box[:-1] + (SWIZZLE_SPAN // element_bytes,)
    return box


def map_boxes(block_shape, element_bytes: int) -> list[tuple[int, tuple[int, ...]]]:
    """The boxes (:func:`map_box`) that make up a block: (byte offset in the tile, element offset
    of the box per dimension, outermost first) each.  The tile holds the block as columns of the
    box's width one after another (one column when the box is as wide as the block), each column
    row-major, so a box of the outermost dimension's next 256 elements follows the one before."""
    block = tuple(int(b) for b in block_shape)
    box = map_box(block, element_bytes)
    col_elems = 1
    for b in (block[0],) + box[1:]:
        col_elems *= b
    chunk_elems = col_elems // block[0] * box[0]
    out = []
    columns = block[-1] // box[-1] if len(block) > 1 else 1
    for j in range(columns):
        for i in range(block[0] // box[0]):
            offsets = [0] * len(block)
            offsets[0] += i * box[0]
            offsets[-1] += j * box[-1]
            out.append(((j * col_elems + i * chunk_elems) * element_bytes, tuple(offsets)))
    return out


def map_boxes_fit(elt: str, block_shape, padding: str) -> bool:
    """Whether the copy engine can move a block of ``block_shape`` (outermost first) of ``elt``
    elements: a type it has a code for, at most 5 dimensions, every box dimension but the
    outermost at most 256 elements (the outermost is cut into boxes of 256), the block's rows a
    multiple of 16 bytes and the whole block at most 64 KiB, a NaN fill only for floating point."""
    if elt not in DATA_TYPES:
        return False
    _, size, floating = DATA_TYPES[elt]
    block = [int(b) for b in block_shape]
    if not 1 <= len(block) <= 5 or (padding == "nan" and not floating):
        return False
    if any(b > MAX_BOX for b in map_box(block, size)) or (block[-1] * size) % 16:
        return False
    tile = size
    for b in block:
        tile *= b
    return tile <= MAX_TILE_BYTES


#: the alignment (bytes) of a map's global address and of its strides
MAP_ALIGN = 16


def device_map_alignment(target, options, elt: str, block_shape, padding: str) -> int | None:
    """The NVIDIA answer to ``tritium_device_tensor_descriptor``: on sm_90 with TMA on (option
    ``tma``, from ``TRITIUM_TMA``), a kernel builds the map of a ``tl.make_tensor_descriptor``
    whose blocks the copy engine moves (:func:`map_boxes_fit`) when its base and outer strides are
    multiples of 16 bytes."""
    if capability(target) < 90 or not getattr(options, "tma", True):
        return None
    return MAP_ALIGN if map_boxes_fit(elt, block_shape, padding) else None


def tiled_map_arguments(elt: str, address: int, shape, strides, block_shape, padding: str) -> TiledMap | None:
    """The map of a descriptor of ``elt`` elements at ``address`` (shape, strides in elements and
    block shape outermost first), or ``None`` where the copy engine cannot serve it: a block
    :func:`map_boxes_fit` refuses, an address or an outer stride not a multiple of 16 bytes, a
    dimension of 2^32 elements or more."""
    if not map_boxes_fit(elt, block_shape, padding):
        return None
    name, size, _ = DATA_TYPES[elt]
    if len(shape) != len(block_shape) or address % MAP_ALIGN or strides[-1] != 1:
        return None
    byte_strides = [s * size for s in strides[:-1]]
    if any(s % MAP_ALIGN or s <= 0 or s >= 1 << 40 for s in byte_strides) or any(d >= 1 << 32 for d in shape):
        return None
    return TiledMap(name, address, tuple(reversed(shape)), tuple(reversed(byte_strides)),
                    tuple(reversed(map_box(block_shape, size))), padding == "nan", map_swizzle(block_shape, size))


#: CUtensorMapDataType names -> their codes, which ``tensormap.replace ... elemtype`` also takes
MAP_TYPE_CODES = {"UINT8": 0, "UINT16": 1, "UINT32": 2, "INT32": 3, "UINT64": 4, "INT64": 5, "FLOAT16": 6,
                  "FLOAT32": 7, "FLOAT64": 9, "BFLOAT16": 10}
#: swizzle bytes (``map_swizzle``) -> the code ``tensormap.replace ... swizzle_mode`` takes
SWIZZLE_CODES = {0: 0, 32: 1, 64: 2, 128: 3}
_TYPE_BYTES = {name: size for name, size, _ in DATA_TYPES.values()}


def template_map(elem_type: int, box_dim, swizzle_mode: int, fill_mode: int) -> TiledMap:
    """The map a kernel's device-built map starts from (``lowering/tma.py``): the element type,
    box (innermost first), swizzle and fill of the maps it builds, over a stand-in tensor of one
    box (the kernel replaces the address, dimensions and strides)."""
    name = next(n for n, c in MAP_TYPE_CODES.items() if c == elem_type)
    size = _TYPE_BYTES[name]
    dims = tuple(int(d) for d in box_dim)
    strides, extent = [], size
    for d in dims[:-1]:
        extent = -(-extent * d // 16) * 16
        strides.append(extent)
    swizzle = next(b for b, c in SWIZZLE_CODES.items() if c == swizzle_mode)
    return TiledMap(name, 1 << 20, dims, tuple(strides), dims, fill_mode == 1, swizzle)


def encode(m: TiledMap) -> bytes:
    """The 128 bytes of the CUtensorMap (the driver encodes it)."""
    from cuda.bindings import driver as cu
    strides = list(m.global_strides)
    if not strides:
        # rank 1 has no stride, but the driver rejects an empty (NULL) stride array: give it the
        # row's byte length rounded up to 16, which it does not read
        size = _TYPE_BYTES[m.data_type]
        strides = [-(-m.global_dim[0] * size // 16) * 16]
    err, tmap = cu.cuTensorMapEncodeTiled(
        getattr(cu.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{m.data_type}"), len(m.global_dim),
        m.global_address, [cu.cuuint64_t(d) for d in m.global_dim], [cu.cuuint64_t(s) for s in strides],
        [cu.cuuint32_t(b) for b in m.box_dim], [cu.cuuint32_t(1)] * len(m.global_dim),
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(cu.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{m.swizzle}B" if m.swizzle else "CU_TENSOR_MAP_SWIZZLE_NONE"),
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA if m.nan_fill
        else cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled returned {err.name} for {m}")
    return struct.pack("<16Q", *[int(w) for w in tmap.opaque])


_maps: OrderedDict = OrderedDict()
_lock = threading.Lock()
_streams: dict = {}
_refused: set = set()


def _upload(arr, data: bytes, device: int) -> None:
    """Copy the map into ``arr`` and wait for that copy only: on a non-blocking stream of its own
    (a pageable source is staged at once), so neither the device nor the launch stream is synced,
    and the copy has landed before any later launch on any stream reads it."""
    import numpy as np
    from cuda.bindings import driver as cu
    host = np.frombuffer(data, np.uint8).copy()  # alive until the copy is waited for
    with on_device(device):
        stream = _streams.get(device)
        if stream is None:
            stream = _streams[device] = _check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING),
                                               "cuStreamCreate")
        err = cu.cuMemcpyHtoDAsync(arr.data_ptr(), host.ctypes.data, host.nbytes, stream)[0]
        _check((err, None), "cuMemcpyHtoDAsync")
        _check((cu.cuStreamSynchronize(stream)[0], None), "cuStreamSynchronize")


#: (address, dtype, device, shape, strides, block, padding) of a torch tensor's descriptor -> its
#: map (or None, declined): the launch path's lookup, before any of the checks below
_by_descriptor: dict = {}


def _descriptor_key(descriptor):
    base = descriptor.base
    if not getattr(base, "is_cuda", False) or not hasattr(base, "data_ptr"):
        return None
    return (base.data_ptr(), base.dtype, base.get_device(), tuple(descriptor.shape), tuple(descriptor.strides),
            tuple(descriptor.block_shape), descriptor.padding)


def tensor_map(target, descriptor, driver):
    """Device memory holding the tensor map of ``descriptor`` (a ``DeviceArray``), or ``None``."""
    if not enabled() or capability(target) < 90:
        return None
    key = _descriptor_key(descriptor)
    if key is not None:
        found = _by_descriptor.get(key, _by_descriptor)
        if found is not _by_descriptor:
            return found
    arr = _tensor_map(descriptor, driver)
    if key is not None:
        with _lock:
            if len(_by_descriptor) >= _CACHE_SIZE:
                _by_descriptor.clear()
            _by_descriptor[key] = arr
    return arr


def mapper(target, driver):
    """The launch path's form of :func:`tensor_map` for ``target``: ``descriptor -> the map's
    device address (an int) or None``, for one call per descriptor per launch (a cached map costs
    a key and a dict lookup; ``_by_descriptor`` keeps its memory alive)."""
    if capability(target) < 90:
        return lambda descriptor: None

    def map_address(descriptor):
        arr = tensor_map(target, descriptor, driver)
        return None if arr is None else arr.data_ptr()
    return map_address


def _tensor_map(descriptor, driver):
    base = descriptor.base
    try:
        elt = (pointer_type_str(base) or "")[1:]
        address = int(pointer_getter(base)(base))
    except (TypeError, ValueError):
        return None
    m = tiled_map_arguments(elt, address, descriptor.shape, descriptor.strides, descriptor.block_shape,
                            descriptor.padding)
    if m is None:
        return None
    device = driver.select_device([("descriptor base", base)])
    device = driver.get_current_device() if device is None else device
    key = (device, m)
    with _lock:
        found = _maps.get(key)
        if found is not None:
            _maps.move_to_end(key)
            return found
    try:
        data = encode(m)
    except RuntimeError as e:
        # a driver without tensor maps (CUDA_ERROR_NOT_SUPPORTED), or a map it refuses that the
        # checks above let through: the launch takes the block-pointer path, which is always right
        if m not in _refused:
            _refused.add(m)
            warnings.warn(f"{e}; this descriptor is read without TMA", RuntimeWarning, stacklevel=2)
        return None
    arr = DeviceArray(128, "uint8", device)
    _upload(arr, data, device)
    with _lock:
        _maps[key] = arr
        while len(_maps) > _CACHE_SIZE:
            _maps.popitem(last=False)
    return arr
