"""Run the shared TTGIR -> LLVM lowering on the host CPU, one OS thread per GPU thread.

A test double of a GPU target: :class:`HostSIMTTarget` answers the lowering's questions with
host code (thread ids from a pthread key, ``pthread_barrier_wait`` for block and warp barriers,
warp shuffles through a per-warp exchange array between two warp barriers, shared memory as a
module global, plain predicated loads and stores), and :func:`run_ttgir` JIT-compiles the
module with llvmlite and launches ``num_warps * threads_per_warp`` threads per program, one
program after another.  Everything the lowering derives from a layout (which thread holds which
element, the shuffles of a reduction, the shared-memory round trip of a conversion) therefore
runs for real: a wrong element mapping gives a wrong result here as it would on a GPU.

Not emulated: vendor instructions (tensor cores, ``cp.async``; a module using them fails to
lower) and device math libraries.  Barriers in divergent code deadlock as they would on a GPU;
:func:`run_ttgir` reports a launch that does not finish in time."""
from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np

from tritium.conversion.target_info import I32, I64, TargetInfo, guarded

_libc = ctypes.CDLL(None, use_errno=True)
_BARRIER_BYTES = 64  # sizeof(pthread_barrier_t) is 32 on x86-64 glibc; room to spare
_SHARED_BYTES = 256 * 1024
PTR = ir.PointerType()


def _fn(module: ir.Module, name: str, ret, args) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name)
    return fn


def _addr(b: ir.IRBuilder, address: int) -> ir.Value:
    return b.inttoptr(ir.Constant(I64, address), PTR)


