"""CPU-only: host tensor descriptors on sm_90 take the TMA path.  The companion kernel that gets a
tensor map per descriptor (``tritium.runtime.descriptors``) compiles to PTX holding
``cp.async.bulk.tensor`` completed on an ``mbarrier`` (loads) and bulk tensor stores ordered by
``fence.proxy.async`` (stores), which ptxas accepts for sm_90a; the host side picks the map's
arguments (or declines) as the driver needs them."""
import os
import re
import shutil
import subprocess

import pytest

import tritium
from tritium.runtime.descriptors import companion
from conformance.cases import tensor_map as cases
from tritium_nvidia.runtime import tensor_map
from tritium_nvidia.options import parse_target

PTXAS = "/usr/local/bin/ptxas" if os.path.exists("/usr/local/bin/ptxas") else shutil.which("ptxas")


def compile_mapped(fn, descriptors: dict, dtype: str, constexprs: dict, scalars: dict | None = None,
                   target: str = "cuda:90", map_type: str = "i64", **kw):
    """Compile ``fn``'s companion in which each parameter of ``descriptors`` (name -> (block shape,
    padding)) is a host descriptor of ``dtype`` with a tensor map (passed as launches pass it: its
    address, an integer; or ``map_type="*u8"``, a pointer)."""
    layout = tuple((len(descriptors[p.name][0]), True) if p.name in descriptors else None for p in fn.params)
    comp = companion(fn, layout)
    sig, consts = dict(scalars or {}), dict(constexprs)
    for name, (block, padding) in descriptors.items():
        rank = len(block)
        sig[f"{name}__base"] = f"*{dtype}"
        sig[f"{name}__map"] = map_type
        for i in range(rank):
            sig[f"{name}__shape{i}"] = "i32"
            if i < rank - 1:
                sig[f"{name}__stride{i}"] = "i32"
        consts[f"{name}__stride{rank - 1}"] = 1
        consts[f"{name}__block"] = tuple(block)
        consts[f"{name}__padding"] = padding
    return tritium.compile(comp, target=target, signature=sig, constexprs=consts, **kw)


