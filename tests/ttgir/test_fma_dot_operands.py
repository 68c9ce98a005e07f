"""FMA dots (``input_precision="ieee"`` fp32, or no tensor cores): the result layout Triton gives
a dot before any tensor-core choice (a 2x2 or 4x4 block of the result a thread), and operands that
reach the dot through two shared buffers written together (``fma-operands-through-shared``), not
through two layout conversions that share one scratch buffer (which held every A value in a
register before B was read: a 64x64x32 dot spilled on cuda:90).  In a software-pipelined loop on
cuda:90 the operands are instead copied with ``cp.async`` into the pipeline's slots and read from
there, as Triton does."""
import importlib.util

import pytest
from xdsl.dialects.builtin import TensorType

import tritium as triton
import tritium.language as tl
from tritium.ttgir.encodings import BlockedEncodingAttr, DotOperandEncodingAttr
from tritium.ttgir.ir import parse_module


@triton.jit
def fma_matmul(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, 4):
        a = tl.load(a_ptr + rm[:, None] * (4 * BK) + (k * BK + rk)[None, :])
        b = tl.load(b_ptr + (k * BK + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}


def _compile(target, bm, bn, bk, warps, stage, stages=None):
    options = {"num_warps": warps} if stages is None else {"num_warps": warps, "num_stages": stages}
    return triton.compile(fma_matmul, target=target, signature=SIG, constexprs={"BM": bm, "BN": bn, "BK": bk},
                          options=options, attrs={n: {"tt.divisibility": 16} for n in SIG}, stage=stage)


def _target(name, plugin):
    missing = importlib.util.find_spec(plugin) is None
    return pytest.param(name, marks=pytest.mark.skipif(missing, reason=f"the {plugin} plugin is not installed"))


@pytest.mark.parametrize("target", [_target("cuda:90", "tritium_nvidia"), _target("hip:gfx942", "tritium_amd")])
@pytest.mark.parametrize("bm, bn, bk, warps, spt", [(64, 64, 32, 4, 4), (32, 32, 32, 4, 2), (16, 16, 16, 4, 1)])
def test_fma_dot_layout_and_operands(target, bm, bn, bk, warps, spt):
    """Unpipelined (one stage; AMD's pipeliner stages matrix-instruction operands only): the two
    operand buffers of the pass."""
    lanes = 64 if target.startswith("hip") else 32
    if target.startswith("hip"):  # the same elements a thread on a 64-lane target: half the warps
        warps = max(1, warps // 2)
    module = parse_module(_compile(target, bm, bn, bk, warps, "ttgir", stages=1).asm["ttgir"], verify=False)
    dots = [op for op in module.walk() if op.name == "tt.dot"]
    assert len(dots) == 1
    dot = dots[0]
    enc = dot.results[0].type.encoding
    assert isinstance(enc, BlockedEncodingAttr), enc
    per_thread = bm * bn // (warps * lanes)
    expected = [min(spt, bm), min(spt, bn)] if per_thread >= 4 else [1, 1]
    assert [a.data for a in enc.sizePerThread.data] == expected, (enc, per_thread)
    for operand in dot.operands[:2]:
        producer = operand.owner
        assert producer.name == "ttg.local_load", producer.name
        assert isinstance(operand.type.encoding, DotOperandEncodingAttr)
        assert producer.operands[0].owner.name == "ttg.local_alloc"
    # both buffers are written before either is read: one barrier between the writes and the reads
    body = list(dot.parent_block().ops)
    i = body.index(dot)
    assert [op.name for op in body[i - 5:i]] == ["ttg.local_alloc", "ttg.local_alloc", "ttg.barrier",
                                                  "ttg.local_load", "ttg.local_load"]
    offsets = {op.attributes["allocation.offset"].value.data for op in body[i - 5:i - 3]}
    assert len(offsets) == 2, "the two operand buffers must not overlap"
    for op in module.walk():
        if op.name == "ttg.convert_layout":
            t = op.results[0].type
            assert not (isinstance(t, TensorType) and isinstance(t.encoding, DotOperandEncodingAttr))


@pytest.mark.skipif(importlib.util.find_spec("tritium_nvidia") is None, reason="the tritium_nvidia plugin is not installed")
@pytest.mark.parametrize("stages", [2, 3])
def test_fma_dot_operands_pipelined(stages):
    """cuda:90, a pipelined loop: each operand is copied ahead with ``cp.async`` into a buffer of
    ``stages`` slots (row-major, unswizzled) and read by ``ttg.local_load`` straight into the FMA
    operand layout; no layout conversion and no buffer of the pass's own is left."""
    module = parse_module(_compile("cuda:90", 64, 64, 32, 4, "ttgir", stages=stages).asm["ttgir"], verify=False)
    dot = next(op for op in module.walk() if op.name == "tt.dot")
    assert isinstance(dot.results[0].type.encoding, BlockedEncodingAttr)
    loop = dot.parent_op()
    assert loop.name == "scf.for"
    copies = [op for op in loop.body.block.ops if op.name == "ttg.async_copy_global_to_local"]
    assert len(copies) == 2
    for operand in dot.operands[:2]:
        read = operand.owner
        assert read.name == "ttg.local_load", read.name
        view = read.operands[0].owner
        assert view.name == "ttg.memdesc_index", view.name
        slots = view.operands[0].type
        assert slots.get_shape()[0] == stages and slots.get_shape()[1:] == read.operands[0].type.get_shape()
        assert slots.encoding.name == "ttg.swizzled_shared" and slots.encoding.vec.data == 1
    assert not [op for op in module.walk() if op.name == "ttg.convert_layout"
                and isinstance(op.results[0].type.encoding, DotOperandEncodingAttr)]
    assert [op for op in module.walk() if op.name == "ttg.local_alloc" and op.operands] == []
    ptx = _compile("cuda:90", 64, 64, 32, 4, "ptx", stages=stages).asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group" in ptx


def _assembler_missing() -> bool:
    if importlib.util.find_spec("tritium_nvidia") is None:
        return True
    from tritium_nvidia.toolchain import tools
    return tools.find_ptxas() is None and tools.nvjitlink_version() is None


@pytest.mark.skipif(_assembler_missing(), reason="no NVIDIA plugin or no PTX assembler (ptxas or nvJitLink)")
@pytest.mark.parametrize("bm, bn, bk, warps, triton_regs", [(32, 32, 32, 4, 48), (64, 64, 32, 4, 92),
                                                          (128, 64, 16, 8, 112)])
def test_fma_dot_fits_in_registers(bm, bn, bk, warps, triton_regs):
    """Through the real assembler (sm_90a), the loop pipelined (three stages): Triton 3.6 compiles
    these dots in ``triton_regs`` registers without spilling.  Before the result layout and the
    operand buffers Tritium's 64x64x32 dot took 255 registers and spilled; before the operands were
    read at base-plus-immediate addresses the 128x64x16 one took 212.  The bound is Triton's count
    plus a tenth."""
    md = _compile("cuda:90", bm, bn, bk, warps, None).metadata
    assert md["n_spills"] == 0, md.get("resource_log")
    assert md["n_regs"] <= triton_regs * 11 // 10, (md["n_regs"], triton_regs)
