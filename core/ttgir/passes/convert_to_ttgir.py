"""``convert-to-ttgir``: give every tensor a layout.

Each tensor value gets its *natural* layout: the default blocked layout of its shape
(:func:`~tritium.ttgir.layouts.default_blocked_encoding`), except where the op decides —
``tt.reduce`` results are ``slice(axis, source)``, ``tt.scan``/``tt.cat`` keep their source's,
``tt.trans`` permutes its source's blocked layout, ``tt.gather`` takes its indices' (its source
keeps its own: it goes through shared memory), ``tt.join`` adds a per-thread dimension,
``tt.reshape`` keeps each element in its thread where a blocked layout can say so, and
``scf.for`` carries its init values' layouts.  Then every operand whose layout differs from what its
user needs (``tt.expand_dims`` wants ``slice`` of its result, ``tt.dot`` wants ``dot_op``,
``tt.broadcast`` and elementwise ops the result's, yields and returns their region's types) gets a
``ttg.convert_layout``; ``remove_layout_conversions`` then cleans these up.
"""
from __future__ import annotations

import math

from xdsl.dialects import scf
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation

from ...ttir.types import PointerType
from ..dialect import set_module_attrs
from ..encodings import DotOperandEncodingAttr, SliceEncodingAttr
from ..layouts import blocked_encoding, default_blocked_encoding, reshaped_blocked
from ._util import (convert_operand, encoding, func_ops, joined_blocked, permuted_blocked, set_type,
                    split_source_blocked, with_encoding)

# Ops whose operands are free to keep their own layout (they are scalars, memory descriptors, or
# the op's rule is handled explicitly below).
_OWN_RULES = {"tt.expand_dims", "tt.broadcast", "tt.dot", "tt.split", "tt.reduce", "tt.scan", "tt.trans",
              "tt.reshape", "tt.cat", "tt.join", "tt.splat", "scf.yield", "scf.condition", "tt.return", "tt.call",
              "scf.for", "scf.while", "scf.if", "tt.func", "tt.reduce.return", "tt.scan.return", "tt.print",
              "tt.histogram", "tt.gather"}


def _lacks_layout(op: Operation) -> bool:
    """A ``ttg`` op made before layouts were assigned (``decompose-scaled-dot``'s elementwise
    decoding) gets them like any elementwise op; ``ttg`` ops of TTGIR text already have theirs."""
    return any(isinstance(r.type, TensorType) and encoding(r.type) is None for r in op.results)


