"""The JIT API Triton's own tests use to vary a kernel: a template whose text is edited and
handed back with ``_unsafe_update_src`` (each variant compiles from its own text), and the
compile-time checks of Triton's API (``must_use_result``)."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Err, Out, Rand


@triton.jit
def _template(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, GENERATE_TEST_HERE, mask=mask)  # noqa: F821 - replaced per variant


def _variant(expr):
    k = triton.JITFunction(_template.fn)
    k._unsafe_update_src(k.src.replace("GENERATE_TEST_HERE", expr))
    return k


_VARIANTS = {
    "mul-add": ("x * y + 1.0", lambda x, y: x * y + 1.0),
    "where-max": ("tl.where(x > y, x, y)", lambda x, y: np.maximum(x, y)),
    "exp-sub": ("tl.exp(x) - y", lambda x, y: np.exp(x) - y),
}


@triton.jit
def drops_advance_kernel(x_ptr):
    bp = tl.make_block_ptr(x_ptr, (256,), (1,), (0,), (16,), (0,))
    tl.advance(bp, (16,))
    tl.store(bp, tl.zeros((16,), tl.int32))


CASES = [
    Case(id=f"triton_api/updated-source-{name}", kernel=_variant(expr), grid=(3,),
         inputs={"x_ptr": Rand("fp32", (300,), -2, 2), "y_ptr": Rand("fp32", (300,), -2, 2), "n": 300},
         constexprs={"BLOCK": 128}, outputs={"out_ptr": Out("fp32", (300,))},
         reference=(lambda f: lambda x_ptr, y_ptr: f(x_ptr.astype(np.float64), y_ptr.astype(np.float64)))(ref),
         doc=f"a template kernel whose text was edited to compute {expr}")
    for name, (expr, ref) in _VARIANTS.items()
] + [
    Case(id="triton_api/must-use-result-advance", kernel=drops_advance_kernel,
         inputs={"x_ptr": Rand("int32", (256,))}, outputs={},
         expect_error=Err("The result of tl.advance is not being used", line="tl.advance(bp, (16,))")),
]
