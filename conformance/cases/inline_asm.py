"""``tl.inline_asm_elementwise`` with PTX: one and several results, scalar operands, ``pack=4``
on bytes.  The assembly is NVIDIA's; other backends declare these cases excluded (the
interpreter rejects the call at its line, see ``errors``-style case below)."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand

B = 1024


@triton.jit
def shift_kernel(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    z = tl.inline_asm_elementwise("shl.b32 $0, $1, 3;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(z_ptr + offs, z)


@triton.jit
def two_results_kernel(x_ptr, y_ptr, s_ptr, d_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    s, d = tl.inline_asm_elementwise("add.s32 $0, $2, $3;\nsub.s32 $1, $2, $3;", "=r,=r,r,r", [x, y],
                                     dtype=(tl.int32, tl.int32), is_pure=True, pack=1)
    tl.store(s_ptr + offs, s)
    tl.store(d_ptr + offs, d)


@triton.jit
def packed_bytes_kernel(x_ptr, z_ptr, B: tl.constexpr):
    # four uint8 per 32-bit register
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    z = tl.inline_asm_elementwise("and.b32 $0, $1, 0x0F0F0F0F;", "=r,r", [x], dtype=tl.uint8, is_pure=True, pack=4)
    tl.store(z_ptr + offs, z)


@triton.jit
def float_scalar_kernel(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    z = tl.inline_asm_elementwise("fma.rn.f32 $0, $1, $2, 0f3F800000;", "=f,f,f", [x, 2.0], dtype=tl.float32,
                                  is_pure=True, pack=1)
    tl.store(z_ptr + offs, z)


CASES = [
    Case(id="inline_asm/shift-int32", kernel=shift_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("int32", (B,), -1000, 1000)}, outputs={"z_ptr": Out("int32", (B,), poison="sentinel")},
         reference=lambda x_ptr: x_ptr << 3),
    Case(id="inline_asm/two-results-int32", kernel=two_results_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("int32", (B,), -1000, 1000), "y_ptr": Rand("int32", (B,), -1000, 1000)},
         outputs={"s_ptr": Out("int32", (B,), poison="sentinel"), "d_ptr": Out("int32", (B,), poison="sentinel")},
         reference=lambda x_ptr, y_ptr: (x_ptr + y_ptr, x_ptr - y_ptr)),
    Case(id="inline_asm/pack4-uint8", kernel=packed_bytes_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("uint8", (B,))}, outputs={"z_ptr": Out("uint8", (B,), poison="sentinel")},
         reference=lambda x_ptr: x_ptr & np.uint8(0x0F)),
    Case(id="inline_asm/float-scalar-operand", kernel=float_scalar_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("fp32", (B,))}, outputs={"z_ptr": Out("fp32", (B,))},
         reference=lambda x_ptr: x_ptr * 2 + 1),
]
