"""``tl.device_print`` / ``print`` inside kernels: the printed text, captured and compared line by
line with text formatted here from the inputs.

Every backend prints one line per element,
``pid (<x>, <y>, <z>) idx (<i0>, ...)<prefix>[(operand <k>) ]<value>``, the prefix shaped as
``" x: "`` and each index padded to its dimension's digits; values as C's ``%f``, ``%i``/``%u``,
``%p`` and, with ``hex=True``, the value's bits padded to its width.  Lines of a tensor are
compared as a multiset (threads print in any order); a scalar or a text-only print is printed by
every thread of a program, so those cases compare the distinct lines.
"""
from collections import Counter

import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Gen, Out, Rand

N = 128
#: 128 elements over 2 warps: each element lives in one thread on 32- and 64-lane targets
_OPTS = {"num_warps": 2}


def _diff(want: Counter, text: str, distinct: bool = False) -> str | None:
    got = Counter(line for line in text.splitlines() if line.strip())
    if distinct:
        got, want = Counter(set(got)), Counter(set(want))
    if got == want:
        return None
    missing = want - got
    extra = got - want
    parts = []
    if missing:
        line, n = next(iter(missing.items()))
        parts.append(f"{sum(missing.values())} expected line(s) missing, e.g. {line!r} (x{n})")
    if extra:
        line, n = next(iter(extra.items()))
        parts.append(f"{sum(extra.values())} unexpected line(s), e.g. {line!r} (x{n})")
    return "; ".join(parts)


def _c_value(v, dtype: str) -> str:
    """``v`` as C's printf shows it for the element type: %f for floats (via double)."""
    if dtype.startswith(("fp", "bf")):
        return "%f" % float(v)
    return "%d" % int(v)


@triton.jit
def print_tensor_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("x", x)
    tl.store(y_ptr + offs, x)


@triton.jit
def print_call_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    print("x:", x)  # a device print; the prefix already ends in ": "
    tl.store(y_ptr + offs, x)


def _tensor_lines(prefix: str, dtype: str):
    def check(text, inp):
        x = inp["x_ptr"].reshape(2, N)
        want = Counter(f"pid ({p}, 0, 0) idx ({i:3}){prefix}{_c_value(x[p, i], dtype)}"
                       for p in range(2) for i in range(N))
        return _diff(want, text)
    return check


def _eighths(lo, hi):
    # multiples of 1/8: %f shows them exactly (no rounding tie in the sixth decimal)
    return lambda rng, shape: rng.integers(lo * 8, hi * 8, size=shape) / 8.0


_TENSOR = [("int8", Rand("int8", (2 * N,))), ("uint8", Rand("uint8", (2 * N,))),
           ("int16", Rand("int16", (2 * N,))), ("int32", Rand("int32", (2 * N,))),
           ("uint32", Gen("uint32", (2 * N,), lambda rng, s: rng.integers(2**31, 2**32, size=s))),
           ("int64", Rand("int64", (2 * N,))), ("uint64", Rand("uint64", (2 * N,))),
           ("fp16", Gen("fp16", (2 * N,), _eighths(-100, 100))),
           ("bf16", Gen("bf16", (2 * N,), _eighths(-16, 16))),
           ("fp32", Gen("fp32", (2 * N,), _eighths(-1000, 1000))),
           ("fp64", Gen("fp64", (2 * N,), _eighths(-10**6, 10**6)))]

CASES = [
    Case(id=f"print/tensor-{t}", kernel=print_tensor_kernel, grid=(2,), constexprs={"BLOCK": N}, options=_OPTS,
         inputs={"x_ptr": gen}, outputs={"y_ptr": Out(t, (2 * N,))},
         reference=lambda x_ptr: x_ptr, stdout=_tensor_lines(" x: ", t),
         doc="one line per element; prefix 'x' printed as ' x: '; index padded to 3 digits")
    for t, gen in _TENSOR
]
CASES.append(
    Case(id="print/python-print", kernel=print_call_kernel, grid=(2,), constexprs={"BLOCK": N}, options=_OPTS,
         inputs={"x_ptr": Rand("int32", (2 * N,), -1000, 1000)}, outputs={"y_ptr": Out("int32", (2 * N,))},
         reference=lambda x_ptr: x_ptr, stdout=_tensor_lines(" x: ", "int32"),
         doc="print(...) in a kernel is a device print"))


@triton.jit
def print_hex_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("x: ", x, hex=True)
    tl.store(y_ptr + offs, x)


def _hex_lines(bits: int):
    def check(text, inp):
        x = inp["x_ptr"].reshape(2, N)
        want = Counter(f"pid ({p}, 0, 0) idx ({i:3}) x: 0x{int(x[p, i]) % 2**bits:0{bits // 4}x}"
                       for p in range(2) for i in range(N))
        return _diff(want, text)
    return check


