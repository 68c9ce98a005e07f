# Kernels of bench/bench_persistent.py's flatten rows: Triton's persistent tutorial with host
# tensor descriptors, the tile loop marked ``tl.range(..., flatten=FLATTEN, warp_specialize=WS)``.
# Executed with ``triton``/``tl`` bound to each framework (kernel_files.load_kernels).


@triton.jit  # noqa: F821
def _pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    return first_pid_m + (tile_id % group_size_m), (tile_id % num_pid_in_group) // group_size_m


@triton.jit  # noqa: F821
def persistent_flat(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # noqa: F821
                    BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,  # noqa: F821
                    FLATTEN: tl.constexpr, WS: tl.constexpr):  # noqa: F821
    num_pid_m = tl.cdiv(M, BLOCK_M)  # noqa: F821
    num_pid_n = tl.cdiv(N, BLOCK_N)  # noqa: F821
    k_tiles = tl.cdiv(K, BLOCK_K)  # noqa: F821
    num_tiles = num_pid_m * num_pid_n
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=FLATTEN, warp_specialize=WS):  # noqa: F821
        pid_m, pid_n = _pid(tile_id, GROUP_M * num_pid_n, num_pid_m, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # noqa: F821
        for ki in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])
            acc = tl.dot(a, b.T, acc)  # noqa: F821
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))  # noqa: F821
