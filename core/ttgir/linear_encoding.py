"""``#ttg.linear``: a distributed layout written as its linear layout, in Triton's syntax::

    #ttg.linear<{register = [[0, 1], [0, 2], [8, 0]], lane = [[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]],
                 warp = [[16, 0], [32, 0]], block = []}>

Each list holds one basis (a coordinate vector) per bit of the register index, lane id and warp
id (:mod:`tritium.ttgir.linear_layout`): the element a thread holds is the XOR of the bases of
the set bits.  A zero basis is a broadcast (that bit selects a duplicate).  ``block`` (CTAs of a
cluster) must be empty: layouts assume one CTA.

The bases describe the tensor shape they span (each dimension the next power of two above its
largest coordinate); for another shape the layout is fitted as every generic layout is: lane and
warp coordinates past the shape become broadcasts, register bases past it are dropped, and a
larger shape wraps around in extra registers (``fit_to_shape``).  The classic per-dimension
fields (``size_per_thread``...) are derived from the bases for the passes that ask for them.
"""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr
from xdsl.ir import ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from .encodings import DistributedEncoding, ints, parse_fields, print_fields
from .linear_layout import Basis, LinearLayout, fit_to_shape, is_pow2


def _bases(a: ArrayAttr) -> tuple[Basis, ...]:
    return tuple(tuple(x.data for x in v.data) for v in a.data)


def _attr(bases: Sequence[Sequence[int]]) -> ArrayAttr:
    return ArrayAttr([ints(v) for v in bases])


@irdl_attr_definition
class LinearEncodingAttr(ParametrizedAttribute, DistributedEncoding):
    """A layout given by its (register, lane, warp) bases (see the module docstring)."""

    name = "ttg.linear"

    register_: ArrayAttr
    lane_: ArrayAttr
    warp_: ArrayAttr

    def __init__(self, register: Sequence[Sequence[int]], lane: Sequence[Sequence[int]],
                 warp: Sequence[Sequence[int]]):
        super().__init__(_attr(register), _attr(lane), _attr(warp))

    register = property(lambda self: _bases(self.register_))
    lane = property(lambda self: _bases(self.lane_))
    warp = property(lambda self: _bases(self.warp_))

    @property
    def rank(self) -> int:
        for bases in (self.register, self.lane, self.warp):
            if bases:
                return len(bases[0])
        return 1

    @property
    def span(self) -> tuple[int, ...]:
        """The shape the bases cover: per dimension, the power of two above the largest basis."""
        out = [1] * self.rank
        for v in (*self.register, *self.lane, *self.warp):
            for d, x in enumerate(v):
                while out[d] <= x:
                    out[d] *= 2
        return tuple(out)

    def _count(self, bases, d: int) -> int:
        return 1 << sum(1 for v in bases if v[d])

    @property
    def order(self) -> tuple[int, ...]:
        """Dimensions by the first register, then lane, then warp basis that moves along them
        (fastest first); dimensions no basis moves come last, slowest first."""
        seen: list[int] = []
        for v in (*self.register, *self.lane, *self.warp):
            for d, x in enumerate(v):
                if x and d not in seen:
                    seen.append(d)
        return tuple(seen + [d for d in reversed(range(self.rank)) if d not in seen])

    size_per_thread = property(lambda self: tuple(self._count(self.register, d) for d in range(self.rank)))
    warps_per_cta = property(lambda self: tuple(self._count(self.warp, d) for d in range(self.rank)))

    @property
    def threads_per_warp(self) -> tuple[int, ...]:
        # broadcast lanes count along the slowest dimension, so the product is the warp size
        out = [self._count(self.lane, d) for d in range(self.rank)]
        out[self.order[-1]] *= 1 << sum(1 for v in self.lane if not any(v))
        return tuple(out)

    @property
    def warp_size(self) -> int:
        return 1 << len(self.lane)

    @property
    def num_warps(self) -> int:
        return 1 << len(self.warp)

    def verify(self) -> None:
        rank = self.rank
        for kind, bases in (("register", self.register), ("lane", self.lane), ("warp", self.warp)):
            for v in bases:
                if len(v) != rank:
                    raise VerifyException(f"#ttg.linear {kind} bases must all have rank {rank}, got {list(v)}")
                if any(x < 0 for x in v):
                    raise VerifyException(f"#ttg.linear {kind} basis {list(v)} has a negative coordinate")
        if not is_pow2(self.warp_size):
            raise VerifyException("#ttg.linear needs log2(threads per warp) lane bases")

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        shape = tuple(shape)
        if len(shape) != self.rank:
            raise ValueError(f"#ttg.linear has rank {self.rank}, the tensor has shape {shape}")
        if shape == self.span:
            return LinearLayout(shape, self.register, self.lane, self.warp)
        return fit_to_shape(list(self.register), list(self.lane), list(self.warp), shape, self.order)

    def print_parameters(self, printer: Printer) -> None:
        print_fields(printer, [("register", self.register), ("lane", self.lane), ("warp", self.warp),
                               ("block", ())])

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        f = parse_fields(parser, {"register": "intss", "lane": "intss", "warp": "intss", "block": "intss"})
        if f.get("block"):
            parser.raise_error("#ttg.linear with block bases (several CTAs) is not supported: layouts assume one CTA")
        for key in ("register", "lane", "warp"):
            if key not in f:
                parser.raise_error(f"#ttg.linear needs the {key} bases")
        return (_attr(f["register"]), _attr(f["lane"]), _attr(f["warp"]))


def from_linear_layout(ll: LinearLayout) -> LinearEncodingAttr:
    """The ``#ttg.linear`` encoding of a linear layout."""
    return LinearEncodingAttr(ll.register, ll.lane, ll.warp)


__all__ = ["LinearEncodingAttr", "from_linear_layout"]
