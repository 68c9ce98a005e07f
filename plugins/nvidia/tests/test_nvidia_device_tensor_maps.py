"""``tl.make_tensor_descriptor`` on sm_90 builds a TMA tensor map in the kernel (no GPU needed
here: the PTX, the metadata and the real assembler): where the base and the outer strides are
known to be 16-byte aligned the accesses are bulk tensor copies through a map in the program's
global scratch; elsewhere, below sm_90 and with TMA off they stay block-pointer loads."""
import os
import shutil
import subprocess

import pytest

import tritium
import tritium.language as tl

PTXAS = shutil.which("ptxas") or ("/usr/local/bin/ptxas" if os.path.exists("/usr/local/bin/ptxas") else None)
D16 = {"tt.divisibility": 16}
FENCE = "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned"


@tritium.jit
def copy_kernel(out_ptr, a_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(a_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    off = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    dst.store(off, src.load(off) + 1)


@tritium.jit
def same_twice_kernel(a_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # the same descriptor made three times (once per iteration): one map, made before the loop
    d = tl.make_tensor_descriptor(a_ptr, [M, N], [N, 1], [BM, BN])
    for i in range(0, N, BN):
        d = tl.make_tensor_descriptor(a_ptr, [M, N], [N, 1], [BM, BN])
        d.store([tl.program_id(0) * BM, i], d.load([tl.program_id(0) * BM, i]) * 2)


@tritium.jit(noinline=True)
def _scale_rows(a_ptr, N, BM: tl.constexpr, BN: tl.constexpr):
    a_ptr = tl.multiple_of(a_ptr, 16)
    N = tl.multiple_of(N, 16)
    d = tl.make_tensor_descriptor(a_ptr, [BM, N], [N, 1], [BM, BN])
    d.store([0, tl.program_id(0) * BN], d.load([0, tl.program_id(0) * BN]) * 3)


@tritium.jit
def calls_kernel(a_ptr, b_ptr, N, BM: tl.constexpr, BN: tl.constexpr):
    d = tl.make_tensor_descriptor(b_ptr, [BM, N], [N, 1], [BM, BN])
    d.store([0, 0], d.load([0, 0]))
    _scale_rows(a_ptr, N, BM, BN)


@tritium.jit
def batched_gemm_2d(a_ptr, b_ptr, c_ptr, B, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr):
    # a persistent batched C[b] = A[b] @ B[b].T whose descriptors are remade for each tile's batch
    tiles_m, tiles_n, k_tiles = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), tl.cdiv(K, BLOCK_K)
    per_batch = tiles_m * tiles_n
    mine = (B * per_batch - tl.program_id(0) + NUM_SMS - 1) // NUM_SMS
    tile = tl.program_id(0) - NUM_SMS
    ki = -1
    om = 0
    on = 0
    a_d = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_d = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BLOCK_N, BLOCK_K])
    c_d = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(k_tiles * mine):
        ki = tl.where(ki == k_tiles - 1, 0, ki + 1)
        if ki == 0:
            tile += NUM_SMS
            bi = tile // per_batch
            om = (tile // tiles_n) % tiles_m * BLOCK_M
            on = tile % tiles_n * BLOCK_N
            a_d = tl.make_tensor_descriptor(a_ptr + bi * M * K, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
            b_d = tl.make_tensor_descriptor(b_ptr + bi * N * K, [N, K], [K, 1], [BLOCK_N, BLOCK_K])
            c_d = tl.make_tensor_descriptor(c_ptr + bi * M * N, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
        acc = tl.dot(a_d.load([om, ki * BLOCK_K]), b_d.load([on, ki * BLOCK_K]).T, acc)
        if ki == k_tiles - 1:
            c_d.store([om, on], acc.to(tl.float16))
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)


SIG = {"out_ptr": "*fp16", "a_ptr": "*fp16", "M": "i32", "N": "i32"}
CONS = {"BM": 64, "BN": 64}


def _compile(kernel, target="cuda:90", attrs=None, signature=None, constexprs=None, **opts):
    return tritium.compile(kernel, target=target, signature=signature or SIG, constexprs=constexprs or CONS,
                           attrs={"out_ptr": D16, "a_ptr": D16, "N": D16} if attrs is None else attrs, **opts)


def test_aligned_descriptors_are_maps_the_kernel_builds(tmp_path):
    k = _compile(copy_kernel)
    ptx = k.asm["ptx"]
    assert ptx.count(FENCE) == 2  # one map per descriptor, published with a release fence
    assert "tensormap.replace.tile.global_address.shared::cta.b1024.b64" in ptx
    assert "tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32" in ptx
    assert "fence.proxy.tensormap::generic.acquire.gpu" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx  # the load
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx       # the store
    assert "tt.make_tensor_descriptor" in k.asm["ttir"] and "ttng.tensormap_create" in k.asm["ttgir"]
    # 128 bytes a map per program, 128-byte aligned, through one more kernel parameter
    assert (k.metadata.global_scratch_size, k.metadata.global_scratch_align) == (256, 128)
    assert ".param .u64 .ptr .global .align 1 copy_kernel_param_4" in ptx
    if PTXAS is None:
        pytest.skip("no ptxas on this machine to assemble the PTX with")
    (tmp_path / "k.ptx").write_text(ptx)
    subprocess.run([PTXAS, "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")], check=True,
                   capture_output=True)


@pytest.mark.parametrize("why,target,attrs,opts", [
    ("a stride not known to be a multiple of 16 bytes", "cuda:90", {"out_ptr": D16, "a_ptr": D16}, {}),
    ("a base not known to be 16-byte aligned", "cuda:90", {"N": D16}, {}),
    ("no TMA below sm_90", "cuda:80", None, {}),
    ("TMA switched off", "cuda:90", None, {"tma": False}),
])
def test_otherwise_block_pointer_loads(why, target, attrs, opts):
    k = _compile(copy_kernel, target=target, attrs=attrs, **opts)
    assert "tensormap" not in k.asm["ptx"] and "cp.async.bulk" not in k.asm["ptx"], why
    assert k.metadata.global_scratch_size == 0, why
    assert "tt.make_tensor_descriptor" not in k.asm["ttir"], why


def test_the_switch_is_an_option_from_the_environment(monkeypatch):
    from tritium_nvidia.options import parse_options, parse_target
    assert parse_options(parse_target("cuda:90"), {}).tma is True
    monkeypatch.setenv("TRITIUM_TMA", "0")
    assert parse_options(parse_target("cuda:90"), {}).tma is False  # so part of the cache key


def test_one_map_for_the_same_descriptor_made_in_a_loop():
    k = _compile(same_twice_kernel, signature={"a_ptr": "*fp32", "M": "i32", "N": "i32"},
                 constexprs={"BM": 8, "BN": 128}, attrs={"a_ptr": D16, "N": D16})
    assert k.asm["ptx"].count(FENCE) == 1
    assert k.metadata.global_scratch_size == 128


def test_a_noinline_callee_gets_its_part_of_the_scratch():
    k = _compile(calls_kernel, signature={"a_ptr": "*fp16", "b_ptr": "*fp16", "N": "i32"},
                 attrs={"b_ptr": D16, "N": D16})
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert k.metadata.global_scratch_size == 256  # the kernel's map, then the callee's
    assert ptx.count(FENCE) == 2
    assert "ttg.global_scratch_memory_offset = 128" in ttgir  # the call's part, after the kernel's map


def test_maps_made_in_a_pipelined_loop_get_a_ring():
    """A persistent loop that makes its descriptors per tile keeps ``num_stages - 1`` (+1 with a
    wgmma) maps of each in flight, in a ring the loop's counter walks."""
    k = tritium.compile(batched_gemm_2d, target="cuda:90",
                        signature={"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "B": "i32", "M": "i32",
                                   "N": "i32", "K": "i32"},
                        constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_SMS": 96},
                        attrs={n: D16 for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K")}, num_warps=8, num_stages=3)
    # three maps made once, three in the loop with a ring of three each
    assert k.metadata.global_scratch_size == 128 * 3 * (1 + 3)
    assert k.asm["ptx"].count(FENCE) == 6
    assert "arith.remui" in k.asm["ttgir"]


@pytest.mark.parametrize("block", [(512, 32), (1, 1024)])
def test_blocks_wider_than_a_box(block):
    """More than 256 rows, or rows longer than the 128-byte swizzle: several boxes a block."""
    k = _compile(copy_kernel, signature={"out_ptr": "*fp32", "a_ptr": "*fp32", "M": "i32", "N": "i32"},
                 constexprs={"BM": block[0], "BN": block[1]})
    ptx = k.asm["ptx"]
    assert ptx.count(FENCE) == 2
    rows, width = block
    boxes = (rows // min(rows, 256)) * max(width * 4 // 128, 1)
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == boxes


@tritium.jit
def map_in_a_while_kernel(a_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, N, BN):
        i = 0
        while i < 2:  # a map made in a loop nested in the pipelined one: one map, no ring
            d = tl.make_tensor_descriptor(a_ptr + i * BN, [M, N], [N, 1], [BM, BN])
            acc += d.load([tl.program_id(0) * BM, k]).to(tl.float32)
            i += 1
    out = tl.make_tensor_descriptor(a_ptr, [M, N], [N, 1], [BM, BN])
    out.store([tl.program_id(0) * BM, 0], acc.to(tl.float16))


def test_a_map_made_in_a_nested_while_gets_no_ring():
    k = _compile(map_in_a_while_kernel, signature={"a_ptr": "*fp16", "M": "i32", "N": "i32"},
                 constexprs={"BM": 64, "BN": 64}, attrs={"a_ptr": D16, "N": D16}, num_stages=3)
    # the while body's map and the output's: one each, no ring (and no counter left dangling)
    assert k.metadata.global_scratch_size == 2 * 128
    assert k.asm["ptx"].count(FENCE) == 2


@tritium.jit
def _make_desc(ptr, rows, cols, BM: tl.constexpr, BN: tl.constexpr):
    return tl.make_tensor_descriptor(ptr, [rows, cols], [cols, 1], [BM, BN])


@tritium.jit
def helper_kernel(out_ptr, a_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # the descriptors made by a helper, as Triton 3.6's attention tutorial does (_maybe_make_tensor_desc)
    src = _make_desc(a_ptr, M, N, BM, BN)
    dst = _make_desc(out_ptr, M, N, BM, BN)
    off = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    dst.store(off, src.load(off) + 1)


@pytest.mark.parametrize("aligned", [True, False])
def test_a_helper_knows_what_its_caller_knows(aligned):
    """A helper is specialized on the divisibility its caller knows of each argument: the kernel's
    16-byte aligned pointers and row length reach the helper that makes the descriptors, which then
    builds maps (the copy engine); without those facts it keeps block-pointer accesses."""
    k = _compile(helper_kernel, attrs=None if aligned else {})
    assert ("ttng.tensormap_create" in k.asm["ttgir"]) == aligned
    assert ("cp.async.bulk.tensor.2d.shared::cluster.global" in k.asm["ptx"]) == aligned
