"""The public tutorial kernels users bring, written as the tutorials write them: vector add,
fused softmax, layer-norm forward."""
import numpy as np

import tritium as triton

from .. import dtypes
from ..case import Case, Out, Rand, tol


from tritium.examples.fused_softmax import softmax_kernel  # noqa: E402
from tritium.examples.layer_norm import _layer_norm_fwd_fused  # noqa: E402
from tritium.examples.vector_add import add_kernel  # noqa: E402


def _softmax(x, rows, cols):
    x = x.reshape(rows, cols)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layer_norm(x, w, b, rows, cols, eps):
    x = x.reshape(rows, cols)
    mean = x.mean(axis=1)
    rstd = 1 / np.sqrt(x.var(axis=1) + eps)
    return (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :], mean, rstd


CASES = []
for _t, _n in (("fp32", 1000), ("fp16", 777), ("fp32", 4096)):
    CASES.append(Case(
        id=f"tutorials/vector-add-{_t}-{_n}", kernel=add_kernel,
        grid=lambda meta, n=_n: (triton.cdiv(n, meta['BLOCK_SIZE']),), constexprs={"BLOCK_SIZE": 256},
        inputs={"x_ptr": Rand(_t, (_n,)), "y_ptr": Rand(_t, (_n,)), "n_elements": _n},
        outputs={"output_ptr": Out(_t, (_n,))}, reference=lambda x_ptr, y_ptr: x_ptr + y_ptr))
for _t, (_rows, _cols) in (("fp32", (10, 100)), ("fp32", (7, 256)), ("fp16", (6, 50))):
    CASES.append(Case(
        id=f"tutorials/fused-softmax-{_t}-{_rows}x{_cols}", kernel=softmax_kernel, grid=(4,),
        constexprs={"BLOCK_SIZE": triton.next_power_of_2(_cols), "num_stages": 2},
        inputs={"input_ptr": Rand(_t, (_rows * _cols,)), "input_row_stride": _cols, "output_row_stride": _cols,
                "n_rows": _rows, "n_cols": _cols},
        outputs={"output_ptr": Out(_t, (_rows * _cols,))},
        reference=lambda input_ptr, r=_rows, c=_cols: _softmax(input_ptr, r, c).ravel(),
        **tol(dtypes.MATH_TOLERANCE, _t)))
for _t, (_rows, _cols, _block) in (("fp32", (6, 300, 128)), ("fp16", (4, 256, 256)), ("fp32", (3, 1000, 512))):
    CASES.append(Case(
        id=f"tutorials/layer-norm-fwd-{_t}-{_rows}x{_cols}", kernel=_layer_norm_fwd_fused, grid=(_rows,),
        constexprs={"BLOCK_SIZE": _block},
        inputs={"X": Rand(_t, (_rows * _cols,)), "W": Rand(_t, (_cols,), 0.5, 1.5), "B": Rand(_t, (_cols,), -1, 1),
                "stride": _cols, "N": _cols, "eps": 1e-5},
        outputs={"Y": Out(_t, (_rows * _cols,)), "Mean": Out("fp32", (_rows,)), "Rstd": Out("fp32", (_rows,))},
        reference=lambda X, W, B, r=_rows, c=_cols: tuple(
            v.ravel() for v in _layer_norm(X, W, B, r, c, 1e-5)),
        **tol(dtypes.ACCUM_TOLERANCE, _t)))
