"""The target-info interface: everything the shared TTGIR -> LLVM lowering asks of a GPU vendor.

The lowering (:mod:`tritium.conversion.ttgir_to_llvm`) builds LLVM IR with ``llvmlite.ir``; where an
instruction or convention differs between vendors it calls one of these methods with the current
``llvmlite.ir.IRBuilder``.  A plugin subclasses :class:`TargetInfo` (NVIDIA: PTX special registers,
inline PTX for predicated vector loads, ``ptx_kernel``; AMD: ``amdgpu_kernel``, ``ds_bpermute``...).
Nothing in the core assumes a warp size: it always asks :attr:`warp_size`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import llvmlite.ir as ir

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))


class TargetInfo(ABC):
    """One GPU target.  ``builder`` arguments are ``llvmlite.ir.IRBuilder`` positioned where the
    instruction goes; values are ``llvmlite.ir`` values."""

    #: address spaces of global and shared memory in the target's LLVM data layout
    global_address_space: int = 1
    shared_address_space: int = 3
    triple: str = ""
    data_layout: str = ""
    #: conversions whose elements stay in their warp move by lane exchanges (``shuffle_xor``), one
    #: per register at most, instead of a round trip through shared memory; the backend's scratch
    #: rule for ``ttg.convert_layout`` must then be ``tritium.ttgir.scratch.convert_scratch_in_warp``
    warp_exchange: bool = False
    #: conversions of 8- and 16-bit elements into a matrix unit's operand that stay in their warp
    #: fetch packed words across lanes (``shuffle_idx``, one a word and source lane) and pick their
    #: elements out, instead of a round trip through shared memory (fp8 attention's P into wgmma's
    #: A); the scratch rule must then be ``tritium.ttgir.scratch.convert_scratch_gathering``
    warp_gather: bool = False

    @property
    @abstractmethod
    def warp_size(self) -> int:
        """Threads per warp (wavefront): 32 on NVIDIA, 64 on CDNA."""

    # --- ids ---------------------------------------------------------------------------------
    @abstractmethod
    def thread_id(self, builder: ir.IRBuilder) -> ir.Value:
        """Linear thread index in the block (x only: the lowering launches 1-D blocks), i32."""

    @abstractmethod
    def program_id(self, builder: ir.IRBuilder, axis: int) -> ir.Value:
        """Block index along ``axis`` (0, 1, 2), i32."""

    @abstractmethod
    def num_programs(self, builder: ir.IRBuilder, axis: int) -> ir.Value:
        """Grid size along ``axis``, i32."""

    def block_index(self, builder: ir.IRBuilder) -> ir.Value:
        """This block's index among all the launch's blocks, x fastest (i32): which part of the
        launch's global scratch is its own.  A target whose programs span several blocks counts
        blocks, not programs."""
        x, y, z = (self.program_id(builder, a) for a in range(3))
        nx, ny = (self.num_programs(builder, a) for a in range(2))
        return builder.add(x, builder.mul(nx, builder.add(y, builder.mul(ny, z))))

    def lane_id(self, builder: ir.IRBuilder, tid: ir.Value) -> ir.Value:
        return builder.urem(tid, ir.Constant(I32, self.warp_size))

    def warp_id(self, builder: ir.IRBuilder, tid: ir.Value) -> ir.Value:
        return builder.udiv(tid, ir.Constant(I32, self.warp_size))

    # --- warp-level data movement -------------------------------------------------------------
    @abstractmethod
    def shuffle_xor(self, builder: ir.IRBuilder, value: ir.Value, mask: int) -> ir.Value:
        """Value held by lane ``lane ^ mask`` (any 32-bit type; the core splits/joins wider ones)."""

    @abstractmethod
    def shuffle_idx(self, builder: ir.IRBuilder, value: ir.Value, lane: ir.Value) -> ir.Value:
        """Value held by lane ``lane`` (i32) of the same warp (32-bit types)."""

    @abstractmethod
    def barrier(self, builder: ir.IRBuilder) -> None:
        """Block-wide execution barrier that also orders shared-memory accesses."""

    # --- memory -------------------------------------------------------------------------------
    #: whether :meth:`store_matrices` exists (a warp-wide store of 8x8 tiles of 16-bit elements)
    stores_matrices = False

    def store_matrices(self, builder: ir.IRBuilder, row_ptr: ir.Value, words: list[ir.Value]) -> None:
        """Warp-wide store of ``len(words)`` (1, 2 or 4) 8x8 tiles of 16-bit elements to shared
        memory: tile ``i`` row ``j`` goes to the 16 bytes at lane ``8 i + j``'s ``row_ptr``; its
        columns ``2c, 2c + 1`` are ``words[i]`` (an i32 pair) of lane ``4 j + c``."""
        raise NotImplementedError(f"{type(self).__name__} has no matrix store")

    #: whether a tile written into a swizzled shared buffer is written grouped by the swizzled
    #: part of its addresses (all vectors sharing a base register, in offset order, then the
    #: next base) rather than in register order: a backend that pairs two writes of one base
    #: register into one instruction (AMD's ``ds_write2st64``) can then pair them, as no write
    #: to another, possibly overlapping, base sits between them
    shared_writes_by_base = False

    #: whether each vector access of a masked ``tt.load`` takes its predicate from the first
    #: register of the mask's constancy block (axis info) that holds it, so that the compares of
    #: the other registers of the block go unused and are dropped
    masks_by_constancy = False

    #: A tensor ``tt.atomic_rmw`` with ``acq_rel`` semantics that lowers to several instructions
    #: takes ``release`` on its first, ``acquire`` on its last and ``relaxed`` between (Triton's
    #: AMD lowering: one cache writeback and one invalidation for the whole op instead of one each
    #: an instruction); False: ``acq_rel`` on every instruction
    atomic_acq_rel_once = False

    @abstractmethod
    def shared_base(self, module: ir.Module) -> ir.GlobalVariable:
        """The dynamic shared-memory array of the module (created once); offsets are in bytes."""

    @abstractmethod
    def global_load(self, builder: ir.IRBuilder, ptr: ir.Value, word_bits: int, n_words: int,
                    pred: ir.Value | None, other: list[ir.Value] | None, cache: str, evict: str,
                    volatile: bool) -> list[ir.Value]:
        """Load ``n_words`` words of ``word_bits`` bits (8, 16, 32, 64) starting at ``ptr`` (one
        vector access, aligned to its size) when ``pred`` (i1, None = always) holds, else yield
        ``other`` (the words' integer values; the core passes zeros when the load has none, so
        ``other`` is None only when ``pred`` is).  ``cache`` is ``none``, ``ca``,
        ``cg``, ``cv``...; ``evict`` ``evict_normal``/``evict_first``/``evict_last``.  Returns
        ``n_words`` integers of ``word_bits`` bits."""

    @abstractmethod
    def global_store(self, builder: ir.IRBuilder, ptr: ir.Value, words: list[ir.Value], word_bits: int,
                     pred: ir.Value | None, cache: str, evict: str) -> None:
        """Store ``words`` (integers of ``word_bits`` bits) as one vector at ``ptr`` when ``pred``."""

    #: Buffer accesses (a base pointer in uniform registers and a 32-bit byte offset a lane, the
    #: hardware dropping accesses past the buffer's end): the byte offsets they may reach, or None
    #: where the target has none.  The core uses them for loads and stores whose pointers are
    #: ``splat(base) + offsets`` with offsets proven in ``[0, limit)`` (``value_range``).
    buffer_offset_limit: int | None = None

    def buffer_load(self, builder: ir.IRBuilder, base: ir.Value, byte_offset: ir.Value, word_bits: int,
                    n_words: int, pred: ir.Value | None, other: list[ir.Value] | None) -> list[ir.Value]:
        """As :meth:`global_load`, from ``base + byte_offset`` (``base`` uniform)."""
        raise NotImplementedError

    def buffer_store(self, builder: ir.IRBuilder, base: ir.Value, byte_offset: ir.Value, words: list[ir.Value],
                     word_bits: int, pred: ir.Value | None) -> None:
        """As :meth:`global_store`, to ``base + byte_offset`` (``base`` uniform)."""
        raise NotImplementedError

    @abstractmethod
    def atomic_rmw(self, builder: ir.IRBuilder, op: str, ptr: ir.Value, value: ir.Value, pred: ir.Value,
                   sem: str, scope: str) -> ir.Value:
        """Atomic read-modify-write on one element; ``op`` is a ``tt.atomic_rmw`` keyword (``add``,
        ``fadd``, ``max``, ``umin``, ``exch``...), ``sem`` ``relaxed``/``acquire``/``release``/``acq_rel``,
        ``scope`` ``gpu``/``cta``/``sys``.  Returns the old value (undefined where ``pred`` is false)."""

    def atomic_vector(self, op: str, ty: ir.Type) -> int:
        """Most elements of type ``ty`` one ``op`` atomic may update at consecutive, aligned
        addresses (:meth:`atomic_rmw_vector`); 1 where the target has only scalar atomics."""
        return 1

    def atomic_rmw_vector(self, builder: ir.IRBuilder, op: str, ptr: ir.Value, values: list[ir.Value],
                          pred: ir.Value, sem: str, scope: str) -> list[ir.Value]:
        """:meth:`atomic_rmw` on ``len(values)`` consecutive elements from ``ptr`` (aligned to their
        size, at most :meth:`atomic_vector`) in one instruction; each element is updated atomically
        on its own.  Returns the old values."""
        raise NotImplementedError(f"{type(self).__name__} has no vector atomics")

    @abstractmethod
    def atomic_cas(self, builder: ir.IRBuilder, ptr: ir.Value, cmp: ir.Value, value: ir.Value, pred: ir.Value,
                   sem: str, scope: str) -> ir.Value:
        """Atomic compare-and-swap; returns the old value."""

    # --- kernels and functions ----------------------------------------------------------------
    @abstractmethod
    def make_kernel(self, fn: ir.Function, num_warps: int, shared_bytes: int) -> None:
        """Give ``fn`` the kernel calling convention and attributes (max threads per block...)."""

    # --- debugging ----------------------------------------------------------------------------
    @abstractmethod
    def printf(self, builder: ir.IRBuilder, fmt: str, args: list[ir.Value]) -> None:
        """Device printf of ``fmt`` (C format) with ``args`` (i32, i64, double, pointers)."""

    @abstractmethod
    def assert_fail(self, builder: ir.IRBuilder, message: str, file: str, func: str, line: int) -> None:
        """Report a failed device assertion and stop the kernel (called under the failing branch)."""

    # --- plugin-owned lowerings ----------------------------------------------------------------
    def op_lowering(self, op):
        """A lowering ``fn(function_lowering, op)`` for ``op`` that replaces the shared one, or None.

        Asked before the core's table for every op: a plugin lowers its own ops (``ttng.*``,
        ``amdg.*``) and generic ops whose operands carry its encodings (``tt.dot`` with an
        ``nvidia_mma`` or ``amd_mfma`` result) here, and returns None for everything else."""
        return None

    def convert_scratch_encoding(self, src_t, dst_t):
        """The shared layout a ``ttg.convert_layout`` from tensor type ``src_t`` to ``dst_t`` goes
        through: a ``#ttg.swizzled_shared`` encoding that is a bit map over the shape
        (``is_linear``), e.g. one whose vectors are the matrix instruction's K runs when ``dst_t``
        is a dot operand; or None (default) for the core's row-major scratch with padded rows."""
        return None

    # --- math ---------------------------------------------------------------------------------
    def math(self, builder: ir.IRBuilder, name: str, args: list[ir.Value], ty: ir.Type) -> ir.Value | None:
        """Lower elementwise math op ``name`` (``math.exp``, ``math.erf``, ``tt.precise_sqrt``...) on
        scalars of type ``ty``; return None to let the core use the generic LLVM intrinsic.  Also asked
        for ``arith.divf`` (``/``, which need not be correctly rounded; None: LLVM's ``fdiv``)."""
        return None

    def byte_permute(self, builder: ir.IRBuilder, x: ir.Value, y: ir.Value, selector: ir.Value) -> ir.Value | None:
        """Four bytes picked from the eight of i32 words ``x`` (bytes 0-3) and ``y`` (4-7): byte
        ``j`` of the result is the one nibble ``j`` of i32 ``selector`` names (NVIDIA's ``prmt``);
        None (default) where the target has no such instruction."""
        return None

    def f32_to_fp8(self, builder: ir.IRBuilder, values: list[ir.Value], fmt: str) -> list[ir.Value] | None:
        """``values`` (f32) rounded to nearest even into fp8 format ``fmt`` (``"e4m3"``: fp8e4nv,
        ``"e5m2"``: fp8e5), saturating to the largest finite value, NaN kept NaN (what
        :func:`tritium.conversion.ttgir_to_llvm.fp8.f32_to_fp8` computes portably), as ``i8``s by a
        native conversion; None (default) for the core's integer arithmetic.  Called with a
        tensor's registers at once, so a target can convert them in pairs."""
        return None

    def bf16_to_f32(self, builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
        """Widen a ``bfloat`` to ``float`` (exact).  Default: LLVM's ``fpext``; a target without a
        native conversion may spell it as the bit shift it is (``tritium_amd`` does: LLVM's AMDGPU
        legalisation of thousands of ``fpext bfloat`` in one block takes minutes)."""
        return builder.fpext(x, ir.FloatType())

    #: the backend's name in error messages
    backend_name: str = "this"

    #: the constraint letters ``tl.inline_asm_elementwise`` may use on this target (LLVM stops the
    #: whole process on one it cannot allocate, so the lowering refuses others at the kernel's
    #: line first); None: not checked
    inline_asm_constraints: frozenset[str] | None = None

    def map_extern(self, symbol: str) -> str | None:
        """The symbol this target calls for ``tt.extern_elementwise`` symbol ``symbol`` (kernels
        spell device-library calls with libdevice's ``__nv_*`` names, the portable spelling), or
        None when the target has no such function: the core then reports it at the kernel's line,
        naming the function and the backend.  Default: call the symbol as written.  A backend with
        another math library maps the names (``tritium.conversion.extern_names.ocml_name``)."""
        return symbol

    def extern_function(self, builder: ir.IRBuilder, symbol: str, args: list[ir.Value], ret: ir.Type) -> ir.Value:
        """Call an external device-library function (``tt.extern_elementwise``)."""
        module = builder.module
        fn = module.globals.get(symbol)
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), symbol)
        return builder.call(fn, args)


