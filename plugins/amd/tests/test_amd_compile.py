"""CPU-only: kernels compile through every AMD stage to an hsaco for gfx942 (wave64, MFMA) and
gfx1100 (wave32, WMMA), without a GPU or ROCm; the code objects are checked (ELF machine, amdhsa
metadata, kernarg layout, wavefront size, LDS size) and the assembly shows the instructions the
lowering chose."""
import re

import pytest

import tritium as triton
import tritium.language as tl
from conformance.cases import tutorials_basic as tb
from tritium.examples import matmul
from tritium_amd.toolchain.elf import check_hsaco
from tritium_amd.toolchain.elf import EM_AMDGPU, read_hsaco

D = {"tt.divisibility": 16}
TARGETS = ["hip:gfx942", "hip:gfx1100"]
WAVE = {"hip:gfx942": 64, "hip:gfx1100": 32, "hip:gfx90a": 64}


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


def compile_kernel(fn, target, sig, consts, attrs=None, **opts):
    return triton.compile(fn, target=target, signature=sig, constexprs=consts, attrs=attrs or {}, **opts)


def mnemonics(asm: str, prefix: str) -> set[str]:
    return set(re.findall(rf"^\s*({prefix}\w*)", asm, flags=re.M))


@pytest.mark.parametrize("target", TARGETS)
def test_vector_add(target):
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}
    k = compile_kernel(tb.add_kernel, target, sig, {"BLOCK_SIZE": 1024}, {n: D for n in sig}, num_warps=4)
    assert list(k.asm) == ["ttir", "ttgir", "llir", "amdgcn", "hsaco"]
    assert f'"ttg.threads-per-warp" = {WAVE[target]}' in k.asm["ttgir"]
    assert "amdgpu_kernel" in k.asm["llir"] and "llvm.amdgcn.workitem.id.x" in k.asm["llir"]
    # 16-byte aligned pointers and n: 128-bit global accesses
    assert "global_load_dwordx4" in k.asm["amdgcn"] or "global_load_b128" in k.asm["amdgcn"]
    info = read_hsaco(k.asm["hsaco"])
    assert info.machine == EM_AMDGPU and info.arch == target.split(":")[1]
    kern = info.kernel("add_kernel")
    assert kern.kernarg_segment_size >= 28 and kern.wavefront_size == WAVE[target]
    assert [(a[".offset"], a[".size"]) for a in kern.explicit_args] == [(0, 8), (8, 8), (16, 8), (24, 4)]
    assert kern.max_flat_workgroup_size == 4 * WAVE[target]
    check_hsaco(k.asm["hsaco"], k.metadata)


@pytest.mark.parametrize("target", TARGETS)
def test_softmax_reduces_across_the_whole_wavefront(target):
    sig = {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32",
           "n_rows": "i32", "n_cols": "i32"}
    k = compile_kernel(tb.softmax_kernel, target, sig, {"BLOCK_SIZE": 1024, "num_stages": 1}, num_warps=4)
    asm, llir = k.asm["amdgcn"], k.asm["llir"]
    assert "s_barrier" in asm
    # the butterfly spans every lane: xor 1..8 by DPP moves (quad_perm, then the row mirrors on
    # gfx9 or row_xmask on gfx11), 16 by ds_swizzle on gfx9 (xor mask in bits 10-14) and by
    # v_permlanex16 on gfx11 (a VALU move: no LDS counter to wait on), and on wave64 the last step
    # (xor 32) crosses the halves with ds_bpermute
    masks = {int(m) >> 10 for m in re.findall(r"llvm\.amdgcn\.ds\.swizzle\"?\(i32 [^,]+, i32 (\d+)\)", llir)}
    if WAVE[target] == 64:
        assert masks == {16} and "ds_swizzle_b32" in asm
    else:
        assert not masks and "v_permlanex16_b32" in asm and "ds_swizzle_b32" not in asm
    ctrls = {int(c) for c in re.findall(r"llvm\.amdgcn\.update\.dpp\.i32\"?\(i32 [^,]+, i32 [^,]+, i32 (\d+),", llir)}
    assert {0xB1, 0x4E} <= ctrls and ({0x140, 0x141, 0x1B} <= ctrls or {0x164, 0x168} <= ctrls)
    if WAVE[target] == 64:
        assert "ds_bpermute_b32" in asm and "xor i32" in llir
    else:
        assert "ds_bpermute_b32" not in asm
    kern = read_hsaco(k.asm["hsaco"]).kernel("softmax_kernel")
    assert kern.group_segment_fixed_size == k.metadata["shared"] > 0
    check_hsaco(k.asm["hsaco"], k.metadata)


MM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **{n: "i32" for n in (
    "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")}}
