"""CPU-only regression for issue #9: masked-off lanes of a load without ``other`` (and of a
block-pointer load without ``padding_option``) must read zero, not whatever the destination
registers held.  Every predicated ``ld.global`` in the LLVM IR must first set its destination
registers (``mov`` before ``@p ld``, as Triton does); every ``cp.async`` of a pipelined loop must
carry the source-size operand that makes a masked-off lane's bytes zero."""
import re

import pytest

import tritium as triton
from conformance.cases import block_ptr, masks

D = {"tt.divisibility": 16}


def _predicated_loads(llir: str) -> list[str]:
    asm = re.findall(r'asm (?:sideeffect )?"([^"]*)"', llir)
    return [a for a in asm if re.search(r"@\$\d+ ld\.global", a)]


def _async_copies(llir: str) -> list[str]:
    asm = re.findall(r'asm (?:sideeffect )?"([^"]*)"', llir)
    return [a for a in asm if re.search(r"cp\.async\.c[ag]\.shared\.global", a)]


def _check_zero_filled(llir: str) -> None:
    loads = _predicated_loads(llir)
    copies = _async_copies(llir)
    assert loads or copies, "expected predicated global loads or asynchronous copies"
    for text in copies:  # [dst], [src], bytes, source bytes (0 where masked off: zero-filled)
        assert re.search(r"\], \d+, \$\d+;", text), f"copy without a source size: {text!r}"
    for text in loads:
        ld = re.search(r"ld\.global\S* (\{[^}]*\}|\$\d+),", text)
        dests = re.findall(r"\$\d+", ld.group(1))
        for d in dests:
            assert re.search(rf"mov\.b\d+ {re.escape(d)}, ", text), f"{d} not initialised before the load: {text!r}"


@pytest.mark.parametrize("target", ["cuda:80", "cuda:90"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_block_ptr_matmul_masked_lanes_read_zero(dtype, target, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    k = triton.compile(block_ptr.block_matmul_kernel, target=target,
                       signature={"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*fp32",
                                  "M": "i32", "N": "i32", "K": "i32"},
                       constexprs={"PRECISION": "ieee", "BM": 64, "BN": 64, "BK": 32},
                       attrs={"a_ptr": D, "b_ptr": D, "c_ptr": D}, num_warps=4)
    _check_zero_filled(k.asm["llir"])
    assert k.asm["cubin"][:4] == b"\x7fELF"


def test_masked_load_without_other_reads_zero(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))

    @triton.jit
    def copy(x_ptr, z_ptr, n, BLOCK: triton.language.constexpr):
        offs = triton.language.arange(0, BLOCK)
        triton.language.store(z_ptr + offs, triton.language.load(x_ptr + offs, mask=offs < n))

    for sig in ("*fp32", "*fp16", "*i8"):
        k = triton.compile(copy, target="cuda:90", signature={"x_ptr": sig, "z_ptr": sig, "n": "i32"},
                           constexprs={"BLOCK": 256}, attrs={"x_ptr": D, "z_ptr": D})
        _check_zero_filled(k.asm["llir"])
