"""AMD's answers to :class:`tritium.conversion.target_info.TargetInfo`: ``llvm.amdgcn`` work-item
and workgroup ids, ``ds_swizzle`` / ``ds_bpermute`` cross-lane moves over the whole wavefront (32 or
64 lanes: the warp size comes from the target), ``s_barrier`` fenced at workgroup scope, LDS in
address space 3, predicated global loads and stores as branches around vector accesses, LLVM
atomics, the ``amdgpu_kernel`` calling convention.

Everything here is plain LLVM IR that LLVM's AMDGPU backend selects.  Device-library calls
(libdevice names, fp64 transcendental math) become calls of ocml's functions, recorded in
``externs``; the ``llir`` stage links ROCm's bitcode for them, or the plain-IR fallback
(``device_libs``), so compilation works on any machine."""
from __future__ import annotations

import llvmlite.ir as ir

from tritium.conversion.target_info import I16, I32, I64, TargetInfo, guarded, intrinsic
from tritium.frontend.errors import error_at_op

from ..options import ARCHS
from ..passes.accelerate_matmul import instr_of
from ..passes.shared_layout import operand_shared_encoding
from ..toolchain.binary import TRIPLE, data_layout
from . import math_lib
from .device_libs import resolve
from .dot_matrix import lower_matrix_dot


F32, F64 = ir.FloatType(), ir.DoubleType()
_CONST = 4  # the constant address space (the dispatch packet lives there)

# ds_swizzle's "bit mode" offset: lanes exchange within groups of 32, new lane =
# ((lane & and_mask) | or_mask) ^ xor_mask over the low 5 bits (bit 15 clear selects this mode).
_SWIZZLE_AND_ALL = 0x1F

# DPP controls of exact lane-xor moves, applied in order: quad_perm [1, 0, 3, 2] / [2, 3, 0, 1]
# (xor 1, 2); on gfx9 xor 4 is row_half_mirror (7 - i) then quad_perm [3, 2, 1, 0] (3 - i), xor 8
# row_mirror (15 - i) then row_half_mirror; gfx10+ has row_xmask:n (xor n within a row of 16)
_DPP_XOR_GFX9 = {1: (0xB1,), 2: (0x4E,), 4: (0x141, 0x1B), 8: (0x140, 0x141)}
_DPP_XOR_GFX11 = {1: (0xB1,), 2: (0x4E,), 4: (0x164,), 8: (0x168,)}

_RMW = {"add": "add", "and": "and", "or": "or", "xor": "xor", "exch": "xchg", "xchg": "xchg",
        "max": "max", "min": "min", "umax": "umax", "umin": "umin"}
_RMW_FLOAT = {"fadd": "fadd", "add": "fadd", "max": "fmax", "min": "fmin", "exch": "xchg", "xchg": "xchg"}


def _refuse(message: str):
    def lower(fl, op):
        raise error_at_op(op, message)
    return lower


#: targets whose firmware can preload kernel arguments into SGPRs (LLVM's ``inreg`` kernel
#: arguments; the code object keeps a prologue that loads them where it does not)
_KERNARG_PRELOAD = ("gfx942",)


def _pack(b, words: list, wty) -> ir.Value:
    """One access's words as the value it moves: the word itself, or a vector of them."""
    if len(words) == 1:
        return words[0]
    v = ir.Constant(ir.VectorType(wty, len(words)), ir.Undefined)
    for i, w in enumerate(words):
        v = b.insert_element(v, w, ir.Constant(I32, i))
    return v


def _unpack(b, v: ir.Value, n: int) -> list:
    """The ``n`` words of a loaded value (:func:`_pack`'s inverse)."""
    return [v] if n == 1 else [b.extract_element(v, ir.Constant(I32, i)) for i in range(n)]