def intrinsic(builder: ir.IRBuilder, name: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
    """Call LLVM intrinsic ``name`` (declared on first use)."""
    module = builder.module
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), name)
    return builder.call(fn, args)


def guarded(builder: ir.IRBuilder, pred: ir.Value | None, then, on_false: list, likely: bool = False) -> list:
    """``then()`` (which emits code and returns a list of values) under ``pred`` (i1; None or a
    constant true: always); its values where the predicate held, else ``on_false``'s, merged with
    phis.  What a target without predicated instructions builds its masked loads, stores and
    atomics from.  ``likely``: the branch says the predicate usually holds (a tile's mask is off
    only at the edges), so LLVM keeps the guarded code on the straight path."""
    if pred is None or (isinstance(pred, ir.Constant) and pred.constant == 1):
        return then()
    head = builder.block
    body = builder.append_basic_block("pred.then")
    done = builder.append_basic_block("pred.done")
    br = builder.cbranch(pred, body, done)
    if likely:
        br.set_metadata("prof", builder.module.add_metadata(
            ["branch_weights", ir.Constant(ir.IntType(32), 1024), ir.Constant(ir.IntType(32), 1)]))
    builder.position_at_end(body)
    vals = then()
    body_end = builder.block
    builder.branch(done)
    builder.position_at_end(done)
    out = []
    for v, other in zip(vals, on_false):
        phi = builder.phi(v.type)
        phi.add_incoming(v, body_end)
        phi.add_incoming(other, head)
        out.append(phi)
    return out
