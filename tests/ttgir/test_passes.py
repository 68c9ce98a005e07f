"""TTGIR passes on the tutorial kernels (TTIR as Triton emits it) and on small snippets."""
from pathlib import Path

import pytest

from tritium.hooks.types import GPUTarget
from tritium.ttgir.analysis.axis_info import AxisInfoAnalysis, vector_width
from tritium.ttgir.ir import parse_module, print_module
from tritium.ttgir.passes import allocate_shared_memory, coalesce, convert_to_ttgir, membar
from tritium.ttgir.passes.remove_layout_conversions import count_conversions, remove_layout_conversions
from tritium.ttgir.pass_lists import finalize_ttgir, make_ttgir

KERNELS = Path(__file__).parent / "kernels"


def load(name):
    return parse_module((KERNELS / f"{name}.mlir").read_text())


def ops_named(m, name):
    return [op for op in m.walk() if op.name == name]


@pytest.mark.parametrize("tpw", [32, 64])
def test_convert_to_ttgir_gives_every_tensor_a_layout(tpw):
    m = load("matmul")
    convert_to_ttgir(m, 4, tpw, 1, "cuda:90")
    m.verify()
    text = print_module(m, locations=False)
    assert f'"ttg.threads-per-warp" = {tpw} : i32' in text and '"ttg.num-warps" = 4 : i32' in text
    for op in m.walk():
        for v in list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]:
            if "tensor<" in str(v.type) and op.name not in ("tt.reduce",):
                assert "#ttg." in str(v.type), (op.name, v.type)
    dot = ops_named(m, "tt.dot")[0]
    assert "#ttg.dot_op<{opIdx = 0" in str(dot.operands[0].type)
    assert "#ttg.dot_op<{opIdx = 1" in str(dot.operands[1].type)
    ed = ops_named(m, "tt.expand_dims")[0]
    assert "#ttg.slice<{dim = 1" in str(ed.operands[0].type)
    loop = ops_named(m, "scf.for")[0]
    assert [a.type for a in loop.body.block.args[1:]] == [r.type for r in loop.results]
    assert print_module(parse_module(text), locations=False) == text


def test_reduce_result_is_a_slice():
    m = parse_module("""builtin.module {
  tt.func @f(%x: tensor<32x64xf32>) -> tensor<32xf32> {
    %r = "tt.reduce"(%x) <{axis = 1 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      tt.reduce.return %s : f32
    }) : (tensor<32x64xf32>) -> tensor<32xf32>
    tt.return %r : tensor<32xf32>
  }
}""")
    convert_to_ttgir(m, 4, 64)
    m.verify()
    red = ops_named(m, "tt.reduce")[0]
    assert "#ttg.slice<{dim = 1, parent = #ttg.blocked" in str(red.results[0].type)
    assert count_conversions(m) == 1  # to the return's default layout


def test_axis_info_and_vector_width():
    m = load("add")
    a = AxisInfoAnalysis(m)
    ld = ops_named(m, "tt.load")[0]
    info = a.get(ld.operands[0])
    assert info.contiguity == (1024,) and info.divisibility == (16,)
    assert a.get(ld.operands[1]).constancy == (16,)   # n divisible by 16: mask constant in runs of 16
    assert vector_width(a, ld.operands[0], 32, ld.operands[1]) == 4
    assert vector_width(a, ld.operands[0], 16) == 8
    sm = load("softmax")
    b = AxisInfoAnalysis(sm)
    st = ops_named(sm, "tt.store")[0]
    assert vector_width(b, st.operands[0], 32, st.operands[2]) == 1  # n_cols has no divisibility


