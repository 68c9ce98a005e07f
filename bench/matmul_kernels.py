# Kernels shared by the Tritium and Triton sides of bench/bench_matmul.py: the module is executed
# twice, with ``triton``/``tl`` bound to each framework (see kernel_files.load_kernels).
# They are the tutorials' kernels, written exactly as for Triton.


@triton.jit  # noqa: F821
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,  # noqa: F821
                  GROUP_SIZE_M: tl.constexpr, ACC_INT: tl.constexpr = False,  # noqa: F821
                  INPUT_PRECISION: tl.constexpr = None):  # noqa: F821
    # ACC_INT: accumulate in int32 (int8 operands), else in fp32; INPUT_PRECISION: tl.dot's (None: default)
    pid = tl.program_id(axis=0)  # noqa: F821
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)  # noqa: F821
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)  # noqa: F821
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M  # noqa: F821
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N  # noqa: F821
    offs_k = tl.arange(0, BLOCK_SIZE_K)  # noqa: F821
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.int32 if ACC_INT else tl.float32)  # noqa: F821
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):  # noqa: F821
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)  # noqa: F821
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)  # noqa: F821
        accumulator = tl.dot(a, b, accumulator, input_precision=INPUT_PRECISION,  # noqa: F821
                             out_dtype=tl.int32 if ACC_INT else tl.float32)  # noqa: F821
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)  # noqa: F821
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)  # noqa: F821
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)  # noqa: F821


@triton.jit  # noqa: F821
def attn_fwd(Q, K, V, sm_scale, Out, stride_qz, stride_qh, stride_qm, stride_qk, stride_kz, stride_kh, stride_kn,
             stride_kk, stride_vz, stride_vh, stride_vk, stride_vn, stride_oz, stride_oh, stride_om, stride_on, H,
             N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # noqa: F821
             CAUSAL: tl.constexpr):  # noqa: F821
    # Flash-attention forward in the tutorial's style: online softmax over K/V blocks.
    start_m = tl.program_id(0)  # noqa: F821
    off_hz = tl.program_id(1)  # noqa: F821
    off_z = off_hz // H
    off_h = off_hz % H
    q_off = off_z.to(tl.int64) * stride_qz + off_h.to(tl.int64) * stride_qh  # noqa: F821
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)  # noqa: F821
    offs_n = tl.arange(0, BLOCK_N)  # noqa: F821
    offs_d = tl.arange(0, HEAD_DIM)  # noqa: F821
    q = tl.load(Q + q_off + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk)  # noqa: F821
    k_ptrs = K + q_off + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kk
    v_ptrs = V + q_off + offs_n[:, None] * stride_vk + offs_d[None, :] * stride_vn
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")  # noqa: F821
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0  # noqa: F821
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)  # noqa: F821
    qk_scale = sm_scale * 1.44269504
    hi = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        k = tl.load(k_ptrs + start_n * stride_kn)  # noqa: F821
        qk = tl.dot(q, k)  # noqa: F821
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= (start_n + offs_n[None, :]), qk * qk_scale, -1.0e6)  # noqa: F821
        else:
            qk = qk * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))  # noqa: F821
        qk = qk - m_ij[:, None]
        p = tl.math.exp2(qk)  # noqa: F821
        l_ij = tl.sum(p, 1)  # noqa: F821
        alpha = tl.math.exp2(m_i - m_ij)  # noqa: F821
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(v_ptrs + start_n * stride_vk)  # noqa: F821
        acc = tl.dot(p.to(v.dtype), v, acc)  # noqa: F821
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + q_off + offs_m[:, None] * stride_om + offs_d[None, :] * stride_on, acc.to(Out.type.element_ty))  # noqa: F821


# Flash-attention backward in the tutorial's style (three launches: the row dot products of the
# output and its gradient, then dK/dV per key block and dQ per query block).  Tensors are
# contiguous [batch*heads, N_CTX, HEAD_DIM]; LSE holds each query row's log2-sum-exp2 of the scaled
# scores (what the forward would keep), so P is exp2(scores * log2(e) * sm_scale - LSE).
@triton.jit  # noqa: F821
def attn_bwd_preprocess(O, DO, Delta, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):  # noqa: F821
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)  # noqa: F821
    off_hz = tl.program_id(1)  # noqa: F821
    offs_d = tl.arange(0, HEAD_DIM)  # noqa: F821
    base = off_hz.to(tl.int64) * N_CTX * HEAD_DIM  # noqa: F821
    o = tl.load(O + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]).to(tl.float32)  # noqa: F821
    do = tl.load(DO + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]).to(tl.float32)  # noqa: F821
    tl.store(Delta + off_hz * N_CTX + offs_m, tl.sum(o * do, axis=1))  # noqa: F821