MM_CONSTS = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "ACTIVATION": ""}


@pytest.mark.parametrize("target, instr", [("hip:gfx942", "v_mfma_f32_32x32x8_f16"),
                                           ("hip:gfx90a", "v_mfma_f32_32x32x8f16"),
                                           ("hip:gfx1100", "v_wmma_f32_16x16x16_f16")])
def test_tutorial_matmul_uses_matrix_instructions(target, instr):
    k = compile_kernel(matmul.matmul_kernel.fn, target, MM_SIG, MM_CONSTS, num_warps=4)
    ttgir, asm = k.asm["ttgir"], k.asm["amdgcn"]
    enc = "#ttg.amd_wmma" if "wmma" in instr else "#ttg.amd_mfma"
    assert enc in ttgir and "#ttg.dot_op<{opIdx = 0, parent = " + enc in ttgir
    assert mnemonics(asm, "v_mfma") | mnemonics(asm, "v_wmma") == {instr}
    assert k.metadata["dot_lowering"][0].startswith(instr[2:6])
    # the accumulator stays in the matrix layout through the K loop and is stored from it
    # (optimize-epilogue): the only conversions are the operands' (into dot_op)
    assert ttgir.count("ttg.convert_layout") == 2
    store = next(ln for ln in ttgir.splitlines() if "tt.store" in ln)
    assert enc in store.split(":", 1)[1]
    kern = read_hsaco(k.asm["hsaco"]).kernel("matmul_kernel")
    assert kern.group_segment_fixed_size == k.metadata["shared"]
    check_hsaco(k.asm["hsaco"], k.metadata)


@triton.jit
def int8_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@pytest.mark.parametrize("target, instr", [("hip:gfx942", "v_mfma_i32_32x32x16_i8"),
                                           ("hip:gfx90a", "v_mfma_i32_32x32x8i8"),
                                           ("hip:gfx1100", "v_wmma_i32_16x16x16_iu8")])
def test_int8_dot(target, instr):
    k = compile_kernel(int8_dot, target, {"a_ptr": "*i8", "b_ptr": "*i8", "c_ptr": "*i32"},
                       {"M": 64, "N": 64, "K": 64}, num_warps=4)
    assert mnemonics(k.asm["amdgcn"], "v_mfma") | mnemonics(k.asm["amdgcn"], "v_wmma") == {instr}
    check_hsaco(k.asm["hsaco"], k.metadata)


@pytest.mark.parametrize("dtype, instr", [("bf16", "v_mfma_f32_32x32x8_bf16"), ("fp32", None)])
def test_bf16_dot_and_fp32_fallback(dtype, instr):
    sig = dict(MM_SIG, a_ptr=f"*{dtype}", b_ptr=f"*{dtype}")
    k = compile_kernel(matmul.matmul_kernel.fn, "hip:gfx942", sig, MM_CONSTS, num_warps=4)
    found = mnemonics(k.asm["amdgcn"], "v_mfma")
    if instr:
        assert found == {instr}
    else:
        assert not found and k.metadata["dot_lowering"] == ["fma: f32 operands: only fp16, bf16, int8 and FNUZ fp8 dots use MFMA"]
    check_hsaco(k.asm["hsaco"], k.metadata)


def test_small_dot_falls_back_with_its_reason():
    k = compile_kernel(int8_dot, "hip:gfx942", {"a_ptr": "*i8", "b_ptr": "*i8", "c_ptr": "*i32"},
                       {"M": 16, "N": 16, "K": 16}, num_warps=1)
    (line,) = k.metadata["dot_lowering"]
    assert line.startswith("fma: the 16x16x16 dot is smaller than") and "16x16x32" in line
    assert not mnemonics(k.asm["amdgcn"], "v_mfma")
    check_hsaco(k.asm["hsaco"], k.metadata)


def test_check_hsaco_rejects_mismatches():
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}
    k = compile_kernel(tb.add_kernel, "hip:gfx942", sig, {"BLOCK_SIZE": 256}, num_warps=4)
    good = dict(k.metadata)
    check_hsaco(k.asm["hsaco"], good)
    for change, msg in [({"name": "other"}, "no kernel 'other'"), ({"shared": 1024}, "LDS size"),
                        ({"threads_per_warp": 32}, "32-lane"), ({"target": "hip:gfx1100"}, "gfx942"),
                        ({"signature": dict(good["signature"], n_elements="i64")}, "kernel arguments")]:
        with pytest.raises(ValueError, match=msg):
            check_hsaco(k.asm["hsaco"], dict(good, **change))
    with pytest.raises(ValueError, match="not an ELF"):
        check_hsaco(b"\0" * 64, good)


