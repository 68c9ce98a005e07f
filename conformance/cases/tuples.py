"""Tuples: tuple and named-tuple kernel arguments (nested, with tensors, scalars, None and
constexprs inside), tuples passed into and returned from ``@jit`` functions, tuples carried by
loops, ``tl.tuple`` arithmetic, comprehensions and ``tl.static_range`` over a tuple's length."""
import inspect
from typing import NamedTuple

import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand


class View(NamedTuple):
    ptr: object
    shape: tuple
    stride: tuple


@triton.jit
def nested_args_kernel(ptrs, out_ptr, meta):
    # ptrs = (x, (y, scale)); meta = (n, BLOCK (a constexpr inside the tuple), None)
    x_ptr, (y_ptr, scale) = ptrs
    n, nothing = meta[0], meta[2]
    BLOCK: tl.constexpr = meta[1]  # a plain assignment would make the number a run-time scalar
    tl.static_assert(nothing is None)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * scale + y, mask=mask)


@triton.jit
def _view_mask(v, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    return (rm[:, None] < v.shape[0]) & (rn[None, :] < v.shape[1])


@triton.jit
def _make_view(ptr, shape, stride):
    return View(ptr=ptr, shape=shape, stride=stride)


@triton.jit
def namedtuple_kernel(src, dst, BM: tl.constexpr, BN: tl.constexpr):
    s = _make_view(src.ptr, src.shape, src.stride)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(s.ptr + rm[:, None] * s.stride[0] + rn[None, :] * s.stride[1], mask=_view_mask(s, BM, BN))
    tl.store(dst.ptr + rm[:, None] * dst.stride[0] + rn[None, :] * dst.stride[1], x + 1,
             mask=_view_mask(dst, BM, BN))


@triton.jit
def _sum_max(acc, x):
    return acc[0] + x, tl.maximum(acc[1], x)


@triton.jit
def loop_carried_kernel(x_ptr, out_ptr, rows, N: tl.constexpr):
    offs = tl.arange(0, N)
    acc = (tl.zeros([N], tl.float32), tl.full([N], float("-inf"), tl.float32))
    for r in range(rows):
        acc = _sum_max(acc, tl.load(x_ptr + r * N + offs))
    total, biggest = acc
    tl.store(out_ptr + offs, total)
    tl.store(out_ptr + N + offs, biggest)


@triton.jit
def _arith3(a, b):
    return a + b, a - b, a * b


@triton.jit
def static_index_kernel(x_ptr, y_ptr, outs, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    vals = _arith3(x, y) + (x * 0 + len(outs),)
    scaled = tl.tuple([v * 2 for v in vals])
    for i in tl.static_range(len(outs)):
        tl.store(outs[i] + offs, scaled[i])


class _Packed:
    """Launches ``kernel`` with tuple arguments that ``pack`` builds from the case's flat named
    arguments (the runner hands every array as its own argument)."""

    def __init__(self, kernel, params: str, pack):
        self.kernel, self.pack = kernel, pack
        ns: dict = {}
        exec(f"def flat({params}): pass", ns)  # noqa: S102 - the case's flat parameter list
        self.fn = ns["flat"]
        self.__name__ = kernel.__name__

    def _args(self, args, kwargs):
        sig = inspect.signature(self.fn)
        named = {k: kwargs.pop(k) for k in list(kwargs) if k in sig.parameters}
        named.update(zip(sig.parameters, args))
        return self.pack(**named), kwargs

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            a, k = self._args(args, kwargs)
            return self.kernel[grid](*a, **k)
        return launch

    def warmup(self, *args, **kwargs):
        a, k = self._args(args, kwargs)
        return self.kernel.warmup(*a, **k)


CASES = []
for _t in ("fp32", "fp16"):
    CASES.append(Case(
        id=f"tuples/nested-args-{_t}", grid=(3,),
        kernel=_Packed(nested_args_kernel, "x, y, scale, out, n, BLOCK",
                       lambda x, y, scale, out, n, BLOCK: ((x, (y, scale)), out, (n, tl.constexpr(BLOCK), None))),
        inputs={"x": Rand(_t, (300,)), "y": Rand(_t, (300,)), "scale": 1.5, "n": 300}, constexprs={"BLOCK": 128},
        outputs={"out": Out(_t, (300,), poison="sentinel")},
        reference=lambda x, y: x * 1.5 + y))

CASES.append(Case(
    id="tuples/namedtuple-views", grid=(1,),
    kernel=_Packed(namedtuple_kernel, "src, dst, BM, BN",
                   lambda src, dst, BM, BN: (View(src, (20, 27), (40, 1)), View(dst, (20, 27), (1, 20)), BM, BN)),
    inputs={"src": Rand("fp32", (20, 40))}, constexprs={"BM": 32, "BN": 32},
    outputs={"dst": Out("fp32", (27, 20), init=Rand("fp32", (27, 20)))},
    reference=lambda src: src[:, :27].T + 1))

CASES.append(Case(
    id="tuples/loop-carried", grid=(1,), kernel=loop_carried_kernel,
    inputs={"x_ptr": Rand("fp32", (7, 64), -4, 4), "rows": 7}, constexprs={"N": 64},
    outputs={"out_ptr": Out("fp32", (128,), poison="sentinel")},
    reference=lambda x_ptr: np.concatenate([x_ptr.astype(np.float64).sum(0), x_ptr.max(0)])))

CASES.append(Case(
    id="tuples/helper-return-static-index", grid=(1,),
    kernel=_Packed(static_index_kernel, "x, y, o0, o1, o2, o3, N",
                   lambda x, y, o0, o1, o2, o3, N: (x, y, (o0, o1, o2, o3), N)),
    inputs={"x": Rand("fp32", (64,)), "y": Rand("fp32", (64,))}, constexprs={"N": 64},
    outputs={f"o{i}": Out("fp32", (64,), poison="sentinel") for i in range(4)},
    reference=lambda x, y: {"o0": 2 * (x + y), "o1": 2 * (x - y), "o2": 2 * (x * y), "o3": np.full(64, 8.0)}))
