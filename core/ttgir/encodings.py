"""Layout encodings of the ``ttg`` dialect, printed as in Triton 3.x::

    #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
    #ttg.slice<{dim = 1, parent = #ttg.blocked<{...}>}>
    #ttg.dot_op<{opIdx = 0, parent = #ttg.blocked<{...}>}>          (kWidth = N when non-zero)
    #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
    #ttg.shared_memory                                                (the memory space)

A *distributed* encoding (every tensor value in registers) implements :class:`DistributedEncoding`;
its only obligation beyond the four classic fields is ``linear_layout(shape)``, from which
``tritium.ttgir.layouts`` derives every quantity a pass or the lowering needs.  Vendor encodings
(``ttg.nvidia_mma``, ``ttg.amd_mfma``) subclass it in their plugin and are registered through the
``tritium_layout_encodings`` hook; the core never names them.
"""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from .linear_layout import LinearLayout, fit_to_shape, identity_bases, is_pow2


def ints(values: Sequence[int]) -> ArrayAttr:
    return ArrayAttr([IntAttr(int(v)) for v in values])


def _tuple(a: ArrayAttr) -> tuple[int, ...]:
    return tuple(x.data for x in a.data)


# --- the `<{key = value, ...}>` syntax shared by all encodings ------------------------------------
def parse_fields(parser: AttrParser, kinds: dict[str, str]) -> dict[str, object]:
    """Parse ``<{k = v, ...}>``; ``kinds[k]`` is ``"int"``, ``"ints"`` (``[1, 2]``), ``"intss"``
    (``[[0, 1], [2, 0]]``), ``"bool"`` (``true``/``false``) or ``"attr"``."""
    out: dict[str, object] = {}
    parser.parse_punctuation("<")
    parser.parse_punctuation("{")

    def field():
        key = parser.parse_identifier()
        if key not in kinds:
            parser.raise_error(f"unexpected field {key!r}, expected one of {sorted(kinds)}")
        parser.parse_punctuation("=")
        kind = kinds[key]
        if kind == "int":
            out[key] = parser.parse_integer()
        elif kind == "ints":
            out[key] = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        elif kind == "intss":
            out[key] = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE,
                lambda: parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer))
        elif kind == "bool":
            word = parser.parse_identifier()
            if word not in ("true", "false"):
                parser.raise_error(f"{key} must be true or false, got {word!r}")
            out[key] = word == "true"
        else:
            out[key] = parser.parse_attribute()

    parser.parse_comma_separated_list(parser.Delimiter.NONE, field)
    parser.parse_punctuation("}")
    parser.parse_punctuation(">")
    return out


def print_fields(printer: Printer, fields: list[tuple[str, object]]) -> None:
    def one(kv):
        key, val = kv
        printer.print_string(f"{key} = ")
        if isinstance(val, Attribute):
            printer.print_attribute(val)
        elif isinstance(val, tuple) and val and isinstance(val[0], tuple):
            printer.print_string("[" + ", ".join("[" + ", ".join(map(str, v)) + "]" for v in val) + "]")
        elif isinstance(val, tuple):
            printer.print_string("[" + ", ".join(map(str, val)) + "]")
        else:
            printer.print_string(str(val))

    printer.print_string("<{")
    printer.print_list(fields, one)
    printer.print_string("}>")


# --- interfaces ---------------------------------------------------------------------------------
class DistributedEncoding:
    """What every register layout offers.  Implement ``linear_layout``; the rest has defaults.

    ``size_per_thread``, ``threads_per_warp``, ``warps_per_cta`` and ``order`` are Triton's fields
    (per tensor dimension; ``order[0]`` the fastest-varying dimension).  ``threads_per_warp`` always
    multiplies to the target's warp size (32 or 64).
    """

    @property
    def rank(self) -> int:
        return len(self.order)

    @property
    def size_per_thread(self) -> tuple[int, ...]:
        raise NotImplementedError

    @property
    def threads_per_warp(self) -> tuple[int, ...]:
        raise NotImplementedError

    @property
    def warps_per_cta(self) -> tuple[int, ...]:
        raise NotImplementedError

    @property
    def order(self) -> tuple[int, ...]:
        raise NotImplementedError

    @property
    def num_warps(self) -> int:
        out = 1
        for w in self.warps_per_cta:
            out *= w
        return out

    @property
    def warp_size(self) -> int:
        out = 1
        for t in self.threads_per_warp:
            out *= t
        return out

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        """Bases mapping (register, lane, warp) bits to coordinates of a ``shape`` tensor."""
        raise NotImplementedError

    def dot_operand_linear_layout(self, op_idx: int, k_width: int, shape: Sequence[int]) -> LinearLayout:
        """Layout of operand ``op_idx`` of a dot whose accumulator has this layout (``dot_op``)."""
        raise NotImplementedError(f"{self.name} has no dot operand layout")