def test_cli_compiles_to_hsaco_without_a_gpu(tmp_path):
    """``tritium compile k.py:kernel --target hip:gfx942 --stage hsaco -o out/``, as a user runs it."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    import tritium.examples.vector_add as vadd
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "tritium.cli", "compile", f"{Path(vadd.__file__)}:add_kernel",
                        "--signature", "*fp32,*fp32,*fp32,i32", "--constexpr", "BLOCK_SIZE=1024",
                        "--target", "hip:gfx942", "--stage", "hsaco", "-o", str(out)],
                       capture_output=True, text=True, env={**os.environ, "TRITIUM_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "add_kernel.json").read_text())
    assert meta["stages"] == ["ttir", "ttgir", "llir", "amdgcn", "hsaco"]
    assert ".amdhsa_kernel add_kernel" in (out / "add_kernel.amdgcn").read_text()
    check_hsaco((out / "add_kernel.hsaco").read_bytes(), meta)


@triton.jit
def print_and_assert(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 64))
    tl.device_print("x", x)
    tl.device_assert(x > 0, "x must be positive")


@pytest.mark.parametrize("target", TARGETS)
def test_device_print_is_self_contained(target):
    """printf records go to the runtime's printf buffer through ``__printf_alloc``, defined in the
    code object itself: nothing is left for a device library to provide."""
    k = compile_kernel(print_and_assert, target, {"x_ptr": "*fp32"}, {}, debug=True)
    info = read_hsaco(k.asm["hsaco"])
    assert info.undefined == () and "__printf_alloc" in info.functions
    formats = info.metadata["amdhsa.printf"]
    # Triton's line format, "pid (..) idx (..) x: %f" (the metadata writes ':' as \72)
    assert any("idx (" in f and ("x: %f" in f or "x\\72 %f" in f) for f in formats)
    assert any("x must be positive" in f or "Assertion" in f for f in formats)
    kinds = [a[".value_kind"] for a in info.kernel("print_and_assert").args]
    assert "hidden_printf_buffer" in kinds
    assert "s_trap" in k.asm["amdgcn"]
    check_hsaco(k.asm["hsaco"], k.metadata)


@triton.jit
def volatile_copy(x_ptr, y_ptr):
    offs = tl.arange(0, 256)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, volatile=True))


def test_volatile_loads_bypass_the_caches():
    k = compile_kernel(volatile_copy, "hip:gfx942", {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {},
                       {"x_ptr": D, "y_ptr": D})
    assert "load atomic i32" in k.asm["llir"]
    loads = [line for line in k.asm["amdgcn"].splitlines() if "global_load" in line]
    assert loads and all("sc0 sc1" in line for line in loads)   # system-coherent on gfx942
    check_hsaco(k.asm["hsaco"], k.metadata)


@triton.jit
def fp8_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@pytest.mark.parametrize("target, instr", [("hip:gfx942", "v_mfma_f32_32x32x8_f16"),
                                           ("hip:gfx1100", "v_wmma_f32_16x16x16_f16")])
def test_fp8_dot_upcasts_to_fp16_matrix_instructions(target, instr):
    k = compile_kernel(fp8_dot, target, {"a_ptr": "*fp8e5", "b_ptr": "*fp8e4nv", "c_ptr": "*fp32"},
                       {"M": 64, "N": 64, "K": 64}, num_warps=4)
    (line,) = k.metadata["dot_lowering"]
    assert "fp8 operands upcast to fp16" in line
    assert "tt.fp_to_fp" in k.asm["ttgir"]
    assert mnemonics(k.asm["amdgcn"], "v_mfma") | mnemonics(k.asm["amdgcn"], "v_wmma") == {instr}
    check_hsaco(k.asm["hsaco"], k.metadata)


def test_large_tiles_convert_through_lds_in_row_slices():
    """A layout conversion that would not fit in 64 KiB of LDS whole goes through it in row slices
    (the module's ``ttg.convert-scratch-limit``): a 256x256x128 matmul with an fp32 result fits."""
    sig = dict(MM_SIG, c_ptr="*fp32")
    k = compile_kernel(matmul.matmul_kernel.fn, "hip:gfx942", sig,
                       dict(MM_CONSTS, BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=128), num_warps=8)
    assert '"ttg.convert-scratch-limit" = 65536' in k.asm["ttgir"]
    assert 0 < k.metadata["shared"] <= 65536
    assert mnemonics(k.asm["amdgcn"], "v_mfma") == {"v_mfma_f32_32x32x8_f16"}
    check_hsaco(k.asm["hsaco"], k.metadata)


def test_gfx942_preloads_kernel_arguments_into_sgprs():
    """gfx942 kernel arguments are ``inreg``: the firmware preloads them into SGPRs (the code
    object keeps a prologue loading them for firmware that does not, then jumps past it), so the
    kernel body waits on no scalar load of its arguments; gfx1100 loads them from the segment."""
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}
    asm = {}
    for target in TARGETS:
        k = compile_kernel(tb.add_kernel, target, sig, {"BLOCK_SIZE": 1024}, num_warps=4)
        asm[target] = k.asm["amdgcn"]
        check_hsaco(k.asm["hsaco"], k.metadata)
        assert ("ptr addrspace(1) inreg" in k.asm["llir"]) == (target == "hip:gfx942")
    body = asm["hip:gfx942"].split("add_kernel:", 1)[1].split(".p2align\t8", 1)
    assert len(body) == 2 and "s_load" in body[0]  # the loading prologue, then the preloaded entry
    assert "s_load" not in body[1].split("s_endpgm")[0] and "lgkmcnt" not in body[1].split("s_endpgm")[0]
    assert ".amdhsa_user_sgpr_kernarg_preload_length" in asm["hip:gfx942"]
    assert "kernarg_preload" not in asm["hip:gfx1100"]