def test_axis_info_hints_and_loop_fixed_point():
    m = parse_module("""builtin.module {
  tt.func @f(%p: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %n: i32) {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %o = tt.splat %n : i32 -> tensor<64xi32>
    %h = arith.muli %o, %r {tt.divisibility = dense<8> : tensor<1xi32>} : tensor<64xi32>
    %s = tt.splat %p : !tt.ptr<f16> -> tensor<64x!tt.ptr<f16>>
    %q = tt.addptr %s, %r : tensor<64x!tt.ptr<f16>>, tensor<64xi32>
    %step = arith.constant dense<64> : tensor<64xi32>
    %res = scf.for %i = %c0 to %n step %c64 iter_args(%it = %q) -> (tensor<64x!tt.ptr<f16>>) : i32 {
      %nx = tt.addptr %it, %step : tensor<64x!tt.ptr<f16>>, tensor<64xi32>
      scf.yield %nx : tensor<64x!tt.ptr<f16>>
    }
    tt.return
  }
}""")
    a = AxisInfoAnalysis(m)
    h = [op for op in m.walk() if op.name == "arith.muli"][0]
    assert a.get(h.results[0]).divisibility == (8,)
    loop = ops_named(m, "scf.for")[0]
    assert a.get(loop.results[0]).contiguity == (64,) and a.get(loop.results[0]).divisibility == (16,)


def test_axis_info_min_max_keep_what_both_sides_share():
    # split-K's `k + offs_k < min(K, hi)`: the bound is a multiple of 16 whichever side min picks,
    # so the mask is constant in runs of 16 (the loads stay 128-bit)
    m = parse_module("""builtin.module {
  tt.func @f(%k: i32 {tt.divisibility = 16 : i32}, %hi: i32 {tt.divisibility = 64 : i32}, %x: i32) {
    %c3 = arith.constant 3 : i32
    %c5 = arith.constant 5 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %lim = arith.minsi %k, %hi : i32
    %folded = arith.maxsi %c3, %c5 : i32
    %odd = arith.minsi %k, %x : i32
    %b = tt.splat %lim : i32 -> tensor<64xi32>
    %m = arith.cmpi slt, %r, %b : tensor<64xi32>
    %r2 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %both = arith.maxsi %r, %r2 : tensor<64xi32>
    tt.return
  }
}""")
    a = AxisInfoAnalysis(m)
    mins, maxs = ops_named(m, "arith.minsi"), ops_named(m, "arith.maxsi")
    lim, odd, folded, both = (a.get(op.results[0]) for op in (mins[0], mins[1], maxs[0], maxs[1]))
    assert lim.divisibility == (16,)
    assert folded.constant == 5 and folded.divisibility == (1,)
    assert odd.divisibility == (1,)
    assert a.get(ops_named(m, "arith.cmpi")[0].results[0]).constancy == (16,)
    assert both.contiguity == (64,) and both.divisibility == a.get(ops_named(m, "tt.make_range")[0].results[0]).divisibility


@pytest.mark.parametrize("tpw", [32, 64])
def test_coalesce_picks_128_bit_accesses(tpw):
    m = load("matmul")
    convert_to_ttgir(m, 4, tpw)
    coalesce(m)
    m.verify()
    loads = ops_named(m, "tt.load")
    for ld in loads:
        enc = ld.operands[0].type.encoding
        assert enc.size_per_thread == (1, 8) and enc.order == (1, 0) and enc.warp_size == tpw


@pytest.mark.parametrize("tpw", [32, 64])
def test_remove_layout_conversions_on_tutorial_kernels(tpw):
    remaining = {}
    for k in ("add", "softmax", "matmul", "layer_norm"):
        m = load(k)
        convert_to_ttgir(m, 4, tpw)
        coalesce(m)
        before = count_conversions(m)
        remove_layout_conversions(m)
        m.verify()
        remaining[k] = (before, count_conversions(m))
    assert remaining["add"][1] == 0
    assert remaining["softmax"][1] == 0   # the reductions read the load's layout (forward propagation)
    assert remaining["layer_norm"][1] == 0  # the accumulator is carried in the load's layout
    assert remaining["matmul"][1] <= 3    # the two dot operands, and the epilogue store
    assert all(b > a for b, a in remaining.values())


