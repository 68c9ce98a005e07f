"""Inline assembly on AMD.  llvmlite's LLVM has the AMDGPU target but no AMDGPU assembly parser:
it prints inline assembly into the AMDGCN text, but emitting an object from IR with inline
assembly stops the process ("Inline asm not supported by this streamer because we don't have an
asm parser for this target").  Such kernels are assembled from their AMDGCN text by an external
assembler (ROCm's clang, or the ziglang wheel's); these tests check that path against llvmlite's
own objects, and that constraints LLVM cannot allocate are refused at the kernel's line before
LLVM sees them."""
import struct

import pytest

import tritium as triton
import tritium.language as tl
from conformance.cases import tutorials_basic as tb
from tritium_amd.toolchain import binary, tools
from tritium_amd.toolchain.elf import check_hsaco

TARGETS = ["hip:gfx942", "hip:gfx1100"]


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


def sections(blob: bytes) -> dict[str, bytes]:
    """Section name -> contents of a 64-bit little-endian ELF (empty for NOBITS)."""
    shoff, = struct.unpack_from("<Q", blob, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + i * shentsize) for i in range(shnum)]
    names = hdrs[shstrndx][4]
    return {blob[names + h[0]:blob.index(b"\0", names + h[0])].decode(): b"" if h[1] == 8 else blob[h[4]:h[4] + h[5]]
            for h in hdrs}


SOFTMAX_SIG = {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32",
               "n_rows": "i32", "n_cols": "i32"}


@pytest.mark.parametrize("target", TARGETS)
def test_assembler_path_reproduces_llvmlites_object(target):
    """The external assembler, fed the amdgcn stage's text, gives the same code and kernel
    descriptor bytes as llvmlite's object emission."""
    if tools.find_assembler() is None:
        pytest.skip("no AMDGPU assembler (pip install ziglang)")
    arch = target.split(":")[1]
    k = triton.compile(tb.softmax_kernel, target=target, signature=SOFTMAX_SIG,
                       constexprs={"BLOCK_SIZE": 1024, "num_stages": 1}, num_warps=4)
    direct = sections(binary.emit_object(binary.optimize(k.asm["llir"], arch), arch))
    assembled = sections(binary.assemble(k.asm["amdgcn"], arch))
    assert direct[".text"] and direct[".text"] == assembled[".text"]
    assert direct[".rodata"] == assembled[".rodata"]          # the kernel descriptor


@triton.jit
def shift(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    z = tl.inline_asm_elementwise("v_lshlrev_b32 $0, 3, $1", "=v,v", [tl.load(x_ptr + offs)], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(z_ptr + offs, z)


@pytest.mark.parametrize("target", TARGETS)
def test_inline_asm_kernel_builds_a_code_object(target):
    if tools.find_assembler() is None:
        pytest.skip("no AMDGPU assembler (pip install ziglang)")
    k = triton.compile(shift, target=target, signature={"x_ptr": "*i32", "z_ptr": "*i32"}, constexprs={"B": 1024})
    assert binary.has_inline_asm(k.asm["llir"])
    lines = [ln.strip() for ln in k.asm["amdgcn"].splitlines()]
    assert any(ln.startswith("v_lshlrev_b32 v") and ln.endswith(", 3, " + ln.split()[-1]) for ln in lines)
    check_hsaco(k.asm["hsaco"], k.metadata)


def test_missing_assembler_is_named(monkeypatch):
    monkeypatch.setattr(tools, "find_assembler", lambda: None)
    # the compiler reports the stage's error as a CompilationError naming the kernel
    with pytest.raises(triton.CompilationError, match="no AMDGPU assembler was found.*pip install ziglang"):
        triton.compile(shift, target="hip:gfx942", signature={"x_ptr": "*i32", "z_ptr": "*i32"},
                       constexprs={"B": 1024})


@triton.jit
def ptx_float(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    z = tl.inline_asm_elementwise("fma.rn.f32 $0, $1, $2, 0f3F800000;", "=f,f,f", [tl.load(x_ptr + offs), 2.0],
                                  dtype=tl.float32, is_pure=True, pack=1)
    tl.store(z_ptr + offs, z)


@triton.jit
def agpr(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    z = tl.inline_asm_elementwise("v_accvgpr_write_b32 $0, $1", "=a,v", [tl.load(x_ptr + offs)], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(z_ptr + offs, z)


def test_foreign_constraints_are_refused_at_the_kernel_line():
    """LLVM stops the process on a constraint it cannot allocate ('f'); the backend says so first."""
    with pytest.raises(triton.CompilationError, match=r"constraint 'f' is not one the amd backend can allocate.*a, i, n, v") as e:
        triton.compile(ptx_float, target="hip:gfx942", signature={"x_ptr": "*fp32", "z_ptr": "*fp32"},
                       constexprs={"B": 256})
    assert "tl.inline_asm_elementwise(" in str(e.value)
    # AGPRs exist on CDNA only
    with pytest.raises(triton.CompilationError, match=r"constraint 'a'"):
        triton.compile(agpr, target="hip:gfx1100", signature={"x_ptr": "*i32", "z_ptr": "*i32"}, constexprs={"B": 256})
