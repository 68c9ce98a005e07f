"""The matrix-multiplication tutorial kernel (grouped ordering, autotuned), with its autotune
configs reduced to small tiles."""
import numpy as np

import tritium as triton

from .. import dtypes
from ..case import Case, Out, Rand, tol


from tritium.examples.matmul import matmul_kernel  # noqa: E402


def _case(m, n, k, activation):
    def ref(a_ptr, b_ptr):
        c = a_ptr.reshape(m, k) @ b_ptr.reshape(k, n)
        return np.where(c >= 0, c, 0.01 * c) if activation == "leaky_relu" else c
    return Case(
        id=f"tutorials/matmul-{m}x{n}x{k}" + (f"-{activation}" if activation else ""), kernel=matmul_kernel,
        grid=lambda META: (triton.cdiv(m, META['BLOCK_SIZE_M']) * triton.cdiv(n, META['BLOCK_SIZE_N']), ),
        constexprs={"ACTIVATION": activation},
        inputs={"a_ptr": Rand("fp16", (m * k,), -1, 1), "b_ptr": Rand("fp16", (k * n,), -1, 1), "M": m, "N": n, "K": k,
                "stride_am": k, "stride_ak": 1, "stride_bk": n, "stride_bn": 1, "stride_cm": n, "stride_cn": 1},
        outputs={"c_ptr": Out("fp16", (m, n))}, reference=ref, **tol(dtypes.ACCUM_TOLERANCE, "fp16"))


CASES = [_case(64, 64, 64, ""), _case(96, 80, 72, ""), _case(64, 48, 40, "leaky_relu")]
