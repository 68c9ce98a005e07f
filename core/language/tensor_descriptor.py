"""Tensor descriptors: ``tl.make_tensor_descriptor`` and the ``desc.load`` / ``desc.store`` /
``desc.gather`` / ``desc.scatter`` / ``desc.atomic_*`` of Triton's TMA-style API.

A descriptor is a named tuple of kernel values: a base pointer, the tensor's shape and strides
(tuples of run-time values or constexprs), the block shape and padding (compile-time), and, for
host descriptors on a backend that built a hardware descriptor, a pointer to that map.  Being a
tuple, it flows wherever tuples do: through ``if`` branches, loops (carried leaf by leaf), calls
of ``@jit`` functions (also ``noinline`` ones), return values and other tuples.

Its block accesses are emitted as block-pointer loads and stores with every dimension
boundary-checked, so each backend runs them through the path block pointers already take
(NVIDIA: ``rewrite_tensor_pointer`` to masked vector loads); lanes outside the tensor read zero
(or NaN with ``padding_option="nan"``) and stores there are dropped.  Gathers, scatters and
reductions (``atomic_add`` ...) are masked pointer accesses of the same elements.  A host-side
``tritium.tools.tensor_descriptor.TensorDescriptor`` passed as a kernel argument arrives as such
a descriptor (``tritium.runtime.descriptors``); where the backend's plugin built a hardware
descriptor for it (NVIDIA sm_90: a TMA tensor map), the descriptor also holds a pointer to that
map and its loads and stores become ``tt.descriptor_load`` / ``tt.descriptor_store``, which that
plugin lowers."""
from __future__ import annotations

import builtins

from . import dtypes as _dt, functions as F
from .core import _unwrap_if_constexpr as _u, builtin, constexpr, tensor, tuple as tl_tuple, tuple_type
from .core import semantics as _semantics
from .dtypes import pointer_type, uint8

#: the largest number of elements a block may have (as for any tensor)
_MAX_NUMEL = 1048576


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def validate_block_shape(shape) -> int:
    """The number of elements of a block of ``shape`` (constexpr powers of two)."""
    numel = 1
    for i, d in enumerate(shape):
        d = _u(d)
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"Shape element {i} must have type `constexpr[int]`, got `constexpr[{type(d).__name__}]`")
        if not _is_pow2(d):
            raise ValueError(f"Shape element {i} must be a power of 2")
        numel *= d
    if numel > _MAX_NUMEL:
        raise ValueError(f"numel ({numel}) exceeds triton maximum tensor numel ({_MAX_NUMEL})")
    return numel