def test_loop_carried_accumulator_follows_the_load():
    m = load("layer_norm")
    convert_to_ttgir(m, 4, 32)
    coalesce(m)
    remove_layout_conversions(m)
    m.verify()
    loop = ops_named(m, "scf.for")[0]
    ld = ops_named(m, "tt.load")[0]
    assert ld.results[0].type.encoding.size_per_thread == (4,)
    assert loop.body.block.args[1].type == ld.results[0].type == loop.results[0].type
    assert ops_named(m, "tt.reduce")[0].operands[0] is loop.results[0]
    assert count_conversions(m) == 0


def test_loop_carried_pointers_take_the_coalesced_layout():
    m = load("matmul")
    convert_to_ttgir(m, 4, 32)
    coalesce(m)
    remove_layout_conversions(m)
    loop = ops_named(m, "scf.for")[0]
    assert loop.body.block.args[2].type.encoding.size_per_thread == (1, 8)
    assert all(op.name != "ttg.convert_layout" or "dot_op" in str(op.results[0].type)
               for op in loop.body.block.ops)


SMEM = """builtin.module {
  tt.func @f(%x: tensor<64x64xf16, #B>) {
    %a = ttg.local_alloc %x : (tensor<64x64xf16, #B>) -> !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory>
    %v = ttg.local_load %a : !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory> -> tensor<64x64xf16, #B>
    %m = ttg.local_alloc : () -> !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory, mutable>
    ttg.local_store %v, %m : tensor<64x64xf16, #B> -> !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory, mutable>
    %w = ttg.local_load %m : !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory, mutable> -> tensor<64x64xf16, #B>
    ttg.local_store %w, %m : tensor<64x64xf16, #B> -> !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory, mutable>
    tt.return
  }
}""".replace("#B", "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>") \
    .replace("#S", "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>")


def test_allocation_reuses_dead_buffers_and_membar_orders_accesses():
    m = parse_module(SMEM)
    alloc = allocate_shared_memory(m)
    allocs = ops_named(m, "ttg.local_alloc")
    # %a dies at its local_load, before %m is allocated: both get offset 0.
    assert [op.attributes["allocation.offset"].value.data for op in allocs] == [0, 0]
    assert m.attributes["ttg.shared"].value.data == 8192 and alloc.totals["f"] == 8192
    membar(m)
    names = [op.name for op in m.body.block.ops.first.body.blocks[0].ops]
    # write(%a) -> read(%a): RAW; read(%a) -> write(%m) same bytes: WAR; read(%m) -> write(%m): WAR.
    assert names == ["ttg.local_alloc", "ttg.barrier", "ttg.local_load", "ttg.local_alloc", "ttg.barrier",
                     "ttg.local_store", "ttg.barrier", "ttg.local_load", "ttg.barrier", "ttg.local_store", "tt.return"]


def test_membar_filter_is_asked():
    m = parse_module(SMEM)
    allocate_shared_memory(m)
    asked = []
    membar(m, lambda a, b: asked.append((a.name, b.name)) or True)
    assert not ops_named(m, "ttg.barrier") and ("ttg.local_alloc", "ttg.local_load") in asked


@pytest.mark.parametrize("tpw", [32, 64])
def test_pipeline_end_to_end(tpw):
    target = GPUTarget("cuda", 90, tpw)
    m = load("matmul")
    make_ttgir(m, target, {"num_warps": 4})
    finalize_ttgir(m, target, {})
    text = print_module(m)
    assert f'ttg.target = "cuda:90"' in text and 'ttg.shared = ' in text
    assert print_module(parse_module(text)) == text
    loop = ops_named(m, "scf.for")[0]
    assert any(op.name == "ttg.barrier" for op in loop.body.block.ops)  # back edge reuses the scratch


LOOP_SMEM = """builtin.module {
  tt.func @f(%x: tensor<64x64xf16, #B>, %n: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %a = ttg.local_alloc %x : (tensor<64x64xf16, #B>) -> !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory>
    scf.for %i = %c0 to %n step %c1 : i32 {
      %v = ttg.local_load %a : !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory> -> tensor<64x64xf16, #B>
      STORE
      scf.yield
    }
    tt.return
  }
}""".replace("#B", "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>") \
    .replace("#S", "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>")


