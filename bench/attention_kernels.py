# Flash-attention forward through tensor descriptors built in the kernel (sm_90's TMA copies),
# the K/V loop marked ``tl.range(..., warp_specialize=WS)``: the form Triton 3.6's tutorial uses on
# Hopper.  Q, K, V and O are contiguous [Z*H*N_CTX, HEAD_DIM]; LSE gets each row's log2-sum-exp2.
# Causal attention runs two loops, as the tutorial does: the K/V blocks left of the diagonal
# unmasked (the specialized loop), then the diagonal's, masked.
# With ``V_T`` V is stored transposed, [Z*H*HEAD_DIM, N_CTX] (8-bit V: the second dot's B must be
# K-contiguous for wgmma), its tiles [HEAD_DIM, BLOCK_N] read and transposed.
# Executed with ``triton``/``tl`` bound to each framework (kernel_files.load_kernels).


@triton.jit  # noqa: F821
def _attn_blocks(acc, l_i, m_i, q, k_desc, v_desc, base, vrow, offs_m, qk_scale, lo, hi, BLOCK_N: tl.constexpr,  # noqa: F821
                 MASK: tl.constexpr, WS: tl.constexpr, V_T: tl.constexpr):  # noqa: F821
    offs_n = tl.arange(0, BLOCK_N)  # noqa: F821
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WS):  # noqa: F821
        start_n = tl.multiple_of(start_n, BLOCK_N)  # noqa: F821
        k = k_desc.load([base + start_n, 0]).T
        qk = tl.dot(q, k)  # noqa: F821
        if MASK:
            qk = qk * qk_scale + tl.where(offs_m[:, None] >= start_n + offs_n[None, :], 0.0, -1.0e6)  # noqa: F821
            m_ij = tl.maximum(m_i, tl.max(qk, 1))  # noqa: F821
            qk = qk - m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)  # noqa: F821
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)  # noqa: F821
        alpha = tl.math.exp2(m_i - m_ij)  # noqa: F821
        l_ij = tl.sum(p, 1)  # noqa: F821
        acc = acc * alpha[:, None]
        if V_T:
            v = v_desc.load([vrow, start_n]).T
        else:
            v = v_desc.load([base + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)  # noqa: F821
        l_i = l_i * alpha + l_ij
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit  # noqa: F821
def attn_fwd_desc(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sm_scale, Z, H, N_CTX, HEAD_DIM: tl.constexpr,  # noqa: F821
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, WS: tl.constexpr,  # noqa: F821
                  V_T: tl.constexpr = False):  # noqa: F821
    rows = Z * H * N_CTX
    q_desc = tl.make_tensor_descriptor(q_ptr, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])  # noqa: F821
    k_desc = tl.make_tensor_descriptor(k_ptr, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])  # noqa: F821
    if V_T:
        v_desc = tl.make_tensor_descriptor(v_ptr, [Z * H * HEAD_DIM, N_CTX], [N_CTX, 1], [HEAD_DIM, BLOCK_N])  # noqa: F821
    else:
        v_desc = tl.make_tensor_descriptor(v_ptr, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])  # noqa: F821
    o_desc = tl.make_tensor_descriptor(o_ptr, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])  # noqa: F821
    start_m = tl.program_id(0)  # noqa: F821
    off_hz = tl.program_id(1)  # noqa: F821
    base = off_hz * N_CTX
    vrow = off_hz * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)  # noqa: F821
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")  # noqa: F821
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0  # noqa: F821
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)  # noqa: F821
    qk_scale = sm_scale * 1.44269504
    q = q_desc.load([base + start_m * BLOCK_M, 0])
    if CAUSAL:
        acc, l_i, m_i = _attn_blocks(acc, l_i, m_i, q, k_desc, v_desc, base, vrow, offs_m, qk_scale, 0,
                                     start_m * BLOCK_M, BLOCK_N, False, WS, V_T)
        acc, l_i, m_i = _attn_blocks(acc, l_i, m_i, q, k_desc, v_desc, base, vrow, offs_m, qk_scale,
                                     start_m * BLOCK_M, (start_m + 1) * BLOCK_M, BLOCK_N, True, False, V_T)
    else:
        acc, l_i, m_i = _attn_blocks(acc, l_i, m_i, q, k_desc, v_desc, base, vrow, offs_m, qk_scale, 0, N_CTX,
                                     BLOCK_N, False, WS, V_T)
    m_i += tl.math.log2(l_i)  # noqa: F821
    acc = acc / l_i[:, None]
    tl.store(lse_ptr + off_hz * N_CTX + offs_m, m_i)  # noqa: F821
    o_desc.store([base + start_m * BLOCK_M, 0], acc.to(o_desc.dtype))