class SharedEncoding:
    """Layout of a buffer in shared memory: ``offset(coords, shape)`` gives the element offset."""

    @property
    def order(self) -> tuple[int, ...]:
        raise NotImplementedError


# --- generic distributed encodings ---------------------------------------------------------------
_BLOCKED_FIELDS = {"sizePerThread": "ints", "threadsPerWarp": "ints", "warpsPerCTA": "ints", "order": "ints",
                   "CTAsPerCGA": "ints", "CTASplitNum": "ints", "CTAOrder": "ints"}


@irdl_attr_definition
class BlockedEncodingAttr(ParametrizedAttribute, DistributedEncoding):
    """Each thread holds a ``sizePerThread`` block; lanes then warps tile the tensor along ``order``.
    The CTA fields (multi-CTA clusters) are kept and printed when given; layouts assume one CTA."""

    name = "ttg.blocked"

    sizePerThread: ArrayAttr
    threadsPerWarp: ArrayAttr
    warpsPerCTA: ArrayAttr
    order_: ArrayAttr
    cta: ArrayAttr  # [CTAsPerCGA, CTASplitNum, CTAOrder] or empty

    def __init__(self, size_per_thread: Sequence[int], threads_per_warp: Sequence[int],
                 warps_per_cta: Sequence[int], order: Sequence[int],
                 cta: Sequence[Sequence[int]] = ()):
        super().__init__(ints(size_per_thread), ints(threads_per_warp), ints(warps_per_cta), ints(order),
                         ArrayAttr([ints(c) for c in cta]))

    size_per_thread = property(lambda self: _tuple(self.sizePerThread))
    threads_per_warp = property(lambda self: _tuple(self.threadsPerWarp))
    warps_per_cta = property(lambda self: _tuple(self.warpsPerCTA))
    order = property(lambda self: _tuple(self.order_))

    def shape_per_cta_tile(self) -> tuple[int, ...]:
        return tuple(s * t * w for s, t, w in zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta))

    def verify(self) -> None:
        fields = (self.size_per_thread, self.threads_per_warp, self.warps_per_cta, self.order)
        if len({len(f) for f in fields}) != 1:
            raise VerifyException(f"#ttg.blocked fields must have equal rank, got {fields}")
        if sorted(self.order) != list(range(len(self.order))):
            raise VerifyException(f"#ttg.blocked order must be a permutation, got {list(self.order)}")
        if not all(is_pow2(v) for f in fields[:3] for v in f):
            raise VerifyException("#ttg.blocked sizes must be powers of two")
        if self.cta.data and len(self.cta.data) != 3:
            raise VerifyException("#ttg.blocked CTA layout needs CTAsPerCGA, CTASplitNum and CTAOrder")

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        o, spt, tpw = self.order, self.size_per_thread, self.threads_per_warp
        lane_start = spt
        warp_start = tuple(s * t for s, t in zip(spt, tpw))
        return fit_to_shape(identity_bases(spt, o), identity_bases(tpw, o, lane_start),
                            identity_bases(self.warps_per_cta, o, warp_start), tuple(shape), o)

    def dot_operand_linear_layout(self, op_idx: int, k_width: int, shape: Sequence[int]) -> LinearLayout:
        # FMA dot: a thread holds whole rows of A (columns of B) along K; the accumulator's lanes and
        # warps along the other output dimension hold duplicates.
        rank = len(shape)
        k_dim = rank - 1 if op_idx == 0 else rank - 2
        parent_shape = list(shape)
        parent_shape[k_dim] = 1
        ll = self.linear_layout(parent_shape)
        k_regs = identity_bases(tuple(shape[d] if d == k_dim else 1 for d in range(rank)), tuple(range(rank)))
        return LinearLayout(tuple(shape), tuple(k_regs) + ll.register, ll.lane, ll.warp)

    def print_parameters(self, printer: Printer) -> None:
        fields = [("sizePerThread", self.size_per_thread), ("threadsPerWarp", self.threads_per_warp),
                  ("warpsPerCTA", self.warps_per_cta), ("order", self.order)]
        for key, a in zip(("CTAsPerCGA", "CTASplitNum", "CTAOrder"), self.cta.data):
            fields.append((key, _tuple(a)))
        print_fields(printer, fields)

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        f = parse_fields(parser, _BLOCKED_FIELDS)
        cta = [ints(f[k]) for k in ("CTAsPerCGA", "CTASplitNum", "CTAOrder") if k in f]
        return (ints(f["sizePerThread"]), ints(f["threadsPerWarp"]), ints(f["warpsPerCTA"]), ints(f["order"]),
                ArrayAttr(cta))


