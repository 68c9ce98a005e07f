"""NVIDIA's answers to :class:`tritium.conversion.target_info.TargetInfo`: PTX special registers,
``shfl.sync``, ``bar.sync``, predicated vector ``ld/st.global`` and ``atom`` as inline PTX, the
``ptx_kernel`` calling convention, ``vprintf`` / ``__assertfail`` and libdevice math."""
from __future__ import annotations

import functools

import llvmlite.ir as ir

from tritium.conversion.target_info import I1, I16, I32, I64, TargetInfo, guarded, intrinsic

from ..options import WARP_SIZE
from ..toolchain.binary import DATA_LAYOUT, TRIPLE, libdevice_symbols
from ..toolchain.tools import choose_ptx_version
from .tensor_cores import op_lowering


F32, F64, F16 = ir.FloatType(), ir.DoubleType(), ir.HalfType()
_LOG2E = 1.4426950408889634
_REG = {8: "h", 16: "h", 32: "r", 64: "l"}
_LD_TYPE = {8: "u8", 16: "b16", 32: "b32", 64: "b64"}

# libdevice functions Triton uses for these ops (f32 name; f64 drops the trailing "f")
_LIBDEVICE = {"math.log": "__nv_logf", "math.log2": "__nv_log2f", "math.log10": "__nv_log10f",
              "math.sin": "__nv_sinf", "math.cos": "__nv_cosf", "math.tan": "__nv_tanf",
              "math.erf": "__nv_erff", "math.tanh": "__nv_tanhf", "math.log1p": "__nv_log1pf",
              "math.expm1": "__nv_expm1f", "math.powf": "__nv_powf", "math.atan": "__nv_atanf",
              "math.atan2": "__nv_atan2f", "math.rsqrt": "__nv_rsqrtf"}


def _asm(b: ir.IRBuilder, ret: ir.Type, text: str, constraints: str, args: list, side_effect: bool = True):
    fty = ir.FunctionType(ret, [a.type for a in args])
    return b.asm(fty, text, constraints, args, side_effect)


