"""What the shared lowering asks of the toy target (``tritium.conversion.target_info.TargetInfo``).

Machine-specific operations are calls to ``toy_*`` functions, declared on first use: a runtime
for a real machine would define them.  Memory operations are plain LLVM IR (predicated ones
under a branch, so masked-off lanes never touch memory and read the ``other`` words)."""
from __future__ import annotations

import llvmlite.ir as ir

from tritium.conversion.extern_names import ocml_name
from tritium.conversion.target_info import I32, TargetInfo, guarded

PTR = ir.PointerType()
SHARED_PTR = ir.PointerType(addrspace=3)
_RMW = {"exch": "xchg", "fadd": "fadd"}
#: math the lowering has no target-independent LLVM form for: the C library's functions
_LIBM = {"math.erf": "erf"}


def _declare(module: ir.Module, name: str, ret, args, var_arg: bool = False) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args, var_arg=var_arg), name)
    return fn


def _cstring(module: ir.Module, text: str) -> ir.GlobalVariable:
    data = bytearray(text.encode() + b"\0")
    name = f"toy_str_{len(module.globals)}"
    g = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(8), len(data)), name)
    g.initializer = ir.Constant(g.value_type, data)
    g.global_constant = True
    g.linkage = "internal"
    return g


class ToyTargetInfo(TargetInfo):
    backend_name = "toy"
    inline_asm_constraints = frozenset()

    @property
    def warp_size(self) -> int:
        return 32

    # --- ids -------------------------------------------------------------------------------------
    def thread_id(self, b):
        return b.call(_declare(b.module, "toy_thread_id", I32, []), [])

    def program_id(self, b, axis):
        return b.call(_declare(b.module, "toy_program_id", I32, [I32]), [ir.Constant(I32, axis)])

    def num_programs(self, b, axis):
        return b.call(_declare(b.module, "toy_num_programs", I32, [I32]), [ir.Constant(I32, axis)])

    # --- warp-level data movement -----------------------------------------------------------------
    def shuffle_idx(self, b, value, lane):
        word = value if value.type == I32 else b.bitcast(value, I32)
        got = b.call(_declare(b.module, "toy_shuffle", I32, [I32, I32]), [word, lane])
        return got if value.type == I32 else b.bitcast(got, value.type)

    def shuffle_xor(self, b, value, mask):
        lane = self.lane_id(b, self.thread_id(b))
        return self.shuffle_idx(b, value, b.xor(lane, ir.Constant(I32, mask)))

    def barrier(self, b):
        b.call(_declare(b.module, "toy_barrier", ir.VoidType(), []), [])

    # --- memory -----------------------------------------------------------------------------------
    def shared_base(self, module):
        g = module.globals.get("toy_shared")
        if g is None:
            g = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(8), 0), "toy_shared", addrspace=3)
            g.type = SHARED_PTR  # the lowering computes with opaque pointers
            g.linkage = "external"
            g.align = 1024
        return g

    def global_load(self, b, ptr, word_bits, n_words, pred, other, cache, evict, volatile):
        wty = ir.IntType(word_bits)

        def load():
            v = b.load(ptr, typ=ir.VectorType(wty, n_words), align=word_bits // 8)
            return [b.extract_element(v, ir.Constant(I32, i)) for i in range(n_words)]

        return guarded(b, pred, load, other or [])

    def global_store(self, b, ptr, words, word_bits, pred, cache, evict):
        v = ir.Constant(ir.VectorType(ir.IntType(word_bits), len(words)), ir.Undefined)
        for i, w in enumerate(words):
            v = b.insert_element(v, w, ir.Constant(I32, i))

        def store():
            b.store(v, ptr, align=word_bits // 8)
            return []

        guarded(b, pred, store, [])

    def _predicated(self, b, pred, ty, emit):
        return guarded(b, pred, lambda: [emit()], [ir.Constant(ty, None)])[0]

    def atomic_rmw(self, b, op, ptr, value, pred, sem, scope):
        llop = _RMW.get(op, op)
        if llop == "add" and not isinstance(value.type, ir.IntType):
            llop = "fadd"
        return self._predicated(b, pred, value.type, lambda: b.atomic_rmw(llop, ptr, value, "seq_cst"))

    def atomic_cas(self, b, ptr, cmp, value, pred, sem, scope):
        ty = value.type
        if isinstance(ty, ir.IntType):
            return self._predicated(b, pred, ty,
                                    lambda: b.extract_value(b.cmpxchg(ptr, cmp, value, "seq_cst", "seq_cst"), 0))
        # LLVM's cmpxchg takes integers: a float compare-and-swap compares and swaps the bits
        bits = ir.IntType({ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}.get(type(ty), 16))
        old = self._predicated(b, pred, bits, lambda: b.extract_value(
            b.cmpxchg(ptr, b.bitcast(cmp, bits), b.bitcast(value, bits), "seq_cst", "seq_cst"), 0))
        return b.bitcast(old, ty)

    # --- kernels and debugging ----------------------------------------------------------------------
    def make_kernel(self, fn, num_warps, shared_bytes):
        fn.module.add_named_metadata("toy.kernels", [fn, ir.Constant(I32, num_warps * self.warp_size),
                                                     ir.Constant(I32, shared_bytes)])

    def printf(self, b, fmt, args):
        fn = _declare(b.module, "toy_printf", I32, [PTR], var_arg=True)
        b.call(fn, [_cstring(b.module, fmt), *args])

    def assert_fail(self, b, message, file, func, line):
        m = b.module
        fn = _declare(m, "toy_assert_fail", ir.VoidType(), [PTR, PTR, I32, PTR])
        b.call(fn, [_cstring(m, message), _cstring(m, file), ir.Constant(I32, line), _cstring(m, func)])

    # --- math -------------------------------------------------------------------------------------
    def math(self, b, name, args, ty):
        base = _LIBM.get(name)
        if base is None:
            return None
        if isinstance(ty, ir.DoubleType):
            symbol = base
        elif isinstance(ty, ir.FloatType):
            symbol = base + "f"
        else:
            return None
        return b.call(_declare(b.module, symbol, ty, [ty] * len(args)), args)

    def map_extern(self, symbol):
        """The toy's math library has the portable functions (those with an ocml counterpart),
        named ``toy_<name>``; libdevice's conversions, bit tricks and directed roundings it has not."""
        portable = ocml_name(symbol)
        return None if portable is None or portable == symbol else "toy_" + portable.removeprefix("__ocml_")
