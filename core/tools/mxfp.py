"""Host-side tensors of the OCP microscaling (MX) formats, for preparing ``tl.dot_scaled`` operands
and computing references with torch.

* :class:`MXFP4Tensor` holds e2m1 (fp4) codes, one per ``uint8`` in its low four bits: a sign bit,
  two exponent bits of bias 1 and one mantissa bit, so the magnitudes are
  {0, 0.5, 1, 1.5, 2, 3, 4, 6}; there is no inf or NaN.  :meth:`MXFP4Tensor.to_packed_tensor`
  puts two codes in a byte the way ``tl.dot_scaled`` reads them: the first in the low nibble.
* :class:`MXScaleTensor` holds e8m0 scale codes: a bare biased exponent worth ``2 ** (code - 127)``,
  with 0xFF meaning NaN.

    w = MXFP4Tensor(size=(N, K), device="cuda").random()
    packed = w.to_packed_tensor(dim=1)          # [N, K // 2] uint8, for tl.dot_scaled(..., "e2m1")
    s = MXScaleTensor(size=(N, K // 32), device="cuda").random(high=64.0)
    ref = w.to(torch.float32) * s.to(torch.float32).repeat_interleave(32, dim=1)

Conversions from float round to nearest, ties to even, and saturate (e2m1) or take the floor of
the exponent (e8m0); both are exact, with no float arithmetic on the way.
"""
from __future__ import annotations

import torch

#: e2m1 code (0..7, the sign bit clear) -> its magnitude
E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
#: e8m0: the exponent bias, the largest finite code and the NaN code
E8M0_BIAS, E8M0_MAX, E8M0_NAN = 127, 254, 255


def _shape(size) -> tuple[int, ...]:
    if isinstance(size, int):
        return (size,)
    return tuple(int(s) for s in size)


def _from_args(data, size, device, what: str):
    if data is not None:
        if not isinstance(data, torch.Tensor):
            raise TypeError(f"{what}: data must be a torch tensor of floats, got {type(data).__name__}")
        return data.device, tuple(data.shape)
    if size is None:
        raise ValueError(f"{what}: give either data (a float tensor to convert) or size (for random())")
    return device, _shape(size)


class MXFP4Tensor:
    """e2m1 codes, one per ``uint8`` (``self.data``), made from floats (``data``) or left to
    :meth:`random` (``size``)."""

    def __init__(self, data=None, size=None, device=None):
        self.device, self.size = _from_args(data, size, device, "MXFP4Tensor")
        if data is not None:
            self.data = self._from_float(data)

    # -- making codes --------------------------------------------------------------------------
    def random(self) -> "MXFP4Tensor":
        """Every one of the 16 codes with equal probability (torch's generator)."""
        self.data = torch.randint(0, 16, self.size, dtype=torch.uint8, device=self.device)
        return self

    def _from_float(self, values: torch.Tensor) -> torch.Tensor:
        """Nearest e2m1 code, ties to the even code; beyond 6 (inf and NaN too) saturates to 6
        keeping the sign; -0.0 keeps its sign bit."""
        v = values.to(torch.float32)
        sign = torch.signbit(v).to(torch.uint8) << 3
        mag = torch.nan_to_num(v.abs(), nan=float("inf"))
        code = torch.zeros(v.shape, dtype=torch.uint8, device=v.device)
        for c in range(7):  # count the midpoints below the magnitude; a tie goes to the even code
            mid = (E2M1_MAGNITUDES[c] + E2M1_MAGNITUDES[c + 1]) / 2
            above = mag > mid if c % 2 == 0 else mag >= mid
            code += above.to(torch.uint8)
        return sign | code

    # -- reading codes -------------------------------------------------------------------------
    def to(self, dtype) -> torch.Tensor:
        """The values as ``dtype`` (a torch float dtype; every e2m1 value is exact in each)."""
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(f"MXFP4Tensor.to: expected a torch float dtype, got {dtype}")
        table = torch.tensor([*E2M1_MAGNITUDES, *(-m for m in E2M1_MAGNITUDES)], dtype=torch.float32,
                             device=self.data.device)
        return table[(self.data & 0xF).long()].to(dtype)

    # -- two codes a byte ----------------------------------------------------------------------
    def to_packed_tensor(self, dim: int) -> torch.Tensor:
        """Pairs of neighbours along ``dim`` in one ``uint8``: element ``2i`` in the low nibble,
        ``2i + 1`` in the high nibble; an odd length is padded with a zero code."""
        data = self.data
        if not 0 <= dim < data.ndim:
            raise ValueError(f"MXFP4Tensor.to_packed_tensor: dim must be in [0, {data.ndim}), got {dim}")
        if data.shape[dim] % 2:
            pad = torch.zeros((*data.shape[:dim], 1, *data.shape[dim + 1:]), dtype=data.dtype, device=data.device)
            data = torch.cat([data, pad], dim=dim)
        lead = (slice(None),) * dim
        first, second = data[(*lead, slice(0, None, 2))], data[(*lead, slice(1, None, 2))]
        return ((second & 0xF) << 4 | (first & 0xF)).to(torch.uint8)

    def unpack_packed_tensor(self, packed_tensor: torch.Tensor, dim: int, original_shape) -> torch.Tensor:
        """The inverse of :meth:`to_packed_tensor`: one code per ``uint8`` again, ``original_shape``
        telling whether a padding code is to be dropped."""
        p = packed_tensor.to(torch.uint8)
        pair = torch.stack([p & 0xF, p >> 4], dim=dim + 1)
        shape = list(p.shape)
        shape[dim] *= 2
        out = pair.reshape(shape)
        return out.narrow(dim, 0, int(original_shape[dim]))