def test_membar_puts_a_barrier_for_what_precedes_a_loop_before_the_loop():
    # the tile written before the loop and only read in it: one barrier before the loop, none in
    # the body (every iteration would pay for it)
    m = parse_module(LOOP_SMEM.replace("STORE", ""))
    allocate_shared_memory(m)
    membar(m)
    func = m.body.block.ops.first.body.blocks[0]
    names = [op.name for op in func.ops]
    assert names[names.index("scf.for") - 1] == "ttg.barrier"
    loop = ops_named(m, "scf.for")[0]
    assert not [op for op in loop.body.block.ops if op.name == "ttg.barrier"]


def test_membar_keeps_the_barrier_the_back_edge_needs_in_the_body():
    # the body also overwrites the tile after reading it: the next iteration's read needs a
    # barrier in the body (RAW across the back edge) and the write one after the read (WAR)
    store = "ttg.local_store %v, %a : tensor<64x64xf16, #B> -> !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory>"
    blocked = "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>"
    m = parse_module(LOOP_SMEM.replace("STORE", store.replace("#B", blocked).replace(
        "#S", "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>"))
        .replace("#ttg.shared_memory>", "#ttg.shared_memory, mutable>"))
    allocate_shared_memory(m)
    membar(m)
    loop = ops_named(m, "scf.for")[0]
    body = [op.name for op in loop.body.block.ops]
    assert body.count("ttg.barrier") == 2
    assert body.index("ttg.barrier") < body.index("ttg.local_load") < body.index("ttg.local_store")


PIPELINED_SMEM = """builtin.module {
  tt.func @f(%x: tensor<64x64xf16, #B>, %p: tensor<64x64x!tt.ptr<f16>, #B>, %n: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %a = ttg.local_alloc %x : (tensor<64x64xf16, #B>) -> !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory>
    %b = ttg.local_alloc : () -> !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory, mutable>
    %t = ttg.async_copy_global_to_local %p, %b : tensor<64x64x!tt.ptr<f16>, #B> -> !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory, mutable>
    %g = ttg.async_commit_group
    scf.for %i = %c0 to %n step %c1 : i32 {
      BODY
      scf.yield
    }
    tt.return
  }
}""".replace("#B", "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>") \
    .replace("#S", "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>")
_WAIT = "%w = ttg.async_wait {num = 0 : i32}"
_READ_B = "%u = ttg.local_load %b : !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory, mutable> -> tensor<64x64xf16, #B>"
_READ_A = "%v = ttg.local_load %a : !ttg.memdesc<64x64xf16, #S, #ttg.shared_memory> -> tensor<64x64xf16, #B>"


def _pipelined(body: list[str]):
    blocked = "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>"
    shared = "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>"
    text = PIPELINED_SMEM.replace("BODY", "\n      ".join(body)).replace("#B", blocked).replace("#S", shared)
    m = parse_module(text)
    allocate_shared_memory(m)
    membar(m, lambda a, b: a.name == "ttg.async_copy_global_to_local")  # the NVIDIA rule
    func = m.body.block.ops.first.body.blocks[0]
    loop = ops_named(m, "scf.for")[0]
    return [op.name for op in func.ops], [op.name for op in loop.body.block.ops]


def test_membar_lets_the_body_barrier_after_a_wait_publish_what_precedes_the_loop():
    # a pipelined loop waits for its copies and puts a barrier before reading them; the tile
    # written before the loop is read only after that barrier, which publishes it too
    outer, body = _pipelined([_WAIT, _READ_B, _READ_A])
    assert "ttg.barrier" not in outer
    assert body == ["ttg.async_wait", "ttg.barrier", "ttg.local_load", "ttg.local_load", "scf.yield"]


def test_membar_keeps_the_barrier_before_a_loop_that_reads_first():
    # the tile is read before the body's barrier: it needs the one before the loop
    outer, body = _pipelined([_READ_A, _WAIT, _READ_B])
    assert outer[outer.index("scf.for") - 1] == "ttg.barrier"
    assert body.count("ttg.barrier") == 1 and body.index("ttg.barrier") == body.index("ttg.async_wait") + 1