@irdl_attr_definition
class SliceEncodingAttr(ParametrizedAttribute, DistributedEncoding):
    """The parent layout with dimension ``dim`` removed: what a reduction along ``dim`` produces and
    what ``tt.expand_dims(axis=dim)`` consumes.  Threads that differed only along ``dim`` now hold
    the same elements."""

    name = "ttg.slice"

    dim_: IntAttr
    parent: Attribute

    def __init__(self, dim: int, parent: Attribute):
        super().__init__(IntAttr(dim), parent)

    @property
    def dim(self) -> int:
        return self.dim_.data

    def _drop(self, t: tuple[int, ...]) -> tuple[int, ...]:
        return t[:self.dim] + t[self.dim + 1:]

    size_per_thread = property(lambda self: self._drop(self.parent.size_per_thread))
    threads_per_warp = property(lambda self: self._drop(self.parent.threads_per_warp))
    warps_per_cta = property(lambda self: self._drop(self.parent.warps_per_cta))

    @property
    def order(self) -> tuple[int, ...]:
        return tuple(o if o < self.dim else o - 1 for o in self.parent.order if o != self.dim)

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps

    @property
    def warp_size(self) -> int:
        return self.parent.warp_size

    def verify(self) -> None:
        if not isinstance(self.parent, DistributedEncoding):
            raise VerifyException(f"#ttg.slice parent must be a distributed encoding, got {self.parent}")
        if not 0 <= self.dim < self.parent.rank:
            raise VerifyException(f"#ttg.slice dim {self.dim} out of range for rank {self.parent.rank}")

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        parent_shape = list(shape)
        parent_shape.insert(self.dim, 1)
        ll = self.parent.linear_layout(parent_shape)
        drop = lambda bases: tuple(self._drop(v) for v in bases)  # noqa: E731
        return LinearLayout(tuple(shape), drop(ll.register), drop(ll.lane), drop(ll.warp))

    def print_parameters(self, printer: Printer) -> None:
        print_fields(printer, [("dim", self.dim), ("parent", self.parent)])

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        f = parse_fields(parser, {"dim": "int", "parent": "attr"})
        return (IntAttr(f["dim"]), f["parent"])


@irdl_attr_definition
class DotOperandEncodingAttr(ParametrizedAttribute, DistributedEncoding):
    """Operand ``opIdx`` (0 = A, 1 = B) of a ``tt.dot`` whose result has layout ``parent``;
    ``kWidth`` is the number of consecutive K elements a thread holds for MMA parents (0 for FMA)."""

    name = "ttg.dot_op"

    opIdx: IntAttr
    parent: Attribute
    kWidth: IntAttr

    def __init__(self, op_idx: int, parent: Attribute, k_width: int = 0):
        super().__init__(IntAttr(op_idx), parent, IntAttr(k_width))

    @property
    def op_idx(self) -> int:
        return self.opIdx.data

    @property
    def k_width(self) -> int:
        return self.kWidth.data

    threads_per_warp = property(lambda self: self.parent.threads_per_warp)
    warps_per_cta = property(lambda self: self.parent.warps_per_cta)
    order = property(lambda self: self.parent.order)
    num_warps = property(lambda self: self.parent.num_warps)
    warp_size = property(lambda self: self.parent.warp_size)

    @property
    def size_per_thread(self) -> tuple[int, ...]:
        return self.parent.size_per_thread

    def verify(self) -> None:
        if self.op_idx not in (0, 1):
            raise VerifyException(f"#ttg.dot_op opIdx must be 0 or 1, got {self.op_idx}")
        if not isinstance(self.parent, DistributedEncoding):
            raise VerifyException(f"#ttg.dot_op parent must be a distributed encoding, got {self.parent}")

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        return self.parent.dot_operand_linear_layout(self.op_idx, self.k_width, shape)

    def print_parameters(self, printer: Printer) -> None:
        fields = [("opIdx", self.op_idx), ("parent", self.parent)]
        if self.k_width:
            fields.append(("kWidth", self.k_width))
        print_fields(printer, fields)

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        f = parse_fields(parser, {"opIdx": "int", "parent": "attr", "kWidth": "int"})
        return (IntAttr(f["opIdx"]), f["parent"], IntAttr(f.get("kWidth", 0)))