class MXScaleTensor:
    """e8m0 scale codes (``self.data``, ``uint8``), made from positive floats (``data``) or left to
    :meth:`random` (``size``)."""

    def __init__(self, data=None, size=None, device=None):
        self.device, self.size = _from_args(data, size, device, "MXScaleTensor")
        if data is not None:
            self.data = self._from_float(data)

    def random(self, low=None, high=None) -> "MXScaleTensor":
        """Codes drawn uniformly among those whose value lies in ``[low, high]`` (default: every
        finite code, 2^-127 .. 2^127); never the NaN code."""
        lo = 0 if low is None or low <= 0 else max(0, _ceil_log2(low) + E8M0_BIAS)
        hi = E8M0_MAX if high is None else min(E8M0_MAX, _floor_log2(high) + E8M0_BIAS) if high > 0 else -1
        if lo > hi:
            raise ValueError(f"MXScaleTensor.random: no power of two in [{low}, {high}] is an e8m0 value")
        self.data = torch.randint(lo, hi + 1, self.size, dtype=torch.uint8, device=self.device)
        return self

    def _from_float(self, values: torch.Tensor) -> torch.Tensor:
        """``floor(log2(v)) + 127`` clamped to the finite codes; zero, negatives, inf and NaN
        become the NaN code."""
        v = values.to(torch.float64)
        _, e = torch.frexp(v)  # v = m * 2^e with 0.5 <= m < 1 (exact, subnormals included)
        code = torch.clamp(e.to(torch.int64) - 1 + E8M0_BIAS, 0, E8M0_MAX)
        bad = ~torch.isfinite(v) | (v <= 0)
        return torch.where(bad, torch.full_like(code, E8M0_NAN), code).to(torch.uint8)

    def to(self, dtype) -> torch.Tensor:
        """``2 ** (code - 127)`` as ``dtype`` (a torch float dtype), NaN for 0xFF."""
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(f"MXScaleTensor.to: expected a torch float dtype, got {dtype}")
        code = self.data.to(torch.int64)
        v = torch.ldexp(torch.ones(code.shape, dtype=torch.float64, device=code.device), code - E8M0_BIAS)
        return torch.where(code == E8M0_NAN, torch.full_like(v, float("nan")), v).to(dtype)


def _floor_log2(x) -> int:
    _, e = torch.frexp(torch.tensor(float(x), dtype=torch.float64))
    return int(e) - 1


def _ceil_log2(x) -> int:
    m, e = torch.frexp(torch.tensor(float(x), dtype=torch.float64))
    return int(e) - 1 if float(m) == 0.5 else int(e)


__all__ = ["E2M1_MAGNITUDES", "MXFP4Tensor", "MXScaleTensor"]