def test_amd_epilogue_conversion_slices_to_the_buffers_bytes():
    """AMD's bound on a conversion after the loops: the module's buffers take 32 KiB, so a
    128x128 fp32 conversion (36 KiB a slice in two slices, padded) gets a bound of its own that
    slices it four ways; a conversion inside a loop keeps the module's bound."""
    pytest.importorskip("tritium_amd", reason="the AMD plugin is not installed")
    from xdsl.dialects.builtin import IntegerAttr
    from tritium.ttgir.layouts import SCRATCH_LIMIT_ATTR, convert_chunks, scratch_limit
    from tritium_amd.passes.epilogue_scratch import BoundEpilogueScratch
    m = parse_module("""builtin.module attributes {"ttg.convert-scratch-limit" = 65536 : i32} {
  tt.func @f(%x: tensor<128x128xf32, #ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [16, 4], warpsPerCTA = [1, 4], order = [0, 1]}>>, %n: i32) {
    %b = ttg.local_alloc : () -> !ttg.memdesc<2x128x64xf16, #ttg.swizzled_shared<{vec = 4, perPhase = 1, maxPhase = 16, order = [1, 0]}>, #ttg.shared_memory, mutable>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    scf.for %i = %c0 to %n step %c1 : i32 {
      %in = ttg.convert_layout %x : tensor<128x128xf32, #ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [16, 4], warpsPerCTA = [1, 4], order = [0, 1]}>> -> tensor<128x128xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 32], warpsPerCTA = [4, 1], order = [1, 0]}>>
      scf.yield
    }
    %out = ttg.convert_layout %x : tensor<128x128xf32, #ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [16, 4], warpsPerCTA = [1, 4], order = [0, 1]}>> -> tensor<128x128xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 32], warpsPerCTA = [4, 1], order = [1, 0]}>>
    tt.return
  }
}""")
    BoundEpilogueScratch().run(m)
    inner, outer = ops_named(m, "ttg.convert_layout")
    assert SCRATCH_LIMIT_ATTR not in inner.attributes and scratch_limit(inner) == 65536
    assert outer.attributes[SCRATCH_LIMIT_ATTR] == IntegerAttr(32768, 32)
    src, dst = outer.operands[0].type, outer.results[0].type
    assert convert_chunks(src, dst, 65536) == 2 and convert_chunks(src, dst, scratch_limit(outer)) == 4


def test_amd_epilogue_bound_has_a_floor():
    """With 4 KiB of buffers the bound is 16 KiB (``FLOOR_BYTES``), not 4: eight slices of the
    64 KiB padded conversion, not thirty-two."""
    pytest.importorskip("tritium_amd", reason="the AMD plugin is not installed")
    from tritium.ttgir.layouts import convert_chunks, scratch_limit
    from tritium_amd.passes.epilogue_scratch import FLOOR_BYTES, BoundEpilogueScratch
    m = parse_module("""builtin.module attributes {"ttg.convert-scratch-limit" = 65536 : i32} {
  tt.func @f(%x: tensor<128x128xf32, #ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [16, 4], warpsPerCTA = [1, 4], order = [0, 1]}>>) {
    %b = ttg.local_alloc : () -> !ttg.memdesc<32x64xf16, #ttg.swizzled_shared<{vec = 4, perPhase = 1, maxPhase = 16, order = [1, 0]}>, #ttg.shared_memory, mutable>
    %out = ttg.convert_layout %x : tensor<128x128xf32, #ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [16, 4], warpsPerCTA = [1, 4], order = [0, 1]}>> -> tensor<128x128xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 32], warpsPerCTA = [4, 1], order = [1, 0]}>>
    tt.return
  }
}""")
    BoundEpilogueScratch().run(m)
    cvt = ops_named(m, "ttg.convert_layout")[0]
    assert scratch_limit(cvt) == FLOOR_BYTES
    assert convert_chunks(cvt.operands[0].type, cvt.results[0].type, FLOOR_BYTES) == 8
