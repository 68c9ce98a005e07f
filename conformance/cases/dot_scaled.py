"""tl.dot_scaled: microscaled (OCP MX) matmul.  Every format pair Triton's tests use (lhs e2m1 /
e4m3 / e5m2 with a scale, rhs e4m3 / e5m2 / bf16 without) at three tile shapes, then each side
scaled or not, fp16 operands, fast_math, NaN scales (0xFF), an accumulator, fp8-typed operands,
e2m1 packed along M, a K loop with a loop-carried accumulator, a batched (3-D) product, and the
errors a kernel author can make.

The reference decodes every format from its definition (e2m1: 1 sign, 2 exponent bits of bias 1,
1 mantissa bit; e4m3: bias 7, S.1111.111 NaN, no inf; e5m2: bias 15, IEEE specials; e8m0:
``2^(code - 127)``, 0xFF NaN) and multiplies in float64.  Products of the decoded, scaled values
are exact in the compute types (bf16 / fp16) for the ranges generated here, so a backend's only
error is its fp32 accumulation: outputs must lie within ``K * 2^-23 * (|A| @ |B|)`` of the exact
value (plus half an fp32 ulp), and NaN exactly where a NaN scale puts it.
"""
import dataclasses

import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Err, Gen, Out, Rand

# ---- formats from their definitions -------------------------------------------------------------


def _minifloat(bits, e_bits: int, m_bits: int, bias: int) -> np.ndarray:
    """sign | exponent | mantissa, subnormals at exponent 0; specials are the caller's."""
    b = np.asarray(bits).astype(np.int64)
    sign = np.where(b >> (e_bits + m_bits) & 1, -1.0, 1.0)
    exp = (b >> m_bits) & ((1 << e_bits) - 1)
    man = (b & ((1 << m_bits) - 1)).astype(np.float64) / (1 << m_bits)
    mag = np.where(exp == 0, man * 2.0 ** (1 - bias), (1.0 + man) * np.exp2(exp - float(bias)))
    return sign * mag


def e2m1(codes) -> np.ndarray:
    return _minifloat(codes, 2, 1, 1)


def e4m3(codes) -> np.ndarray:
    v = _minifloat(codes, 4, 3, 7)
    return np.where((np.asarray(codes) & 0x7F) == 0x7F, np.nan, v)


def e5m2(codes) -> np.ndarray:
    c = np.asarray(codes).astype(np.int64)
    v = _minifloat(c, 5, 2, 15)
    top = (c & 0x7C) == 0x7C
    return np.where(top & ((c & 3) == 0), np.copysign(np.inf, v), np.where(top, np.nan, v))


def e8m0(codes) -> np.ndarray:
    c = np.asarray(codes).astype(np.int64)
    return np.where(c == 0xFF, np.nan, np.exp2(c - 127.0))


def unpack_e2m1(packed, axis: int) -> np.ndarray:
    """Two e2m1 codes a byte, the first in the low nibble (bits 0-3), unpacked along ``axis``."""
    b = np.asarray(packed).astype(np.int64)
    pair = np.stack([e2m1(b & 0xF), e2m1(b >> 4)], axis=axis + 1)
    shape = list(b.shape)
    shape[axis] *= 2
    return pair.reshape(shape)


def operand(values, fmt: str, pack_axis: int) -> np.ndarray:
    """An input as the case hands it over (codes for the MX formats, exact floats otherwise)."""
    v = np.asarray(values)
    if fmt == "e2m1":
        return unpack_e2m1(v, pack_axis)
    if v.dtype.kind == "f":  # bf16 / fp16 / fp8-typed inputs arrive decoded
        return v.astype(np.float64)
    return {"e4m3": e4m3, "e5m2": e5m2}[fmt](v)


def scaled(x: np.ndarray, scale, k_axis: int) -> np.ndarray:
    s = np.repeat(e8m0(scale), 32, axis=-1)  # [.., rows, K]
    if k_axis != x.ndim - 1:
        s = np.swapaxes(s, -1, -2)
    with np.errstate(invalid="ignore", over="ignore"):
        return x * s


