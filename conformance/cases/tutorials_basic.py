"""The public tutorial kernels users bring, written as the tutorials write them: vector add,
fused softmax, layer-norm forward."""
import numpy as np

import tritium as triton
import tritium.language as tl

from .. import dtypes
from ..case import Case, Out, Rand, tol


@triton.jit
def add_kernel(x_ptr,  # *Pointer* to first input vector.
               y_ptr,  # *Pointer* to second input vector.
               output_ptr,  # *Pointer* to output vector.
               n_elements,  # Size of the vector.
               BLOCK_SIZE: tl.constexpr,  # Number of elements each program should process.
               ):
    pid = tl.program_id(axis=0)  # We use a 1D launch grid so axis is 0.
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr,
                   num_stages: tl.constexpr):
    # starting row of the program
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        # The stride represents how much we need to increase the pointer to advance 1 row
        row_start_ptr = input_ptr + row_idx * input_row_stride
        # The block size is the next power of two greater than n_cols, so we can fit each
        # row in a single block
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        # Load the row into SRAM, using a mask since BLOCK_SIZE may be > than n_cols
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        # Subtract maximum for numerical stability
        row_minus_max = row - tl.max(row, axis=0)
        # Note that exponentiation in Triton is fast but approximate (i.e., think __expf in CUDA)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        # Write back output to DRAM
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


@triton.jit
def _layer_norm_fwd_fused(
    X,  # pointer to the input
    Y,  # pointer to the output
    W,  # pointer to the weights
    B,  # pointer to the biases
    Mean,  # pointer to the mean
    Rstd,  # pointer to the 1/std
    stride,  # how much to increase the pointer when moving by 1 row
    N,  # number of columns in X
    eps,  # epsilon to avoid division by zero
    BLOCK_SIZE: tl.constexpr,
):
    # Map the program id to the row of X and Y it should compute.
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    # Compute mean
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    # Compute variance
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    # Write mean / rstd
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    # Normalize and apply linear transformation
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        # Write output
        tl.store(Y + cols, y, mask=mask)


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