@triton.jit  # noqa: F821
def attn_bwd_dkdv(Q, K, V, DO, LSE, Delta, DK, DV, sm_scale, N_CTX, HEAD_DIM: tl.constexpr,  # noqa: F821
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):  # noqa: F821
    start_n = tl.program_id(0) * BLOCK_N  # noqa: F821
    off_hz = tl.program_id(1)  # noqa: F821
    base = off_hz.to(tl.int64) * N_CTX * HEAD_DIM  # noqa: F821
    offs_n = start_n + tl.arange(0, BLOCK_N)  # noqa: F821
    offs_d = tl.arange(0, HEAD_DIM)  # noqa: F821
    k = tl.load(K + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :])  # noqa: F821
    v = tl.load(V + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :])  # noqa: F821
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)  # noqa: F821
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)  # noqa: F821
    qk_scale = sm_scale * 1.44269504
    lo = (start_n // BLOCK_M) * BLOCK_M if CAUSAL else 0  # query rows before the key block see none of it
    for start_m in range(lo, N_CTX, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)  # noqa: F821
        q_t = tl.load(Q + base + offs_m[None, :] * HEAD_DIM + offs_d[:, None])  # [HEAD_DIM, BLOCK_M]  # noqa: F821
        lse = tl.load(LSE + off_hz * N_CTX + offs_m)  # noqa: F821
        p_t = tl.math.exp2(tl.dot(k, q_t) * qk_scale - lse[None, :])  # [BLOCK_N, BLOCK_M]  # noqa: F821
        if CAUSAL:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)  # noqa: F821
        do = tl.load(DO + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])  # noqa: F821
        dv = tl.dot(p_t.to(do.dtype), do, dv)  # noqa: F821
        delta = tl.load(Delta + off_hz * N_CTX + offs_m)  # noqa: F821
        dp_t = tl.dot(v, tl.trans(do))  # noqa: F821
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q_t.dtype), tl.trans(q_t), dk)  # noqa: F821
    dk = dk * sm_scale
    tl.store(DK + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], dk.to(DK.type.element_ty))  # noqa: F821
    tl.store(DV + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], dv.to(DV.type.element_ty))  # noqa: F821


@triton.jit  # noqa: F821
def attn_bwd_dq(Q, K, V, DO, LSE, Delta, DQ, sm_scale, N_CTX, HEAD_DIM: tl.constexpr,  # noqa: F821
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):  # noqa: F821
    start_m = tl.program_id(0) * BLOCK_M  # noqa: F821
    off_hz = tl.program_id(1)  # noqa: F821
    base = off_hz.to(tl.int64) * N_CTX * HEAD_DIM  # noqa: F821
    offs_m = start_m + tl.arange(0, BLOCK_M)  # noqa: F821
    offs_d = tl.arange(0, HEAD_DIM)  # noqa: F821
    q = tl.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])  # noqa: F821
    do = tl.load(DO + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])  # noqa: F821
    lse = tl.load(LSE + off_hz * N_CTX + offs_m)  # noqa: F821
    delta = tl.load(Delta + off_hz * N_CTX + offs_m)  # noqa: F821
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)  # noqa: F821
    qk_scale = sm_scale * 1.44269504
    hi = start_m + BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)  # noqa: F821
        k_t = tl.load(K + base + offs_n[None, :] * HEAD_DIM + offs_d[:, None])  # [HEAD_DIM, BLOCK_N]  # noqa: F821
        v_t = tl.load(V + base + offs_n[None, :] * HEAD_DIM + offs_d[:, None])  # noqa: F821
        p = tl.math.exp2(tl.dot(q, k_t) * qk_scale - lse[:, None])  # noqa: F821
        if CAUSAL:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)  # noqa: F821
        ds = p * (tl.dot(do, v_t) - delta[:, None])  # noqa: F821
        dq = tl.dot(ds.to(k_t.dtype), tl.trans(k_t), dq)  # noqa: F821
    dq = dq * sm_scale
    tl.store(DQ + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], dq.to(DQ.type.element_ty))  # noqa: F821