# ---- inputs ---------------------------------------------------------------------------------------

def _codes(fmt: str, max_exp: int | None = None):
    """Random codes of an MX element format: every e2m1 byte; fp8 codes without NaN/inf (and
    with the exponent field at most ``max_exp``, for the fp16 compute type's range)."""
    def fn(rng, shape):
        v = rng.integers(0, 256, size=shape).astype(np.int64)
        if fmt == "e2m1":
            return v
        e_bits, m_bits = (4, 3) if fmt == "e4m3" else (5, 2)
        top = (1 << e_bits) - 1 if max_exp is None else max_exp + 1
        exp = (v >> m_bits) & ((1 << e_bits) - 1)
        exp = np.where(exp >= top, exp % top, exp)  # NaN / inf codes (and big ones) folded down
        if fmt == "e4m3" and max_exp is None:
            exp = np.where((exp == 15) & ((v & 7) == 7), 14, exp)
        return (v & 0x80) | (exp << m_bits) | (v & ((1 << m_bits) - 1))
    return fn


def _scales(lo: int, hi: int, nan_at=None):
    def fn(rng, shape):
        s = rng.integers(lo, hi, size=shape, endpoint=True)
        if nan_at is not None:
            s[nan_at] = 0xFF
        return s
    return fn


_TAG = {"bf16": "bf16", "fp16": "fp16"}


def _operand_input(fmt: str, shape, fp16_range: bool, typed: bool):
    if fmt in _TAG:
        return Rand(_TAG[fmt], shape, -4, 4)
    if typed:  # the operand reaches the kernel as float8e4nv / float8e5 rather than uint8 bits
        tag = "fp8e4nv" if fmt == "e4m3" else "fp8e5"
        return Gen(tag, shape, lambda rng, s: e4m3(_codes("e4m3")(rng, s)) if fmt == "e4m3"
                   else e5m2(_codes("e5m2")(rng, s)))
    return Gen("uint8", shape, _codes(fmt, 20 if fp16_range and fmt == "e5m2" else None))


# ---- the kernels ------------------------------------------------------------------------------------

