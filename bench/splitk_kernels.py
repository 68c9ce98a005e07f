# Kernels of bench/bench_splitk.py: matmul with the K dimension split across programs, for shapes
# with few output tiles and a long K (small M and N), where one program a tile leaves most SMs idle.
# Executed twice with ``triton``/``tl`` bound to each framework (kernel_files.load_kernels), so both
# compilers see the same source.  C = A @ B with A (M, K) and B (K, N) row-major; C is fp32 and
# zeroed before the launch: each of the SPLIT_K programs of a tile adds its partial sum with
# ``tl.atomic_add``.  ``matmul_streamk`` deals the tiles' K steps evenly to a fixed number of
# programs (stream-K) instead.


@triton.jit  # noqa: F821
def grouped_tile(tile, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):  # noqa: F821
    # the tutorial's tile order: GROUP_M tile rows side by side, walked column by column
    num_pid_m = tl.cdiv(M, BLOCK_M)  # noqa: F821
    num_pid_n = tl.cdiv(N, BLOCK_N)  # noqa: F821
    in_group = GROUP_M * num_pid_n
    first_m = (tile // in_group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    return first_m + (tile % in_group) % size_m, (tile % in_group) // size_m


@triton.jit  # noqa: F821
def partial_tile(a_ptr, b_ptr, M, N, stride_am, stride_bk, pid_m, pid_n, k_lo, k_hi,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # noqa: F821
    # the tile's sum over K in [k_lo, k_hi), BLOCK_K at a time from k_lo
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M  # noqa: F821
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N  # noqa: F821
    offs_k = tl.arange(0, BLOCK_K)  # noqa: F821
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + (k_lo + offs_k)[None, :]
    b_ptrs = b_ptr + (k_lo + offs_k)[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # noqa: F821
    for k in range(k_lo, k_hi, BLOCK_K):
        a = tl.load(a_ptrs, mask=(k + offs_k)[None, :] < k_hi, other=0.0)
        b = tl.load(b_ptrs, mask=(k + offs_k)[:, None] < k_hi, other=0.0)
        acc = tl.dot(a, b, acc)  # noqa: F821
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    return acc


@triton.jit  # noqa: F821
def matmul_splitk(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # noqa: F821
                  GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr):  # noqa: F821
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)  # noqa: F821
    split = tl.program_id(1)  # noqa: F821
    # this program's share of K: whole BLOCK_K steps, the last split taking what is left
    steps = tl.cdiv(K, BLOCK_K)  # noqa: F821
    per_split = tl.cdiv(steps, SPLIT_K)  # noqa: F821
    k_lo = split * per_split * BLOCK_K
    k_hi = min(K, k_lo + per_split * BLOCK_K)
    acc = partial_tile(a_ptr, b_ptr, M, N, stride_am, stride_bk, pid_m, pid_n, k_lo, k_hi, BLOCK_M, BLOCK_N, BLOCK_K)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # noqa: F821
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # noqa: F821
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :]
    if SPLIT_K == 1:
        tl.store(c_ptrs, acc, mask=mask)
    else:
        tl.atomic_add(c_ptrs, acc, mask=mask, sem="relaxed")


@triton.jit  # noqa: F821
def matmul_streamk(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, per_program, extra,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # noqa: F821
                   GROUP_M: tl.constexpr):  # noqa: F821
    # Stream-K: the K steps of every tile, tile after tile, are dealt to the programs in runs of
    # per_program steps (the first `extra` programs one more), so every program has the same work
    # whatever the tile count.  A program that covers a whole tile stores it; the pieces of a tile
    # split between programs meet in C (zeroed first) through tl.atomic_add.
    pid = tl.program_id(0)  # noqa: F821
    steps = tl.cdiv(K, BLOCK_K)  # noqa: F821
    start = pid * per_program + tl.minimum(pid, extra)  # noqa: F821
    end = start + per_program + (pid < extra).to(tl.int32)  # noqa: F821
    it = start
    while it < end:
        tile = it // steps
        k_first = it - tile * steps
        k_last = min(steps, k_first + end - it)
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = partial_tile(a_ptr, b_ptr, M, N, stride_am, stride_bk, pid_m, pid_n, k_first * BLOCK_K,
                           min(K, k_last * BLOCK_K), BLOCK_M, BLOCK_N, BLOCK_K)
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # noqa: F821
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # noqa: F821
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :]
        if k_first == 0 and k_last == steps:
            tl.store(c_ptrs, acc, mask=mask)
        else:
            tl.atomic_add(c_ptrs, acc, mask=mask, sem="relaxed")
        it += k_last - k_first