class AMDTargetInfo(TargetInfo):
    """One ``gfx`` target.  ``shared_bytes`` is the allocation pass's LDS figure for the module:
    the LDS array is given exactly that static size, so the code object's
    ``group_segment_fixed_size`` states it and launches need no dynamic LDS."""

    triple = TRIPLE
    shared_address_space = 3
    backend_name = "amd"
    # conversions inside a wavefront by lane exchanges (DPP, permlanex16, ds_swizzle): attention's
    # P from a transposed WMMA accumulator into the A operand swaps the wavefront's halves in
    # registers, as Triton's does, instead of a round trip through LDS
    warp_exchange = True

    def __init__(self, arch: str = "gfx942", shared_bytes: int = 0, waves_per_eu: int = 0,
                 sched_strategy: str | None = None, flush_denorm: bool = False,
                 barrier_bounds_schedule: bool = False):
        if arch not in ARCHS:
            raise ValueError(f"unknown AMD architecture {arch!r}: expected one of {', '.join(ARCHS)}")
        self.arch = ARCHS[arch]
        self.shared_bytes = int(shared_bytes)
        self.waves_per_eu = waves_per_eu
        #: LLVM's machine-scheduler strategy for the kernel (``amdgpu-sched-strategy``), None for
        #: its default (``compiler.sched_strategy`` chooses)
        self.sched_strategy = sched_strategy
        #: fp32 denormals flushed (the ``allow_flush_denorm`` option)
        self.flush_denorm = bool(flush_denorm)
        #: each workgroup barrier also bounds LLVM's scheduling regions (``compiler.barrier_bounds_schedule``)
        self.barrier_bounds_schedule = bool(barrier_bounds_schedule)
        # CDNA: LLVM pairs two ds_write_b64 of one base register into ds_write2st64_b64 only when
        # no other LDS write sits between them, and the compares of a mask constant over a
        # thread's registers (the K bound over the rows of B it loads) are made once.  RDNA3's
        # tiles are written 16 bytes at a time (nothing to pair), and there, where the dot kernels
        # spill, both choices moved the spill code more than they saved (bench/amd_vs_triton.py)
        cdna = self.arch.family.startswith("cdna")
        self.shared_writes_by_base = cdna
        self.masks_by_constancy = cdna
        self.data_layout = data_layout()
        # inline assembly operands: VGPRs, AGPRs (CDNA only), immediates; a per-lane value in an
        # SGPR (s, r) or a foreign letter would stop LLVM's whole process
        self.inline_asm_constraints = frozenset("vin" if self.arch.family == "rdna3" else "vain")
        #: device-library functions the kernel calls, with their types (for ``device_libs.link``)
        self.externs: dict[str, ir.FunctionType] = {}

    def bf16_to_f32(self, b, x):
        # the bits shifted into the high half: what the hardware does (gfx9/gfx11 have no bf16
        # conversion instruction), and LLVM's own legalisation of a large block of fpext bfloat
        # takes minutes where this takes seconds
        bits = b.zext(b.bitcast(x, I16), I32)
        return b.bitcast(b.shl(bits, ir.Constant(I32, 16)), ir.FloatType())

    @property
    def warp_size(self) -> int:
        return self.arch.warp_size

    # --- ids ---------------------------------------------------------------------------------
    def thread_id(self, b):
        return intrinsic(b, "llvm.amdgcn.workitem.id.x", I32, [])

    def program_id(self, b, axis):
        return intrinsic(b, f"llvm.amdgcn.workgroup.id.{'xyz'[axis]}", I32, [])

    def num_programs(self, b, axis):
        # The HSA dispatch packet holds the grid in work-items (u32 at byte 12 + 4 * axis) and the
        # workgroup size (u16 at byte 4 + 2 * axis); launches always cover whole workgroups.
        packet = intrinsic(b, "llvm.amdgcn.dispatch.ptr", ir.PointerType(addrspace=_CONST), [])
        grid = b.load(b.gep(packet, [ir.Constant(I64, 12 + 4 * axis)], source_etype=ir.IntType(8)), typ=I32)
        group = b.load(b.gep(packet, [ir.Constant(I64, 4 + 2 * axis)], source_etype=ir.IntType(8)), typ=I16)
        return b.udiv(grid, b.zext(group, I32))

    def lane_id(self, b, tid):
        return b.and_(tid, ir.Constant(I32, self.warp_size - 1))

    def warp_id(self, b, tid):
        # read from the first lane: every lane of a wavefront has the same one, and LLVM then keeps
        # it (and what depends on it alone, such as the mask of a tile row a wavefront owns) in
        # scalar registers
        w = b.lshr(tid, ir.Constant(I32, self.warp_size.bit_length() - 1))
        return intrinsic(b, "llvm.amdgcn.readfirstlane.i32", I32, [w])

    # --- cross-lane data movement ------------------------------------------------------------
    def _as_i32(self, b, value):
        return value if value.type == I32 else b.bitcast(value, I32)

    def _back(self, b, r, ty):
        return r if ty == I32 else b.bitcast(r, ty)

    def shuffle_xor(self, b, value, mask):
        v = self._as_i32(b, value)
        dpp = (_DPP_XOR_GFX11 if self.arch.family == "rdna3" else _DPP_XOR_GFX9).get(mask)
        if dpp is not None:
            # DPP moves: VALU operand modifiers, so no LDS counter to wait on (ds_swizzle is an LDS
            # instruction, and each use of its result waits for lgkmcnt)
            r = v
            for ctrl in dpp:
                r = intrinsic(b, "llvm.amdgcn.update.dpp.i32", I32,
                              [ir.Constant(I32, ir.Undefined), r, ir.Constant(I32, ctrl), ir.Constant(I32, 0xF),
                               ir.Constant(I32, 0xF), ir.Constant(ir.IntType(1), 1)])
        elif mask == 16 and self.arch.family == "rdna3":
            # the other half of a 32-lane wavefront: v_permlanex16 with the identity selects
            # (lane i reads lane i of the other half), a VALU move like DPP
            r = intrinsic(b, "llvm.amdgcn.permlanex16.i32", I32,
                          [ir.Constant(I32, ir.Undefined), v, ir.Constant(I32, 0x76543210),
                           ir.Constant(I32, 0xFEDCBA98 - (1 << 32)), ir.Constant(ir.IntType(1), 1),
                           ir.Constant(ir.IntType(1), 0)])
        elif mask < 32:
            # within each group of 32 lanes: one ds_swizzle, no address computation
            r = intrinsic(b, "llvm.amdgcn.ds.swizzle", I32, [v, ir.Constant(I32, (mask << 10) | _SWIZZLE_AND_ALL)])
        else:
            # across the two halves of a 64-lane wavefront: ds_bpermute (byte address = 4 * lane)
            lane = self.lane_id(b, self.thread_id(b))
            src = b.xor(lane, ir.Constant(I32, mask))
            r = intrinsic(b, "llvm.amdgcn.ds.bpermute", I32, [b.shl(src, ir.Constant(I32, 2)), v])
        return self._back(b, r, value.type)

    def shuffle_idx(self, b, value, lane):
        v = self._as_i32(b, value)
        r = intrinsic(b, "llvm.amdgcn.ds.bpermute", I32, [b.shl(lane, ir.Constant(I32, 2)), v])
        return self._back(b, r, value.type)

    def barrier(self, b):
        # s_barrier only synchronises execution; the fences order the LDS accesses around it.
        b.fence("release", "workgroup")
        intrinsic(b, "llvm.amdgcn.s.barrier", ir.VoidType(), [])
        b.fence("acquire", "workgroup")
        if self.barrier_bounds_schedule:
            # sched_barrier with mask 0: no instruction is scheduled across it
            intrinsic(b, "llvm.amdgcn.sched.barrier", ir.VoidType(), [ir.Constant(I32, 0)])

    # --- memory -------------------------------------------------------------------------------
    def shared_base(self, module):
        g = module.globals.get("global_smem")
        if g is None:
            size = max(self.shared_bytes, 0)
            g = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(8), size), "global_smem", addrspace=3)
            g.type = ir.PointerType(addrspace=3)  # opaque pointers throughout
            if size:
                g.linkage = "internal"
                g.initializer = ir.Constant(g.value_type, ir.Undefined)
            else:
                g.linkage = "external"
            g.align = 16
        return g

    def global_load(self, b, ptr, word_bits, n_words, pred, other, cache, evict, volatile):
        wty = ir.IntType(word_bits)
        vty = wty if n_words == 1 else ir.VectorType(wty, n_words)
        align = word_bits // 8 * n_words

        def load():
            if volatile:
                # a relaxed atomic load per word: never cached or merged (spin-waits see other
                # workgroups' stores)
                return [b.load_atomic(b.gep(ptr, [ir.Constant(I32, i)], source_etype=wty), "monotonic",
                                      word_bits // 8, typ=wty) for i in range(n_words)]
            return _unpack(b, b.load(ptr, typ=vty, align=align), n_words)

        undef = [ir.Constant(wty, ir.Undefined)] * n_words
        return guarded(b, pred, load, other if other is not None else undef, likely=True)

    # --- buffer accesses --------------------------------------------------------------------------
    #: bytes a buffer resource covers (Triton's figure): a valid access ends below it, and a lane
    #: that is masked off gets an offset past it, which the hardware answers with zeros (loads) or
    #: drops (stores), so no branch guards it
    _BUFFER_BYTES = 0x7FFFFFFE

    # CDNA and RDNA3 alike.  On RDNA3 the softmax's eight divisions and stores then share one
    # branch-free block that LLVM interleaves into 59 VGPRs (Triton 3.6: 46; branch-guarded global
    # accesses: 22), but gfx1100 holds its 16 wavefronts a SIMD up to 96 VGPRs, so none is lost,
    # and the main loop drops from 381 instructions (a branch around each access) to 290 (Triton
    # 350; docs/amd.md)
    buffer_offset_limit = _BUFFER_BYTES
    _OUT_OF_RANGE = 0x80000000

    def _resource(self, b, base):
        # dword 3: a 32-bit float format (ignored by raw accesses, must be nonzero); RDNA also sets
        # its reserved bit and out-of-range checking against the offset (OOB_SELECT = 3)
        flags = (7 << 12) | (4 << 15)
        if self.arch.family.startswith("rdna"):
            flags |= (1 << 24) | (3 << 28)
        return intrinsic(b, "llvm.amdgcn.make.buffer.rsrc.p8.p1", ir.PointerType(addrspace=8),
                         [base, ir.Constant(I16, 0), ir.Constant(I64, self._BUFFER_BYTES),
                          ir.Constant(I32, flags)])

    @staticmethod
    def _buffer_type(word_bits, n_words):
        """The type a buffer access of these words moves: i8, i16, i32 or <k x i32>."""
        total = word_bits * n_words
        if total <= 32:
            return ir.IntType(total)
        return ir.VectorType(I32, total // 32)

    def _masked_offset(self, b, byte_offset, pred):
        if pred is None or (isinstance(pred, ir.Constant) and pred.constant == 1):
            return byte_offset
        return b.select(pred, byte_offset, ir.Constant(I32, self._OUT_OF_RANGE))

    @staticmethod
    def _suffix(t):
        return f"v{t.count}i32" if isinstance(t, ir.VectorType) else f"i{t.width}"

    def buffer_load(self, b, base, byte_offset, word_bits, n_words, pred, other):
        t = self._buffer_type(word_bits, n_words)
        args = [self._resource(b, base), self._masked_offset(b, byte_offset, pred), ir.Constant(I32, 0),
                ir.Constant(I32, 0)]
        v = intrinsic(b, f"llvm.amdgcn.raw.ptr.buffer.load.{self._suffix(t)}", t, args)
        wty = ir.IntType(word_bits)
        vty = wty if n_words == 1 else ir.VectorType(wty, n_words)
        words = _unpack(b, v if t == vty else b.bitcast(v, vty), n_words)
        if pred is None or other is None:
            return words
        # masked-off lanes read zero from the hardware: only another ``other`` needs a select
        return [w if isinstance(o, ir.Constant) and o.constant == 0 else b.select(pred, w, o)
                for w, o in zip(words, other)]

    def buffer_store(self, b, base, byte_offset, words, word_bits, pred):
        t = self._buffer_type(word_bits, len(words))
        v = _pack(b, words, ir.IntType(word_bits))
        if v.type != t:
            v = b.bitcast(v, t)
        intrinsic(b, f"llvm.amdgcn.raw.ptr.buffer.store.{self._suffix(t)}", ir.VoidType(),
                  [v, self._resource(b, base), self._masked_offset(b, byte_offset, pred), ir.Constant(I32, 0),
                   ir.Constant(I32, 0)])

    def global_store(self, b, ptr, words, word_bits, pred, cache, evict):
        n = len(words)
        wty = ir.IntType(word_bits)

        def store():
            b.store(_pack(b, words, wty), ptr, align=word_bits // 8 * n)
            return []

        guarded(b, pred, store, [])

    @staticmethod
    def _ordering(sem: str, scope: str) -> str:
        """LLVM's ``syncscope("...") <ordering>`` for a ``tt`` memory semantic and scope (AMDGPU's
        scopes: ``workgroup`` for cta, ``agent`` for gpu, the default system scope for sys)."""
        order = {"relaxed": "monotonic", "acquire": "acquire", "release": "release"}.get(sem, "acq_rel")
        sync = {"cta": "workgroup", "gpu": "agent"}.get(scope)
        # llvmlite prints the ordering string verbatim where LLVM expects [syncscope] ordering
        return f'syncscope("{sync}") {order}' if sync else order

    def atomic_rmw(self, b, op, ptr, value, pred, sem, scope):
        ty = value.type
        is_float = not isinstance(ty, ir.IntType)
        kind = _RMW_FLOAT.get(op) if is_float else _RMW.get(op)
        if kind is None:
            raise NotImplementedError(f"atomic {op} on {ty}")
        order = self._ordering(sem, scope)
        if is_float and kind == "xchg":
            bits = 64 if isinstance(ty, ir.DoubleType) else 32 if isinstance(ty, ir.FloatType) else 16
            ity = ir.IntType(bits)
            r = guarded(b, pred, lambda: [b.atomic_rmw(kind, ptr, b.bitcast(value, ity), order)],
                              [ir.Constant(ity, ir.Undefined)])[0]
            return b.bitcast(r, ty)
        return guarded(b, pred, lambda: [b.atomic_rmw(kind, ptr, value, order)],
                             [ir.Constant(ty, ir.Undefined)])[0]

    # one writeback before a tensor atomic's first instruction and one invalidation after its last
    # (Triton's AMD ordering for acq_rel), not a pair around each
    atomic_acq_rel_once = True

    def atomic_vector(self, op, ty):
        # Triton's rule on every AMD target: two f16 or bf16 adds as one packed atomic
        # (global_atomic_pk_add_f16/bf16 on CDNA3; one 32-bit compare-and-swap loop for the pair
        # where the target has no packed add, instead of one for each element)
        if op in ("fadd", "add") and (isinstance(ty, ir.HalfType) or getattr(ty, "intrinsic_name", "") == "bf16"):
            return 2
        return 1

    def atomic_rmw_vector(self, b, op, ptr, values, pred, sem, scope):
        ty = values[0].type
        vt = ir.VectorType(ty, len(values))
        pair = ir.Constant(vt, ir.Undefined)
        for i, v in enumerate(values):
            pair = b.insert_element(pair, v, ir.Constant(I32, i))
        order = self._ordering(sem, scope)
        old = guarded(b, pred, lambda: [b.atomic_rmw("fadd", ptr, pair, order)], [ir.Constant(vt, ir.Undefined)])[0]
        return [b.extract_element(old, ir.Constant(I32, i)) for i in range(len(values))]

    def atomic_cas(self, b, ptr, cmp, value, pred, sem, scope):
        ty = value.type
        ity = ty if isinstance(ty, ir.IntType) else ir.IntType(64 if isinstance(ty, ir.DoubleType) else
                                                               32 if isinstance(ty, ir.FloatType) else 16)
        c, v = (cmp, value) if ity is ty else (b.bitcast(cmp, ity), b.bitcast(value, ity))
        order = self._ordering(sem, scope)
        # a failed exchange stores nothing: its ordering drops the release half (LLVM forbids
        # release orderings on failure)
        fail = "monotonic" if sem in ("release", "relaxed") else "acquire"
        r = guarded(b, pred, lambda: [b.extract_value(b.cmpxchg(ptr, c, v, order, fail), 0)],
                          [ir.Constant(ity, ir.Undefined)])[0]
        return r if ity is ty else b.bitcast(r, ty)

    def convert_scratch_encoding(self, src_t, dst_t):
        # an MFMA/WMMA operand goes through LDS K-contiguous and swizzled (passes/shared_layout.py)
        return operand_shared_encoding(dst_t)

    # --- kernels ------------------------------------------------------------------------------
    def make_kernel(self, fn, num_warps, shared_bytes):
        fn.calling_convention = "amdgpu_kernel"
        threads = num_warps * self.warp_size
        # llvmlite checks attribute names against LLVM's enum attributes; AMDGPU's are string
        # attributes, which it prints as given.
        set.add(fn.attributes, f'"amdgpu-flat-work-group-size"="1,{threads}"')
        if self.waves_per_eu:
            set.add(fn.attributes, f'"amdgpu-waves-per-eu"="{self.waves_per_eu}"')
        if self.sched_strategy:
            set.add(fn.attributes, f'"amdgpu-sched-strategy"="{self.sched_strategy}"')
        # launches always cover whole workgroups (grid = programs x workgroup size), so LLVM need
        # not guard for partial ones
        set.add(fn.attributes, '"uniform-work-group-size"="true"')
        # fp32 denormal mode: IEEE (kept) unless the kernel allows flushing them; LLVM then drops
        # the denormal scaling around v_exp_f32 / v_log_f32 (tl.exp, tl.log2)
        mode = "preserve-sign" if self.flush_denorm else "ieee"
        set.add(fn.attributes, f'"denormal-fp-math-f32"="{mode},{mode}"')
        if self.arch.name in _KERNARG_PRELOAD:
            # kernel arguments preloaded into SGPRs (as many as the hardware takes; the rest are
            # still loaded from the kernarg segment): no scalar load, no wait for it
            for arg in fn.args:
                arg.add_attribute("inreg")

    # --- debugging ----------------------------------------------------------------------------
    def _cstring(self, module, text: str) -> ir.GlobalVariable:
        data = bytearray(text.encode()) + b"\0"
        arr = ir.Constant(ir.ArrayType(ir.IntType(8), len(data)), data)
        g = ir.GlobalVariable(module, arr.type, module.get_unique_name("str"), addrspace=_CONST)
        g.global_constant, g.initializer, g.linkage = True, arr, "internal"
        g.type = ir.PointerType(addrspace=_CONST)
        return g

    def printf(self, b, fmt, args):
        # OpenCL-style printf: LLVM's AMDGPU printf lowering turns the call into a record in the
        # printf buffer (a hidden kernel argument) that the runtime prints after the kernel; the
        # llir stage adds the buffer's allocator (device_runtime.py).
        module = b.module
        pf = module.globals.get("printf")
        if pf is None:
            pf = ir.Function(module, ir.FunctionType(I32, [ir.PointerType(addrspace=_CONST)], var_arg=True), "printf")
        b.call(pf, [self._cstring(module, fmt)] + list(args))

    def assert_fail(self, b, message, file, func, line):
        self.printf(b, "%s:%d: %s: Assertion `%s` failed.\n",
                    [self._cstring(b.module, file), ir.Constant(I32, line), self._cstring(b.module, func),
                     self._cstring(b.module, message)])
        intrinsic(b, "llvm.trap", ir.VoidType(), [])

    # --- plugin-owned lowerings ----------------------------------------------------------------
    def op_lowering(self, op):
        if op.name == "tt.dot":
            ins = instr_of(op)
            if ins is not None:
                return lambda fl, o: lower_matrix_dot(fl, o, ins)
        return None

    def map_extern(self, symbol):
        # ocml's name (ROCm's bitcode or the plain-IR fallback defines it), or None: the core
        # then reports the call at the kernel's line
        return resolve(symbol)

    def extern_function(self, b, symbol, args, ret):
        self.externs[symbol] = ir.FunctionType(ret, [a.type for a in args])
        return super().extern_function(b, symbol, args, ret)

    # --- math ---------------------------------------------------------------------------------
    def math(self, b, name, args, ty):
        if isinstance(ty, ir.DoubleType) and name in math_lib.FP64_OCML:
            # LLVM's AMDGPU target has no fp64 transcendental functions: ocml's
            return self.extern_function(b, f"__ocml_{math_lib.FP64_OCML[name]}_f64", args, ty)
        if isinstance(ty, ir.FloatType) and name in math_lib.FP32:
            return math_lib.FP32[name](b, *args)
        return None


__all__ = ["AMDTargetInfo", "F32", "F64"]