@triton.jit
def dot_scaled_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                      FA: tl.constexpr, FB: tl.constexpr, SCALE_A: tl.constexpr, SCALE_B: tl.constexpr,
                      FAST: tl.constexpr, USE_ACC: tl.constexpr, A_K_PACK: tl.constexpr, B_K_PACK: tl.constexpr):
    # lhs [M, K] and rhs [K, N] row-major, e2m1 two a byte (along K, or along M / N when the
    # K_PACK flag is off); scales [M, K/32] and [N, K/32]
    AM: tl.constexpr = M // 2 if not A_K_PACK else M
    AK: tl.constexpr = K // 2 if FA == "e2m1" and A_K_PACK else K
    BK: tl.constexpr = K // 2 if FB == "e2m1" and B_K_PACK else K
    BN: tl.constexpr = N // 2 if not B_K_PACK else N
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    a = tl.load(a_ptr + tl.arange(0, AM)[:, None] * AK + tl.arange(0, AK)[None, :])
    b = tl.load(b_ptr + tl.arange(0, BK)[:, None] * BN + tl.arange(0, BN)[None, :])
    if SCALE_A:
        sa = tl.load(as_ptr + rm[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    else:
        sa = None
    if SCALE_B:
        sb = tl.load(bs_ptr + rn[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    else:
        sb = None
    if USE_ACC:
        acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        z = tl.dot_scaled(a, sa, FA, b, sb, FB, acc, fast_math=FAST, lhs_k_pack=A_K_PACK, rhs_k_pack=B_K_PACK)
    else:
        z = tl.dot_scaled(a, sa, FA, b, sb, FB, fast_math=FAST, lhs_k_pack=A_K_PACK, rhs_k_pack=B_K_PACK)
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], z)


@triton.jit
def dot_scaled_3d_kernel(a_ptr, as_ptr, b_ptr, z_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                         K: tl.constexpr):
    # batched: lhs e2m1 [B, M, K/2] with scales [B, M, K/32], rhs e4m3 [B, K, N]
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    ka = tl.arange(0, K // 2)[None, None, :]
    ks = tl.arange(0, K // 32)[None, None, :]
    kb = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * (M * K // 2) + rm * (K // 2) + ka)
    s = tl.load(as_ptr + rb * (M * K // 32) + rm * (K // 32) + ks)
    b = tl.load(b_ptr + rb * (K * N) + kb * N + rn)
    tl.store(z_ptr + rb * (M * N) + rm * N + rn, tl.dot_scaled(a, s, "e2m1", b, None, "e4m3"))


@triton.jit
def dot_scaled_loop_kernel(a_ptr, as_ptr, b_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                           BLOCK_K: tl.constexpr):
    # the mxfp4 x bf16 matmul inner loop: [M, K/2] e2m1 with [M, K/32] scales times [K, N] bf16,
    # BLOCK_K at a time into a loop-carried fp32 accumulator
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    acc = tl.zeros((M, N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * (K // 2) + (k // 2 + tl.arange(0, BLOCK_K // 2))[None, :])
        s = tl.load(as_ptr + rm[:, None] * (K // 32) + (k // 32 + tl.arange(0, BLOCK_K // 32))[None, :])
        b = tl.load(b_ptr + (k + tl.arange(0, BLOCK_K))[:, None] * N + rn[None, :])
        acc = tl.dot_scaled(a, s, "e2m1", b, None, "bf16", acc)
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], acc)


# ---- checking -------------------------------------------------------------------------------------

def _within_fp32_accumulation(got, exact, magnitude, k) -> str | None:
    nan_exp, nan_got = np.isnan(exact), np.isnan(got)
    if (nan_exp != nan_got).any():
        i = tuple(int(j) for j in np.argwhere(nan_exp != nan_got)[0])
        return (f"NaN where none is due (or none where a scale is NaN): first at {i}: got {got[i]!r}, "
                f"expected {exact[i]!r}")
    ok = nan_exp | (np.abs(got - exact) <= k * 2.0 ** -23 * magnitude + 2.0 ** -24 * np.abs(exact) + 1e-30)
    if ok.all():
        return None
    bad = np.argwhere(~ok)
    i = tuple(int(j) for j in bad[0])
    return (f"{len(bad)}/{ok.size} elements beyond the fp32 accumulation bound; first at {i}: got {got[i]!r}, "
            f"expected {exact[i]!r} (sum of |terms| {magnitude[i]:g})")


def _check(m, n, k, fa, fb, use_a, use_b, use_acc, a_k_pack, b_k_pack):
    def check(out, inp):
        x = operand(inp["a_ptr"], fa, 1 if a_k_pack else 0).reshape(m, k)
        y = operand(inp["b_ptr"], fb, 0 if b_k_pack else 1).reshape(k, n)
        if use_a:
            x = scaled(x, np.asarray(inp["as_ptr"]).reshape(m, k // 32), 1)
        if use_b:
            y = scaled(y, np.asarray(inp["bs_ptr"]).reshape(n, k // 32), 0)
        c = np.asarray(inp["c_ptr"], np.float64).reshape(m, n) if use_acc else 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            exact = x @ y + c
            magnitude = np.nan_to_num(np.abs(x)) @ np.nan_to_num(np.abs(y)) + np.abs(c)
        return _within_fp32_accumulation(np.asarray(out["z_ptr"]).reshape(m, n), exact, magnitude, k)
    return check


def _case(fa, fb, m=64, n=64, k=64, scale_a=True, scale_b=False, fast=False, acc=False, nan=None, typed=False,
          scale_range=None, a_k_pack=True, b_k_pack=True, tag=""):
    fp16 = "fp16" in (fa, fb)
    lo, hi = scale_range or ((123, 131) if fp16 else (118, 136))
    sides = {(True, False): "lhs-scaled", (False, True): "rhs-scaled", (True, True): "both-scaled",
             (False, False): "unscaled"}[(scale_a, scale_b)]
    name = f"dot_scaled/{fa}x{fb}-{m}x{n}x{k}-{sides}" + ("-fast" if fast else "") + ("-acc" if acc else "") + tag
    a_shape = (m // 2, k) if not a_k_pack else (m, k // 2 if fa == "e2m1" else k)
    b_shape = (k, n // 2) if not b_k_pack else (k // 2 if fb == "e2m1" else k, n)
    inputs = {
        "a_ptr": _operand_input(fa, a_shape, fp16, typed),
        "as_ptr": Gen("uint8", (m, k // 32), _scales(lo, hi)),
        "b_ptr": _operand_input(fb, b_shape, fp16, typed),
        "bs_ptr": Gen("uint8", (n, k // 32), _scales(lo, hi)),
        "c_ptr": Rand("fp32", (m, n), -100, 100),
    }
    if nan is not None:  # 0xFF in the last K block of two rows (lhs) or columns (rhs)
        inputs["as_ptr" if nan == "lhs" else "bs_ptr"] = Gen(
            "uint8", (m if nan == "lhs" else n, k // 32), _scales(lo, hi, (slice(3, 5), -1)))
    return Case(id=name, kernel=dot_scaled_kernel, inputs=inputs,
                constexprs={"M": m, "N": n, "K": k, "FA": fa, "FB": fb, "SCALE_A": scale_a, "SCALE_B": scale_b,
                            "FAST": fast, "USE_ACC": acc, "A_K_PACK": a_k_pack, "B_K_PACK": b_k_pack},
                outputs={"z_ptr": Out("fp32", (m, n), poison="sentinel")},
                check=_check(m, n, k, fa, fb, scale_a, scale_b, acc, a_k_pack, b_k_pack))


def _distinct_nibbles(rng, shape):
    """e2m1 bytes whose two codes always differ, so reading a pair in the wrong order shows."""
    lo = rng.integers(0, 16, size=shape)
    hi = (lo + rng.integers(1, 16, size=shape)) % 16
    return (hi << 4) | lo


def _nibble_order(fa, fb, scale_a, scale_b, a_k_pack=True, b_k_pack=True) -> Case:
    """The first e2m1 value of a byte is its low nibble, along K and along M / N alike."""
    c = _case(fa, fb, 32, 32, 64, scale_a=scale_a, scale_b=scale_b, a_k_pack=a_k_pack, b_k_pack=b_k_pack,
              tag="-nibble-order" + ("" if a_k_pack else "-m") + ("" if b_k_pack else "-n"))
    inputs = dict(c.inputs)
    for name, fmt in (("a_ptr", fa), ("b_ptr", fb)):
        if fmt == "e2m1":
            inputs[name] = Gen("uint8", inputs[name].shape, _distinct_nibbles)
    return dataclasses.replace(c, inputs=inputs)


def _loop(m=64, n=64, k=256, block_k=64) -> Case:
    def check(out, inp):
        x = scaled(operand(np.asarray(inp["a_ptr"]).reshape(m, k // 2), "e2m1", 1),
                   np.asarray(inp["as_ptr"]).reshape(m, k // 32), 1)
        y = np.asarray(inp["b_ptr"], np.float64).reshape(k, n)
        return _within_fp32_accumulation(np.asarray(out["z_ptr"]).reshape(m, n), x @ y, np.abs(x) @ np.abs(y), k)
    return Case(id=f"dot_scaled/e2m1xbf16-loop-{m}x{n}x{k}-by-{block_k}", kernel=dot_scaled_loop_kernel,
                inputs={"a_ptr": Gen("uint8", (m, k // 2), _codes("e2m1")),
                        "as_ptr": Gen("uint8", (m, k // 32), _scales(118, 136)),
                        "b_ptr": Rand("bf16", (k, n), -4, 4)},
                constexprs={"M": m, "N": n, "K": k, "BLOCK_K": block_k},
                outputs={"z_ptr": Out("fp32", (m, n), poison="sentinel")}, check=check)


def _batched(bsz=2, m=32, n=32, k=64) -> Case:
    def check(out, inp):
        x = scaled(operand(np.asarray(inp["a_ptr"]).reshape(bsz, m, k // 2), "e2m1", 2),
                   np.asarray(inp["as_ptr"]).reshape(bsz, m, k // 32), 2)
        y = operand(inp["b_ptr"], "e4m3", 0).reshape(bsz, k, n)
        return _within_fp32_accumulation(np.asarray(out["z_ptr"]).reshape(bsz, m, n), x @ y,
                                         np.abs(x) @ np.abs(y), k)
    return Case(id=f"dot_scaled/e2m1xe4m3-batched-{bsz}x{m}x{n}x{k}", kernel=dot_scaled_3d_kernel,
                inputs={"a_ptr": Gen("uint8", (bsz, m, k // 2), _codes("e2m1")),
                        "as_ptr": Gen("uint8", (bsz, m, k // 32), _scales(118, 136)),
                        "b_ptr": Gen("uint8", (bsz, k, n), _codes("e4m3"))},
                constexprs={"B": bsz, "M": m, "N": n, "K": k},
                outputs={"z_ptr": Out("fp32", (bsz, m, n), poison="sentinel")}, check=check)


# ---- errors a kernel author can make --------------------------------------------------------------

@triton.jit
def bad_format_kernel(x_ptr, s_ptr, z_ptr):
    r = tl.arange(0, 32)
    a = tl.load(x_ptr + r[:, None] * 32 + r[None, :])
    s = tl.load(s_ptr + r)
    tl.store(z_ptr + r[:, None] * 32 + r[None, :], tl.dot_scaled(a, None, "e3m3", a, None, "e4m3"))


@triton.jit
def e2m1_not_uint8_kernel(x_ptr, s_ptr, z_ptr):
    r = tl.arange(0, 32)
    a = tl.load(x_ptr + r[:, None] * 32 + r[None, :]).to(tl.int8, bitcast=True)
    b = tl.load(x_ptr + tl.arange(0, 64)[:, None] * 32 + r[None, :])
    tl.store(z_ptr + r[:, None] * 32 + r[None, :], tl.dot_scaled(a, None, "e2m1", b, None, "e4m3"))


@triton.jit
def scale_shape_kernel(x_ptr, s_ptr, z_ptr):
    r = tl.arange(0, 32)
    a = tl.load(x_ptr + r[:, None] * 32 + r[None, :])
    s = tl.load(s_ptr + r[:, None] * 2 + tl.arange(0, 2)[None, :])
    tl.store(z_ptr + r[:, None] * 32 + r[None, :], tl.dot_scaled(a, s, "e4m3", a, None, "e4m3"))


@triton.jit
def k_mismatch_kernel(x_ptr, s_ptr, z_ptr):
    r = tl.arange(0, 32)
    a = tl.load(x_ptr + r[:, None] * 32 + r[None, :])
    s = tl.load(s_ptr + r)
    tl.store(z_ptr + r[:, None] * 32 + r[None, :], tl.dot_scaled(a, s[:, None], "e2m1", a, None, "e4m3"))


@triton.jit
def out_dtype_kernel(x_ptr, s_ptr, z_ptr):
    r = tl.arange(0, 32)
    a = tl.load(x_ptr + r[:, None] * 32 + r[None, :])
    tl.store(z_ptr + r[:, None] * 32 + r[None, :],
             tl.dot_scaled(a, None, "e4m3", a, None, "e4m3", out_dtype=tl.float16))


def _err(name, kernel, err) -> Case:
    return Case(id=f"dot_scaled/error-{name}", kernel=kernel,
                inputs={"x_ptr": Gen("uint8", (64 * 32,), _codes("e4m3")),
                        "s_ptr": Gen("uint8", (64,), _scales(120, 130))},
                outputs={"z_ptr": Out("fp32", (32, 32))}, expect_error=err)


_SUITE_PAIRS = [(a, b) for a in ("e2m1", "e4m3", "e5m2") for b in ("e4m3", "e5m2", "bf16")]
_SHAPES = [(64, 64, 64), (128, 128, 128), (32, 64, 128)]

CASES = [_case(a, b, m, n, k) for a, b in _SUITE_PAIRS for m, n, k in _SHAPES] + [
    _case("e4m3", "e2m1", scale_a=False, scale_b=True),
    _case("e2m1", "e2m1", scale_a=True, scale_b=True),
    _case("e4m3", "e4m3", 128, 128, 128, scale_a=True, scale_b=True),
    _case("e5m2", "e2m1", 32, 64, 64, scale_a=True, scale_b=True),
    _case("e4m3", "e5m2", scale_a=False, scale_b=False),
    _case("fp16", "e2m1", scale_a=False, scale_b=True),
    _case("e4m3", "fp16", scale_a=True, scale_b=False),
    _case("e5m2", "fp16", 32, 32, 64, scale_a=True, scale_b=False),
    _case("bf16", "e4m3", scale_a=False, scale_b=True),
    _case("bf16", "bf16", scale_a=False, scale_b=False),
    _case("e2m1", "e4m3", fast=True),
    _case("e2m1", "e2m1", 128, 128, 128, scale_a=True, scale_b=True, fast=True),
    _case("e4m3", "bf16", nan="lhs", tag="-nan-scale"),
    _case("e2m1", "e2m1", scale_a=True, scale_b=True, nan="rhs", tag="-nan-scale"),
    _case("e2m1", "bf16", acc=True),
    _case("e4m3", "e5m2", scale_range=(0, 142), tag="-wide-scales"),
    _case("e4m3", "e5m2", scale_a=True, scale_b=True, typed=True, tag="-fp8-dtypes"),
    _case("e2m1", "e4m3", a_k_pack=False, tag="-packed-along-m"),
    _case("e4m3", "e2m1", scale_a=False, scale_b=True, b_k_pack=False, tag="-packed-along-n"),
    _case("e2m1", "e2m1", 64, 32, 64, scale_a=True, scale_b=True, a_k_pack=False, b_k_pack=False,
          tag="-packed-along-m-and-n"),
    _case("e2m1", "fp16", scale_a=True, scale_b=False),
    _nibble_order("e2m1", "bf16", True, False),
    _nibble_order("bf16", "e2m1", False, True),
    _nibble_order("e2m1", "e2m1", True, True, a_k_pack=False),
    _nibble_order("e5m2", "e2m1", True, True, b_k_pack=False),
    _loop(),
    _batched(),
    _err("format", bad_format_kernel,
         Err("Invalid float format: e3m3", line='tl.dot_scaled(a, None, "e3m3", a, None, "e4m3")')),
    _err("e2m1-storage", e2m1_not_uint8_kernel,
         Err("e2m1 format must be packed as uint8", "int8", line='tl.dot_scaled(a, None, "e2m1", b, None, "e4m3")')),
    _err("scale-shape", scale_shape_kernel,
         Err("lhs_scale must be a tensor of shape [32, 1]", "['32', '2']", line='tl.dot_scaled(a, s, "e4m3", a, None, "e4m3")')),
    _err("k-mismatch", k_mismatch_kernel,
         Err("Reduction dimension should pack the same number of elements", line="tl.dot_scaled(a, s[:, None]")),
    _err("out-dtype", out_dtype_kernel, Err("Only float32 is supported for out_dtype", "fp16",
                                            line="tl.dot_scaled(a, None, \"e4m3\", a, None, \"e4m3\", out_dtype")),
]
