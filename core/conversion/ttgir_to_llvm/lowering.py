"""The TTGIR -> LLVM IR driver: module, functions, the value map and layout index arithmetic.

A distributed tensor value becomes a Python list of LLVM values, one per register of the calling
thread, in the layout's register order (``tritium.ttgir.layouts``); a scalar stays one LLVM value.
Op lowerings register themselves with :func:`lowers` in the sibling modules and receive the
:class:`FunctionLowering` (builder, value map, target info, layout helpers) and the op.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import llvmlite.ir as ir
import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue

from ...ttgir.analysis.axis_info import AxisInfoAnalysis
from ...ttgir.analysis.value_range import ValueRanges
from ...ttgir.passes.allocate_global_scratch import scratch_alignment, scratch_size
from ...ttgir.encodings import DistributedEncoding
from ...ttgir.linear_layout import LinearLayout
from ..target_info import TargetInfo
from .types import I1, I32, I64, llvm_type

LOWERINGS: dict[str, Callable[["FunctionLowering", Operation], None]] = {}


def lowers(*names: str):
    """Register the decorated function as the lowering of the ops ``names``."""
    def deco(fn):
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return deco


class LoweringError(NotImplementedError):
    pass


@dataclass
class LayoutInfo:
    """A distributed layout met with one shape, plus the calling thread's part of its coordinates."""

    ll: LinearLayout
    thread: list[ir.Value] | None = None  # per dimension, i32 (emitted once, in the prologue)

    @cached_property
    def reg_offsets(self) -> np.ndarray:
        return self.ll.reg_offsets()

    @cached_property
    def reg_index(self) -> dict[tuple[int, ...], int]:
        """Register holding each constant coordinate offset (first one if duplicated)."""
        out: dict[tuple[int, ...], int] = {}
        for r, off in enumerate(self.reg_offsets):
            out.setdefault(tuple(int(x) for x in off), r)
        return out

    @cached_property
    def free(self) -> dict[str, int]:
        return self.ll.free_masks()