def _ptxas_accepts(ptx: str, tmp_path) -> None:
    if PTXAS is None:
        pytest.skip("no ptxas on this machine to assemble the PTX with")
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    r = subprocess.run([PTXAS, "-arch=sm_90a", str(src), "-o", str(tmp_path / "k.cubin")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


def _check_load(ptx: str, rank: int, tile_bytes: int) -> None:
    assert re.search(rf"cp\.async\.bulk\.tensor\.{rank}d\.shared::cluster\.global\.mbarrier::complete_tx::bytes", ptx)
    assert re.search(rf"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 _, \[%r\d+\], {tile_bytes};", ptx)
    assert "mbarrier.init.shared::cta.b64" in ptx and "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    assert "mbarrier.inval.shared::cta.b64" in ptx


def _check_store(ptx: str, rank: int) -> None:
    store = re.search(rf"cp\.async\.bulk\.tensor\.{rank}d\.global\.shared::cta\.bulk_group", ptx)
    assert store
    fence = ptx.rfind("fence.proxy.async.shared::cta", 0, store.start())
    assert fence != -1, "no fence.proxy.async between the tile's writes and the bulk store"
    assert "cp.async.bulk.commit_group" in ptx[store.end():] and "cp.async.bulk.wait_group.read 0" in ptx[store.end():]


@pytest.mark.parametrize("dtype,size,map_type", [("fp16", 2, "i64"), ("bf16", 2, "i64"), ("fp32", 4, "i64"),
                                                 ("i8", 1, "i64"), ("fp16", 2, "*u8")])
def test_load_store_2d(dtype, size, map_type, tmp_path):
    k = compile_mapped(cases.map_scale_kernel, {"x_desc": ([32, 64], "zero"), "z_desc": ([32, 64], "zero")},
                       dtype, {"BM": 32, "BN": 64}, map_type=map_type)
    ptx = k.asm["ptx"]
    _check_load(ptx, 2, 32 * 64 * size)
    _check_store(ptx, 2)
    assert "ld.global" not in ptx and "st.global" not in ptx  # every access of the tile goes through TMA
    _ptxas_accepts(ptx, tmp_path)


@pytest.mark.parametrize("dtype,padding", [("fp8e4nv", "zero"), ("fp16", "nan")])
def test_load_only(dtype, padding, tmp_path):
    k = compile_mapped(cases.map_copy_padded_kernel, {"x_desc": ([32, 64], padding)}, dtype, {"BM": 32, "BN": 64},
                       {"z_ptr": f"*{dtype}"})
    ptx = k.asm["ptx"]
    _check_load(ptx, 2, 32 * 64 * (1 if dtype.startswith("fp8") else 2))
    assert "ld.global" not in ptx
    _ptxas_accepts(ptx, tmp_path)


def test_rank1_and_rank3(tmp_path):
    k1 = compile_mapped(cases.map_1d_kernel, {"x_desc": ([128], "zero"), "z_desc": ([128], "zero")}, "fp32",
                        {"B": 128})
    _check_load(k1.asm["ptx"], 1, 512)
    _check_store(k1.asm["ptx"], 1)
    k3 = compile_mapped(cases.map_3d_kernel, {"x_desc": ([2, 16, 32], "zero"), "z_desc": ([2, 16, 32], "zero")},
                        "fp16", {"B0": 2, "B1": 16, "B2": 32})
    _check_load(k3.asm["ptx"], 3, 2 * 16 * 32 * 2)
    _check_store(k3.asm["ptx"], 3)
    _ptxas_accepts(k3.asm["ptx"], tmp_path)


def test_coordinates_innermost_first():
    """The copy's coordinates list the column before the row (the map's dimension order)."""
    k = compile_mapped(cases.map_scale_kernel, {"x_desc": ([32, 64], "zero"), "z_desc": ([32, 64], "zero")},
                       "fp16", {"BM": 32, "BN": 64})
    ttgir = k.asm["ttgir"]
    assert "tt.descriptor_load" in ttgir and "tt.descriptor_store" in ttgir
    ptx = k.asm["ptx"]
    # column offset = ctaid.y * 64 (a shift by 6), row offset = ctaid.x * 32 (a shift by 5)
    col = re.search(r"mov\.u32\s+(%r\d+), %ctaid\.y;", ptx).group(1)
    row = re.search(r"mov\.u32\s+(%r\d+), %ctaid\.x;", ptx).group(1)
    col_off = re.search(rf"shl\.b32\s+(%r\d+), {col}, 6;", ptx).group(1)
    row_off = re.search(rf"shl\.b32\s+(%r\d+), {row}, 5;", ptx).group(1)
    assert re.search(rf"\[%rd\d+, \{{{col_off}, {row_off}\}}\], \[%r\d+\];", ptx), "load coordinates"


def _persistent(block_k: int, dtype: str = "fp16", stages: int = 3, warps: int = 4, block_n: int = 128, **kw):
    return compile_mapped(cases.map_persistent_matmul_kernel,
                          {"a_desc": ([128, block_k], "zero"), "b_desc": ([block_n, block_k], "zero"),
                           "c_desc": ([128, block_n], "zero")},
                          dtype, {"BM": 128, "BN": block_n, "BK": block_k, "GROUP_M": 8, "NUM_SMS": 132},
                          {"M": "i32", "N": "i32", "K": "i32"}, num_warps=warps, num_stages=stages, **kw)


def _k_loop(ttgir: str) -> str:
    """The body of the innermost ``scf.for`` (the K loop)."""
    start = ttgir.rindex("scf.for")
    return ttgir[start:ttgir.index("scf.yield", start)]


@pytest.mark.parametrize("dtype,block_k,swizzle,spare", [("fp16", 64, 128, True), ("bf16", 32, 64, False),
                                                          ("fp32", 32, 128, True)])
def test_persistent_matmul_pipelined(dtype, block_k, swizzle, spare, tmp_path):
    """The K loop's descriptor loads become TMA copies into the pipeline's slots, each slot
    completing on an mbarrier of its own: the loop waits for slot ``i % n`` on the phase parity
    it carries, and the wgmma reads the slots the copy engine wrote (the map's swizzle, the box
    row's bytes, is the slots' ``nvmma_shared`` one).  With a spare slot the loop refills the slot
    read two iterations earlier before its wgmma (which stays in flight across iterations);
    bf16 with BK 32 takes none (two blocks of 97 KiB would pass the 196 KiB an SM keeps with
    room for L1, ``async_dot.spare_pays``) and refills after the wait that retires the previous
    iteration's wgmma, behind a barrier: Triton's schedule.  (The per-tile prologue as the
    pipeline makes it: ``tile_prefetch`` off; test_nvidia_tile_prefetch.py has the ring across tiles.)"""
    k = _persistent(block_k, dtype, tile_prefetch=False)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    body = _k_loop(ttgir)
    assert "tt.descriptor_load" not in body and "ttg.local_alloc" not in body
    assert body.count("ttg.wait_barrier") == 2 and body.count("ttg.async_copy_descriptor_to_local") == 2
    if spare:
        assert body.index("ttg.wait_barrier") < body.index("ttg.async_copy_descriptor_to_local") \
            < body.index("ttng.warp_group_dot ")
    else:
        assert body.index("ttg.wait_barrier") < body.index("ttng.warp_group_dot ") \
            < body.index("ttng.warp_group_dot_wait") < body.index("ttg.barrier") \
            < body.index("ttg.async_copy_descriptor_to_local")
    assert re.search(r"ttng\.warp_group_dot_wait %\d+ \{pendings = 1", body)
    assert body.count("ttg.barrier") == 1
    # before the loop: two barrier buffers of a slot each, initialised, and the copies of
    # iterations 0 and 1; after it, the barriers retired
    slots = 4 if spare else 3
    head = ttgir[:ttgir.rindex("scf.for")]
    assert head.count("ttg.init_barriers") == 2 and re.search(rf"memdesc<{slots}xi64", head)
    assert head[head.rindex("ttg.init_barriers"):].count("ttg.async_copy_descriptor_to_local") == 4
    assert ttgir.count("ttg.inval_barriers") == 2
    assert f"swizzlingByteWidth = {swizzle}," in head
    # PTX: copies and waits on a phase held in a register; no cp.async of the operands
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes") == 6
    assert re.search(r"mbarrier\.try_wait\.parity\.shared::cta\.b64 done, \[%r\d+\], %r\d+;", ptx)
    assert ptx.count("mbarrier.init.shared::cta.b64") == 2 * slots
    assert ptx.count("mbarrier.inval.shared::cta.b64") == 2 * slots
    assert "cp.async.cg" not in ptx and "cp.async.ca" not in ptx and "wgmma.mma_async" in ptx
    _check_store(ptx, 2)
    _ptxas_accepts(ptx, tmp_path)


def test_two_warp_group_tma_loop_has_one_barrier_after_the_wgmma(tmp_path):
    """8 warps: the refill goes after the wgmma (``async_dot.spare_refill``) behind the one barrier
    the slot's earlier readers need; the landed tiles need none (each thread waits on the slot's
    mbarrier), and the barrier the freshly initialised mbarriers need stands before the loop, once
    a tile, instead of at the top of the body (bench NOTES run 27).  (The per-tile form:
    ``tile_prefetch`` off; with it the barriers are initialised once, before the tile loop.)"""
    k = _persistent(64, warps=8, tile_prefetch=False)
    ttgir = k.asm["ttgir"]
    body = _k_loop(ttgir)
    assert body.count("ttg.barrier") == 1
    assert body.index("ttg.wait_barrier") < body.index("ttng.warp_group_dot ") < body.index("ttg.barrier") \
        < body.index("ttg.async_copy_descriptor_to_local") < body.index("ttng.warp_group_dot_wait")
    head = ttgir[:ttgir.rindex("scf.for")]
    assert head.rstrip().splitlines()[-2].strip().startswith("ttg.barrier")  # the line before the loop's
    _ptxas_accepts(k.asm["ptx"], tmp_path)


def test_wide_block_is_pipelined_as_two_boxes(tmp_path):
    """Blocks with 256-byte rows (BK = 128 fp16) are moved as two 128-byte boxes each, laid out as
    the slots' ``nvmma_shared`` layout holds the block (128-byte columns one after another), so the
    K loop is pipelined: one expect of the whole block, two copies, on the slot's barrier."""
    k = _persistent(128)
    body = _k_loop(k.asm["ttgir"])
    assert "tt.descriptor_load" not in body and body.count("ttg.async_copy_descriptor_to_local") == 2
    ptx = k.asm["ptx"]
    copies = re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes "
                        r"\[%r\d+\], \[%rd\d+, \{(%r\d+), (%r\d+)\}\]", ptx)
    assert len(copies) == 12  # (2 before the loop + 1 in it) x A and B x two boxes
    assert ptx.count("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r") == 6
    assert "expect_tx.shared::cta.b64 _, [%r" in ptx and ", 32768;" in ptx  # 128 x 128 x 2 bytes
    # the C tile (128 x 128 fp16) is stored as two boxes too
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group", ptx)) == 2
    _ptxas_accepts(ptx, tmp_path)


@pytest.mark.parametrize("dtype,block_k,stores", [("fp16", 64, 16), ("bf16", 32, 16), ("fp16", 128, 16), ("fp32", 32, 0)])
def test_accumulator_goes_to_the_store_tile_by_stmatrix(dtype, block_k, stores, tmp_path):
    """A 16-bit C tile leaves the wgmma accumulator for the TMA store's (swizzled) tile with
    ``stmatrix``, four 8x8 tiles a lane-addressed store (Triton's epilogue: 16 for a 128x128 tile
    on four warps), not one ``st.shared`` per register pair; an fp32 tile has no matrix store and
    keeps the vector path."""
    ptx = _persistent(block_k, dtype).asm["ptx"]
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == stores
    if stores:
        assert "st.shared" not in ptx[ptx.rindex("wgmma.wait_group"):]
    _ptxas_accepts(ptx, tmp_path)


def test_store_waits_for_the_engines_read_at_once_when_not_deferred(tmp_path, monkeypatch):
    """With ``defer_store_waits=False``, thread 0 waits for the engine's read right after
    committing the store, before anything else."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    k = _persistent(64, warps=8, defer_store_waits=False)
    ptx = k.asm["ptx"]
    assert "tritium.store_wait_deferred" not in k.asm["ttgir"] and "bulk_store_wait" not in k.asm["ttgir"]
    commit = ptx.index("cp.async.bulk.commit_group;")
    after = ptx[commit:ptx.index("cp.async.bulk.wait_group.read 0;", commit)]
    assert "bar.sync" not in after and "ret;" not in after and "cp.async.bulk.tensor" not in after


def test_store_waits_for_the_engine_only_before_its_tile_is_written_again(tmp_path, monkeypatch):
    """The persistent matmul's store issues its bulk copies and goes on: thread 0 waits for the
    engine's read of the tile (``ttng.bulk_store_wait``) only before an op that writes those bytes
    (the next tile's copies into the slots sharing them, the next store) and before returning;
    copies into other bytes (A's slots) go out while the engine reads.  (Here with
    ``own_store_tiles=False``; the default gives the tile bytes of its own, otherwise it shares
    bytes with B's slots.)"""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    k = _persistent(64, warps=8, block_n=256, own_store_tiles=False)
    ttgir = k.asm["ttgir"]
    store = ttgir.index("tt.descriptor_store")
    assert "tritium.store_wait_deferred" in ttgir[store:ttgir.index("\n", store)]
    lines = [ln.strip() for ln in ttgir.splitlines()]
    for i, ln in enumerate(lines):
        if ln.startswith("tt.descriptor_store") or ln.startswith("tt.return"):
            assert lines[i - 1].startswith("ttng.bulk_store_wait"), ln
    # 128x256x64: A's slots lie past the 64 KiB tile, B's share its bytes: A's first copy goes out
    # before the wait, B's after it
    head = ttgir[ttgir.rindex("ttg.init_barriers"):ttgir.rindex("scf.for")]
    copies = [m.start() for m in re.finditer("ttg.async_copy_descriptor_to_local", head)]
    assert "ttng.bulk_store_wait" not in head[:copies[0]] and "ttng.bulk_store_wait" in head[copies[0]:copies[1]]
    ptx = k.asm["ptx"]
    bulk = ptx.index("cp.async.bulk.commit_group")
    assert "cp.async.bulk.wait_group.read 0" in ptx[bulk:] and "cp.async.bulk.wait_group 0" not in ptx
    _ptxas_accepts(ptx, tmp_path)


def test_map_arguments():
    m = tensor_map.tiled_map_arguments("fp16", 0x10000, [100, 80], [80, 1], [32, 64], "zero")
    assert m.data_type == "FLOAT16" and m.global_dim == (80, 100) and m.global_strides == (160,)
    assert m.box_dim == (64, 32) and not m.nan_fill
    m3 = tensor_map.tiled_map_arguments("fp32", 0x10000, [5, 40, 48], [1920, 48, 1], [2, 16, 32], "nan")
    assert m3.global_dim == (48, 40, 5) and m3.global_strides == (192, 7680) and m3.nan_fill
    assert tensor_map.tiled_map_arguments("fp8e4nv", 0, [64, 64], [64, 1], [64, 64], "zero").data_type == "UINT8"


@pytest.mark.parametrize("dtype,block,swizzle", [
    ("fp16", [32, 64], 128), ("fp8e4nv", [64, 64], 64), ("fp32", [16, 8], 32), ("bf16", [128, 16], 32),
    ("fp16", [32, 128], 128),    # 256-byte rows: two 128-byte boxes, swizzled
    ("fp16", [32, 96], 0),       # 192-byte rows: not a whole number of swizzle spans
    ("fp16", [64, 8], 0),        # 16-byte rows
    ("fp32", [2, 16, 32], 0),    # 3-d boxes stay row-major
])
def test_map_swizzle(dtype, block, swizzle):
    """A 2-d box whose rows are 32, 64 or 128 bytes is encoded swizzled, which is how a
    ``#ttg.nvmma_shared`` buffer of that swizzle holds it."""
    shape = [256] * len(block)
    strides = [256 ** (len(block) - 1 - i) for i in range(len(block))]
    m = tensor_map.tiled_map_arguments(dtype, 0x10000, shape, strides, block, "zero")
    assert m is not None and m.swizzle == swizzle
    # the box: the block, or a 128-byte column of it
    ebytes = {"fp16": 2, "bf16": 2, "fp32": 4, "fp8e4nv": 1}[dtype]
    inner = 128 // ebytes if block[-1] * ebytes > 128 and swizzle else block[-1]
    assert m.box_dim == (inner, *reversed(block[:-1]))


@pytest.mark.parametrize("why,args", [
    ("outer stride of 140 bytes", ("fp16", 0, [50, 70], [70, 1], [16, 32], "zero")),
    ("base not 16-byte aligned", ("fp16", 8, [64, 64], [64, 1], [16, 32], "zero")),
    ("box row of 8 bytes", ("fp16", 0, [64, 64], [64, 1], [64, 4], "zero")),
    ("inner box dimension over 256", ("fp32", 0, [4, 1024, 1024], [1 << 20, 1024, 1], [1, 512, 8], "zero")),
    ("NaN fill for fp8", ("fp8e4nv", 0, [64, 64], [64, 1], [64, 64], "nan")),
    ("no map type for booleans", ("i1", 0, [64, 64], [64, 1], [64, 64], "zero")),
])
def test_map_declined(why, args):
    assert tensor_map.tiled_map_arguments(*args) is None, why


def test_no_map_below_sm90_or_when_off(monkeypatch):
    class Desc:  # never looked at: the target or the switch decides first
        base = None
    assert tensor_map.tensor_map(parse_target("cuda:80"), Desc(), driver=None) is None
    monkeypatch.setenv("TRITIUM_TMA", "0")
    assert tensor_map.tensor_map(parse_target("cuda:90"), Desc(), driver=None) is None
    assert not tensor_map.enabled()
    monkeypatch.delenv("TRITIUM_TMA")  # on unless switched off
    assert tensor_map.enabled()


def test_bench_persistent_kernels(tmp_path):
    """bench/persistent_kernels.py compiles for sm_90 under Tritium in its four versions; only the
    host-descriptor one uses the copy engine, its K loop pipelined (block pointers and in-kernel descriptors keep
    ordinary loads, as in Triton 3.x for block pointers)."""
    from bench_files import bench_kernels
    k = bench_kernels("pm_tritium_test", "persistent_kernels.py")
    cons = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, NUM_SMS=132)
    scalars = {"M": "i32", "N": "i32", "K": "i32"}
    for version in ("plain", "block_ptr", "device_desc"):
        sig = dict(a_ptr="*fp16", b_ptr="*fp16", c_ptr="*fp16", stride_am="i32", stride_bn="i32", stride_cm="i32",
                   **scalars)
        ptx = tritium.compile(getattr(k, f"persistent_{version}"), target="cuda:90", signature=sig,
                              constexprs=cons).asm["ptx"]
        assert "wgmma.mma_async" in ptx and "cp.async.bulk.tensor" not in ptx, version
    kd = compile_mapped(k.persistent_host_desc, {"a_desc": ([64, 32], "zero"), "b_desc": ([64, 32], "zero"),
                                                 "c_desc": ([64, 64], "zero")}, "fp16", cons, scalars)
    ptx = kd.asm["ptx"]
    # the K loop pipelined: two iterations' copies before the tile loop and again before each tile's
    # epilogue (the next tile's, passes/tile_prefetch.py), one in the K loop, for each of A and B
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 10 and "wgmma.mma_async" in ptx
    _ptxas_accepts(ptx, tmp_path)


def test_a_persistent_store_tile_gets_bytes_of_its_own(tmp_path, monkeypatch):
    """With the deferred waits and ``OwnStoreTiles``: the 128x256 store tile of a persistent
    matmul is its own over the tile loop (``SCRATCH_ACROSS_LOOPS``), past every slot, so the K
    loop takes Triton's schedule (3 slots, refilled after the wgmma wait) and the only wait for the
    engine's read stands before the next tile's store (and before returning): no wait among the
    next tile's copies.  The block's shared memory stays within sm_90's 227 KB.  (``tile_prefetch``
    off, as the pipeline leaves the loop; with it, test_nvidia_tile_prefetch.py.)"""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    k = _persistent(64, warps=8, block_n=256, tile_prefetch=False)
    ttgir = k.asm["ttgir"]
    store_line = next(ln for ln in ttgir.splitlines() if "tt.descriptor_store" in ln)
    assert "allocation.scratch_across_loops" in store_line and "tritium.store_wait_deferred" in store_line
    tile_at = int(re.search(r"allocation\.offset = (\d+)", store_line).group(1))
    slots = re.findall(r"ttg\.local_alloc \{tritium\.pipeline_stages = 3 : i32, allocation\.offset = (\d+) : i32\}"
                       r" : \(\) -> !ttg\.memdesc<(\d+)x(\d+)x(\d+)xf16", ttgir)
    assert len(slots) == 2 and all(int(n) == 3 for _, n, _, _ in slots)  # no spare slot
    for offset, n, r, c in slots:
        lo, hi = int(offset), int(offset) + int(n) * int(r) * int(c) * 2
        assert hi <= tile_at or lo >= tile_at + 128 * 256 * 2
    shared = int(re.search(r"ttg\.shared = (\d+) : i32", ttgir).group(1))
    assert shared <= 227 * 1024
    lines = [ln.strip() for ln in ttgir.splitlines()]
    for i, ln in enumerate(lines):
        if ln.startswith("tt.descriptor_store") or ln.startswith("tt.return"):
            assert lines[i - 1].startswith("ttng.bulk_store_wait"), ln
    head = ttgir[ttgir.rindex("ttg.init_barriers"):ttgir.rindex("scf.for")]
    assert "ttng.bulk_store_wait" not in head and head.count("ttg.async_copy_descriptor_to_local") == 4
    body = _k_loop(ttgir)
    assert body.index("ttng.warp_group_dot_wait") < body.index("ttg.async_copy_descriptor_to_local")
    _ptxas_accepts(k.asm["ptx"], tmp_path)


@pytest.mark.parametrize("own_tiles", [True, False])
def test_copies_are_fenced_only_after_ordinary_accesses_of_their_bytes(tmp_path, monkeypatch, own_tiles):
    """``UnfencedCopies``: a copy into slots that only wgmma reads needs no ``fence.proxy.async``
    (on sm_90 a ``MEMBAR.ALL.CTA``) unless an ordinary access of the same bytes may precede it.  The
    persistent matmul's epilogue writes its store tile in the tile loop: over bytes of its own
    (``own_store_tiles``), no copy is fenced; placed over slots, the copies into those slots are."""
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    k = _persistent(64, warps=8, block_n=256, own_store_tiles=own_tiles)
    ttgir = k.asm["ttgir"]
    store_at = int(re.search(r"tt\.descriptor_store[^\n]*allocation\.offset = (\d+)", ttgir).group(1))
    store = (store_at, store_at + 128 * 256 * 2)
    slots = {}  # buffer name -> byte range
    for name, offset, n, r, c in re.findall(r"(%\w+) = ttg\.local_alloc \{tritium\.pipeline_stages = 3 : i32, "
                                            r"allocation\.offset = (\d+) : i32\} : \(\) -> "
                                            r"!ttg\.memdesc<(\d+)x(\d+)x(\d+)xf16", ttgir):
        slots[name] = (int(offset), int(offset) + int(n) * int(r) * int(c) * 2)
    copies = [ln for ln in ttgir.splitlines() if "ttg.async_copy_descriptor_to_local" in ln]
    # with its own store tile the next tile's prologue goes before the epilogue (tile_prefetch), four
    # copies more; over the slots it is declined
    assert len(copies) == (10 if own_tiles else 6)
    views = dict(re.findall(r"(%\w+) = ttg\.memdesc_index (%\w+)\[", ttgir))
    for ln in copies:
        buf = views[re.search(r"\], (%\w+), ", ln).group(1)]
        lo, hi = slots[buf]
        under_store = lo < store[1] and store[0] < hi
        assert ("tritium.unfenced_copy" in ln) == (not under_store), (ln, slots, store)
    assert (k.asm["ptx"].count("fence.proxy.async.shared::cta") == 1) == own_tiles  # the store's own
    _ptxas_accepts(k.asm["ptx"], tmp_path)


def test_host_maps_are_acquired_once_at_the_start():
    """A host descriptor's map is acquired for the copy engine once, by thread 0, before the first
    bulk copy (``AcquireMapsOnce``): three maps, three system-scope fences ahead of every copy,
    and none per access (the store used to fence once per tile)."""
    k = _persistent(64, warps=8)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert ttgir.count("ttng.tensormap_acquire") == 3
    fences = [m.start() for m in re.finditer(r"fence\.proxy\.tensormap::generic\.acquire\.sys \[%rd\d+\], 128;", ptx)]
    assert len(fences) == 3 and "fence.proxy.tensormap::generic.acquire.gpu" not in ptx
    assert max(fences) < ptx.index("cp.async.bulk.tensor")


@pytest.mark.parametrize("block,ebytes,want", [
    # more than 256 rows: boxes of 256 rows one after another
    ((512, 32), 2, [(0, (0, 0)), (256 * 64, (256, 0))]),
    # rows of 256 bytes: two 128-byte columns, each of the block's 512 rows in two boxes
    ((512, 128), 2, [(0, (0, 0)), (256 * 128, (256, 0)), (512 * 128, (0, 64)), (768 * 128, (256, 64))]),
    # rank 1: the only dimension is cut
    ((1024,), 4, [(0, (0,)), (1024, (256,)), (2048, (512,)), (3072, (768,))]),
    ((64, 64), 2, [(0, (0, 0))]),
])
def test_map_boxes_cover_the_block(block, ebytes, want):
    """A block is moved as boxes of at most 256 elements per dimension, each where the tile's
    layout has it; together they cover every element once."""
    boxes = tensor_map.map_boxes(block, ebytes)
    assert boxes == want
    box = tensor_map.map_box(block, ebytes)
    assert all(b <= tensor_map.MAX_BOX for b in box)
    covered = set()
    for _, start in boxes:
        import itertools
        for idx in itertools.product(*[range(s, s + b) for s, b in zip(start, box)]):
            assert idx not in covered
            covered.add(idx)
    assert len(covered) == int(__import__("math").prod(block))