def test_warp_id_is_uniform_so_warp_owned_rows_compare_in_scalar_registers():
    """The warp id comes from ``readfirstlane``: in the tutorial matmul each wavefront owns whole
    K rows of the B tile, so their masks (``offs_k < K - k * BLOCK_K``) are scalar compares, not a
    vector compare per element."""
    k = compile_kernel(matmul.matmul_kernel.fn, "hip:gfx942", MM_SIG, MM_CONSTS, num_warps=4)
    assert "llvm.amdgcn.readfirstlane" in k.asm["llir"]
    asm = k.asm["amdgcn"]
    loads = len(re.findall(r"^\s*global_load", asm, flags=re.M))
    assert len(re.findall(r"^\s*s_cmp_\w+_i32", asm, flags=re.M)) >= loads // 2


_WIDE_ROW = """
#a = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 64], warpsPerCTA = [1, 4], order = [1, 0]}>
#b = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 64], warpsPerCTA = [1, 4], order = [1, 0]}>
module attributes {"ttg.num-warps" = 4 : i32, "ttg.num-ctas" = 1 : i32, "ttg.threads-per-warp" = 64 : i32} {
  tt.func public @wide_row(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
    %c = tt.make_range {end = 32768 : i32, start = 0 : i32} : tensor<32768xi32, #ttg.slice<{dim = 0, parent = #a}>>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<32768xi32, #ttg.slice<{dim = 0, parent = #a}>> -> tensor<1x32768xi32, #a>
    %ps = tt.splat %x : !tt.ptr<f32> -> tensor<1x32768x!tt.ptr<f32>, #a>
    %p = tt.addptr %ps, %c2 : tensor<1x32768x!tt.ptr<f32>, #a>, tensor<1x32768xi32, #a>
    %v = tt.load %p : tensor<1x32768x!tt.ptr<f32>, #a>
    %w = ttg.convert_layout %v : tensor<1x32768xf32, #a> -> tensor<1x32768xf32, #b>
    %o = ttg.convert_layout %c2 : tensor<1x32768xi32, #a> -> tensor<1x32768xi32, #b>
    %qs = tt.splat %y : !tt.ptr<f32> -> tensor<1x32768x!tt.ptr<f32>, #b>
    %q = tt.addptr %qs, %o : tensor<1x32768x!tt.ptr<f32>, #b>, tensor<1x32768xi32, #b>
    tt.store %q, %w : tensor<1x32768x!tt.ptr<f32>, #b>
    tt.return
  }
}
"""