@dataclass
class FunctionLowering:
    """State while lowering one ``tt.func``."""

    lowering: "ModuleLowering"
    op: Operation
    fn: ir.Function
    builder: ir.IRBuilder
    prologue: ir.IRBuilder
    smem: ir.Value                      # i8 shared pointer: this function's buffers start here
    #: i8 global pointer: this program's global scratch for this function (None: it has none)
    global_scratch: ir.Value | None = None
    values: dict[SSAValue, object] = field(default_factory=dict)
    layouts: dict[object, LayoutInfo] = field(default_factory=dict)
    #: values whose registers follow another layout than their type's (an elided conversion)
    layout_override: dict[SSAValue, object] = field(default_factory=dict)
    #: ``affine_compare.affine_of``'s answers for this function's values
    affine_memo: dict[SSAValue, object] = field(default_factory=dict)
    #: i1 true on the thread that issues a block's one-thread work (default: thread 0); a warp
    #: partition's lowering sets it to its own first thread while it lowers that partition
    first_thread: ir.Value | None = None

    @property
    def target(self) -> TargetInfo:
        return self.lowering.target

    @property
    def options(self):
        return self.lowering.options

    @property
    def module(self) -> ir.Module:
        return self.fn.module

    # --- values ---------------------------------------------------------------------------------
    def get(self, v: SSAValue):
        try:
            return self.values[v]
        except KeyError:
            raise LoweringError(f"value {v} used before it was lowered") from None

    def set(self, v: SSAValue, x) -> None:
        self.values[v] = x

    def ty(self, v_or_type) -> ir.Type:
        t = v_or_type.type if isinstance(v_or_type, SSAValue) else v_or_type
        return llvm_type(t, self.target.global_address_space)

    # --- thread ids (emitted in the prologue so they dominate every use) -----------------------
    @cached_property
    def tid(self) -> ir.Value:
        return self.target.thread_id(self.prologue)

    @cached_property
    def lane(self) -> ir.Value:
        return self.target.lane_id(self.prologue, self.tid)

    @cached_property
    def warp(self) -> ir.Value:
        return self.target.warp_id(self.prologue, self.tid)

    @cached_property
    def warp_uniform(self) -> ir.Value:
        """The warp id read back from lane 0: the same value, but one the assembler knows is equal
        across the warp, so what is computed from it can live in uniform registers (wgmma
        descriptors)."""
        return self.target.shuffle_idx(self.prologue, self.warp, ir.Constant(I32, 0))

    # --- layouts --------------------------------------------------------------------------------
    def layout(self, t) -> LayoutInfo:
        """The layout of tensor type ``t`` (or value), with the thread part of its coordinates."""
        if isinstance(t, SSAValue):
            t = t.type
        enc = t.encoding
        if not isinstance(enc, DistributedEncoding):
            raise LoweringError(f"tensor {t} has no distributed layout")
        key = (enc, tuple(t.get_shape()))
        info = self.layouts.get(key)
        if info is None:
            info = LayoutInfo(enc.linear_layout(key[1]))
            self.layouts[key] = info
        return info

    def thread_coords(self, info: LayoutInfo) -> list[ir.Value]:
        """Per dimension, the coordinate of register 0 of this thread (i32)."""
        if info.thread is None:
            b, ll = self.prologue, info.ll
            out = []
            for d in range(ll.rank):
                acc = None
                for src, bases in (("lane", ll.lane), ("warp", ll.warp)):
                    ident = self.lane if src == "lane" else self.warp
                    for bit, vec in enumerate(bases):
                        if not vec[d]:
                            continue
                        term = b.and_(b.lshr(ident, ir.Constant(I32, bit)), ir.Constant(I32, 1))
                        term = b.mul(term, ir.Constant(I32, vec[d]))
                        # additive layouts have disjoint bits: xor == or == add
                        acc = term if acc is None else b.xor(acc, term)
                out.append(acc if acc is not None else ir.Constant(I32, 0))
            info.thread = out
        return info.thread

    def coords(self, t) -> list[list[ir.Value]]:
        """``[register][dim]`` coordinates (i32) of every element this thread holds."""
        info = self.layout(t)
        base = self.thread_coords(info)
        b = self.builder
        out = []
        for off in info.reg_offsets:
            row = []
            for d, o in enumerate(off):
                row.append(b.xor(base[d], ir.Constant(I32, int(o))) if o else base[d])
            out.append(row)
        return out

    def dedup_pred(self, t) -> ir.Value | None:
        """i1 true on the one (lane, warp) that owns each element of ``t`` (None: all own theirs)."""
        free = self.layout(t).free
        conds = []
        b = self.prologue
        for src, ident in (("lane", self.lane), ("warp", self.warp)):
            if free[src]:
                conds.append(b.icmp_unsigned("==", b.and_(ident, ir.Constant(I32, free[src])), ir.Constant(I32, 0)))
        if not conds:
            return None
        out = conds[0]
        for c in conds[1:]:
            out = b.and_(out, c)
        return out

    def first_thread_pred(self) -> ir.Value:
        if self.first_thread is not None:
            return self.first_thread
        return self.prologue.icmp_unsigned("==", self.tid, ir.Constant(I32, 0))

    def shared_ptr(self, byte_offset) -> ir.Value:
        """i8 shared pointer at ``byte_offset`` (int or i32 value) past this function's base."""
        off = ir.Constant(I32, byte_offset) if isinstance(byte_offset, int) else byte_offset
        return self.builder.gep(self.smem, [off], source_etype=ir.IntType(8))

    def global_scratch_ptr(self, byte_offset: int) -> ir.Value:
        """i8 global pointer ``byte_offset`` bytes into this function's part of the program's
        global scratch (``allocate-global-scratch``)."""
        if self.global_scratch is None:
            raise LoweringError(f"{self.op.sym_name.data} uses global scratch but has none "
                                "(run allocate-global-scratch)")
        return self.builder.gep(self.global_scratch, [ir.Constant(I64, byte_offset)], source_etype=ir.IntType(8))

    def alloc_offset(self, op: Operation) -> int:
        attr = op.attributes.get("allocation.offset")
        if attr is None:
            raise LoweringError(f"{op.name} needs shared memory but has no allocation.offset "
                                "(run allocate-shared-memory)")
        return attr.value.data

    # --- blocks ---------------------------------------------------------------------------------
    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Operation) -> None:
        # A plugin's own lowering (vendor ops, or a generic op over a vendor encoding) wins.
        fn = self.target.op_lowering(op) or LOWERINGS.get(op.name)
        if fn is None:
            raise LoweringError(f"no TTGIR -> LLVM lowering for {op.name}")
        fn(self, op)

    # --- small helpers used by many lowerings ----------------------------------------------------
    def and_all(self, preds: list) -> ir.Value | None:
        preds = [p for p in preds if p is not None]
        if not preds:
            return None
        out = preds[0]
        for p in preds[1:]:
            out = self.builder.and_(out, p)
        return out

    def n_regs(self, t) -> int:
        return self.layout(t).ll.num_registers if isinstance(t.type if isinstance(t, SSAValue) else t,
                                                               TensorType) else 1

    def bool_const(self, v: bool) -> ir.Constant:
        return ir.Constant(I1, int(v))


@dataclass
class ModuleLowering:
    module_op: ModuleOp
    target: TargetInfo
    options: object
    llmodule: ir.Module
    functions: dict[str, ir.Function] = field(default_factory=dict)
    axis_info: object = None
    value_ranges: object = None
    kernel_names: list[str] = field(default_factory=list)


# --- tensors <-> flat lists of LLVM values (function arguments, phis, returns) ---------------------
def flatten(values: list) -> list[ir.Value]:
    out: list[ir.Value] = []
    for v in values:
        out.extend(v if isinstance(v, list) else [v])
    return out


def flat_types(fl: FunctionLowering, ssa_values) -> list[ir.Type]:
    out: list[ir.Type] = []
    for v in ssa_values:
        t = v.type if isinstance(v, SSAValue) else v
        n = fl.layout(t).ll.num_registers if isinstance(t, TensorType) else 1
        out.extend([fl.ty(t)] * n)
    return out


