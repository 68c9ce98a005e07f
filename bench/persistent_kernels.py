# Kernels of bench/bench_persistent.py, in the style of Triton's persistent-matmul tutorial: one
# program per SM walks the output tiles NUM_SMS apart (grouped order), C = A @ B.T with A (M, K) and
# B (N, K) both K-contiguous.  Executed twice with ``triton``/``tl`` bound to each framework
# (kernel_files.load_kernels), so both compilers see the same source.  Four versions: pointer
# arithmetic, block pointers, tensor descriptors made in the kernel, host tensor descriptors.


@triton.jit  # noqa: F821
def tile_position(tile, num_pid_m, in_group, GROUP_M: tl.constexpr):  # noqa: F821
    """The (row, column) of output tile ``tile`` in grouped order (GROUP_M rows of tiles at a time)."""
    first_m = (tile // in_group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    return first_m + (tile % in_group) % size_m, (tile % in_group) // size_m


@triton.jit  # noqa: F821
def persistent_plain(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bn, stride_cm,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # noqa: F821
                     GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):  # noqa: F821
    num_pid_m = tl.cdiv(M, BLOCK_M)  # noqa: F821
    num_pid_n = tl.cdiv(N, BLOCK_N)  # noqa: F821
    num_tiles = num_pid_m * num_pid_n
    in_group = GROUP_M * num_pid_n
    for tile in range(tl.program_id(0), num_tiles, NUM_SMS):  # noqa: F821
        pid_m, pid_n = tile_position(tile, num_pid_m, in_group, GROUP_M)
        offs_am = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # noqa: F821
        offs_bn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # noqa: F821
        offs_am = tl.max_contiguous(tl.multiple_of(tl.where(offs_am < M, offs_am, 0), BLOCK_M), BLOCK_M)  # noqa: F821
        offs_bn = tl.max_contiguous(tl.multiple_of(tl.where(offs_bn < N, offs_bn, 0), BLOCK_N), BLOCK_N)  # noqa: F821
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # noqa: F821
        for ki in range(tl.cdiv(K, BLOCK_K)):  # noqa: F821
            offs_k = ki * BLOCK_K + tl.arange(0, BLOCK_K)  # noqa: F821
            a = tl.load(a_ptr + offs_am[:, None] * stride_am + offs_k[None, :], mask=offs_k[None, :] < K, other=0.0)  # noqa: F821
            b = tl.load(b_ptr + offs_bn[:, None] * stride_bn + offs_k[None, :], mask=offs_k[None, :] < K, other=0.0)  # noqa: F821
            acc = tl.dot(a, b.T, acc)  # noqa: F821
        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # noqa: F821
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # noqa: F821
        mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)  # noqa: F821


@triton.jit  # noqa: F821
def persistent_block_ptr(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bn, stride_cm,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # noqa: F821
                         GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):  # noqa: F821
    num_pid_m = tl.cdiv(M, BLOCK_M)  # noqa: F821
    num_pid_n = tl.cdiv(N, BLOCK_N)  # noqa: F821
    num_tiles = num_pid_m * num_pid_n
    in_group = GROUP_M * num_pid_n
    for tile in range(tl.program_id(0), num_tiles, NUM_SMS):  # noqa: F821
        pid_m, pid_n = tile_position(tile, num_pid_m, in_group, GROUP_M)
        a_bp = tl.make_block_ptr(a_ptr, (M, K), (stride_am, 1), (pid_m * BLOCK_M, 0), (BLOCK_M, BLOCK_K), (1, 0))  # noqa: F821
        b_bp = tl.make_block_ptr(b_ptr, (N, K), (stride_bn, 1), (pid_n * BLOCK_N, 0), (BLOCK_N, BLOCK_K), (1, 0))  # noqa: F821
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # noqa: F821
        for ki in range(tl.cdiv(K, BLOCK_K)):  # noqa: F821
            a = tl.load(a_bp, boundary_check=(0, 1))  # noqa: F821
            b = tl.load(b_bp, boundary_check=(0, 1))  # noqa: F821
            acc = tl.dot(a, b.T, acc)  # noqa: F821
            a_bp = tl.advance(a_bp, (0, BLOCK_K))  # noqa: F821
            b_bp = tl.advance(b_bp, (0, BLOCK_K))  # noqa: F821
        c_bp = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, 1), (pid_m * BLOCK_M, pid_n * BLOCK_N), (BLOCK_M, BLOCK_N), (1, 0))  # noqa: F821
        tl.store(c_bp, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))  # noqa: F821


@triton.jit  # noqa: F821
def persistent_device_desc(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bn, stride_cm,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # noqa: F821
                           GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):  # noqa: F821
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [stride_am, 1], [BLOCK_M, BLOCK_K])  # noqa: F821
    b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [stride_bn, 1], [BLOCK_N, BLOCK_K])  # noqa: F821
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [stride_cm, 1], [BLOCK_M, BLOCK_N])  # noqa: F821
    num_pid_m = tl.cdiv(M, BLOCK_M)  # noqa: F821
    num_pid_n = tl.cdiv(N, BLOCK_N)  # noqa: F821
    num_tiles = num_pid_m * num_pid_n
    in_group = GROUP_M * num_pid_n
    for tile in range(tl.program_id(0), num_tiles, NUM_SMS):  # noqa: F821
        pid_m, pid_n = tile_position(tile, num_pid_m, in_group, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # noqa: F821
        for ki in range(tl.cdiv(K, BLOCK_K)):  # noqa: F821
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])
            acc = tl.dot(a, b.T, acc)  # noqa: F821
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@triton.jit  # noqa: F821
def persistent_host_desc(a_desc, b_desc, c_desc, M, N, K,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # noqa: F821
                         GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):  # noqa: F821
    num_pid_m = tl.cdiv(M, BLOCK_M)  # noqa: F821
    num_pid_n = tl.cdiv(N, BLOCK_N)  # noqa: F821
    num_tiles = num_pid_m * num_pid_n
    in_group = GROUP_M * num_pid_n
    for tile in range(tl.program_id(0), num_tiles, NUM_SMS):  # noqa: F821
        pid_m, pid_n = tile_position(tile, num_pid_m, in_group, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # noqa: F821
        for ki in range(tl.cdiv(K, BLOCK_K)):  # noqa: F821
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])
            acc = tl.dot(a, b.T, acc)  # noqa: F821
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))