class _fixed:
    """A descriptor's compile-time part (its block shape, its padding) as one leaf of the tuple:
    not a number, so loops never consider carrying it, and equal to the same part of another
    descriptor (so ``if`` branches that make the same descriptor merge)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        other = _u(other)
        return type(other) is _fixed and other.value == self.value

    def __hash__(self):
        return hash(self.value)

    def __repr__(self) -> str:
        return repr(self.value)


def _fixed_value(v):
    v = _u(v)
    return v.value if type(v) is _fixed else v


def _leaf(v):
    """A shape or stride entry as the descriptor keeps it: a tensor, or a plain Python int."""
    v = _u(v)
    return v if isinstance(v, tensor) else int(v)


class tensor_descriptor(tl_tuple):
    """What ``tl.make_tensor_descriptor`` returns (inside a kernel), and what a host
    ``TensorDescriptor`` argument is there.

    ``shape`` and ``strides`` are tuples of scalars, ``block_shape`` a tuple of ints (they compare
    equal to lists and tuples of the same numbers), ``dtype`` the element type."""

    _fields = ("base", "shape", "strides", "block_shape", "padding_option", "tensor_map")

    def __new__(cls, base, shape, strides, block_shape, padding_option="zero", tensor_map=None):
        # also rebuilt leaf by leaf by the code generator (control flow, calls), with the leaves
        # it was given (tensors and constexprs): kept as they are, no checks here
        def seq(v):
            return v if isinstance(v, tl_tuple) else tl_tuple(list(v))
        items = [base, seq(shape), seq(strides), block_shape, padding_option, tensor_map]
        obj = builtins.tuple.__new__(cls, items)
        obj._fields_names = cls._fields
        return obj

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):  # no field lookup through tl.tuple: the fields are properties
        raise AttributeError(f"'tensor_descriptor' object has no attribute '{name}'")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    __hash__ = builtins.object.__hash__

    # -- fields -------------------------------------------------------------------------------
    @property
    def base(self):
        return builtins.tuple.__getitem__(self, 0)

    @property
    def shape(self):
        return tl_tuple([_leaf(v) for v in builtins.tuple.__getitem__(self, 1)])

    @property
    def strides(self):
        return tl_tuple([_leaf(v) for v in builtins.tuple.__getitem__(self, 2)])

    @property
    def block_shape(self):
        return tl_tuple(list(_fixed_value(builtins.tuple.__getitem__(self, 3))))

    @property
    def padding_option(self) -> str:
        return _fixed_value(builtins.tuple.__getitem__(self, 4))

    @property
    def tensor_map(self):
        m = _u(builtins.tuple.__getitem__(self, 5))
        return m if isinstance(m, tensor) else None

    @property
    def dtype(self):
        return self.base.type.scalar.element_ty

    @property
    def block_type(self):
        return _dt.block_type(self.dtype, list(self.block_shape))

    @property
    def ndim(self) -> int:
        return len(self.block_shape)

    @property
    def type(self):
        return tuple_type([getattr(v, "type", type(v)) for v in self], list(self._fields))

    def __repr__(self) -> str:
        return f"tensor_descriptor<{self.dtype}, block {list(self.block_shape)}>"

    __str__ = __repr__

    # -- helpers ------------------------------------------------------------------------------
    def _offsets(self, offsets, what: str) -> list:
        offsets = _u(offsets)
        if isinstance(offsets, tensor):
            raise TypeError(f"descriptor {what} expects a list or tuple of {self.ndim} offsets, got a tensor")
        offsets = list(offsets) if isinstance(offsets, (builtins.tuple, list)) else [offsets]
        if len(offsets) != self.ndim:
            raise ValueError(f"expected {self.ndim} offsets, but got {len(offsets)}")
        return [_u(o) for o in offsets]

    def _block_ptr(self, offsets, builder):
        order = builtins.tuple(range(self.ndim - 1, -1, -1))
        return F.make_block_ptr(self.base, list(self.shape), list(self.strides), offsets, list(self.block_shape),
                                order, _builder=builder)

    def _check_value(self, value, what: str, builder):
        """``value`` as a tensor of the block's shape (scalars are broadcast to it)."""
        sem = _semantics.semantic
        value = _u(value)
        if isinstance(value, tensor) and value.type.is_block():
            if list(value.type.shape) != list(self.block_shape):
                raise ValueError(f"descriptor {what}: the value's shape {list(value.type.shape)} does not match "
                                 f"the descriptor's block shape {list(self.block_shape)}")
            return value
        return sem.broadcast_to_shape(sem.to_tensor(value, builder), list(self.block_shape), builder)

    def _pointers(self, index_lists, builder):
        """Pointers to, and the in-bounds mask of, the elements at the outer product of
        ``index_lists`` (one 1-d int tensor per dimension): tensors of the block's rank."""
        sem = _semantics.semantic
        semt = _semantics.semantic_tensor
        rank = len(index_lists)
        ptr, mask = self.base, None
        for d, (idx, size, stride) in enumerate(zip(index_lists, self.shape, self.strides)):
            axes = [a for a in range(rank) if a != d]
            if axes:
                idx = semt.expand_dims(idx, axes, builder)
            inside = sem.and_(sem.greater_equal(idx, 0, builder), sem.less_than(idx, size, builder), builder)
            mask = inside if mask is None else sem.and_(mask, inside, builder)
            wide = sem.cast(idx, _dt.int64, builder)
            step = wide if (not isinstance(stride, tensor) and stride == 1) else sem.mul(wide, stride, builder)
            ptr = sem.add(ptr, step, builder)
        return ptr, mask

    def _block_pointers(self, offsets, builder):
        sem = _semantics.semantic
        semt = _semantics.semantic_tensor
        idx = []
        for off, b in zip(offsets, self.block_shape):
            r = semt.arange(0, b, builder)
            off = sem.cast(sem.to_tensor(off, builder), _dt.int32, builder) if isinstance(off, tensor) else int(off)
            idx.append(sem.add(r, off, builder))
        return self._pointers(idx, builder)

    def _fill(self):
        return float("nan") if self.padding_option == "nan" else 0

    # -- block loads and stores -----------------------------------------------------------------
    @builtin
    def load(self, offsets, _builder=None):
        """The block at ``offsets`` (one per dimension); elements outside the tensor read zero
        (NaN with ``padding_option="nan"``)."""
        offsets = self._offsets(offsets, "load")
        if self.tensor_map is not None:
            descriptor_load = _semantics.semantic_descriptor.descriptor_load
            return descriptor_load(self.tensor_map, self.dtype, list(self.block_shape), offsets, _builder)
        return F.load(self._block_ptr(offsets, _builder), boundary_check=builtins.tuple(range(self.ndim)),
                      padding_option=self.padding_option, _builder=_builder)

    @builtin
    def store(self, offsets, value, _builder=None):
        """Store ``value`` (the block's shape; cast to the descriptor's element type) at
        ``offsets``; elements outside the tensor are dropped."""
        sem = _semantics.semantic
        offsets = self._offsets(offsets, "store")
        value = sem.cast(self._check_value(value, "store", _builder), self.dtype, _builder)
        if self.tensor_map is not None:
            descriptor_store = _semantics.semantic_descriptor.descriptor_store
            return descriptor_store(self.tensor_map, self.dtype, list(self.block_shape), offsets, value, _builder)
        return F.store(self._block_ptr(offsets, _builder), value, boundary_check=builtins.tuple(range(self.ndim)),
                       _builder=_builder)

    # -- reductions into the tensor -------------------------------------------------------------
    def _reduce(self, kind: str, offsets, value, builder):
        sem = _semantics.semantic
        sm = _semantics.semantic_memory
        offsets = self._offsets(offsets, f"atomic_{kind}")
        value = self._check_value(value, f"atomic_{kind}", builder)
        dt = self.dtype
        native = _native_tma(builder)
        allowed = (_NATIVE_REDUCE if native else _FALLBACK_REDUCE)[kind]
        if dt not in allowed:
            note = (" (16-bit floats need a target with native tensor-memory reductions: NVIDIA sm_90 or newer)"
                    if kind in ("min", "max") and dt in (_dt.float16, _dt.bfloat16) else "")
            raise TypeError(f"descriptor atomic_{kind} does not support {dt} elements; supported: "
                            f"{', '.join(sorted(str(t) for t in allowed))}{note}")
        value = sem.cast(value, dt, builder)
        ptr, mask = self._block_pointers(offsets, builder)
        if kind in ("min", "max") and dt in (_dt.float16, _dt.bfloat16):
            _cas_minmax(kind, ptr, value, mask, self.base, builder)
            return None
        getattr(sm, f"atomic_{kind}")(ptr, value, mask, "relaxed", "gpu", builder)
        return None

    @builtin
    def atomic_add(self, offsets, value, _builder=None):
        """Add ``value`` (the block's shape) into the tensor at ``offsets``, element by element,
        atomically; elements outside the tensor are dropped."""
        return self._reduce("add", offsets, value, _builder)

    @builtin
    def atomic_min(self, offsets, value, _builder=None):
        return self._reduce("min", offsets, value, _builder)

    @builtin
    def atomic_max(self, offsets, value, _builder=None):
        return self._reduce("max", offsets, value, _builder)

    @builtin
    def atomic_and(self, offsets, value, _builder=None):
        return self._reduce("and", offsets, value, _builder)

    @builtin
    def atomic_or(self, offsets, value, _builder=None):
        return self._reduce("or", offsets, value, _builder)

    @builtin
    def atomic_xor(self, offsets, value, _builder=None):
        return self._reduce("xor", offsets, value, _builder)

    # -- rows gathered and scattered ------------------------------------------------------------
    def _check_rows(self, what: str, x_offsets):
        x_offsets = _u(x_offsets)
        block = list(self.block_shape)
        if self.ndim != 2:
            raise ValueError(f"descriptor must be 2D, but got {block}")
        if block[0] != 1:
            raise ValueError(f"descriptor block must have 1 row, but got {block}")
        if not isinstance(x_offsets, tensor) or not x_offsets.type.is_block() or len(x_offsets.type.shape) != 1:
            shape = list(x_offsets.type.shape) if isinstance(x_offsets, tensor) and x_offsets.type.is_block() else []
            raise ValueError(f"x offsets must be 1D, but got {shape}")
        if not x_offsets.type.scalar.is_int():
            raise TypeError(f"descriptor {what}: x offsets must be integers, got {x_offsets.type.scalar}")
        rows = x_offsets.type.shape[0]
        if rows < 8:
            raise ValueError(f"descriptor {what} must have at least 8 rows, but got {[rows]}")
        min_cols = 32 // self.dtype.primitive_bitwidth * 8
        if block[1] < min_cols:
            raise ValueError(f"descriptor {what} of {self.dtype} must have at least {min_cols} columns, but got "
                             f"{block[1]}")
        return x_offsets, rows

    def _row_pointers(self, x_offsets, y_offset, builder):
        sem = _semantics.semantic
        semt = _semantics.semantic_tensor
        cols = semt.arange(0, self.block_shape[1], builder)
        y = _u(y_offset)
        y = sem.cast(y, _dt.int32, builder) if isinstance(y, tensor) else int(y)
        return self._pointers([sem.cast(x_offsets, _dt.int32, builder), sem.add(cols, y, builder)], builder)

    @builtin
    def gather(self, *args, _builder=None):
        """``desc.gather(x_offsets, y_offset)``: the rows ``x_offsets`` (a 1-d tensor) of the
        columns ``y_offset .. y_offset + block_shape[1]`` of a 2-d descriptor whose block is one
        row; elements outside the tensor read as the padding."""
        sm = _semantics.semantic_memory
        sem = _semantics.semantic
        if len(args) != 2:
            raise ValueError(f"descriptor gather only supports 2D indexing, but got {len(args)}")
        x_offsets, _rows = self._check_rows("gather", args[0])
        ptr, mask = self._row_pointers(x_offsets, args[1], _builder)
        other = sem.to_tensor(self._fill(), _builder, self.dtype) if self.padding_option == "nan" else \
            sem.cast(sem.to_tensor(0, _builder), self.dtype, _builder)
        return sm.load(ptr, mask, other, (), "", "", "", False, _builder)

    @builtin
    def scatter(self, value, *args, _builder=None):
        """``desc.scatter(value, x_offsets, y_offset)``: write the rows of ``value`` to the rows
        ``x_offsets`` of the columns ``y_offset ..`` of a 2-d descriptor whose block is one row;
        elements outside the tensor are dropped."""
        sm = _semantics.semantic_memory
        sem = _semantics.semantic
        if len(args) != 2:
            raise ValueError(f"descriptor scatter only supports 2D indexing, but got {len(args)}")
        x_offsets, rows = self._check_rows("scatter", args[0])
        value = _u(value)
        want = [rows, self.block_shape[1]]
        if not isinstance(value, tensor) or not value.type.is_block() or list(value.type.shape) != want:
            got = list(value.type.shape) if isinstance(value, tensor) and value.type.is_block() else "a scalar"
            raise ValueError(f"descriptor scatter: the value's shape {got} does not match {want} "
                             "(rows of x offsets by the block's columns)")
        ptr, mask = self._row_pointers(x_offsets, args[1], _builder)
        sm.store(ptr, sem.cast(value, self.dtype, _builder), mask, (), "", "", _builder)
        return None