# --- shared memory -------------------------------------------------------------------------------
@irdl_attr_definition
class SwizzledSharedEncodingAttr(ParametrizedAttribute, SharedEncoding):
    """Row-major (per ``order``) shared buffer whose ``vec``-element groups are XOR-swizzled by the
    row's phase ``(row // perPhase) % maxPhase`` to avoid bank conflicts."""

    name = "ttg.swizzled_shared"

    vec: IntAttr
    perPhase: IntAttr
    maxPhase: IntAttr
    order_: ArrayAttr
    cta: ArrayAttr

    def __init__(self, vec: int, per_phase: int, max_phase: int, order: Sequence[int],
                 cta: Sequence[Sequence[int]] = ()):
        super().__init__(IntAttr(vec), IntAttr(per_phase), IntAttr(max_phase), ints(order),
                         ArrayAttr([ints(c) for c in cta]))

    order = property(lambda self: _tuple(self.order_))

    def offset(self, coords: Sequence[int], shape: Sequence[int]) -> int:
        """Element offset of ``coords`` in a buffer of ``shape``."""
        fast, slow = self.order[0], (self.order[1] if len(self.order) > 1 else None)
        col = coords[fast]
        if slow is not None:
            phase = (coords[slow] // self.perPhase.data) % self.maxPhase.data
            v = self.vec.data
            col = ((col // v) ^ phase) * v + col % v
        off, stride = 0, 1
        for d in self.order:
            off += (col if d == fast else coords[d]) * stride
            stride *= shape[d]
        return off

    def is_linear(self, shape: Sequence[int]) -> bool:
        """Whether the placement is a bit map (linear over GF(2)) for ``shape``: every size and
        parameter a power of two and the swizzle within a row (``vec * maxPhase`` elements at most)."""
        params = (*shape, self.vec.data, self.perPhase.data, self.maxPhase.data)
        if any(n < 1 or n & (n - 1) for n in params) or len(self.order) != len(shape):
            return False
        return self.maxPhase.data == 1 or self.vec.data * self.maxPhase.data <= shape[self.order[0]]

    def byte_bases(self, shape: Sequence[int], element_bytes: int) -> list[list[int]]:
        """Per dimension of ``shape``, the byte offset of each coordinate bit on its own; the offset
        of any coordinates is the XOR of their bits' offsets (see :meth:`is_linear`)."""
        if not self.is_linear(shape):
            raise ValueError(f"{self.name} with vec {self.vec.data}, maxPhase {self.maxPhase.data} is not a "
                             f"bit map over shape {list(shape)}")
        out = []
        for d, n in enumerate(shape):
            row = []
            for bit in range(n.bit_length() - 1):
                c = [0] * len(shape)
                c[d] = 1 << bit
                row.append(self.offset(c, shape) * element_bytes)
            out.append(row)
        return out

    def print_parameters(self, printer: Printer) -> None:
        fields = [("vec", self.vec.data), ("perPhase", self.perPhase.data), ("maxPhase", self.maxPhase.data),
                  ("order", self.order)]
        for key, a in zip(("CTAsPerCGA", "CTASplitNum", "CTAOrder"), self.cta.data):
            fields.append((key, _tuple(a)))
        print_fields(printer, fields)

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        f = parse_fields(parser, {"vec": "int", "perPhase": "int", "maxPhase": "int", "order": "ints",
                                  "CTAsPerCGA": "ints", "CTASplitNum": "ints", "CTAOrder": "ints",
                                  "hasLeadingOffset": "bool"})
        if f.get("hasLeadingOffset"):
            # Triton's pre-rename spelling of the tensor-core (wgmma) layout: its byte layout
            # depends on the element type, which the attribute does not carry
            parser.raise_error("#ttg.shared with hasLeadingOffset = true is the tensor cores' layout: "
                               "write it as #ttg.nvmma_shared<{swizzlingByteWidth = ..., transposed = ..., "
                               "elementBitWidth = ...}>")
        cta = [ints(f[k]) for k in ("CTAsPerCGA", "CTASplitNum", "CTAOrder") if k in f]
        return (IntAttr(f["vec"]), IntAttr(f["perPhase"]), IntAttr(f["maxPhase"]), ints(f["order"]), ArrayAttr(cta))


@irdl_attr_definition
class SharedMemorySpaceAttr(ParametrizedAttribute):
    """``#ttg.shared_memory``: the memory space of a ``!ttg.memdesc``."""

    name = "ttg.shared_memory"

    def print_parameters(self, printer: Printer) -> None:
        pass

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        return ()


GENERIC_ENCODINGS: list[type] = [BlockedEncodingAttr, SliceEncodingAttr, DotOperandEncodingAttr,
                                 SwizzledSharedEncodingAttr, SharedMemorySpaceAttr]

