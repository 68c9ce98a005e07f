"""Kernels written as TTGIR text and compiled with ``tritium.compile`` on the text (Triton's
``IRSource``, the way Triton's own layout tests and people debugging a TTGIR dump use it): every
layout Triton writes (``blocked``, ``slice``, ``dot_op``, ``nvidia_mma`` versions 2 and 3,
``amd_mfma``, ``amd_wmma``, ``linear`` with XOR swizzles and broadcasts), ``ttg.convert_layout`` between them
(directly and through ``local_alloc``/``local_load`` on ``swizzled_shared`` / ``nvmma_shared``),
``tt.reduce`` and ``tt.scan`` in them, and Triton's pre-rename spelling (``triton_gpu.*``).

Layouts are templates of the warp size, so a case runs on 32- and 64-lane targets; the vendor
layouts (``nvidia-*``, ``amd-*`` for CDNA, ``rdna-*`` for RDNA3 case ids) only fit their vendor's warps and instructions.  The
interpreter runs TTGIR with its layouts ignored (they say where elements live, not what they are).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..case import Case, Out, Rand, tol
from ..ir_kernel import IRKernel

NUM_WARPS = 4
_TY = {"fp32": "f32", "fp16": "f16", "bf16": "bf16", "int32": "i32", "int8": "i8"}


# --- layouts: name -> (text for a warp size T, shapes it is meant for) --------------------------------
def _blocked(spt, tpw, wpc, order, legacy=False):
    ns = "triton_gpu" if legacy else "ttg"
    return lambda T: (f"#{ns}.blocked<{{sizePerThread = {list(spt)}, threadsPerWarp = {list(tpw(T))}, "
                      f"warpsPerCTA = {list(wpc)}, order = {list(order)}}}>")


def _linear_text(reg, lane, warp) -> str:
    show = lambda bases: "[" + ", ".join(f"[{a}, {b}]" for a, b in bases) + "]"  # noqa: E731
    return f"#ttg.linear<{{register = {show(reg)}, lane = {show(lane)}, warp = {show(warp)}, block = []}}>"


def _swizzled_linear(T: int) -> str:
    """A 64x64 layout whose bases mix rows and columns: a blocked tile (4 columns per thread, lanes
    along columns then rows) with row bit 0 XOR-ed into column bit 3 and column bit 2 into row bit 5."""
    lanes_c = min(T, 16)
    reg = [(0, 1), (0, 2)]
    lane = [(0, 4 << i) for i in range(lanes_c.bit_length() - 1)]
    lane += [(1 << i, 0) for i in range(T.bit_length() - 1 - len(lane))]
    rows_lanes = T // lanes_c
    warp = [(rows_lanes << i, 0) for i in range(2)]
    covered_rows = rows_lanes * 4
    while covered_rows < 64:
        reg.append((covered_rows, 0))
        covered_rows *= 2

    def swz(v):
        r, c = v
        if r & 1:
            c ^= 8
        if c & 4:
            r ^= 32
        return (r, c)
    return _linear_text([swz(v) for v in reg], [swz(v) for v in lane], [swz(v) for v in warp])


def _broadcast_linear(T: int) -> str:
    """A 32x32 layout with a duplicated register and a broadcast lane (two lanes hold each element)."""
    lane_rows = T.bit_length() - 1 - 5  # lane bits left after the 32 columns' four and one broadcast
    lane = [(0, 2), (0, 4), (0, 8), (0, 16)] + [(1 << i, 0) for i in range(lane_rows)] + [(0, 0)]
    warp = [(1 << (lane_rows + i), 0) for i in range(2)]
    reg = [(0, 1), (0, 0)] + [(1 << k, 0) for k in range(lane_rows + 2, 5)]
    return _linear_text(reg, lane, warp)


_MMA2 = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"
_MMA3 = "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 32, 16]}>"
_MMA3_N128 = "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 128, 16]}>"
_MFMA32 = ("#ttg.amd_mfma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [32, 32], "
           "isTransposed = false}>")
_MFMA32T = "#ttg.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [32, 32, 8], isTransposed = true}>"
_MFMA16 = ("#ttg.amd_mfma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 16], "
           "isTransposed = false}>")
_WMMA = "#ttg.amd_wmma<{version = 1, warpsPerCTA = [4, 1]}>"
_WMMAT = "#ttg.amd_wmma<{version = 1, warpsPerCTA = [4, 1], isTranspose = true}>"

LAYOUTS = {
    "blocked": _blocked((1, 4), lambda T: (8, T // 8), (4, 1), (1, 0)),
    "blocked_t": _blocked((4, 1), lambda T: (T // 4, 4), (2, 2), (0, 1)),
    "blocked_v8": _blocked((1, 8), lambda T: (T // 16, 16), (4, 1), (1, 0)),  # a matmul epilogue's store layout
    "blocked_row": _blocked((1, 1), lambda T: (1, T), (1, 4), (1, 0)),
    "blocked_4x4": _blocked((4, 4), lambda T: (8, T // 8), (2, 2), (1, 0)),
    "legacy_blocked": _blocked((2, 2), lambda T: (4, T // 4), (2, 2), (1, 0), legacy=True),
    "dot_op_blocked": lambda T: f"#ttg.dot_op<{{opIdx = 0, parent = {LAYOUTS['blocked'](T)}}}>",
    "linear_swizzled": _swizzled_linear,
    "linear_broadcast": _broadcast_linear,
    "nvidia_mma2": lambda T: _MMA2,
    "nvidia_mma3": lambda T: _MMA3,
    "nvidia_mma3_n128": lambda T: _MMA3_N128,
    "nvidia_dot_a": lambda T: f"#ttg.dot_op<{{opIdx = 0, parent = {_MMA2}, kWidth = 2}}>",
    "nvidia_dot_b": lambda T: f"#ttg.dot_op<{{opIdx = 1, parent = {_MMA2}, kWidth = 2}}>",
    "nvidia_dot_a3": lambda T: f"#ttg.dot_op<{{opIdx = 0, parent = {_MMA3}, kWidth = 2}}>",
    # wgmma's A in registers for 8-bit elements: four K elements a register
    "nvidia_dot_a3_k4": lambda T: f"#ttg.dot_op<{{opIdx = 0, parent = {_MMA3}, kWidth = 4}}>",
    "amd_mfma32": lambda T: _MFMA32,
    "amd_mfma16": lambda T: _MFMA16,
    "amd_mfma32t": lambda T: _MFMA32T,  # the transposed accumulator, in Triton's later spelling
    "amd_dot_a32": lambda T: f"#ttg.dot_op<{{opIdx = 0, parent = {_MFMA32}, kWidth = 4}}>",
    "amd_dot_b32": lambda T: f"#ttg.dot_op<{{opIdx = 1, parent = {_MFMA32}, kWidth = 4}}>",
    "amd_dot_b16": lambda T: f"#ttg.dot_op<{{opIdx = 1, parent = {_MFMA16}, kWidth = 8}}>",
    # RDNA3's WMMA (32-lane wavefronts): the accumulator, transposed as the compiler makes it, and
    # the operands, whose two half-wavefronts hold the same elements
    "amd_wmma": lambda T: _WMMA,
    "amd_wmmat": lambda T: _WMMAT,
    "amd_wmma_a": lambda T: f"#ttg.dot_op<{{opIdx = 0, parent = {_WMMAT}, kWidth = 16}}>",
    "amd_wmma_b": lambda T: f"#ttg.dot_op<{{opIdx = 1, parent = {_WMMAT}, kWidth = 16}}>",
}
SHARED = {
    "swizzled": lambda T: "#ttg.swizzled_shared<{vec = 4, perPhase = 2, maxPhase = 4, order = [1, 0]}>",
    "legacy_shared": lambda T: "#triton_gpu.shared<{vec = 2, perPhase = 1, maxPhase = 8, order = [0, 1], "
                               "CTAsPerCGA = [1, 1], CTASplitNum = [1, 1], CTAOrder = [0, 1]}>",
    "nvmma": lambda T: "#ttg.nvmma_shared<{swizzlingByteWidth = 64, transposed = false, elementBitWidth = 16}>",
    # AMD's MFMA operand buffers (K fastest, K runs XOR-swizzled by row), as its pipeliner makes them
    "amd_operand_a": lambda T: "#ttg.swizzled_shared<{vec = 4, perPhase = 1, maxPhase = 16, order = [1, 0]}>",
    "amd_operand_b": lambda T: "#ttg.swizzled_shared<{vec = 4, perPhase = 1, maxPhase = 16, order = [0, 1]}>",
}


def _vendor(name: str) -> str:
    """The case id's vendor tag: ``nvidia-`` (32-lane warps), ``amd-`` (CDNA's MFMA, 64-lane
    wavefronts), ``rdna-`` (RDNA3's WMMA, 32-lane wavefronts)."""
    if name.startswith("amd_wmma"):
        return "rdna-"
    return "nvidia-" if name.startswith("nvidia") else "amd-" if name.startswith("amd") else ""


def _kernel(name: str, text, layouts: tuple) -> IRKernel:
    """AMD's MFMA layouts are for 64-lane wavefronts, WMMA's for 32: that is the text the
    interpreter reads."""
    wave = 64 if any(lay.startswith("amd") and not lay.startswith("amd_wmma") for lay in layouts) else 32
    return IRKernel(name, text, ["x", "y" if name == "convert" else "z"], warp_size=wave)


def _header(T: int, **layouts) -> str:
    defs = "\n".join(f"#{k} = {v}" for k, v in layouts.items())
    return (f'{defs}\nmodule attributes {{"ttg.num-warps" = {NUM_WARPS} : i32, "ttg.num-ctas" = 1 : i32, '
            f'"ttg.threads-per-warp" = {T} : i32}} {{\n')


def _offsets(M: int, N: int, lay: str, out: str = "off") -> str:
    """``%<out>`` = row * N + col, a ``MxN`` i32 tensor in layout ``#<lay>``."""
    s0, s1 = f"#ttg.slice<{{dim = 1, parent = #{lay}}}>", f"#ttg.slice<{{dim = 0, parent = #{lay}}}>"
    t = f"tensor<{M}x{N}xi32, #{lay}>"
    return f"""
    %{out}_r = tt.make_range {{end = {M} : i32, start = 0 : i32}} : tensor<{M}xi32, {s0}>
    %{out}_c = tt.make_range {{end = {N} : i32, start = 0 : i32}} : tensor<{N}xi32, {s1}>
    %{out}_r2 = tt.expand_dims %{out}_r {{axis = 1 : i32}} : tensor<{M}xi32, {s0}> -> tensor<{M}x1xi32, #{lay}>
    %{out}_n = arith.constant dense<{N}> : tensor<{M}x1xi32, #{lay}>
    %{out}_rn = arith.muli %{out}_r2, %{out}_n : tensor<{M}x1xi32, #{lay}>
    %{out}_c2 = tt.expand_dims %{out}_c {{axis = 0 : i32}} : tensor<{N}xi32, {s1}> -> tensor<1x{N}xi32, #{lay}>
    %{out}_rb = tt.broadcast %{out}_rn : tensor<{M}x1xi32, #{lay}> -> {t}
    %{out}_cb = tt.broadcast %{out}_c2 : tensor<1x{N}xi32, #{lay}> -> {t}
    %{out} = arith.addi %{out}_rb, %{out}_cb : {t}"""


def _ptrs(name: str, arg: str, off: str, shape: str, ty: str, lay: str) -> str:
    return f"""
    %{name}_s = tt.splat %{arg} : !tt.ptr<{ty}> -> tensor<{shape}x!tt.ptr<{ty}>, #{lay}>
    %{name} = tt.addptr %{name}_s, %{off} : tensor<{shape}x!tt.ptr<{ty}>, #{lay}>, tensor<{shape}xi32, #{lay}>"""


def _args(*names_types) -> str:
    return ", ".join(f"%{n}: !tt.ptr<{t}> {{tt.divisibility = 16 : i32}}" for n, t in names_types)


# --- kernels ----------------------------------------------------------------------------------------
def convert_text(src: str, dst: str, M: int, N: int, tag: str, shared: str | None = None, store=False):
    """Load in ``src``, move to ``dst`` (``ttg.convert_layout``, or through a shared buffer of
    layout ``shared``: ``local_alloc`` of the tensor, or with ``store`` an empty mutable
    ``local_alloc`` then ``local_store``; ``local_load`` in ``dst``), store."""
    ty = _TY[tag]

    def text(T):
        layouts = {"src": LAYOUTS[src](T), "dst": LAYOUTS[dst](T)}
        if shared:
            layouts["smem"] = SHARED[shared](T)
        t_src, t_dst = f"tensor<{M}x{N}x{ty}, #src>", f"tensor<{M}x{N}x{ty}, #dst>"
        if shared and store:
            mem = f"!ttg.memdesc<{M}x{N}x{ty}, #smem, #ttg.shared_memory, mutable>"
            move = f"""
    %buf = ttg.local_alloc : () -> {mem}
    ttg.local_store %v, %buf : {t_src} -> {mem}
    %w = ttg.local_load %buf : {mem} -> {t_dst}
    ttg.local_dealloc %buf : {mem}"""
        elif shared:
            mem = f"!ttg.memdesc<{M}x{N}x{ty}, #smem, #ttg.shared_memory>"
            move = f"""
    %buf = ttg.local_alloc %v : ({t_src}) -> {mem}
    %w = ttg.local_load %buf : {mem} -> {t_dst}"""
        else:
            move = f"\n    %w = ttg.convert_layout %v : {t_src} -> {t_dst}"
        return _header(T, **layouts) + f"""  tt.func public @convert({_args(("x", ty), ("y", ty))}) {{""" + \
            _offsets(M, N, "src") + _ptrs("p", "x", "off", f"{M}x{N}", ty, "src") + f"""
    %v = tt.load %p : tensor<{M}x{N}x!tt.ptr<{ty}>, #src>""" + move + f"""
    %off2 = ttg.convert_layout %off : tensor<{M}x{N}xi32, #src> -> tensor<{M}x{N}xi32, #dst>""" + \
            _ptrs("q", "y", "off2", f"{M}x{N}", ty, "dst") + f"""
    tt.store %q, %w : tensor<{M}x{N}x!tt.ptr<{ty}>, #dst>
    tt.return
  }}
}}
"""
    return text


_COMBINE = {("sum", "f"): "arith.addf", ("sum", "i"): "arith.addi", ("max", "f"): "arith.maximumf",
            ("max", "i"): "arith.maxsi"}


def reduce_text(src: str, M: int, N: int, tag: str, op: str, axis: int):
    """Load in a blocked layout, convert to ``src``, reduce along ``axis``, bring the sliced result
    back to the blocked layout's slice and store it (Triton's ``reduce1d`` epilogue)."""
    ty = _TY[tag]
    comb = _COMBINE[(op, "i" if ty.startswith("i") else "f")]
    K = N if axis == 0 else M

    def text(T):
        layouts = {"blk": LAYOUTS["blocked"](T), "src": LAYOUTS[src](T)}
        s_src = f"#ttg.slice<{{dim = {axis}, parent = #src}}>"
        s_blk = f"#ttg.slice<{{dim = {axis}, parent = #blk}}>"
        return _header(T, **layouts) + f"""  tt.func public @reduce({_args(("x", ty), ("z", ty))}) {{""" + \
            _offsets(M, N, "blk") + _ptrs("p", "x", "off", f"{M}x{N}", ty, "blk") + f"""
    %v = tt.load %p : tensor<{M}x{N}x!tt.ptr<{ty}>, #blk>
    %w = ttg.convert_layout %v : tensor<{M}x{N}x{ty}, #blk> -> tensor<{M}x{N}x{ty}, #src>
    %red = "tt.reduce"(%w) <{{axis = {axis} : i32}}> ({{
    ^bb0(%a: {ty}, %b: {ty}):
      %s = {comb} %a, %b : {ty}
      tt.reduce.return %s : {ty}
    }}) : (tensor<{M}x{N}x{ty}, #src>) -> tensor<{K}x{ty}, {s_src}>
    %rb = ttg.convert_layout %red : tensor<{K}x{ty}, {s_src}> -> tensor<{K}x{ty}, {s_blk}>
    %i = tt.make_range {{end = {K} : i32, start = 0 : i32}} : tensor<{K}xi32, {s_blk}>
    %zs = tt.splat %z : !tt.ptr<{ty}> -> tensor<{K}x!tt.ptr<{ty}>, {s_blk}>
    %zp = tt.addptr %zs, %i : tensor<{K}x!tt.ptr<{ty}>, {s_blk}>, tensor<{K}xi32, {s_blk}>
    tt.store %zp, %rb : tensor<{K}x!tt.ptr<{ty}>, {s_blk}>
    tt.return
  }}
}}
"""
    return text


def chain_reduce_text(src: str, M: int, N: int, first_axis: int):
    """Two ``tt.reduce`` sums in a row, the second over the first's slice layout, to a scalar."""
    K = N if first_axis == 0 else M

    def text(T):
        s_src = f"#ttg.slice<{{dim = {first_axis}, parent = #src}}>"
        body = "\n    ^bb0(%a: i32, %b: i32):\n      %s = arith.addi %a, %b : i32\n      tt.reduce.return %s : i32\n    }"
        return _header(T, src=LAYOUTS[src](T)) + f"""  tt.func public @chain_reduce({_args(("x", "i32"), ("z", "i32"))}) {{""" + \
            _offsets(M, N, "src") + _ptrs("p", "x", "off", f"{M}x{N}", "i32", "src") + f"""
    %v = tt.load %p : tensor<{M}x{N}x!tt.ptr<i32>, #src>
    %r1 = "tt.reduce"(%v) <{{axis = {first_axis} : i32}}> ({{{body}) : (tensor<{M}x{N}xi32, #src>) -> tensor<{K}xi32, {s_src}>
    %r2 = "tt.reduce"(%r1) <{{axis = 0 : i32}}> ({{{body}) : (tensor<{K}xi32, {s_src}>) -> i32
    tt.store %z, %r2 : !tt.ptr<i32>
    tt.return
  }}
}}
"""
    return text


def scan_text(src: str, M: int, N: int, tag: str, axis: int, reverse: bool):
    """Load in ``src``, ``tt.scan`` (cumulative sum) along ``axis``, store in ``src``."""
    ty = _TY[tag]
    comb = _COMBINE[("sum", "i" if ty.startswith("i") else "f")]

    def text(T):
        t = f"tensor<{M}x{N}x{ty}, #src>"
        return _header(T, src=LAYOUTS[src](T)) + f"""  tt.func public @scan({_args(("x", ty), ("z", ty))}) {{""" + \
            _offsets(M, N, "src") + _ptrs("p", "x", "off", f"{M}x{N}", ty, "src") + f"""
    %v = tt.load %p : tensor<{M}x{N}x!tt.ptr<{ty}>, #src>
    %c = "tt.scan"(%v) <{{axis = {axis} : i32, reverse = {str(reverse).lower()}}}> ({{
    ^bb0(%a: {ty}, %b: {ty}):
      %s = {comb} %a, %b : {ty}
      tt.scan.return %s : {ty}
    }}) : ({t}) -> {t}""" + _ptrs("q", "z", "off", f"{M}x{N}", ty, "src") + f"""
    tt.store %q, %c : tensor<{M}x{N}x!tt.ptr<{ty}>, #src>
    tt.return
  }}
}}
"""
    return text


# --- Triton's own layout-test kernel, verbatim in its late-2024 spelling ---------------------------
def legacy_scan_text(T: int) -> str:
    return f"""
#blocked = #triton_gpu.blocked<{{sizePerThread=[1, 4], threadsPerWarp=[4, {T // 4}], warpsPerCTA=[4, 1], order=[0, 1], CTAsPerCGA=[1, 1], CTASplitNum=[1, 1], CTAOrder=[0, 1]}}>
module attributes {{"triton_gpu.num-warps" = 4 : i32, "triton_gpu.num-ctas" = 1 : i32, "triton_gpu.threads-per-warp" = {T} : i32}} {{
tt.func public @kernel_0d1d(%arg0: !tt.ptr<i32> {{tt.divisibility = 16 : i32}}, %arg1: !tt.ptr<i32> {{tt.divisibility = 16 : i32}}) {{
  %cst = arith.constant dense<32> : tensor<32x1xi32, #blocked>
  %0 = tt.make_range {{end = 32 : i32, start = 0 : i32}} : tensor<32xi32, #triton_gpu.slice<{{dim = 1, parent = #blocked}}>>
  %1 = tt.expand_dims %0 {{axis = 1 : i32}} : tensor<32xi32, #triton_gpu.slice<{{dim = 1, parent = #blocked}}>> -> tensor<32x1xi32, #blocked>
  %2 = arith.muli %1, %cst : tensor<32x1xi32, #blocked>
  %3 = tt.splat %arg0 : !tt.ptr<i32> -> tensor<32x1x!tt.ptr<i32>, #blocked>
  %4 = tt.addptr %3, %2 : tensor<32x1x!tt.ptr<i32>, #blocked>, tensor<32x1xi32, #blocked>
  %5 = tt.make_range {{end = 32 : i32, start = 0 : i32}} : tensor<32xi32, #triton_gpu.slice<{{dim = 0, parent = #blocked}}>>
  %6 = tt.expand_dims %5 {{axis = 0 : i32}} : tensor<32xi32, #triton_gpu.slice<{{dim = 0, parent = #blocked}}>> -> tensor<1x32xi32, #blocked>
  %7 = tt.broadcast %4 : tensor<32x1x!tt.ptr<i32>, #blocked> -> tensor<32x32x!tt.ptr<i32>, #blocked>
  %8 = tt.broadcast %6 : tensor<1x32xi32, #blocked> -> tensor<32x32xi32, #blocked>
  %9 = tt.addptr %7, %8 : tensor<32x32x!tt.ptr<i32>, #blocked>, tensor<32x32xi32, #blocked>
  %10 = tt.load %9 : tensor<32x32x!tt.ptr<i32>, #blocked>
  %11 = "tt.scan"(%10) <{{axis = 1 : i32, reverse = false}}> ({{
  ^bb0(%arg2: i32, %arg3: i32):
    %16 = arith.addi %arg2, %arg3 : i32
    %17 = arith.cmpi "sgt", %16, %arg2 : i32
    tt.scan.return %16 : i32
  }}) : (tensor<32x32xi32, #blocked>) -> tensor<32x32xi32, #blocked>
  %12 = tt.splat %arg1 : !tt.ptr<i32> -> tensor<32x1x!tt.ptr<i32>, #blocked>
  %13 = tt.addptr %12, %2 : tensor<32x1x!tt.ptr<i32>, #blocked>, tensor<32x1xi32, #blocked>
  %14 = tt.broadcast %13 : tensor<32x1x!tt.ptr<i32>, #blocked> -> tensor<32x32x!tt.ptr<i32>, #blocked>
  %15 = tt.addptr %14, %8 : tensor<32x32x!tt.ptr<i32>, #blocked>, tensor<32x32xi32, #blocked>
  tt.store %15, %11 : tensor<32x32x!tt.ptr<i32>, #blocked>
  tt.return
}}
}}
"""


# --- cases ------------------------------------------------------------------------------------------
def _inputs(tag: str, n: int):
    return Rand(tag, (n,), -100, 100) if dtypes.is_int(tag) else Rand(tag, (n,))


def _convert_case(src, dst, M, N, tag, shared=None, store=False):
    via = (f"-via-{shared}" if shared else "") + ("-local-store" if store else "")
    name = f"ir_files/{_vendor(src) or _vendor(dst)}convert-{src}-to-{dst}{via}-{M}x{N}-{tag}"
    return Case(id=name, kernel=_kernel("convert", convert_text(src, dst, M, N, tag, shared, store), (src, dst)),
                inputs={"x": _inputs(tag, M * N)}, outputs={"y": Out(tag, (M * N,))},
                reference=lambda x: x)


def _reduce_case(src, M, N, tag, op, axis):
    K = N if axis == 0 else M
    kw = tol(dtypes.ACCUM_TOLERANCE, tag) if (op == "sum" and dtypes.is_float(tag)) else {}
    src_vals = Rand(tag, (M * N,), -3, 3) if dtypes.is_int(tag) else _inputs(tag, M * N)

    def ref(x):
        x = x.reshape(M, N)
        return np.sum(x, axis=axis) if op == "sum" else np.max(x, axis=axis)
    return Case(id=f"ir_files/{_vendor(src)}reduce-{op}-{src}-axis{axis}-{M}x{N}-{tag}",
                kernel=_kernel("reduce", reduce_text(src, M, N, tag, op, axis), (src,)),
                inputs={"x": src_vals}, outputs={"z": Out(tag, (K,))}, reference=ref, **kw)


def _scan_case(src, M, N, tag, axis, reverse=False):
    kw = tol(dtypes.ACCUM_TOLERANCE, tag) if dtypes.is_float(tag) else {}
    src_vals = Rand(tag, (M * N,), -3, 3) if dtypes.is_int(tag) else _inputs(tag, M * N)

    def ref(x):
        x = x.reshape(M, N)
        out = np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis) if reverse else np.cumsum(x, axis=axis)
        return out.reshape(-1)
    rev = "-reverse" if reverse else ""
    return Case(id=f"ir_files/{_vendor(src)}scan-{src}-axis{axis}{rev}-{M}x{N}-{tag}",
                kernel=_kernel("scan", scan_text(src, M, N, tag, axis, reverse), (src,)),
                inputs={"x": src_vals}, outputs={"z": Out(tag, (M * N,))}, reference=ref, **kw)