#: Triton's name for a descriptor whose shape and strides are not known (here every descriptor knows them)
tensor_descriptor_base = tensor_descriptor

_I = (_dt.uint32, _dt.int32, _dt.uint64, _dt.int64)
_NATIVE_REDUCE = {
    "add": {_dt.uint32, _dt.int32, _dt.uint64, _dt.float32, _dt.float16, _dt.bfloat16},
    "min": {*_I, _dt.float16, _dt.bfloat16},
    "max": {*_I, _dt.float16, _dt.bfloat16},
    "and": set(_I), "or": set(_I), "xor": set(_I),
}
_FALLBACK_REDUCE = {
    "add": {_dt.uint32, _dt.int32, _dt.uint64, _dt.float32, _dt.float16, _dt.bfloat16},
    "min": set(_I), "max": set(_I), "and": set(_I), "or": set(_I), "xor": set(_I),
}


def _native_tma(builder) -> bool:
    """Whether the target has tensor-memory reductions of its own (NVIDIA sm_90+): it then accepts
    the 16-bit float min/max that the others refuse."""
    t = getattr(builder, "target", None)
    if t is None or getattr(t, "backend", None) != "cuda":
        return False
    try:
        return int(t.arch) >= 90
    except (TypeError, ValueError):
        return False


def _cas_minmax(kind: str, ptr, value, mask, base, builder) -> None:
    """Atomic min/max of 16-bit floats by compare-and-swap, lane by lane until each lane's swap
    took (or had nothing to change): a ``scf.while`` over the block.  Lanes outside the tensor
    point at ``base`` and swap a value with itself, which changes nothing."""
    from xdsl.dialects import scf
    from xdsl.ir import Block, Region
    sem = _semantics.semantic
    sm = _semantics.semantic_memory
    ir_type = _semantics.builder.ir_type

    shape = list(value.type.shape)
    safe_ptr = sem.where(mask, ptr, sem.broadcast_to_shape(base, shape, builder), builder)
    pick = sem.minimum if kind == "min" else sem.maximum
    cur0 = sm.load(safe_ptr, None, None, (), "", "", "", False, builder)
    done0 = sem.not_(mask, builder)
    ty_v, ty_d = ir_type(cur0.type), ir_type(done0.type)

    before = Block(arg_types=[ty_v, ty_d])
    with builder.at(before):
        cur, done = tensor(before.args[0], cur0.type), tensor(before.args[1], done0.type)
        waiting = F.max(sem.cast(sem.not_(done, builder), _dt.int32, builder), axis=None, _builder=builder)
        pending = sem.greater_than(waiting, 0, builder)
        builder.insert(scf.ConditionOp(pending.handle, cur.handle, done.handle))
    body = Block(arg_types=[ty_v, ty_d])
    with builder.at(body):
        cur, done = tensor(body.args[0], cur0.type), tensor(body.args[1], done0.type)
        want = sem.where(done, cur, pick(cur, value, False, builder), builder)
        prev = sm.atomic_cas(safe_ptr, cur, want, "relaxed", "gpu", builder)
        same = sem.equal(sem.bitcast(prev, _dt.int16, builder), sem.bitcast(cur, _dt.int16, builder), builder)
        builder.insert(scf.YieldOp(prev.handle, sem.or_(done, same, builder).handle))
    builder.insert(scf.WhileOp([cur0.handle, done0.handle], [ty_v, ty_d], Region(before), Region(body)))


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero", _tensor_map=None, _builder=None):
    """A descriptor of the tensor at ``base`` with ``shape`` and ``strides`` (elements; the last
    stride must be 1), accessed in blocks of ``block_shape`` (powers of two, at least 16 bytes in
    the last dimension).  ``_tensor_map`` is for host descriptors only: a pointer to the backend's
    hardware descriptor of the same tensor (or its address as an integer), or False where the
    backend made none (the kernel then builds none either)."""
    base = _u(base)
    if not isinstance(base, tensor) or not base.type.is_ptr() or base.type.is_block():
        raise TypeError(f"make_tensor_descriptor expects a scalar pointer as base, got "
                        f"{base.type if isinstance(base, tensor) else base!r}")
    shape, strides = list(_u(shape)), list(_u(strides))
    block = [_u(b) for b in _u(block_shape)]
    ndim = len(shape)
    if not 1 <= ndim <= 5:
        raise ValueError(f"Expected 1 <= ndim <= 5 but got {ndim} dimensions")
    if len(strides) != ndim:
        raise ValueError(f"Expected {ndim} strides but got {len(strides)}")
    if len(block) != ndim:
        raise ValueError(f"Expected block_shape to have {ndim} dimensions but got {len(block)}")
    validate_block_shape(block)
    elt = base.type.scalar.element_ty
    elem_size = max(elt.primitive_bitwidth // 8, 1)
    if block[-1] * elem_size < 16:
        raise ValueError(f"Descriptor block shape must have at least 16 bytes in the last dimension, but got "
                         f"{block[-1]} * {elem_size} = {block[-1] * elem_size} bytes")
    last = _u(strides[-1])
    if not isinstance(last, tensor) and last != 1:
        raise ValueError(f"Tensor descriptor last dim must be 1 but got {last}")
    for what, vals in (("shape", shape), ("strides", strides)):
        for v in vals:
            v = _u(v)
            if isinstance(v, tensor) and (v.type.is_block() or not v.type.scalar.is_int()):
                raise TypeError(f"make_tensor_descriptor: {what} entries must be integer scalars, got {v.type}")
    padding = _u(padding_option)
    if padding not in ("zero", "nan"):
        raise ValueError(f"padding_option must be 'zero' or 'nan', got {padding!r}")
    if padding == "nan" and elt.is_int():
        raise ValueError("Padding option `nan` is not supported for integer blocks")
    tensor_map = _u(_tensor_map)
    host_unmapped = tensor_map is False  # a host descriptor the backend made no map for
    if host_unmapped:
        tensor_map = None
    if isinstance(tensor_map, tensor) and tensor_map.type.is_int() and not tensor_map.type.is_block() \
            and tensor_map.type.int_bitwidth == 64 and _builder is not None:
        # the map's device address as an integer argument (what host-descriptor launches pass)
        semantic = _semantics.semantic
        tensor_map = semantic.cast(tensor_map, pointer_type(uint8), _builder)
    if tensor_map is not None and not (isinstance(tensor_map, tensor) and tensor_map.type.is_ptr()):
        raise TypeError(f"make_tensor_descriptor: _tensor_map must be a pointer or its 64-bit address, "
                        f"got {tensor_map!r}")
    if tensor_map is None and _builder is not None and not host_unmapped:
        # the backend's own hardware descriptor, built by the kernel, where it takes this one
        tensor_map = _semantics.semantic_descriptor.device_tensor_map(
            base, [_u(s) for s in shape], [_u(s) for s in strides], list(block), padding, _builder)
    def kept(v):  # a leaf as tuples of kernel values hold it: a tensor or a constexpr
        v = _u(v)
        return v if isinstance(v, tensor) else constexpr(v)
    return tensor_descriptor(base, [kept(s) for s in shape], [kept(s) for s in strides],
                             _fixed(builtins.tuple(int(b) for b in block)), _fixed(padding), kept(tensor_map))


@builtin
def load_tensor_descriptor(desc, offsets, _builder=None):
    """``desc.load(offsets)``."""
    return _u(desc).load(offsets, _builder=_builder)


@builtin
def store_tensor_descriptor(desc, offsets, value, _builder=None):
    """``desc.store(offsets, value)``."""
    return _u(desc).store(offsets, value, _builder=_builder)
