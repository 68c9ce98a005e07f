"""NVIDIA lowerings of the tensor-core and asynchronous-copy ops (reached through
``NVIDIATargetInfo.op_lowering``):

* ``tt.dot`` with an ``nvidia_mma`` v2 result: one ``mma.sync.aligned.m16n8kK`` per 16x8 output tile
  and K step, operands packed from the ``dot_op`` registers (tf32x3: three products of the high and
  low tf32 halves);
* ``ttng.warp_group_dot``: ``wgmma.fence``, one ``wgmma.mma_async.m64nNkK`` per warpgroup tile and K
  step with shared-memory matrix descriptors, ``wgmma.commit_group``; ``ttng.warp_group_dot_wait``:
  ``wgmma.wait_group`` tied to the accumulator registers, so nothing reads them earlier;
* ``ttg.async_copy_global_to_local``: ``cp.async`` (16 bytes ``.cg``, 4/8 bytes ``.ca``) per vector of
  consecutive elements, zero-filled where masked off; ``ttg.async_commit_group`` / ``ttg.async_wait``:
  ``cp.async.commit_group`` / ``cp.async.wait_group``; ``ttng.fence_async_shared``:
  ``fence.proxy.async.shared::cta``.
"""
from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import ModuleOp, TensorType

from tritium.conversion.target_info import intrinsic
from tritium.conversion.ttgir_to_llvm.lowering import FunctionLowering
from tritium.conversion.ttgir_to_llvm.global_memory import access_vector, mask_representatives
from tritium.conversion.ttgir_to_llvm.shared_ops import LinearSharedAccess
from tritium.conversion.ttgir_to_llvm.types import I1, I32, I64, bits_of, const
from tritium.ttir.memory_ops import pointee_value_type

from ..passes.cluster_pairs import CLUSTER_PAIRS
from ..passes.dialect import element_kind
from ..passes.pair_programs import PAIR_PROGRAMS
from ..passes.encodings import NvidiaMmaEncodingAttr
from .tma import LOWERINGS as TMA
from .warp_specialize import LOWERINGS as WS
from .cluster_pairs import LOWERINGS as PAIRS


F32 = ir.FloatType()
_SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}


def _asm(b: ir.IRBuilder, ret: ir.Type, text: str, constraints: str, args: list, side_effect: bool = True):
    return b.asm(ir.FunctionType(ret, [a.type for a in args]), text, constraints, args, side_effect)


def _ptx_kind(t) -> str:
    k = element_kind(t)
    return {"f32": "tf32", "i8": "s8"}.get(k, k)


def _smem_i32(b: ir.IRBuilder, ptr) -> ir.Value:
    return b.ptrtoint(ptr, I32)


def _shared_offset(b: ir.IRBuilder, base, ptr) -> ir.Value | None:
    """The i32 byte offset of shared pointer ``ptr`` from ``base`` where ``ptr`` is a chain of
    byte ``getelementptr`` on it (how buffers and their slots are addressed), else None."""
    parts = []
    while isinstance(ptr, ir.GEPInstr) and ptr is not base and len(ptr.indices) == 1 \
            and getattr(ptr, "source_etype", None) == ir.IntType(8):
        parts.append(ptr.indices[0])
        ptr = ptr.pointer
    if ptr is not base:
        return None
    total = None
    for p in reversed(parts):
        if p.type != I32:
            p = b.trunc(p, I32) if p.type.width > 32 else b.zext(p, I32)
        total = p if total is None else b.add(total, p)
    return const(I32, 0) if total is None else total


