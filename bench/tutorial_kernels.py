# The tutorial kernels, written once and loaded twice by bench_nvidia.py: once with `triton` and
# `tl` bound to Tritium, once to Triton (so both compile the same source).  No imports here on
# purpose: the loader puts `triton` and `tl` in the module's namespace before running it.


@triton.jit  # noqa: F821
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):  # noqa: F821
    pid = tl.program_id(axis=0)  # noqa: F821
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)  # noqa: F821
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)  # noqa: F821
    y = tl.load(y_ptr + offsets, mask=mask)  # noqa: F821
    tl.store(output_ptr + offsets, x + y, mask=mask)  # noqa: F821


@triton.jit  # noqa: F821
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):  # noqa: F821
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # noqa: F821
    m = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)  # noqa: F821


@triton.jit  # noqa: F821
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):  # noqa: F821
    row_start = tl.program_id(0)  # noqa: F821
    row_step = tl.num_programs(0)  # noqa: F821
    for row_idx in tl.range(row_start, n_rows, row_step):  # noqa: F821
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)  # noqa: F821
        mask = col_offsets < n_cols
        row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float('inf'))  # noqa: F821
        row_minus_max = row - tl.max(row, axis=0)  # noqa: F821
        numerator = tl.exp(row_minus_max)  # noqa: F821
        denominator = tl.sum(numerator, axis=0)  # noqa: F821
        tl.store(output_ptr + row_idx * output_row_stride + col_offsets, numerator / denominator, mask=mask)  # noqa: F821


@triton.jit  # noqa: F821
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):  # noqa: F821
    row = tl.program_id(0)  # noqa: F821
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)  # noqa: F821
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)  # noqa: F821
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)  # noqa: F821
        _mean += a
    mean = tl.sum(_mean, axis=0) / N  # noqa: F821
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)  # noqa: F821
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)  # noqa: F821
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)  # noqa: F821
        x = tl.where(cols < N, x - mean, 0.)  # noqa: F821
        _var += x * x
    var = tl.sum(_var, axis=0) / N  # noqa: F821
    rstd = 1 / tl.sqrt(var + eps)  # noqa: F821
    tl.store(Mean + row, mean)  # noqa: F821
    tl.store(Rstd + row, rstd)  # noqa: F821
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)  # noqa: F821
        mask = cols < N
        w = tl.load(W + cols, mask=mask)  # noqa: F821
        b = tl.load(B + cols, mask=mask)  # noqa: F821
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)  # noqa: F821
        y = (x - mean) * rstd * w + b
        tl.store(Y + cols, y, mask=mask)  # noqa: F821