class ConvertToTTGIR:
    name = "convert-to-ttgir"

    def __init__(self, num_warps: int = 4, threads_per_warp: int = 32, num_ctas: int = 1, target: str | None = None):
        self.num_warps, self.threads_per_warp, self.num_ctas, self.target = num_warps, threads_per_warp, num_ctas, target

    def default_type(self, t: Attribute) -> Attribute:
        if isinstance(t, TensorType) and encoding(t) is None:
            # Layouts span one CTA: a backend that launches a program as a cluster of
            # ``num_ctas`` CTAs (NVIDIA, sm_90) runs the program's work on one of them.
            return with_encoding(t, default_blocked_encoding(t.get_shape(), self.num_warps, self.threads_per_warp))
        if isinstance(t, PointerType) and t.is_block_pointer:
            return PointerType(self.default_type(t.pointee_type), t.address_space.data)
        return t

    def dot_result_encoding(self, shape) -> Attribute:
        """Triton's layout for a dot's result before a backend picks a tensor-core layout, and the
        one an FMA dot keeps: each thread owns a 2x2 (from 4 elements a thread) or 4x4 (from 16)
        block of the result, so its share of the operands is a few rows of A and columns of B.
        The default layout (one element a thread, lanes along N) gives a thread a whole column
        strip: a 64x64x32 fp32 FMA dot on 4 warps then holds 32 rows of A (1,024 values) and
        spilled 10 KB where Triton's layout needs 168 registers and no spill."""
        rank = len(shape)
        per_thread = math.prod(shape) // (self.num_warps * self.threads_per_warp)
        size = 4 if per_thread >= 16 else 2 if per_thread >= 4 else 1
        spt = [1] * rank
        spt[-1], spt[-2] = min(size, shape[-1]), min(size, shape[-2])
        return blocked_encoding(shape, spt, list(range(rank - 1, -1, -1)), self.num_warps, self.threads_per_warp)

    def run(self, module: ModuleOp) -> None:
        set_module_attrs(module, self.num_warps, self.threads_per_warp, self.num_ctas, self.target)
        for f in func_ops(module):  # signatures first: calls may precede their callee
            ins = [self.default_type(t) for t in f.function_type.inputs.data]
            outs = [self.default_type(t) for t in f.function_type.outputs.data]
            f.function_type = FunctionType.from_lists(ins, outs)
            if f.body.blocks:
                for arg, t in zip(f.entry.args, ins):
                    set_type(arg, t)
        for op in list(module.walk()):
            if op is module or op.name.startswith("ttg.") and not _lacks_layout(op):
                continue
            self._results(op)
            self._operands(op, module)

    # -- step 1: the layouts an op's results (and region arguments) get --------------------------
    def _results(self, op: Operation) -> None:
        name = op.name
        src_enc = encoding(op.operands[0].type) if op.operands else None
        for i, res in enumerate(op.results):
            t = res.type
            if not isinstance(t, (TensorType, PointerType)):
                continue
            new = None
            if name == "tt.reduce" and src_enc is not None and isinstance(t, TensorType):
                new = with_encoding(t, SliceEncodingAttr(op.axis.value.data, encoding(op.operands[i].type)))
            elif name in ("tt.scan", "tt.cat") and src_enc is not None:
                new = with_encoding(t, encoding(op.operands[i if name == "tt.scan" else 0].type))
            elif name == "tt.trans" and (enc := permuted_blocked(src_enc, tuple(op.order.get_values()))):
                new = with_encoding(t, enc)
            elif name == "tt.join" and (enc := joined_blocked(src_enc)):
                new = with_encoding(t, enc)
            elif name == "tt.reshape" and src_enc is not None and \
                    (enc := reshaped_blocked(src_enc, op.operands[0].type.get_shape(), t.get_shape())):
                new = with_encoding(t, enc)
            elif name == "tt.gather" and (idx_enc := encoding(op.operands[1].type)) is not None:
                new = with_encoding(t, idx_enc)
            elif name == "scf.for":
                new = op.operands[3 + i].type
            elif name == "tt.dot" and isinstance(t, TensorType):
                new = with_encoding(t, self.dot_result_encoding(t.get_shape()))
            set_type(res, new or self.default_type(t))
        if name == "scf.for":
            for arg, init in zip(op.body.block.args[1:], op.operands[3:]):
                set_type(arg, init.type)
        elif name == "scf.while":
            for arg, init in zip(op.before_region.block.args, op.operands):
                set_type(arg, init.type)
            for arg, res in zip(op.after_region.block.args, op.results):
                set_type(arg, res.type)
        elif name in ("tt.reduce", "tt.scan"):
            pass  # combine regions work on scalars
        else:
            for region in op.regions:
                for block in region.blocks:
                    if op.name != "tt.func":
                        for arg in block.args:
                            set_type(arg, self.default_type(arg.type))

    # -- step 2: converting operands to what the op needs -----------------------------------------
    def _operands(self, op: Operation, module: ModuleOp) -> None:
        name = op.name
        res_t = op.results[0].type if op.results else None
        res_enc = encoding(res_t) if res_t is not None else None
        if name == "tt.expand_dims" and res_enc is not None:
            src = op.operands[0].type
            convert_operand(op, 0, with_encoding(src, SliceEncodingAttr(op.axis.value.data, res_enc)))
        elif name == "tt.broadcast" and res_enc is not None:
            convert_operand(op, 0, with_encoding(op.operands[0].type, res_enc))
        elif name == "tt.dot" and res_enc is not None:
            for i in (0, 1):
                convert_operand(op, i, with_encoding(op.operands[i].type, DotOperandEncodingAttr(i, res_enc)))
            convert_operand(op, 2, res_t)
        elif name == "tt.split" and (enc := split_source_blocked(res_enc)):
            convert_operand(op, 0, with_encoding(op.operands[0].type, enc))
        elif name in ("tt.cat", "tt.join"):
            convert_operand(op, 1, op.operands[0].type)
        elif name == "scf.yield" or name == "scf.condition":
            self._yield(op)
        elif name == "tt.return":
            outs = op.parent_op().function_type.outputs.data
            for i, t in enumerate(outs):
                convert_operand(op, i, t)
        elif name == "tt.call":
            callee = next((f for f in func_ops(module) if f.sym_name.data == op.callee.string_value()), None)
            if callee is not None:
                for i, t in enumerate(callee.function_type.inputs.data):
                    convert_operand(op, i, t)
                for r, t in zip(op.results, callee.function_type.outputs.data):
                    set_type(r, t)
        elif name not in _OWN_RULES:
            self._elementwise(op, res_t)

    @staticmethod
    def _elementwise(op: Operation, res_t: Attribute | None) -> None:
        """Same-shape tensor operands take the layout of the result (or of the first operand for
        ops without results, e.g. ``tt.store``)."""
        ref = res_t if isinstance(res_t, TensorType) else None
        if ref is None:
            ref = next((o.type for o in op.operands if isinstance(o.type, TensorType)), None)
        if ref is None or encoding(ref) is None:
            return
        for i, v in enumerate(op.operands):
            t = v.type
            if isinstance(t, TensorType) and t.get_shape() == ref.get_shape() and encoding(t) != encoding(ref):
                convert_operand(op, i, with_encoding(t, encoding(ref)))

    @staticmethod
    def _yield(op: Operation) -> None:
        parent = op.parent_op()
        if isinstance(parent, scf.WhileOp):
            if isinstance(op, scf.ConditionOp):
                targets = [r.type for r in parent.results]
                for i, t in enumerate(targets):
                    convert_operand(op, i + 1, t)
                return
            targets = [a.type for a in parent.before_region.block.args]
        elif isinstance(parent, (scf.ForOp, scf.IfOp)):
            targets = [r.type for r in parent.results]
        else:
            return
        for i, t in enumerate(targets):
            convert_operand(op, i, t)


def convert_to_ttgir(module: ModuleOp, num_warps: int, threads_per_warp: int, num_ctas: int = 1,
                     target: str | None = None) -> ModuleOp:
    ConvertToTTGIR(num_warps, threads_per_warp, num_ctas, target).run(module)
    return module