def _chain_case(src, M, N, first_axis):
    return Case(id=f"ir_files/{_vendor(src)}chain-reduce-{src}-axis{first_axis}-{M}x{N}",
                kernel=_kernel("chain_reduce", chain_reduce_text(src, M, N, first_axis), (src,)),
                inputs={"x": Rand("int32", (M * N,), -100, 100)}, outputs={"z": Out("int32", (1,))},
                reference=lambda x: np.array([np.sum(x)], dtype=np.int32))


CASES = [
    # conversions between every family, both directions where both apply
    _convert_case("blocked", "blocked_t", 64, 64, "fp16"),
    _convert_case("blocked_t", "blocked_row", 32, 128, "fp32"),
    _convert_case("legacy_blocked", "blocked", 64, 64, "int32"),
    _convert_case("blocked", "linear_swizzled", 64, 64, "fp32"),
    _convert_case("linear_swizzled", "blocked_t", 64, 64, "fp16"),
    _convert_case("linear_broadcast", "blocked", 32, 32, "int32"),
    _convert_case("blocked_row", "dot_op_blocked", 32, 32, "fp32"),
    _convert_case("nvidia_mma2", "blocked", 64, 64, "fp16"),
    _convert_case("blocked", "nvidia_mma2", 64, 64, "fp32"),
    _convert_case("nvidia_mma2", "nvidia_mma3", 64, 64, "fp16"),
    _convert_case("nvidia_mma3", "linear_swizzled", 64, 64, "fp32"),
    _convert_case("nvidia_mma3", "blocked_t", 16, 64, "fp16"),
    # a tensor-core accumulator to a store layout: 8x8 tile stores on targets that have them
    _convert_case("nvidia_mma3", "blocked_v8", 64, 64, "fp16"),
    _convert_case("nvidia_mma3_n128", "blocked_v8", 64, 256, "fp16"),
    _convert_case("nvidia_mma3_n128", "blocked_v8", 128, 128, "bf16"),
    _convert_case("nvidia_mma3_n128", "blocked_v8", 64, 128, "fp32"),
    _convert_case("nvidia_mma2", "blocked_v8", 32, 64, "bf16"),
    _convert_case("blocked", "nvidia_dot_a", 64, 32, "fp16"),
    _convert_case("nvidia_dot_b", "blocked_t", 32, 64, "fp16"),
    _convert_case("nvidia_mma2", "nvidia_dot_a", 64, 64, "fp16"),
    _convert_case("blocked", "nvidia_dot_a3", 64, 32, "fp16"),
    # fp8 attention's P: the wgmma accumulator (cast to 8 bits) into the next wgmma's A registers
    _convert_case("nvidia_mma3", "nvidia_dot_a3_k4", 64, 64, "int8"),
    _convert_case("nvidia_mma3", "nvidia_dot_a3_k4", 128, 128, "int8"),
    _convert_case("amd_mfma32", "blocked", 64, 64, "fp32"),
    _convert_case("blocked_t", "amd_mfma16", 64, 64, "fp16"),
    _convert_case("amd_mfma16", "amd_mfma32", 64, 64, "fp32"),
    _convert_case("amd_mfma32t", "amd_mfma32", 64, 64, "fp16"),
    _convert_case("blocked", "amd_dot_a32", 64, 64, "fp16"),
    _convert_case("blocked", "amd_dot_b32", 64, 64, "bf16"),
    _convert_case("blocked_4x4", "amd_dot_b32", 64, 64, "fp16"),
    _convert_case("blocked_t", "amd_dot_b16", 64, 64, "int8"),
    _convert_case("amd_mfma32", "amd_dot_a32", 64, 64, "fp16"),
    # attention's P: a transposed WMMA accumulator into the A operand (the halves trade columns)
    _convert_case("amd_wmmat", "amd_wmma_a", 64, 64, "fp16"),
    _convert_case("amd_wmmat", "amd_wmma_a", 32, 64, "bf16"),
    _convert_case("amd_wmmat", "amd_wmma_a", 64, 32, "int8"),
    _convert_case("amd_wmmat", "amd_wmma_a", 32, 32, "fp32"),
    _convert_case("amd_wmma", "amd_wmmat", 64, 64, "fp16"),
    _convert_case("amd_wmmat", "blocked", 64, 64, "fp32"),
    _convert_case("blocked_t", "amd_wmma_b", 64, 64, "fp16"),
    # through shared memory
    _convert_case("blocked", "blocked_t", 64, 64, "fp16", shared="swizzled"),
    _convert_case("linear_swizzled", "blocked", 64, 64, "int32", shared="legacy_shared"),
    _convert_case("nvidia_mma2", "blocked", 64, 64, "fp16", shared="nvmma"),
    _convert_case("blocked_row", "linear_broadcast", 32, 32, "fp32", shared="swizzled", store=True),
    _convert_case("nvidia_mma3", "nvidia_dot_a", 64, 32, "fp16", shared="nvmma", store=True),
    _convert_case("blocked", "amd_dot_a32", 64, 64, "fp16", shared="amd_operand_a", store=True),
    _convert_case("blocked_t", "amd_dot_b32", 64, 64, "fp16", shared="amd_operand_b", store=True),
    _convert_case("blocked", "amd_dot_b32", 64, 64, "bf16", shared="amd_operand_b"),
    # reductions
    *(_reduce_case(src, 64, 64, "fp32", "sum", axis) for src in
      ("blocked_t", "linear_swizzled", "nvidia_mma2", "nvidia_mma3", "amd_mfma32") for axis in (0, 1)),
    _reduce_case("linear_broadcast", 32, 32, "int32", "sum", 1),
    _reduce_case("dot_op_blocked", 32, 32, "int32", "max", 0),
    _reduce_case("nvidia_dot_a", 64, 32, "fp16", "max", 1),
    _reduce_case("amd_mfma16", 32, 64, "int32", "sum", 0),
    _reduce_case("amd_mfma32t", 64, 64, "fp32", "max", 1),
    _reduce_case("amd_wmmat", 64, 64, "fp32", "max", 1),
    _reduce_case("amd_wmmat", 32, 64, "int32", "sum", 0),
    _reduce_case("nvidia_mma3", 128, 16, "int32", "max", 0),
    # scans
    _scan_case("blocked", 32, 64, "int32", 1),
    _scan_case("linear_swizzled", 64, 64, "int32", 0),
    _scan_case("nvidia_mma2", 64, 64, "fp32", 1, reverse=True),
    _scan_case("amd_mfma32", 64, 64, "int32", 0),
    # two reductions in a row; Triton's own test text, old spelling
    _chain_case("blocked_row", 64, 128, 0),
    _chain_case("nvidia_mma2", 64, 64, 1),
    Case(id="ir_files/triton-test-scan-layouts-legacy-spelling",
         kernel=IRKernel("kernel_0d1d", legacy_scan_text, ["x", "z"]),
         inputs={"x": Rand("int32", (32 * 32,), -100, 100)}, outputs={"z": Out("int32", (32 * 32,))},
         reference=lambda x: np.cumsum(x.reshape(32, 32), axis=1).reshape(-1)),
]