class NVIDIATargetInfo(TargetInfo):
    triple = TRIPLE
    data_layout = DATA_LAYOUT
    backend_name = "nvidia"
    # fp8 attention's P, from the wgmma accumulator into the next wgmma's A registers (4 elements a
    # register), by shfl.sync.idx of packed words instead of a shared-memory round trip
    warp_gather = True

    def __init__(self, capability: int = 90, maxnreg: int | None = None, num_ctas: int = 1, ftz: bool = True,
                 ptx_version: int | None = None):
        self.capability = capability
        self.ptx_version = ptx_version  # options.ptx_version: None = the newest the toolchain takes
        self.maxnreg = maxnreg
        self.ftz = ftz  # options.enable_reflect_ftz: approximate exp2 flushes denormals
        #: CTAs per program (a thread-block cluster, sm_90+).  A program is one cluster: its id is
        #: the cluster's id, and its work runs on the cluster's first CTA (see ``make_kernel``).
        self.num_ctas = num_ctas

    @property
    def warp_size(self) -> int:
        return WARP_SIZE

    # --- ids ---------------------------------------------------------------------------------
    def _sreg(self, b, name):
        return intrinsic(b, f"llvm.nvvm.read.ptx.sreg.{name}", I32, [])

    def thread_id(self, b):
        return self._sreg(b, "tid.x")

    def program_id(self, b, axis):
        if self.num_ctas > 1:
            return self._sreg(b, f"clusterid.{'xyz'[axis]}")
        return self._sreg(b, f"ctaid.{'xyz'[axis]}")

    def num_programs(self, b, axis):
        if self.num_ctas > 1:
            return self._sreg(b, f"nclusterid.{'xyz'[axis]}")
        return self._sreg(b, f"nctaid.{'xyz'[axis]}")

    def block_index(self, b):
        # CTAs, not clusters: a program of num_ctas CTAs has num_ctas parts of the scratch
        x, y, z = (self._sreg(b, f"ctaid.{a}") for a in "xyz")
        nx, ny = (self._sreg(b, f"nctaid.{a}") for a in "xy")
        return b.add(x, b.mul(nx, b.add(y, b.mul(ny, z))))

    def lane_id(self, b, tid):
        return b.and_(tid, ir.Constant(I32, WARP_SIZE - 1))

    def warp_id(self, b, tid):
        return b.lshr(tid, ir.Constant(I32, 5))

    # --- warp data movement -------------------------------------------------------------------
    def shuffle_xor(self, b, value, mask):
        return intrinsic(b, "llvm.nvvm.shfl.sync.bfly.i32", I32,
                         [ir.Constant(I32, 0xFFFFFFFF), value, ir.Constant(I32, mask), ir.Constant(I32, 0x1F)])

    def shuffle_idx(self, b, value, lane):
        return intrinsic(b, "llvm.nvvm.shfl.sync.idx.i32", I32,
                         [ir.Constant(I32, 0xFFFFFFFF), value, lane, ir.Constant(I32, 0x1F)])

    def barrier(self, b):
        # The intrinsic, not inline PTX: LLVM knows it is convergent, so it never sinks or
        # duplicates a barrier into divergent branches (which deadlocks the block).
        intrinsic(b, "llvm.nvvm.barrier0", ir.VoidType(), [])

    # --- memory -------------------------------------------------------------------------------
    @property
    def stores_matrices(self) -> bool:
        return self.capability >= 90  # stmatrix is sm_90's

    def store_matrices(self, b, row_ptr, words):
        n = len(words)
        regs = ", ".join(f"${i + 1}" for i in range(n))
        addr = b.ptrtoint(row_ptr, ir.IntType(32))
        _asm(b, ir.VoidType(), f"stmatrix.sync.aligned.m8n8.x{n}.shared.b16 [$0], {{{regs}}};",
             ",".join(["r"] * (n + 1)) + ",~{memory}", [addr, *words])

    def shared_base(self, module):
        g = module.globals.get("global_smem")
        if g is None:
            g = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(8), 0), "global_smem", addrspace=3)
            g.type = ir.PointerType(addrspace=3)  # opaque pointers throughout
            g.linkage = "external"
            g.align = 1024  # the tensor cores' swizzled buffers need 1024-byte aligned offsets
        return g

    @staticmethod
    def _qualifiers(cache: str, evict: str, load: bool) -> str:
        q = ""
        if load and cache in ("ca", "cg", "cv"):
            q += f".{cache}"
        if not load and cache in ("wb", "cg", "cs", "wt"):
            q += f".{cache}"
        # An L1 eviction priority means nothing to accesses that bypass L1 (.cg, .cv, .cs, .wt),
        # and ptxas rejects the combination.
        if evict in ("evict_first", "evict_last") and cache not in ("cg", "cv", "cs", "wt"):
            q += f".L1::{evict}"
        return q

    def global_load(self, b, ptr, word_bits, n_words, pred, other, cache, evict, volatile):
        reg_bits = 16 if word_bits == 8 else word_bits
        rty = ir.IntType(reg_bits)
        outs = ",".join(f"={_REG[word_bits]}" for _ in range(n_words))
        ins, args, text = [], [], []
        if other is not None:
            for i, o in enumerate(other):
                if word_bits == 8:
                    o = b.zext(o, I16)
                text.append(f"mov.b{reg_bits} ${i}, ${n_words + len(args)};")
                args.append(o)
                ins.append(_REG[word_bits])
        addr_idx = n_words + len(args)
        args.append(ptr)
        ins.append("l")
        guard = ""
        if pred is not None:
            guard = f"@${n_words + len(args)} "
            args.append(pred)
            ins.append("b")
        space = "ld.volatile.global" if volatile else "ld.global" + self._qualifiers(cache, evict, True)
        dst = f"${0}" if n_words == 1 else "{" + ", ".join(f"${i}" for i in range(n_words)) + "}"
        vec = "" if n_words == 1 else f".v{n_words}"
        text.append(f"{guard}{space}{vec}.{_LD_TYPE[word_bits]} {dst}, [ ${addr_idx} + 0 ];")
        ret = rty if n_words == 1 else ir.LiteralStructType([rty] * n_words)
        r = _asm(b, ret, "\n".join(text), ",".join([outs] + ins), args)
        words = [r] if n_words == 1 else [b.extract_value(r, i) for i in range(n_words)]
        if word_bits == 8:
            words = [b.trunc(w, ir.IntType(8)) for w in words]
        return words

    def global_store(self, b, ptr, words, word_bits, pred, cache, evict):
        n = len(words)
        if word_bits == 8:
            words = [b.zext(w, I16) for w in words]
        args = [ptr] + list(words)
        cons = ["l"] + [_REG[word_bits]] * n
        guard = ""
        if pred is not None:
            guard = f"@${len(args)} "
            args.append(pred)
            cons.append("b")
        src = "$1" if n == 1 else "{" + ", ".join(f"${i + 1}" for i in range(n)) + "}"
        vec = "" if n == 1 else f".v{n}"
        st_type = "b8" if word_bits == 8 else f"b{word_bits}"
        text = f"{guard}st.global{self._qualifiers(cache, evict, False)}{vec}.{st_type} [ $0 + 0 ], {src};"
        _asm(b, ir.VoidType(), text, ",".join(cons), args)

    def _atom(self, b, qualifiers: str, ptr, operands: list, pred, ty):
        """``atom.global.<qualifiers>`` on one element, predicated; returns the old value."""
        bits = 16 if isinstance(ty, ir.HalfType) or getattr(ty, "intrinsic_name", "") == "bf16" else \
            (ty.width if isinstance(ty, ir.IntType) else (64 if isinstance(ty, ir.DoubleType) else 32))
        ity = ir.IntType(bits)
        conv = [o if isinstance(o.type, ir.IntType) else b.bitcast(o, ity) for o in operands]
        reg = _REG[bits]
        n = len(conv)
        ops = ", ".join(f"${i + 2}" for i in range(n))
        text = f"mov.b{bits} $0, 0;\n@${n + 2} atom.global.{qualifiers} $0, [ $1 + 0 ], {ops};"
        r = _asm(b, ity, text, ",".join([f"={reg}", "l"] + [reg] * n + ["b"]), [ptr] + conv + [pred])
        return r if isinstance(ty, ir.IntType) else b.bitcast(r, ty)

    def atomic_rmw(self, b, op, ptr, value, pred, sem, scope):
        ty = value.type
        is_f = not isinstance(ty, ir.IntType)
        bits = 16 if isinstance(ty, ir.HalfType) or getattr(ty, "intrinsic_name", "") == "bf16" else \
            (ty.width if not is_f else (64 if isinstance(ty, ir.DoubleType) else 32))
        if (op == "fadd" or (op == "add" and is_f)) and bits == 16 and not isinstance(ty, ir.HalfType) \
                and self.capability < 90:
            # no bf16 atom before sm_90: LLVM's atomicrmw, which NVPTX expands into a 16-bit
            # compare-and-swap loop (as Triton lowers it)
            order = {"relaxed": "monotonic", "acquire": "acquire", "release": "release"}.get(sem, "acq_rel")
            sync = {"cta": "block", "gpu": "device"}.get(scope)
            order = f'syncscope("{sync}") {order}' if sync else order
            return guarded(b, pred, lambda: [b.atomic_rmw("fadd", ptr, value, order)],
                           [ir.Constant(ty, ir.Undefined)])[0]
        if op == "fadd" or (op == "add" and is_f):
            ptx = {16: "add.noftz.f16" if isinstance(ty, ir.HalfType) else "add.noftz.bf16",
                   32: "add.f32", 64: "add.f64"}[bits]
        elif op == "add":
            ptx = f"add.u{bits}"
        elif op in ("max", "min"):
            ptx = f"{op}.s{bits}"
        elif op in ("umax", "umin"):
            ptx = f"{op[1:]}.u{bits}"
        elif op in ("and", "or", "xor", "exch"):
            ptx = f"{op}.b{bits}"
        else:
            raise NotImplementedError(f"atomic {op}")
        # Triton's spelling: scope before the ordering for read-modify-writes
        # (atom.global.gpu.acq_rel.add.f32), the ordering first for cas (below); ptxas takes both
        return self._atom(b, f"{scope}.{sem}.{ptx}", ptr, [value], pred, ty)

    @functools.cached_property
    def _ptx(self) -> int | None:
        """The PTX ISA version this kernel is written in; None with no toolchain to ask (a lowering
        test), taken as the newest."""
        arch = "90a" if self.capability == 90 else str(self.capability)
        try:
            return choose_ptx_version(arch, self.ptx_version)
        except Exception:  # noqa: BLE001 - no assembler found
            return None

    def _emits_ptx(self, version: int) -> bool:
        """Whether the PTX this kernel is written in is ISA ``version`` or newer."""
        return self._ptx is None or self._ptx >= version

    def atomic_vector(self, op, ty):
        # Triton's rule: float adds only; sm_90 (PTX 8.1) updates up to 128 bits a instruction
        # (.v2/.v4 f32, .v2-.v8 f16/bf16), older targets two f16 as one packed f16x2
        half = isinstance(ty, ir.HalfType)
        if op != "fadd" or not (half or isinstance(ty, ir.FloatType) or getattr(ty, "intrinsic_name", "") == "bf16"):
            return 1
        if self.capability >= 90 and self._emits_ptx(81):
            return 4 if isinstance(ty, ir.FloatType) else 8
        return 2 if half else 1

    def atomic_rmw_vector(self, b, op, ptr, values, pred, sem, scope):
        ty = values[0].type
        n = len(values)
        if isinstance(ty, ir.HalfType) and (self.capability < 90 or not self._emits_ptx(81)):
            # two halves as one f16x2 word
            pair = ir.Constant(ir.VectorType(ty, 2), ir.Undefined)
            for i, v in enumerate(values):
                pair = b.insert_element(pair, v, ir.Constant(I32, i))
            old = self._atom(b, f"{scope}.{sem}.add.noftz.f16x2", ptr, [b.bitcast(pair, I32)], pred, I32)
            old = b.bitcast(old, ir.VectorType(ty, 2))
            return [b.extract_element(old, ir.Constant(I32, i)) for i in range(n)]
        bits = 32 if isinstance(ty, ir.FloatType) else 16
        name = "f32" if bits == 32 else ("f16" if isinstance(ty, ir.HalfType) else "bf16")
        ity, reg = ir.IntType(bits), _REG[bits]
        dst = "{" + ", ".join(f"${i}" for i in range(n)) + "}"
        src = "{" + ", ".join(f"${n + 1 + i}" for i in range(n)) + "}"
        init = "\n".join(f"mov.b{bits} ${i}, 0;" for i in range(n))
        noftz = ".noftz" if bits == 16 else ""
        text = (f"{init}\n@${2 * n + 1} atom.global.{scope}.{sem}.add{noftz}.v{n}.{name} "
                f"{dst}, [ ${n} + 0 ], {src};")
        cons = ",".join([f"={reg}"] * n + ["l"] + [reg] * n + ["b"])
        r = _asm(b, ir.LiteralStructType([ity] * n), text, cons, [ptr] + [b.bitcast(v, ity) for v in values] + [pred])
        return [b.bitcast(b.extract_value(r, i), ty) for i in range(n)]

    def atomic_cas(self, b, ptr, cmp, value, pred, sem, scope):
        ty = value.type
        bits = ty.width if isinstance(ty, ir.IntType) else (64 if isinstance(ty, ir.DoubleType) else
                                                            32 if isinstance(ty, ir.FloatType) else 16)
        return self._atom(b, f"{sem}.{scope}.cas.b{bits}", ptr, [cmp, value], pred, ty)

    # --- kernels ------------------------------------------------------------------------------
    def make_kernel(self, fn, num_warps, shared_bytes):
        fn.calling_convention = "ptx_kernel"
        # .maxntid lets ptxas budget registers for the real block size (else a 512-thread launch
        # can fail for want of registers)
        fn.module.add_named_metadata("nvvm.annotations",
                                     [fn, ir.MetaDataString(fn.module, "maxntidx"),
                                      ir.Constant(I32, num_warps * WARP_SIZE)])
        if self.maxnreg is not None:
            # ``.maxnreg N`` on the kernel's entry (never on its noinline callees), as Triton sets it
            fn.module.add_named_metadata("nvvm.annotations",
                                         [fn, ir.MetaDataString(fn.module, "maxnreg"), ir.Constant(I32, self.maxnreg)])
        if self.num_ctas > 1:
            self._run_on_first_cta(fn)

    def _run_on_first_cta(self, fn):
        """A program of ``num_ctas`` CTAs is launched as one cluster of that many CTAs (the
        driver's cluster launch).  Layouts place a block's tensors in one CTA, so the program's
        work runs on the cluster's rank-0 CTA and the others return at entry: every program runs
        exactly once, and ``program_id`` / ``num_programs`` count clusters."""
        old_entry = fn.blocks[0]
        check = fn.append_basic_block("cluster_rank_check")
        leave = fn.append_basic_block("cluster_rank_idle")
        fn.blocks.remove(check)
        fn.blocks.insert(0, check)
        b = ir.IRBuilder(check)
        rank = self._sreg(b, "cluster.ctarank")
        b.cbranch(b.icmp_unsigned("!=", rank, ir.Constant(I32, 0)), leave, old_entry)
        ir.IRBuilder(leave).ret_void()

    # --- plugin-owned lowerings ------------------------------------------------------------------
    #: NVPTX's register classes (pred, b8, b16, b32, b64, f32, f64, b128) and immediates
    inline_asm_constraints = frozenset("bchrlfdqni")

    def op_lowering(self, op):
        return op_lowering(op)

    # --- debugging ----------------------------------------------------------------------------
    def _cstring(self, module, text: str) -> ir.GlobalVariable:
        data = bytearray(text.encode()) + b"\0"
        arr = ir.Constant(ir.ArrayType(ir.IntType(8), len(data)), data)
        g = ir.GlobalVariable(module, arr.type, module.get_unique_name("str"))
        g.global_constant, g.initializer, g.linkage = True, arr, "internal"
        g.type = ir.PointerType()
        return g

    def printf(self, b, fmt, args):
        module = b.module
        vprintf = module.globals.get("vprintf")
        ptr = ir.PointerType()
        if vprintf is None:
            vprintf = ir.Function(module, ir.FunctionType(I32, [ptr, ptr]), "vprintf")
        buf = ir.Constant(ptr, None)
        if args:
            st = ir.LiteralStructType([a.type for a in args])
            with b.goto_entry_block():
                slot = b.alloca(st)
            for i, a in enumerate(args):
                # the field's own type comes from the typed alloca (``source_etype`` would make llvmlite
                # type every field pointer as the whole struct's)
                b.store(a, b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, i)]))
            buf = slot
        # one global per distinct format (a tensor's elements share theirs)
        strings = module.__dict__.setdefault("_tritium_printf_formats", {})
        if fmt not in strings:
            strings[fmt] = self._cstring(module, fmt)
        b.call(vprintf, [strings[fmt], buf])

    def assert_fail(self, b, message, file, func, line):
        module = b.module
        ptr = ir.PointerType()
        fn = module.globals.get("__assertfail")
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, I32, ptr, I64]), "__assertfail")
        b.call(fn, [self._cstring(module, message), self._cstring(module, file), ir.Constant(I32, line),
                    self._cstring(module, func), ir.Constant(I64, 1)])

    # --- math ---------------------------------------------------------------------------------
    def map_extern(self, symbol):
        # libdevice's own functions only: anything else would fail at link time with no location
        known = libdevice_symbols()
        return symbol if known is None or symbol in known else None

    def math(self, b, name, args, ty):
        f32 = isinstance(ty, ir.FloatType)
        if name in ("math.exp", "math.exp2") and f32:
            x = args[0] if name == "math.exp2" else b.fmul(args[0], ir.Constant(F32, _LOG2E))
            op = "ex2.approx.ftz.f32" if self.ftz else "ex2.approx.f32"
            return _asm(b, F32, f"{op} $0, $1;", "=f,f", [x], side_effect=False)
        if name == "arith.divf":
            # Triton's ``/`` on fp32: div.full.f32 (2 ulp), not the IEEE division subroutine
            return _asm(b, F32, "div.full.f32 $0, $1, $2;", "=f,f,f", args, side_effect=False) if f32 else None
        if name == "math.exp" and isinstance(ty, ir.DoubleType):
            return self.extern_function(b, "__nv_exp", args, ty)
        if name == "math.exp2" and isinstance(ty, ir.DoubleType):
            return self.extern_function(b, "__nv_exp2", args, ty)
        sym = _LIBDEVICE.get(name)
        if sym is not None and isinstance(ty, (ir.FloatType, ir.DoubleType)):
            return self.extern_function(b, sym if f32 else sym[:-1], args, ty)
        return None

    def byte_permute(self, b, x, y, selector):
        return _asm(b, I32, "prmt.b32 $0, $1, $2, $3;", "=r,r,r,r", [x, y, selector], side_effect=False)

    def f32_to_fp8(self, b, values, fmt):
        # sm_89+: cvt.rn.satfinite.{e4m3,e5m2}x2.f32 rounds two floats to nearest even, saturating
        # to the largest finite value (infinities too) and keeping NaN (Triton's conversion on
        # these GPUs); the first source lands in the upper byte.  e5m2 has several NaN codes: the
        # instruction writes 0x7F, the portable rule (and the interpreter) the canonical 0x7E, so
        # a NaN input is given that one
        if self.capability < 89:
            return None
        i8 = ir.IntType(8)
        out = []
        for i in range(0, len(values), 2):
            lo = values[i]
            hi = values[i + 1] if i + 1 < len(values) else lo
            pair = _asm(b, ir.IntType(16), f"cvt.rn.satfinite.{fmt}x2.f32 $0, $1, $2;", "=h,f,f", [hi, lo],
                        side_effect=False)
            out.append(b.trunc(pair, i8))
            if i + 1 < len(values):
                out.append(b.trunc(b.lshr(pair, ir.Constant(ir.IntType(16), 8)), i8))
        if fmt == "e5m2":
            out = [b.select(b.fcmp_unordered("uno", x, x), ir.Constant(i8, 0x7E), y) for x, y in zip(values, out)]
        return out


__all__ = ["NVIDIATargetInfo", "I1"]
