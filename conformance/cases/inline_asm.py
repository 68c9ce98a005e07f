"""``tl.inline_asm_elementwise`` with PTX: one and several results, scalar operands, ``pack=4``
on bytes, and packs with several results and operands of different widths (elements narrower than
32 bits share a register, wider ones take one each, as Triton packs them; a thread holding fewer
elements than ``pack`` is padded).  The assembly is NVIDIA's; other backends declare these cases excluded (the
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


@triton.jit
def packed_two_results_kernel(a_ptr, b_ptr, c_ptr, d_ptr, B: tl.constexpr):
    # Triton's test_inline_asm_packed_multiple_outputs: 4 bytes in $8, 4 floats in $9..$12,
    # results: 4 int32 registers then 4 float registers
    a = tl.load(a_ptr + tl.arange(0, B))
    b = tl.load(b_ptr + tl.arange(0, B))
    c, d = tl.inline_asm_elementwise(
        asm="""
        {
            .reg .b8 tmp<4>;
            mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
            cvt.u32.u8 $0, tmp0;
            cvt.u32.u8 $1, tmp1;
            cvt.u32.u8 $2, tmp2;
            cvt.u32.u8 $3, tmp3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """,
        constraints="=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r", args=[a, b], dtype=(tl.int32, tl.float32),
        is_pure=True, pack=4)
    tl.store(c_ptr + tl.arange(0, B), c)
    tl.store(d_ptr + tl.arange(0, B), d)


@triton.jit
def packed_words_kernel(x_ptr, z_ptr, B: tl.constexpr):
    # pack=4 on int32: four registers in, four out.  Which elements share a pack depends on the
    # layout, so every slot computes the same function of its own value (3x + 1): a result routed
    # to another element's slot shows as a wrong value.
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    z = tl.inline_asm_elementwise("mad.lo.s32 $0, $4, 3, 1;\nmad.lo.s32 $1, $5, 3, 1;\n"
                                  "mad.lo.s32 $2, $6, 3, 1;\nmad.lo.s32 $3, $7, 3, 1;",
                                  "=r,=r,=r,=r,r,r,r,r", [x], dtype=tl.int32, is_pure=True, pack=4)
    tl.store(z_ptr + offs, z)


@triton.jit
def packed_halves_kernel(x_ptr, y_ptr, s_ptr, w_ptr, B: tl.constexpr):
    # pack=2: two fp16 in one register; the int32 result takes two registers
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    s, w = tl.inline_asm_elementwise(
        "{\n.reg .b16 lo, hi;\nadd.rn.f16x2 $0, $3, $3;\nmov.b32 {lo, hi}, $3;\ncvt.rzi.s32.f16 $1, lo;\n"
        "cvt.rzi.s32.f16 $2, hi;\nadd.s32 $1, $1, $4;\nadd.s32 $2, $2, $5;\n}",
        "=r,=r,=r,r,r,r", [x, y], dtype=(tl.float16, tl.int32), is_pure=True, pack=2)
    tl.store(s_ptr + offs, s)
    tl.store(w_ptr + offs, w)


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
    Case(id="inline_asm/pack4-two-results-uint8-fp32", kernel=packed_two_results_kernel, constexprs={"B": 512},
         inputs={"a_ptr": Rand("uint8", (512,)), "b_ptr": Rand("fp32", (512,), -200, 200)},
         outputs={"c_ptr": Out("int32", (512,), poison="sentinel"), "d_ptr": Out("fp32", (512,))},
         reference=lambda a_ptr, b_ptr: (a_ptr.astype(np.int32), np.maximum(a_ptr.astype(np.float64), b_ptr))),
    Case(id="inline_asm/pack4-int32-registers", kernel=packed_words_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("int32", (B,), -1000, 1000)}, outputs={"z_ptr": Out("int32", (B,), poison="sentinel")},
         reference=lambda x_ptr: x_ptr * np.int32(3) + np.int32(1)),
    Case(id="inline_asm/pack4-padded-uint8", kernel=packed_bytes_kernel, constexprs={"B": 64},
         inputs={"x_ptr": Rand("uint8", (64,))}, outputs={"z_ptr": Out("uint8", (64,), poison="sentinel")},
         reference=lambda x_ptr: x_ptr & np.uint8(0x0F), options={"num_warps": 4}),
    Case(id="inline_asm/pack2-fp16-int32-results", kernel=packed_halves_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("fp16", (B,), -100, 100), "y_ptr": Rand("int32", (B,), -1000, 1000)},
         outputs={"s_ptr": Out("fp16", (B,)), "w_ptr": Out("int32", (B,), poison="sentinel")},
         reference=lambda x_ptr, y_ptr: (2 * x_ptr, np.trunc(x_ptr).astype(np.int32) + y_ptr)),
]