# --- fragments ----------------------------------------------------------------------------------
# Offsets (row, column) from the lane's first element of a warp's 16-row tile, per 32-bit register
# of an instruction operand, in the PTX ISA's element order ("Matrix Fragments for mma.m16n8k*" and
# "wgmma.mma_async.m64nNk*"): the layouts place each lane's first element, these say what the
# registers hold around it.
def acc_fragment(n: int, acc_kind: str) -> list[list[tuple[int, int]]]:
    """The accumulator of an ``n``-column instruction (8 for mma.sync, N for wgmma): element ``i``
    sits at row ``8*((i>>1)&1)``, column ``8*(i>>2) + (i&1)``; fp16 packs elements ``2j, 2j+1``
    into register ``j``, the 32-bit kinds hold one each."""
    elems = [(8 * ((i >> 1) & 1), 8 * (i >> 2) + (i & 1)) for i in range(n // 2)]
    per = 2 if acc_kind == "f16" else 1
    return [elems[j:j + per] for j in range(0, len(elems), per)]


def a_fragment(kw: int) -> list[list[tuple[int, int]]]:
    """Operand A (mma.sync, or wgmma's A in registers), ``kw`` elements per register: register
    ``r`` holds row ``8*(r&1)``, columns ``4*kw*(r>>1) + [0, kw)``."""
    return [[(8 * (r & 1), 4 * kw * (r >> 1) + e) for e in range(kw)] for r in range(4)]


def b_fragment(kw: int) -> list[list[tuple[int, int]]]:
    """Operand B of mma.sync: register ``r`` holds rows ``4*kw*r + [0, kw)`` of the lane's column."""
    return [[(4 * kw * r + e, 0) for e in range(kw)] for r in range(2)]


def _pack(b: ir.IRBuilder, vals: list[ir.Value]) -> ir.Value:
    """``vals`` (1, 2 or 4 elements, 32 bits together) as one i32 register."""
    if len(vals) == 1:
        v = vals[0]
        return v if v.type == I32 else b.bitcast(v, I32)
    vt = ir.VectorType(vals[0].type, len(vals))
    acc = ir.Constant(vt, ir.Undefined)
    for i, v in enumerate(vals):
        acc = b.insert_element(acc, v, const(I32, i))
    return b.bitcast(acc, I32)


def _unpack(b: ir.IRBuilder, word: ir.Value, ty: ir.Type, n: int) -> list[ir.Value]:
    """The ``n`` elements of type ``ty`` an i32 register holds (``n == 1``: the register itself)."""
    if n == 1:
        return [word]
    vec = b.bitcast(word, ir.VectorType(ty, n))
    return [b.extract_element(vec, const(I32, i)) for i in range(n)]


def _acc_kind(t) -> str:
    """PTX accumulator type of a dot result: ``f32``, ``f16`` or ``s32``."""
    return {"i32": "s32", "f16": "f16"}.get(element_kind(t), "f32")


def _frag(b: ir.IRBuilder, regs: list, index: dict, origin: tuple, frag, shape) -> list[ir.Value]:
    """The i32 registers of fragment ``frag`` at ``origin`` (leading coordinates, row, column) of
    a tensor of ``shape`` (a row or column past a dimension smaller than the instruction is a
    copy of the one it wraps onto)."""
    *lead, r0, c0 = origin
    m, n = shape[-2:]
    return [_pack(b, [regs[index[(*lead, (r0 + dr) % m, (c0 + dc) % n)]] for dr, dc in reg]) for reg in frag]


def _tf32_split(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(high, low) tf32 parts of fp32 register ``x`` (as i32): x ~ high + low to 2^-22."""
    f = b.bitcast(x, F32)
    hi = _asm(b, I32, "cvt.rna.tf32.f32 $0, $1;", "=r,f", [f], side_effect=False)
    rest = b.fsub(f, b.bitcast(hi, F32))
    lo = _asm(b, I32, "cvt.rna.tf32.f32 $0, $1;", "=r,f", [rest], side_effect=False)
    return hi, lo


# --- mma.sync (version 2) ---------------------------------------------------------------------
def lower_mma_v2(fl: FunctionLowering, op) -> None:
    b = fl.builder
    a_t, b_t, c_t = op.a.type, op.b.type, op.c.type
    enc: NvidiaMmaEncodingAttr = c_t.encoding
    shape = c_t.get_shape()
    *batch, m, n = shape
    wb, wm, wn = (1,) * (3 - len(enc.warps_per_cta)) + enc.warps_per_cta
    k = a_t.get_shape()[-1]
    kind = _ptx_kind(a_t)
    kw = a_t.encoding.k_width
    instr_k = 8 * kw
    acc_kind = _acc_kind(c_t)
    la, lb, lc = fl.layout(a_t), fl.layout(b_t), fl.layout(c_t)
    a_regs, b_regs = fl.get(op.a), fl.get(op.b)
    acc = list(fl.get(op.c))
    split = op.input_precision == "tf32x3"
    c_frag = acc_fragment(8, acc_kind)
    a_cache: dict = {}
    b_cache: dict = {}

    def a_frag(lead, m0, k0):
        key = (*lead, m0, k0)
        if key not in a_cache:
            a_cache[key] = _frag(b, a_regs, la.reg_index, key, a_fragment(kw), a_t.get_shape())
        return a_cache[key]

    def b_frag(lead, k0, n0):
        key = (*lead, k0, n0)
        if key not in b_cache:
            b_cache[key] = _frag(b, b_regs, lb.reg_index, key, b_fragment(kw), b_t.get_shape())
        return b_cache[key]

    # int8 saturates on overflow, as Triton's mma.sync does
    sat = ".satfinite" if acc_kind == "s32" else ""
    n_c = len(c_frag)
    d_ops = ", ".join(f"${i}" for i in range(n_c))
    a_ops = ", ".join(f"${n_c + i}" for i in range(4))
    b_ops = ", ".join(f"${n_c + 4 + i}" for i in range(2))
    c_ops = ", ".join(f"${n_c + 6 + i}" for i in range(n_c))
    text = (f"mma.sync.aligned.m16n8k{instr_k}.row.col{sat}.{acc_kind}.{kind}.{kind}.{acc_kind} "
            f"{{{d_ops}}}, {{{a_ops}}}, {{{b_ops}}}, {{{c_ops}}};")
    out_c, in_c = ("=f", "f") if acc_kind == "f32" else ("=r", "r")
    cons = ",".join([out_c] * n_c + ["r"] * 6 + [in_c] * n_c)
    reg_ty = F32 if acc_kind == "f32" else I32
    ret = ir.LiteralStructType([reg_ty] * n_c)
    elem_ty = acc[0].type

    def mma(d_idx, af, bf):
        c_in = [_pack(b, [acc[i] for i in reg]) if acc_kind != "f32" else acc[reg[0]] for reg in d_idx]
        r = _asm(b, ret, text, cons, af + bf + c_in, side_effect=False)
        for j, reg in enumerate(d_idx):
            for i, v in zip(reg, _unpack(b, b.extract_value(r, j), elem_ty, len(reg))):
                acc[i] = v

    for lead in _batch_origins(batch, wb):
        for m0 in range(0, m, 16 * wm):
            for n0 in range(0, n, 8 * wn):
                # an accumulator smaller than the instruction: the rows and columns past it are
                # copies (computed from copied operand rows and columns), written to the same registers
                d_idx = [[lc.reg_index[(*lead, (m0 + dr) % m, (n0 + dc) % n)] for dr, dc in reg] for reg in c_frag]
                for k0 in range(0, k, instr_k):
                    af, bf = a_frag(lead, m0, k0), b_frag(lead, k0, n0)
                    if not split:
                        mma(d_idx, af, bf)
                        continue
                    a_hi, a_lo = zip(*[_tf32_split(b, x) for x in af])
                    b_hi, b_lo = zip(*[_tf32_split(b, x) for x in bf])
                    mma(d_idx, list(a_lo), list(b_hi))
                    mma(d_idx, list(a_hi), list(b_lo))
                    mma(d_idx, list(a_hi), list(b_hi))
    fl.set(op.results[0], acc)


def _batch_origins(batch: list[int], warps: int) -> list[tuple[int, ...]]:
    """Leading coordinates of the 2-D tiles one thread computes: none for a 2-D dot, else every
    ``warps``-th batch index (its warp adds its own index to them)."""
    if not batch:
        return [()]
    return [(i,) for i in range(0, batch[0], warps)]


# --- wgmma (version 3) ------------------------------------------------------------------------
def _bits_sum(b: ir.IRBuilder, x: ir.Value, nbits: int, value_of_bit) -> ir.Value:
    """``sum(bit_i(x) * value_of_bit(i))`` for the low ``nbits`` bits of i32 ``x``."""
    acc = const(I32, 0)
    for i in range(nbits):
        v = value_of_bit(i)
        if v:
            bit = b.and_(b.lshr(x, const(I32, i)), const(I32, 1))
            acc = b.add(acc, b.mul(bit, const(I32, v)))
    return acc


def _descriptor_base(enc, shape) -> int:
    lbo, sbo = enc.descriptor_strides(shape)
    return ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 | _SWIZZLE_MODE[enc.swizzle_bytes] << 62


#: a CTA's own shared window: its addresses below this bound (a cluster's CTAs differ above it)
_WINDOW = 1 << 18


def _runs_in_clusters(op) -> bool:
    """Whether ``op``'s kernel may run as CTAs of clusters: it shares copies between the two CTAs
    of a pair (``cluster_pairs``) or the driver may launch its programs in pairs
    (``pair_programs``)."""
    while op is not None and not isinstance(op, ModuleOp):
        op = op.parent_op()
    return op is not None and (CLUSTER_PAIRS in op.attributes or PAIR_PROGRAMS in op.attributes)


def lower_warp_group_dot(fl: FunctionLowering, op) -> None:
    b = fl.builder
    a_t, b_t, c_t = op.a.type, op.b.type, op.c.type
    enc: NvidiaMmaEncodingAttr = c_t.encoding
    wm, wn = enc.warps_per_cta
    m, n = c_t.get_shape()
    k = a_t.get_shape()[-1]
    inst_n, inst_k = enc.instr_n, enc.instr_shape[2]
    kind = _ptx_kind(a_t)
    acc_kind = _acc_kind(c_t)
    ea, eb = getattr(a_t, "encoding", None), b_t.encoding
    lc = fl.layout(c_t)
    acc = list(fl.get(op.c))
    a_in_regs = isinstance(a_t, TensorType)
    if a_in_regs:
        la, a_regs = fl.layout(a_t), fl.get(op.a)
        a_frag = a_fragment(ea.k_width or 2)

    def log2(x):
        return x.bit_length() - 1

    warp = fl.warp_uniform  # the descriptors then stay in uniform registers
    m_wg = b.udiv(b.urem(warp, const(I32, wm)), const(I32, 4))
    n_w = b.udiv(warp, const(I32, wm))

    # in a kernel launched in clusters the descriptors count from the CTA's own shared window
    window = (b.lshr(b.and_(_smem_i32(b, fl.smem), const(I32, _WINDOW - 1)), const(I32, 4))
              if _runs_in_clusters(op) else None)

    def desc0(enc, t, addr, offset):
        """The descriptor of the warp's first tile; the others add their offset to it.  The
        14-bit address field takes bits 4-17 of the tile's shared address.  In a kernel whose
        CTAs may run in clusters (``cluster_pairs``, ``pair_programs``) it counts from the CTA's
        own window: the tile's ``offset`` from the function's shared base plus the base's bits
        below 256 KiB.  Above them a CTA's address carries its place in the cluster's window
        (the base is ``0x1000400`` in a pair's second CTA, ``0x400`` in the first and outside
        clusters); unmasked, that landed in the leading byte offset, and a B tile of several
        column blocks was read from the wrong place.  The shifted window bits and the
        descriptor's constant fields are one loop-invariant word, so the loop has no mask (the
        address masked in the loop, Triton's form, or ``address - base + window`` cost the
        128x128x64 4-warp loop 4-7% on the H200: ptxas moved wgmma after the address
        arithmetic; this form moves them too there, which is why kernels outside clusters keep
        the plain address).  A CTA's own offsets stay below 256 KiB, so the per-step offsets
        (multiples of 16 bytes) add to the field without a carry: the K steps are 64-bit adds
        of constants, which ptxas keeps in uniform registers (``UIADD3.64``, two descriptors
        alternating, as in Triton's loop)."""
        d = _descriptor_base(enc, t.shape)
        if window is None:
            low = b.add(b.lshr(addr, const(I32, 4)), const(I32, d & 0xFFFFFFFF))
        else:
            if offset is None:
                offset = b.sub(addr, _smem_i32(b, fl.smem))
            low = b.add(b.lshr(offset, const(I32, 4)), b.add(window, const(I32, d & 0xFFFFFFFF)))
        return b.or_(b.zext(low, I64), const(I64, (d >> 32) << 32))

    def warp_tile(operand, part):
        """(address, offset from the function's shared base or None) of this warp's first tile;
        the offset only where the descriptors count from the window."""
        ptr = fl.get(operand)
        offset = _shared_offset(b, fl.smem, ptr) if window is not None else None
        return (b.add(_smem_i32(b, ptr), part),
                b.add(offset, part) if offset is not None else None)

    if not a_in_regs:
        a_desc = desc0(ea, a_t, *warp_tile(op.a, _bits_sum(
            b, m_wg, log2(wm // 4), lambda i: ea.plain_byte_offset((64 << i, 0), a_t.shape))))
    b_desc = desc0(eb, b_t, *warp_tile(op.b, _bits_sum(
        b, n_w, log2(wn), lambda i: eb.plain_byte_offset((0, inst_n << i), b_t.shape))))

    def desc(base, off):
        return b.add(base, const(I64, off >> 4)) if off else base

    c_frag = acc_fragment(inst_n, acc_kind)
    n_acc = len(c_frag)
    trans_b = int(not eb.transposed)      # B stored N-contiguous
    if kind in ("f16", "bf16"):
        tail = f"p, 1, 1, {trans_b}" if a_in_regs else f"p, 1, 1, {int(ea.transposed)}, {trans_b}"
    elif kind == "s8":
        tail = "p"
    else:
        tail = "p, 1, 1"
    n_k = k // inst_k
    n_a = 4 if a_in_regs else 1
    out_c = "=f" if acc_kind == "f32" else "=r"
    reg_ty = F32 if acc_kind == "f32" else I32
    ret = ir.LiteralStructType([reg_ty] * n_acc)

    def wgmma_asm(steps: int) -> tuple[str, str]:
        """One asm holding ``steps`` K steps of one output tile: the accumulators are tied once."""
        regs = ", ".join(f"${i}" for i in range(n_acc))
        first_in = 2 * n_acc  # operands count the outputs, then every input (the tied accumulators too)
        # the first step scales the incoming accumulator by ``use_c`` (0: D = A*B, the inputs unread)
        use_c = f"${first_in + steps * (n_a + 1)}"
        lines = ["{", ".reg .pred p, q;", f"setp.ne.b32 p, {use_c}, 0;", f"setp.eq.b32 q, {use_c}, {use_c};"]
        for s_ in range(steps):
            a0 = first_in + s_ * (n_a + 1)
            a_text = "{" + ", ".join(f"${a0 + i}" for i in range(4)) + "}" if a_in_regs else f"${a0}"
            lines.append(f"wgmma.mma_async.sync.aligned.m64n{inst_n}k{inst_k}.{acc_kind}.{kind}.{kind} "
                         f"{{{regs}}}, {a_text}, ${a0 + n_a}, {tail.replace('p', 'p' if s_ == 0 else 'q', 1)};")
        step_cons = (["r"] * 4 if a_in_regs else ["l"]) + ["l"]
        return "\n".join(lines + ["}"]), ",".join([out_c] * n_acc + [str(i) for i in range(n_acc)]
                                                   + step_cons * steps + ["r"])

    # fp8 into fp32 with a bounded imprecise accumulation: each chunk of at most
    # ``maxNumImpreciseAcc`` products starts from zero, and is waited for and added in fp32
    partial, chunk = op.needs_partial_accumulator(), n_k
    if partial:
        chunk = max(1, min(n_k, -(-op.max_num_imprecise_acc // inst_k)))
    zero_c = _is_zero_constant(op.c)
    _asm(b, ir.VoidType(), "wgmma.fence.sync.aligned;", "", [])
    for mr in range(0, m, 16 * wm):
        for nr in range(0, n, inst_n * wn):
            d_idx = [[lc.reg_index[(mr + dr, nr + dc)] for dr, dc in reg] for reg in c_frag]
            steps = []
            for k0 in range(0, k, inst_k):
                steps.append((_frag(b, a_regs, la.reg_index, (mr, k0), a_frag, a_t.get_shape()) if a_in_regs else [
                    desc(a_desc, ea.plain_byte_offset((mr, k0), a_t.shape))])
                    + [desc(b_desc, eb.plain_byte_offset((k0, nr), b_t.shape))])
            undef = [ir.Constant(reg_ty, ir.Undefined)] * n_acc
            have_c = not zero_c
            for s0 in range(0, n_k, chunk):
                text, cons = wgmma_asm(min(chunk, n_k - s0))
                operands = [x for st in steps[s0:s0 + chunk] for x in st]
                if not partial:
                    acc_in = [_pack(b, [acc[i] for i in reg]) for reg in d_idx] if have_c else undef
                    r = _asm(b, ret, text, cons, acc_in + operands + [const(I32, int(have_c))])
                    for j, reg in enumerate(d_idx):
                        for i, v in zip(reg, _unpack(b, b.extract_value(r, j), acc[0].type, len(reg))):
                            acc[i] = v
                    have_c = True
                    continue
                # fp32 accumulators: one element per register
                if have_c or s0:  # registers the fp32 additions touched may be the next chunk's
                    _asm(b, ir.VoidType(), "wgmma.fence.sync.aligned;", "", [])
                r = _asm(b, ret, text, cons, undef + operands + [const(I32, 0)])
                _asm(b, ir.VoidType(), "wgmma.commit_group.sync.aligned;", "", [])
                part = _wait_regs(b, [b.extract_value(r, j) for j in range(n_acc)], 0)
                for j, (i,) in enumerate(d_idx):
                    acc[i] = b.fadd(acc[i], part[j]) if have_c else part[j]
                have_c = True
    _asm(b, ir.VoidType(), "wgmma.commit_group.sync.aligned;", "", [])
    fl.set(op.results[0], acc)


def _is_zero_constant(v) -> bool:
    """An accumulator that is a splat of zero (a fresh ``tl.zeros``): wgmma need not read it."""
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
    owner = v.owner
    if getattr(owner, "name", None) != "arith.constant":
        return False
    val = owner.value
    return isinstance(val, DenseIntOrFPElementsAttr) and all(x == 0 for x in val.get_values())


def _wait_regs(b: ir.IRBuilder, regs: list, pend: int) -> list:
    """``wgmma.wait_group pend`` tied to ``regs``: nothing reads them before it."""
    ints = [r.type == I32 for r in regs]
    cons = ",".join(["=r" if i else "=f" for i in ints] + [str(i) for i in range(len(regs))])
    r = _asm(b, ir.LiteralStructType([x.type for x in regs]), f"wgmma.wait_group.sync.aligned {pend};", cons, regs)
    return [b.extract_value(r, i) for i in range(len(regs))]


def lower_warp_group_dot_wait(fl: FunctionLowering, op) -> None:
    b = fl.builder
    pend = op.pendings.value.data
    if pend:
        # dots left in flight feed only later wgmmas, which the volatile asm keeps in order (and
        # ptxas tracks wgmma registers itself): no need to tie every accumulator register here
        _asm(b, ir.VoidType(), f"wgmma.wait_group.sync.aligned {pend};", "", [])
        for v, res in zip(op.inputs, op.outputs):
            fl.set(res, fl.get(v))
        return
    # one wait tied to the registers of every input
    groups, words = [], []
    for v in op.inputs:
        regs = list(fl.get(v)) if isinstance(v.type, TensorType) else [fl.get(v)]
        # the wgmma's own registers: fp16 accumulators hold a column pair (consecutive layout
        # registers) in each
        per = 2 if regs[0].type == ir.HalfType() else 1
        mine = [_pack(b, regs[i:i + per]) if per > 1 else regs[i] for i in range(0, len(regs), per)]
        groups.append((regs[0].type, per, len(words), len(mine)))
        words += mine
    cons = ",".join(["=f" if w.type == F32 else "=r" for w in words] + [str(i) for i in range(len(words))])
    r = _asm(b, ir.LiteralStructType([w.type for w in words]), f"wgmma.wait_group.sync.aligned {pend};",
             cons, words)
    for v, res, (ty, per, first, n) in zip(op.inputs, op.outputs, groups):
        out = [x for i in range(first, first + n) for x in _unpack(b, b.extract_value(r, i), ty, per)]
        fl.set(res, out if isinstance(v.type, TensorType) else out[0])


def lower_fence_async_shared(fl: FunctionLowering, op) -> None:
    _asm(fl.builder, ir.VoidType(), "fence.proxy.async.shared::cta;", "", [])


# --- cp.async ----------------------------------------------------------------------------------
def lower_async_copy(fl: FunctionLowering, op) -> None:
    b = fl.builder
    src_t, dst_t = op.src.type, op.result.type
    value_t = pointee_value_type(src_t)
    ety = fl.ty(value_t)
    if ety == I1 or isinstance(ety, ir.PointerType):
        raise NotImplementedError(f"cp.async of {value_t.element_type} elements")  # never pipelined
    ebytes = max(bits_of(ety) // 8, 1)
    ptrs = fl.get(op.src)
    mask = fl.get(op.mask) if op.mask is not None else None
    vec = access_vector(fl, op.src, op.mask, bits_of(ety))
    shape = dst_t.shape
    enc = dst_t.encoding
    info = fl.layout(src_t)
    if hasattr(enc, "offset_bases"):
        place = LinearSharedAccess(fl, value_t, enc, shape)
    elif hasattr(enc, "byte_bases") and enc.is_linear(shape):  # a stream load's plain slots
        place = LinearSharedAccess(fl, value_t, None, shape, bases=enc.byte_bases(shape, ebytes))
    else:
        raise NotImplementedError(f"cp.async into a {enc} buffer")
    vec = min(vec, place.vec)  # consecutive in global memory and in the buffer
    base = _smem_i32(b, fl.get(op.result))
    thread_base = b.add(base, place.thread_offset)
    owner = fl.dedup_pred(src_t)
    nbytes = vec * ebytes
    # registers in one constancy block of the mask share its compare (as Triton's copies do)
    same_mask = mask_representatives(fl, op.mask, info) if mask is not None else None
    narrow = False
    # One base per slot and per distinct swizzle constant, the rest of a register's offset an
    # immediate of the copy: the register offset's bits the thread part can also set are XORed in
    # (once per distinct value, shared by every register that has it), the others are added.
    # The copies are issued grouped by that base (in order of first appearance, register order
    # within a group), as Triton's are: the tutorial matmul's 64x256x32 fp16/bf16 tile, whose B
    # copies use two bases (shared offsets 0, 0x400, 0x800, 0xc00 then 0x200, 0x600, ...), ran 2-5%
    # faster so than with the two alternating (H200; the list's other tiles within 0.5%,
    # docs/performance.md).
    swizzled = {0: thread_base}
    copies = []
    for r0 in range(0, len(ptrs), vec):
        if r0 & info.free["register"]:
            continue
        copies.append((r0, *place.split(place.byte_offset(info.reg_offsets[r0]))))
    group: dict = {}
    for _, swz, _ in copies:
        group.setdefault(swz, len(group))
    copies.sort(key=lambda c: group[c[1]])  # stable: register order within a group
    for r0, swz, imm in copies:
        if swz not in swizzled:
            swizzled[swz] = b.add(base, place.combine(b, swz))
        dst = b.add(swizzled[swz], const(I32, imm)) if imm else swizzled[swz]
        pred = mask[same_mask[r0]] if mask is not None else None
        if nbytes >= 4:
            size = const(I32, nbytes) if pred is None else b.select(pred, const(I32, nbytes), const(I32, 0))
            cache = "cg" if nbytes == 16 else "ca"
            guard = ""
            args = [dst, ptrs[r0], size]
            cons = "r,l,r"
            if owner is not None:
                guard = "@$3 "
                args.append(owner)
                cons += ",b"
            _asm(b, ir.VoidType(), f"{guard}cp.async.{cache}.shared.global [ $0 + 0 ], [ $1 + 0 ], {nbytes}, $2;",
                 cons, args)
        else:  # narrower than cp.async's 4 bytes: an ordinary load and shared store
            narrow = True
            word = ir.IntType(nbytes * 8)
            w = fl.target.global_load(b, ptrs[r0], nbytes * 8, 1, pred, [const(word, 0)] if pred is not None
                                      else None, "none", "evict_normal", False)[0]
            p = b.inttoptr(dst, ir.PointerType(addrspace=fl.target.shared_address_space))
            if owner is None:
                b.store(w, p)
            else:
                with b.if_then(owner):
                    b.store(w, p)
    if narrow and fl.target.capability >= 90:
        # the pipelined wgmma reading this slot gets no fence of its own (cp.async needs none):
        # order these generic-proxy stores before the tensor cores' async-proxy reads here
        _asm(b, ir.VoidType(), "fence.proxy.async.shared::cta;", "", [])
    fl.set(op.token, const(I32, 0))


def lower_commit(fl: FunctionLowering, op) -> None:
    intrinsic(fl.builder, "llvm.nvvm.cp.async.commit.group", ir.VoidType(), [])
    fl.set(op.results[0], const(I32, 0))


def lower_async_wait(fl: FunctionLowering, op) -> None:
    # NVVM's intrinsics (as Triton 3.6 emits them: ``cp.async.wait_group \t2;`` in the PTX); the
    # tokens the op names are ordering only, the count is what the hardware waits on
    intrinsic(fl.builder, "llvm.nvvm.cp.async.wait.group", ir.VoidType(), [const(I32, op.num.value.data)])
    fl.set(op.results[0], const(I32, 0))


LOWERINGS = {
    "ttng.warp_group_dot": lower_warp_group_dot,
    "ttng.warp_group_dot_wait": lower_warp_group_dot_wait,
    "ttng.fence_async_shared": lower_fence_async_shared,
    "ttg.async_copy_global_to_local": lower_async_copy,
    "ttg.async_commit_group": lower_commit,
    "ttg.async_wait": lower_async_wait,
}


def op_lowering(op):
    if op.name == "tt.dot":
        enc = getattr(op.results[0].type, "encoding", None)
        return lower_mma_v2 if isinstance(enc, NvidiaMmaEncodingAttr) else None
    return TMA.get(op.name) or WS.get(op.name) or PAIRS.get(op.name) or LOWERINGS.get(op.name)


__all__ = ["op_lowering"]
