# Kernels of bench/bench_warp_specialize.py and plugins/nvidia/tests/test_nvidia_warp_specialize_gpu.py:
# matmuls whose K loop is marked ``tl.range(..., warp_specialize=WS)``, through host descriptors
# (C = A @ B.T) and through descriptors made in the kernel (C = A @ B).  Executed with
# ``triton``/``tl`` bound to each framework (kernel_files.load_kernels): one source for both.


@triton.jit  # noqa: F821
def ws_matmul(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # noqa: F821
              WS: tl.constexpr):  # noqa: F821
    pid_m = tl.program_id(0)  # noqa: F821
    pid_n = tl.program_id(1)  # noqa: F821
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # noqa: F821
    for ki in tl.range(tl.cdiv(K, BLOCK_K), warp_specialize=WS):  # noqa: F821
        a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
        b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])
        acc = tl.dot(a, b.T, acc)  # noqa: F821
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@triton.jit  # noqa: F821
def ws_matmul_device_desc(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # noqa: F821
                          BLOCK_K: tl.constexpr, WS: tl.constexpr):  # noqa: F821
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])  # noqa: F821
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])  # noqa: F821
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])  # noqa: F821
    pid_m = tl.program_id(0)  # noqa: F821
    pid_n = tl.program_id(1)  # noqa: F821
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # noqa: F821
    for ki in tl.range(tl.cdiv(K, BLOCK_K), warp_specialize=WS):  # noqa: F821
        a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
        b = b_desc.load([ki * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)  # noqa: F821
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))