def unflatten(fl: FunctionLowering, ssa_types, flat: list[ir.Value]) -> list:
    out, i = [], 0
    for t in ssa_types:
        if isinstance(t, TensorType):
            n = fl.layout(t).ll.num_registers
            out.append(list(flat[i:i + n]))
            i += n
        else:
            out.append(flat[i])
            i += 1
    return out


# --- the driver -----------------------------------------------------------------------------------
def _func_ops(module: ModuleOp) -> list[Operation]:
    return [op for op in module.ops if op.name == "tt.func"]


def _is_kernel(f: Operation) -> bool:
    return f.is_public


def _declare(ml: ModuleLowering, f: Operation) -> ir.Function:
    """The LLVM function of ``f``: kernels take their scalar and pointer arguments as they are; device
    functions take tensors as one argument per register plus the shared-memory base they may use."""
    name = f.sym_name.data
    ftype = f.function_type
    probe = FunctionLowering(ml, f, None, None, None, None)  # layouts only
    params = flat_types(probe, ftype.inputs.data)
    scratch = [ir.PointerType(addrspace=ml.target.global_address_space)] if scratch_size(f) else []
    if _is_kernel(f):
        if ftype.outputs.data:
            raise LoweringError(f"kernel {name} must not return values")
        # the launch's global scratch comes last, after the kernel's own parameters
        fn = ir.Function(ml.llmodule, ir.FunctionType(ir.VoidType(), params + scratch), name)
    else:
        rets = flat_types(probe, ftype.outputs.data)
        ret = ir.VoidType() if not rets else rets[0] if len(rets) == 1 else ir.LiteralStructType(rets)
        params.append(ir.PointerType(addrspace=ml.target.shared_address_space))
        fn = ir.Function(ml.llmodule, ir.FunctionType(ret, params + scratch), name)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
    ml.functions[name] = fn
    return fn


def _define(ml: ModuleLowering, f: Operation, fn: ir.Function) -> None:
    pro_block = fn.append_basic_block("prologue")
    body_block = fn.append_basic_block("body")
    prologue = ir.IRBuilder(pro_block)
    term = prologue.branch(body_block)
    prologue.position_before(term)
    args = list(fn.args)
    scratch = args.pop() if scratch_size(f) else None
    if _is_kernel(f):
        base = ml.target.shared_base(ml.llmodule)
        smem = prologue.gep(base, [ir.Constant(I32, 0)], source_etype=ir.IntType(8))
        if scratch is not None:
            # this program's part of the launch's scratch: ``size`` bytes at its block index
            index = prologue.zext(ml.target.block_index(prologue), I64)
            scratch = prologue.gep(scratch, [prologue.mul(index, ir.Constant(I64, scratch_size(f)))],
                                   source_etype=ir.IntType(8))
    else:
        smem = args.pop()
    fl = FunctionLowering(ml, f, fn, ir.IRBuilder(body_block), prologue, smem, scratch)
    block = f.body.blocks.first
    for v, x in zip(block.args, unflatten(fl, [a.type for a in block.args], args)):
        fl.set(v, x)
    fl.lower_block(block)


def lower_to_llvm(module: ModuleOp, target: TargetInfo, options=None) -> tuple[str, dict]:
    """Lower a finalized TTGIR module (``allocate-shared-memory`` and ``membar`` have run) to LLVM IR.

    Returns the IR text and metadata: ``name`` (the kernel), ``shared`` (bytes of shared memory),
    ``num_warps`` (the block's warps, warp partitions included), ``threads_per_warp``, and
    ``global_scratch_size`` / ``global_scratch_align`` (bytes of global scratch per program, ``allocate-global-scratch``; the kernel then takes the
    launch's scratch as one more pointer parameter, last)."""
    llmodule = ir.Module(name="tritium")
    if target.triple:
        llmodule.triple = target.triple
    if target.data_layout:
        llmodule.data_layout = target.data_layout
    ml = ModuleLowering(module, target, options, llmodule)
    ml.axis_info = AxisInfoAnalysis(module)
    ml.value_ranges = ValueRanges()
    funcs = _func_ops(module)
    for f in funcs:
        _declare(ml, f)
    # the warps the block launches with: the layouts' (``ttg.num-warps``) plus those of warp
    # partitions running beside them (``ttg.total-num-warps``, set by a backend's warp specialization)
    total = module.attributes.get("ttg.total-num-warps") or module.attributes["ttg.num-warps"]
    num_warps = total.value.data
    shared = module.attributes["ttg.shared"].value.data if "ttg.shared" in module.attributes else 0
    for f in funcs:
        fn = ml.functions[f.sym_name.data]
        _define(ml, f, fn)
        if _is_kernel(f):
            target.make_kernel(fn, num_warps, shared)
            ml.kernel_names.append(f.sym_name.data)
    if not ml.kernel_names:
        raise LoweringError("the module has no kernel (no public tt.func)")
    meta = {"name": ml.kernel_names[0], "shared": shared, "num_warps": num_warps,
            "threads_per_warp": module.attributes["ttg.threads-per-warp"].value.data,
            "global_scratch_size": scratch_size(module), "global_scratch_align": scratch_alignment(module)}
    return str(llmodule), meta