_WIDE_TILE = """
#a = #ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [16, 4], warpsPerCTA = [1, 4], order = [0, 1]}>
#b = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {"ttg.num-warps" = 4 : i32, "ttg.num-ctas" = 1 : i32, "ttg.threads-per-warp" = 64 : i32} {
  tt.func public @wide_tile(%x: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 1, parent = #a}>>
    %c = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32, #ttg.slice<{dim = 0, parent = #a}>>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<64xi32, #ttg.slice<{dim = 1, parent = #a}>> -> tensor<64x1xi32, #a>
    %n = arith.constant dense<256> : tensor<64x1xi32, #a>
    %rn = arith.muli %r2, %n : tensor<64x1xi32, #a>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<256xi32, #ttg.slice<{dim = 0, parent = #a}>> -> tensor<1x256xi32, #a>
    %rb = tt.broadcast %rn : tensor<64x1xi32, #a> -> tensor<64x256xi32, #a>
    %cb = tt.broadcast %c2 : tensor<1x256xi32, #a> -> tensor<64x256xi32, #a>
    %off = arith.addi %rb, %cb : tensor<64x256xi32, #a>
    %ps = tt.splat %x : !tt.ptr<i32> -> tensor<64x256x!tt.ptr<i32>, #a>
    %p = tt.addptr %ps, %off : tensor<64x256x!tt.ptr<i32>, #a>, tensor<64x256xi32, #a>
    %v = tt.load %p : tensor<64x256x!tt.ptr<i32>, #a>
    %w = ttg.convert_layout %v : tensor<64x256xi32, #a> -> tensor<64x256xi32, #b>
    %o = ttg.convert_layout %off : tensor<64x256xi32, #a> -> tensor<64x256xi32, #b>
    %qs = tt.splat %y : !tt.ptr<i32> -> tensor<64x256x!tt.ptr<i32>, #b>
    %q = tt.addptr %qs, %o : tensor<64x256x!tt.ptr<i32>, #b>, tensor<64x256xi32, #b>
    tt.store %q, %w : tensor<64x256x!tt.ptr<i32>, #b>
    tt.return
  }
}
"""


def test_ttgir_text_gets_the_lds_bound_too():
    """A module compiled from TTGIR text skips the ``ttgir`` stage but not its LDS bound: its
    64x256 i32 conversions (66 KiB of scratch padded) go through LDS in row slices."""
    k = triton.compile(_WIDE_TILE, target="hip:gfx942")
    assert '"ttg.convert-scratch-limit" = 65536' in k.asm["ttgir"]
    assert 0 < k.metadata["shared"] <= 65536
    check_hsaco(k.asm["hsaco"], k.metadata)


def test_too_much_lds_is_out_of_resources():
    """One row of 128 KiB cannot be sliced further: the compile stops with the figures before
    LLVM (whose AMDGPU backend would abort the process)."""
    from tritium_amd.compiler import OutOfResources
    with pytest.raises(OutOfResources, match="Required: 131136, Hardware limit: 65536 on gfx942"):
        triton.compile(_WIDE_ROW, target="hip:gfx942")