class HostSIMTTarget(TargetInfo):
    """The host CPU as a GPU (see the module docstring); one instance per launch configuration."""

    global_address_space = 0
    shared_address_space = 0
    backend_name = "host-simt"

    def __init__(self, num_warps: int, warp_size: int = 32, stores_matrices: bool = False):
        self._warp_size = warp_size
        self.stores_matrices = stores_matrices
        self.num_warps = num_warps
        self.threads = num_warps * warp_size
        from tritium.conversion.llvm_init import initialize_llvm
        initialize_llvm()
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.triple = llvm.get_process_triple()
        self._tm = llvm.Target.from_triple(self.triple).create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=1)
        self.data_layout = str(self._tm.target_data)
        key = ctypes.c_uint()
        if _libc.pthread_key_create(ctypes.byref(key), None):
            raise OSError("pthread_key_create failed")
        self.key = key.value
        self._block_barrier = ctypes.create_string_buffer(_BARRIER_BYTES)
        self._warp_barriers = ctypes.create_string_buffer(_BARRIER_BYTES * num_warps)
        self._exchange = (ctypes.c_uint32 * self.threads)()
        self.state = (ctypes.c_int32 * 8)()  # pid x/y/z, nprog x/y/z, failed asserts
        _libc.pthread_barrier_init(self._block_barrier, None, self.threads)
        for w in range(num_warps):
            _libc.pthread_barrier_init(ctypes.byref(self._warp_barriers, w * _BARRIER_BYTES), None, warp_size)

    @property
    def warp_size(self) -> int:
        return self._warp_size

    # --- ids ---------------------------------------------------------------------------------
    def thread_id(self, b):
        get = _fn(b.module, "pthread_getspecific", PTR, [I32])
        return b.sub(b.trunc(b.ptrtoint(b.call(get, [ir.Constant(I32, self.key)]), I64), I32), ir.Constant(I32, 1))

    def _state(self, b, slot: int):
        p = b.gep(_addr(b, ctypes.addressof(self.state)), [ir.Constant(I32, slot)], source_etype=I32)
        return b.load(p, typ=I32)

    def program_id(self, b, axis):
        return self._state(b, axis)

    def num_programs(self, b, axis):
        return self._state(b, 3 + axis)

    # --- warp-level data movement -------------------------------------------------------------
    def _warp_barrier(self, b, warp):
        wait = _fn(b.module, "pthread_barrier_wait", I32, [PTR])
        base = _addr(b, ctypes.addressof(self._warp_barriers))
        b.call(wait, [b.gep(base, [b.mul(warp, ir.Constant(I32, _BARRIER_BYTES))], source_etype=ir.IntType(8))])

    def shuffle_idx(self, b, value, lane):
        tid = self.thread_id(b)
        warp = b.udiv(tid, ir.Constant(I32, self.warp_size))
        ex = _addr(b, ctypes.addressof(self._exchange))
        b.store(value, b.gep(ex, [tid], source_etype=I32))
        self._warp_barrier(b, warp)
        src = b.add(b.mul(warp, ir.Constant(I32, self.warp_size)), lane)
        out = b.load(b.gep(ex, [src], source_etype=I32), typ=I32)
        self._warp_barrier(b, warp)  # nobody overwrites a slot before every lane has read it
        return out

    def byte_permute(self, b, x, y, selector):
        # NVIDIA's prmt (default mode) in plain integer arithmetic: result byte j is byte
        # (nibble j of the selector, bits 0-2) of the eight bytes of y:x
        wide = b.or_(b.zext(x, I64), b.shl(b.zext(y, I64), ir.Constant(I64, 32)))
        out = ir.Constant(I32, 0)
        for j in range(4):
            nib = b.and_(b.lshr(selector, ir.Constant(I32, 4 * j)), ir.Constant(I32, 7))
            byte = b.trunc(b.and_(b.lshr(wide, b.zext(b.shl(nib, ir.Constant(I32, 3)), I64)),
                                  ir.Constant(I64, 0xFF)), I32)
            out = b.or_(out, b.shl(byte, ir.Constant(I32, 8 * j)))
        return out

    def shuffle_xor(self, b, value, mask):
        lane = b.urem(self.thread_id(b), ir.Constant(I32, self.warp_size))
        return self.shuffle_idx(b, value, b.xor(lane, ir.Constant(I32, mask)))

    def store_matrices(self, b, row_ptr, words):
        """The 8x8 tile store through shuffles: lane ``8 i + j`` gathers row ``j`` of tile ``i``
        from lanes ``4 j .. 4 j + 3`` and writes it at its own address."""
        lane = b.urem(self.thread_id(b), ir.Constant(I32, self.warp_size))
        row = b.and_(lane, ir.Constant(I32, 7))
        mine = b.lshr(lane, ir.Constant(I32, 3))
        for i, word in enumerate(words):
            got = [self.shuffle_idx(b, word, b.add(b.mul(row, ir.Constant(I32, 4)), ir.Constant(I32, c)))
                   for c in range(4)]
            with b.if_then(b.icmp_unsigned("==", mine, ir.Constant(I32, i))):
                for c, v in enumerate(got):
                    b.store(v, b.gep(row_ptr, [ir.Constant(I32, 4 * c)], source_etype=ir.IntType(8)))

    def barrier(self, b):
        wait = _fn(b.module, "pthread_barrier_wait", I32, [PTR])
        b.call(wait, [_addr(b, ctypes.addressof(self._block_barrier))])

    # --- memory -------------------------------------------------------------------------------
    def shared_base(self, module):
        g = module.globals.get("simt_smem")
        if g is None:
            g = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(8), _SHARED_BYTES), "simt_smem")
            g.initializer = ir.Constant(g.value_type, None)
            g.type = PTR  # opaque pointers throughout, as the lowering expects
            g.align = 1024
        return g

    def global_load(self, b, ptr, word_bits, n_words, pred, other, cache, evict, volatile):
        vty = ir.VectorType(ir.IntType(word_bits), n_words)

        def load():
            v = b.load(ptr, typ=vty, align=word_bits // 8)
            return [b.extract_element(v, ir.Constant(I32, i)) for i in range(n_words)]

        return guarded(b, pred, load, other or [])

    def global_store(self, b, ptr, words, word_bits, pred, cache, evict):
        vty = ir.VectorType(ir.IntType(word_bits), len(words))
        v = ir.Constant(vty, ir.Undefined)
        for i, w in enumerate(words):
            v = b.insert_element(v, w, ir.Constant(I32, i))

        def store():
            b.store(v, ptr, align=word_bits // 8)
            return []

        guarded(b, pred, store, [])

    def atomic_rmw(self, b, op, ptr, value, pred, sem, scope):
        llop = {"fadd": "fadd", "add": "fadd" if not isinstance(value.type, ir.IntType) else "add",
                "exch": "xchg"}.get(op, op)
        return guarded(b, pred, lambda: [b.atomic_rmw(llop, ptr, value, "seq_cst")],
                       [ir.Constant(value.type, None)])[0]

    def atomic_cas(self, b, ptr, cmp, value, pred, sem, scope):
        return guarded(b, pred, lambda: [b.extract_value(b.cmpxchg(ptr, cmp, value, "seq_cst", "seq_cst"), 0)],
                       [ir.Constant(value.type, None)])[0]

    # --- kernels and debugging ----------------------------------------------------------------
    def make_kernel(self, fn, num_warps, shared_bytes):
        if shared_bytes > _SHARED_BYTES:
            raise ValueError(f"the kernel needs {shared_bytes} bytes of shared memory, the host "
                             f"emulation has {_SHARED_BYTES}")

    def printf(self, b, fmt, args):
        pass

    def assert_fail(self, b, message, file, func, line):
        p = b.gep(_addr(b, ctypes.addressof(self.state)), [ir.Constant(I32, 6)], source_etype=I32)
        b.atomic_rmw("add", p, ir.Constant(I32, 1), "seq_cst")

    def close(self) -> None:
        _libc.pthread_key_delete(ctypes.c_uint(self.key))

    @property
    def failed_asserts(self) -> int:
        return self.state[6]

    # --- running ------------------------------------------------------------------------------
    def engine(self, llir: str):
        mod = llvm.parse_assembly(llir)
        mod.verify()
        ee = llvm.create_mcjit_compiler(mod, self._tm)
        # x86 lowers fptrunc to bfloat to a libgcc call that only GCC 13's libgcc has: define it
        # here (round to nearest even, NaNs kept quiet) so the host run needs no newer runtime
        runtime = llvm.parse_assembly(_HOST_RUNTIME)
        runtime.triple = mod.triple
        runtime.data_layout = mod.data_layout
        ee.add_module(runtime)
        ee.finalize_object()
        return ee



def host_engine(module) -> "llvm.ExecutionEngine":
    """An llvmlite ``ir.Module`` (the host's triple) verified and compiled for the host CPU by
    MCJIT, its functions ready to call through ``get_function_address`` (keep the engine alive)."""
    from tritium.conversion.llvm_init import initialize_llvm
    initialize_llvm()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(str(module))
    mod.verify()
    ee = llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine())
    ee.finalize_object()
    return ee

_HOST_RUNTIME = r"""
define bfloat @__truncsfbf2(float %x) {
  %b = bitcast float %x to i32
  %abs = and i32 %b, 2147483647
  %nan = icmp ugt i32 %abs, 2139095040
  %hi = lshr i32 %b, 16
  %odd = and i32 %hi, 1
  %bias = add i32 %odd, 32767
  %sum = add i32 %b, %bias
  %rounded = lshr i32 %sum, 16
  %quiet = or i32 %hi, 64
  %r = select i1 %nan, i32 %quiet, i32 %rounded
  %t = trunc i32 %r to i16
  %y = bitcast i16 %t to bfloat
  ret bfloat %y
}
"""


_CTYPES = {"i1": ctypes.c_int32, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "fp32": ctypes.c_float,
           "fp64": ctypes.c_double}


class _Rules:
    """A stand-in backend for :func:`finalize_ttgir` that gives only scratch rules."""

    def __init__(self, rules: dict):
        self.rules = rules

    def scratch_sizes(self, target):
        return self.rules

    def after_allocation_passes(self, target, options):
        return []

    def membar_filter(self, target):
        return None


def run_ttgir(module, args: list, grid=(1, 1, 1), signature: dict | None = None, timeout: float = 60.0,
              stores_matrices: bool = False, target_flags: dict | None = None,
              scratch_rules: dict | None = None) -> int:
    """Lower a TTGIR ``module`` (parsed, not yet finalized), run it over ``grid`` with ``args``
    (numpy arrays for pointers, Python numbers for scalars; arrays are written in place) and
    return how many device assertions failed.  ``stores_matrices``: the target has the 8x8 tile
    store (emulated with shuffles), as NVIDIA's sm_90 does.  ``target_flags`` sets lowering
    choices of :class:`TargetInfo` on the target (``masks_by_constancy``, ...); ``scratch_rules``
    the backend scratch rules the allocation uses (``tritium_scratch_sizes``)."""
    from tritium.conversion.ttgir_to_llvm import lower_to_llvm
    from tritium.ttgir.dialect import module_int
    from tritium.ttgir.pass_lists import finalize_ttgir
    num_warps = module_int(module, "ttg.num-warps")
    warp_size = module_int(module, "ttg.threads-per-warp")
    finalize_ttgir(module, None, {}, _Rules(scratch_rules) if scratch_rules else None)
    target = HostSIMTTarget(num_warps, warp_size, stores_matrices)
    for name, value in (target_flags or {}).items():
        if not hasattr(TargetInfo, name):
            raise AttributeError(f"TargetInfo has no lowering choice {name!r}")
        setattr(target, name, value)
    llir, meta = lower_to_llvm(module, target)
    ee = target.engine(llir)
    addr = ee.get_function_address(meta["name"])
    argtypes, values = [], []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            argtypes.append(ctypes.c_void_p)
            values.append(a.ctypes.data)
        else:
            ty = (signature or {}).get(i, "fp32" if isinstance(a, float) else "i32")
            argtypes.append(_CTYPES[ty])
            values.append(a)
    kernel = ctypes.CFUNCTYPE(None, *argtypes)(addr)
    grid = tuple(grid) + (1,) * (3 - len(grid))
    for k in range(3):
        target.state[3 + k] = grid[k]

    def thread(tid: int):
        _libc.pthread_setspecific(ctypes.c_uint(target.key), ctypes.c_void_p(tid + 1))
        kernel(*values)

    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                target.state[0], target.state[1], target.state[2] = x, y, z
                threads = [threading.Thread(target=thread, args=(t,), daemon=True) for t in range(target.threads)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(timeout)
                    if t.is_alive():
                        raise TimeoutError(f"program {(x, y, z)} did not finish in {timeout} s (a barrier or "
                                           "shuffle some threads never reach?)")
    target.close()
    return target.failed_asserts