CASES += [
    Case(id=f"print/hex-{t}", kernel=print_hex_kernel, grid=(2,), constexprs={"BLOCK": N}, options=_OPTS,
         inputs={"x_ptr": Rand(t, (2 * N,))}, outputs={"y_ptr": Out(t, (2 * N,))},
         reference=lambda x_ptr: x_ptr, stdout=_hex_lines(bits),
         doc="hex=True: the value's own bits, zero-padded to its width (negative values too)")
    for t, bits in (("int16", 16), ("int32", 32), ("int64", 64), ("uint8", 8))
]


@triton.jit
def print_two_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = x * 3
    tl.device_print("", x, y)
    tl.store(y_ptr + offs, y)


def _two_lines(text, inp):
    x = inp["x_ptr"].reshape(2, N).astype(np.int64)
    want = Counter()
    for p in range(2):
        for i in range(N):
            want[f"pid ({p}, 0, 0) idx ({i:3}): (operand 0) {x[p, i]}"] += 1
            want[f"pid ({p}, 0, 0) idx ({i:3}): (operand 1) {3 * x[p, i]}"] += 1
    return _diff(want, text)


CASES.append(
    Case(id="print/two-operands", kernel=print_two_kernel, grid=(2,), constexprs={"BLOCK": N}, options=_OPTS,
         inputs={"x_ptr": Rand("int32", (2 * N,), -10**6, 10**6)}, outputs={"y_ptr": Out("int32", (2 * N,))},
         reference=lambda x_ptr: x_ptr * 3, stdout=_two_lines,
         doc="an empty prefix reads ': ', then '(operand k) ' per operand"))


@triton.jit
def print_2d_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    tl.device_print("v", x)
    tl.store(y_ptr + offs, x)


def _lines_2d(text, inp):
    x = inp["x_ptr"].reshape(4, 32).astype(np.int64)
    want = Counter(f"pid (0, 0, 0) idx ({r}, {c:2}) v: {x[r, c]}" for r in range(4) for c in range(32))
    return _diff(want, text)


CASES.append(
    Case(id="print/tensor-2d", kernel=print_2d_kernel, grid=(1,), constexprs={"R": 4, "C": 32}, options=_OPTS,
         inputs={"x_ptr": Rand("int32", (N,), -999, 999)}, outputs={"y_ptr": Out("int32", (N,))},
         reference=lambda x_ptr: x_ptr, stdout=_lines_2d,
         doc="each index padded to its own dimension's digits: (r, cc)"))


@triton.jit
def print_scalar_kernel(x_ptr, y_ptr):
    x = tl.load(x_ptr + tl.program_id(0))
    tl.device_print("s", x)
    tl.device_print("pid", tl.program_id(1))
    print("no arg")
    tl.store(y_ptr + tl.program_id(0) * 3 + tl.program_id(1), x)


def _scalar_lines(text, inp):
    x = inp["x_ptr"]
    want = Counter()
    for p in range(2):
        for q in range(3):
            want[f"pid ({p}, {q}, 0) idx () s: {x[p]:f}"] += 1
            want[f"pid ({p}, {q}, 0) idx () pid: {q}"] += 1
            want[f"pid ({p}, {q}, 0) no arg"] += 1
    return _diff(want, text, distinct=True)


CASES.append(
    Case(id="print/scalar-and-text", kernel=print_scalar_kernel, grid=(2, 3), options=_OPTS,
         inputs={"x_ptr": Gen("fp32", (2,), _eighths(-50, 50))}, outputs={"y_ptr": Out("fp32", (6,))},
         reference=lambda x_ptr: np.repeat(x_ptr, 3), stdout=_scalar_lines,
         doc="scalars print 'idx ()'; a text-only print is 'pid (x, y, z) text'"))


@triton.jit
def print_ptr_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.device_print("ptr", x_ptr + offs)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


def _ptr_lines(text, inp):
    import re
    addr = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        m = re.fullmatch(r"pid \(0, 0, 0\) idx \(([ \d]{3})\) ptr: (0x[0-9a-f]+)", line)
        if m is None:
            return f"line {line!r} does not read 'pid (0, 0, 0) idx (iii) ptr: 0x...'"
        addr[int(m.group(1))] = int(m.group(2), 16)
    if sorted(addr) != list(range(N)):
        return f"indices printed: {len(addr)} distinct, expected 0..{N - 1}"
    off = [addr[i] - addr[0] for i in range(N)]
    if off != [4 * i for i in range(N)]:
        return f"addresses are not 4 bytes apart: offsets {off[:4]}..."
    return None


CASES.append(
    Case(id="print/pointer", kernel=print_ptr_kernel, grid=(1,), constexprs={"BLOCK": N}, options=_OPTS,
         inputs={"x_ptr": Rand("int32", (N,))}, outputs={"y_ptr": Out("int32", (N,))},
         reference=lambda x_ptr: x_ptr, stdout=_ptr_lines,
         doc="pointers print as 0x... addresses, 4 bytes apart for int32"))