@triton.jit
def ordered_atomics(z_ptr, lock_ptr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.atomic_add(z_ptr, 1.0, sem=SEM, scope=SCOPE)
    tl.atomic_cas(lock_ptr, 0, 1, sem=SEM, scope=SCOPE)


@pytest.mark.parametrize("scope, syncscope", [("cta", 'syncscope("workgroup") '), ("gpu", 'syncscope("agent") '),
                                              ("sys", "")])
@pytest.mark.parametrize("sem, ordering, failure", [("relaxed", "monotonic", "monotonic"),
                                                    ("acquire", "acquire", "acquire"),
                                                    ("release", "release", "monotonic"),
                                                    ("acq_rel", "acq_rel", "acquire")])
def test_atomics_carry_ordering_and_scope(sem, ordering, failure, scope, syncscope):
    k = compile_kernel(ordered_atomics, "hip:gfx942", {"z_ptr": "*fp32", "lock_ptr": "*i32"},
                       {"SEM": sem, "SCOPE": scope})
    llir = k.asm["llir"]
    assert re.search(rf"atomicrmw fadd ptr addrspace\(1\) %\S+, float \S+ {re.escape(syncscope)}{ordering}\b", llir)
    assert re.search(rf"cmpxchg ptr addrspace\(1\) %\S+, i32 0, i32 1 {re.escape(syncscope)}{ordering} {failure}\b",
                     llir)
    check_hsaco(k.asm["hsaco"], k.metadata)


@triton.jit
def add_runs(x_ptr, z_ptr, n, SEM: tl.constexpr):
    r = tl.program_id(0) * 1024 + tl.arange(0, 1024)
    tl.atomic_add(z_ptr + r, tl.load(x_ptr + r, mask=r < n), mask=r < n, sem=SEM)


def _atomic_ops(asm: str) -> list[str]:
    return re.findall(r"\b(?:global|buffer|flat)_atomic\w+", asm)


@pytest.mark.parametrize("target, dtype, want, loops", [
    ("hip:gfx942", "fp16", "global_atomic_pk_add_f16", 0), ("hip:gfx942", "bf16", "global_atomic_pk_add_bf16", 0),
    ("hip:gfx942", "fp32", "global_atomic_add_f32", 0), ("hip:gfx1100", "fp16", "global_atomic_cmpswap_b32", 4)])
def test_half_adds_go_in_pairs(target, dtype, want, loops):
    """As Triton on AMD: two consecutive f16/bf16 adds are one packed atomic (CDNA3's
    ``global_atomic_pk_add``; on RDNA3, which has none, one 32-bit compare-and-swap loop for the
    pair instead of one an element).  1024 elements, 4 wavefronts: 4 (wave64) or 8 (wave32) a lane."""
    sig = {"x_ptr": f"*{dtype}", "z_ptr": f"*{dtype}", "n": "i32"}
    k = triton.compile(add_runs, target=target, signature=sig, constexprs={"SEM": "relaxed"},
                       attrs={a: {"tt.divisibility": 16} for a in sig})
    asm = k.asm["amdgcn"]
    ops = _atomic_ops(asm)
    per_lane = 1024 // (4 * (64 if "gfx9" in target else 32))
    assert set(ops) == {want}
    assert len(ops) == (per_lane if dtype == "fp32" else per_lane // 2)
    assert asm.count("s_cbranch_execnz") == loops  # the compare-and-swap retry loops
    check_hsaco(k.asm["hsaco"], k.metadata)


@pytest.mark.parametrize("sem, writebacks", [("acq_rel", 1), ("release", 4), ("relaxed", 0)])
def test_one_fence_pair_for_an_acq_rel_tensor_atomic(sem, writebacks):
    """A tensor atomic of four instructions a lane (gfx942, fp32) with the default ``acq_rel``
    writes the caches back once, before its first instruction, and invalidates once, after its
    last (release / relaxed / acquire, Triton's AMD ordering), not around each of the four."""
    sig = {"x_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32"}
    k = triton.compile(add_runs, target="hip:gfx942", signature=sig, constexprs={"SEM": sem},
                       attrs={a: {"tt.divisibility": 16} for a in sig})
    asm, llir = k.asm["amdgcn"], k.asm["llir"]
    assert len(_atomic_ops(asm)) == 4
    assert asm.count("buffer_wbl2") == writebacks
    if sem == "acq_rel":
        orders = re.findall(r"atomicrmw fadd ptr addrspace\(1\) %\S+, float \S+ syncscope\(\"agent\"\) (\w+)", llir)
        assert orders == ["release", "monotonic", "monotonic", "acquire"]
        assert asm.count("buffer_inv") == 1


@triton.jit
def bf16_batched_dot(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rb * M * K + rm * K + rk[None, None, :])
    b = tl.load(b_ptr + rb * K * N + rk[None, :, None] * N + rn)
    tl.store(c_ptr + rb * M * N + rm * N + rn, tl.dot(a, b))


@pytest.mark.parametrize("target", TARGETS)
def test_bf16_operands_widen_by_shift(target):
    """bf16 -> f32 is written as the shift into the high half (no ``fpext bfloat``, whose AMDGPU
    legalisation in a block of thousands took minutes), in the FMA dot and in plain casts."""
    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*fp32"}
    k = compile_kernel(bf16_batched_dot, target, sig, {"B": 2, "M": 16, "N": 16, "K": 16}, num_warps=1)
    assert k.metadata["dot_lowering"] == ["fma: batched (rank-3) dot"]
    llir = k.asm["llir"]
    assert "fpext bfloat" not in llir
    assert re.search(r"shl i32 %\S+, 16\b", llir)
    check_hsaco(k.asm["hsaco"], k.metadata)


@triton.jit
def fp8_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    tl.store(c_ptr + rm * N + rn, tl.dot(a, b))


@pytest.mark.parametrize("a, b, mfma", [("fp8e4b8", "fp8e4b8", "fp8_fp8"), ("fp8e4b8", "fp8e5b16", "fp8_bf8"),
                                        ("fp8e5b16", "fp8e4b8", "bf8_fp8"), ("fp8e5b16", "fp8e5b16", "bf8_bf8")])
@pytest.mark.parametrize("m, tile", [(64, "32x32x16"), (16, "16x16x32")])
def test_fnuz_fp8_dots_use_fp8_mfma_on_gfx942(a, b, mfma, m, tile):
    """tl.float8e4b8 / tl.float8e5b16 (AMD's fp8 / bf8) multiply natively on gfx942: eight operands
    a lane packed in an i64, no conversion to fp16."""
    k = compile_kernel(fp8_dot, "hip:gfx942", {"a_ptr": f"*{a}", "b_ptr": f"*{b}", "c_ptr": "*fp32"},
                       {"M": m, "N": m, "K": 64}, num_warps=4)
    assert mnemonics(k.asm["amdgcn"], "v_mfma") == {f"v_mfma_f32_{tile}_{mfma}"}
    intrinsic = re.escape(f"llvm.amdgcn.mfma.f32.{tile}.{mfma.replace('_', '.')}")
    assert re.search(rf'call <\d+ x float> @"?{intrinsic}"?\(i64 ', k.asm["llir"])
    assert "half" not in k.asm["llir"]
    check_hsaco(k.asm["hsaco"], k.metadata)


@pytest.mark.parametrize("target, fmt", [("hip:gfx942", "fp8e4nv"), ("hip:gfx942", "fp8e5"),
                                         ("hip:gfx90a", "fp8e4b8"), ("hip:gfx1100", "fp8e5b16")])
def test_other_fp8_dots_upcast_to_fp16(target, fmt):
    """OCP e4m3/e5m2 have no MFMA on gfx942 (gfx950 has them), and gfx90a/gfx11 have no fp8
    instructions: those dots run on the fp16 instruction, exactly."""
    k = compile_kernel(fp8_dot, target, {"a_ptr": f"*{fmt}", "b_ptr": f"*{fmt}", "c_ptr": "*fp32"},
                       {"M": 64, "N": 64, "K": 64}, num_warps=4)
    ops = mnemonics(k.asm["amdgcn"], "v_mfma") | mnemonics(k.asm["amdgcn"], "v_wmma")
    assert ops and all("f16" in o for o in ops), ops
    check_hsaco(k.asm["hsaco"], k.metadata)


def test_fnuz_fp8_dot_without_an_fp8_tile_upcasts():
    """K = 16 fits no fp8 MFMA (32x32x16 needs M, N >= 32; 16x16x32 needs K % 32 == 0): the fp16
    16x16x16 instruction takes the upcast operands rather than FMAs."""
    k = compile_kernel(fp8_dot, "hip:gfx942", {"a_ptr": "*fp8e4b8", "b_ptr": "*fp8e5b16", "c_ptr": "*fp32"},
                       {"M": 16, "N": 16, "K": 16}, num_warps=1)
    assert mnemonics(k.asm["amdgcn"], "v_mfma") == {"v_mfma_f32_16x16x16_f16"}
    assert "fp8 operands upcast to fp16" in k.metadata["dot_lowering"][0]
    check_hsaco(k.asm["hsaco"], k.metadata)


@triton.jit
def carried_operand_dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    acc = tl.zeros((N, N), tl.float32)
    q = tl.load(a_ptr + r[:, None] * N + r[None, :])
    for _ in range(3):
        acc += tl.dot(a, b)       # a: a loop-carried value; q: defined outside the loop
        acc += tl.dot(q, b)
        a = (a * 0.5).to(tl.float16)
    tl.store(c_ptr + r[:, None] * N + r[None, :], acc)


@pytest.mark.parametrize("target", ["hip:gfx942", "hip:gfx1100"])
def test_dot_operands_carried_by_the_loop_or_defined_before_it(target):
    k = compile_kernel(carried_operand_dot, target, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"},
                       {"N": 64}, num_warps=4)
    assert all(not line.startswith("fma") for line in k.metadata["dot_lowering"])
    check_hsaco(k.asm["hsaco"], k.metadata)


SOFTMAX_SIG = {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32",
               "n_rows": "i32", "n_cols": "i32"}


def test_row_offsets_in_range_become_buffer_accesses():
    """The softmax row's offsets are ``arange(0, 1024)`` past a uniform row pointer: provably in
    [0, 2 GiB), so on CDNA its loads and stores are buffer accesses through an SGPR resource, a
    masked-off lane given an offset past the buffer's end (loads read zero, stores are dropped)
    instead of a branch around every access; ``other=-inf`` is a select after the load."""
    k = compile_kernel(tb.softmax_kernel, "hip:gfx942", SOFTMAX_SIG, {"BLOCK_SIZE": 1024, "num_stages": 1},
                       num_warps=4)
    llir, asm = k.asm["llir"], k.asm["amdgcn"]
    assert "llvm.amdgcn.make.buffer.rsrc.p8.p1" in llir and re.search(r"i32 (-2147483648|2147483648)\b", llir)
    assert re.search(r"^\s*buffer_load_dword\b.* offen", asm, flags=re.M)
    assert re.search(r"^\s*buffer_store_dword\b.* offen", asm, flags=re.M)
    assert not re.search(r"^\s*global_(load|store)", asm, flags=re.M)
    assert "s_cbranch_execz" not in asm
    check_hsaco(k.asm["hsaco"], k.metadata)


def test_rdna3_takes_buffer_accesses_too():
    """RDNA3 takes the buffer form as CDNA does (its resource words: OOB_SELECT 3, the reserved bit
    24): no branch around each of the softmax row's accesses. Its eight divisions and stores then
    share one block, which LLVM schedules into more VGPRs than guarded accesses take (49 against
    22), still below the 96 at which gfx1100 would lose one of its 16 wavefronts a SIMD."""
    k = compile_kernel(tb.softmax_kernel, "hip:gfx1100", SOFTMAX_SIG, {"BLOCK_SIZE": 1024, "num_stages": 1},
                       num_warps=4)
    llir, asm = k.asm["llir"], k.asm["amdgcn"]
    assert "llvm.amdgcn.make.buffer.rsrc.p8.p1" in llir
    flags = (7 << 12) | (4 << 15) | (1 << 24) | (3 << 28)
    assert f"i32 {flags})" in llir or f"i32 {flags - (1 << 32)})" in llir
    assert re.search(r"^\s*buffer_load_b32\b.* offen", asm, flags=re.M)
    assert re.search(r"^\s*buffer_store_b32\b.* offen", asm, flags=re.M)
    assert not re.search(r"^\s*global_(load|store)", asm, flags=re.M)
    assert "s_cbranch_execz" not in asm
    vgprs = int(re.search(r"\.set softmax_kernel\.num_vgpr, (\d+)", asm).group(1))
    assert vgprs <= 96, vgprs
    check_hsaco(k.asm["hsaco"], k.metadata)


@triton.jit
def gather_rows(x_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    idx = tl.load(idx_ptr + offs)          # offsets read from memory: no bound
    tl.store(out_ptr + offs, tl.load(x_ptr + idx))


def test_unbounded_offsets_stay_global_accesses():
    """Offsets loaded from memory (or taken from an argument) have no proven range: those accesses
    stay 64-bit global ones, the provably small ones become buffer accesses."""
    k = compile_kernel(gather_rows, "hip:gfx942", {"x_ptr": "*fp32", "idx_ptr": "*i32", "out_ptr": "*fp32"},
                       {"BLOCK": 256})
    asm = k.asm["amdgcn"]
    assert re.search(r"^\s*global_load_dword\b", asm, flags=re.M)       # x[idx]
    assert re.search(r"^\s*buffer_load_dword\b", asm, flags=re.M)       # idx[offs]
    assert re.search(r"^\s*buffer_store_dword\b", asm, flags=re.M)      # out[offs]
    check_hsaco(k.asm["hsaco"], k.metadata)


@pytest.mark.parametrize("target, strategy", [("hip:gfx942", "iterative-minreg"), ("hip:gfx1100", None)])
def test_scheduling_strategy_by_kernel_kind(target, strategy):
    """Kernels without matrix instructions get the target's memory-bound schedule (fewest registers
    on CDNA, where they bound occupancy; on RDNA3 ILP for elementwise kernels, LLVM's default with
    each barrier bounding the scheduling regions where wavefronts exchange values through LDS);
    dot kernels keep LLVM's default."""
    k = compile_kernel(tb.softmax_kernel, target, SOFTMAX_SIG, {"BLOCK_SIZE": 1024, "num_stages": 1}, num_warps=4)
    llir = k.asm["llir"]
    if strategy:
        assert f'"amdgpu-sched-strategy"="{strategy}"' in llir
    else:
        assert "amdgpu-sched-strategy" not in llir
    # a sched_barrier after each s_barrier on RDNA3 only
    barriers = len(re.findall(r'call void @"?llvm\.amdgcn\.s\.barrier"?\(\)', llir))
    bounds = len(re.findall(r'call void @"?llvm\.amdgcn\.sched\.barrier"?\(i32 0\)', llir))
    assert barriers and bounds == (barriers if target == "hip:gfx1100" else 0)
    k = compile_kernel(matmul.matmul_kernel.fn, target, MM_SIG, MM_CONSTS, num_warps=4)
    assert "amdgpu-sched-strategy" not in k.asm["llir"] and "sched.barrier" not in k.asm["llir"]


def test_rdna3_elementwise_kernels_take_max_ilp():
    """An RDNA3 kernel without dots and without LDS (elementwise) is scheduled for ILP (``max-ilp``):
    the packed schedule would stall on each transcendental's result."""
    k = compile_kernel(exp_kernel, "hip:gfx1100", {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"BLOCK": 256})
    assert '"amdgpu-sched-strategy"="max-ilp"' in k.asm["llir"] and "sched.barrier" not in k.asm["llir"]


@triton.jit
def exp_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


def test_fp32_exp_is_exp2_of_a_scaled_argument():
    """``tl.exp`` on fp32 is ``exp2(x * log2(e))`` (``v_exp_f32``), as Triton lowers it on AMD."""
    k = compile_kernel(exp_kernel, "hip:gfx942", {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"BLOCK": 256})
    assert "llvm.exp2.f32" in k.asm["llir"] and "llvm.exp.f32" not in k.asm["llir"]
    assert "v_exp_f32" in k.asm["amdgcn"] and "v_rndne_f32" not in k.asm["amdgcn"]
