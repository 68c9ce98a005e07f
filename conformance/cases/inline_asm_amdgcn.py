"""``tl.inline_asm_elementwise`` with AMDGCN assembly (the ``inline_asm/*`` cases are PTX): one and
several results, a scalar operand, ``pack=4`` on bytes (four in one 32-bit VGPR) and on words (four
VGPRs).  The instructions are spelled the same on CDNA (gfx9) and RDNA3 (gfx11): ``v_lshlrev_b32``,
``v_add3_u32``, ``v_xor_b32``, ``v_and_b32``, ``v_fma_f32``, ``v_mul_lo_u32``; constraints name
VGPRs (``v``).  Backends of other instruction sets declare the category excluded."""
import numpy as np

import tritium as triton
import tritium.language as tl

from ..case import Case, Out, Rand

B = 1024


@triton.jit
def shift_kernel(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    z = tl.inline_asm_elementwise("v_lshlrev_b32 $0, 3, $1", "=v,v", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(z_ptr + offs, z)


@triton.jit
def two_results_kernel(x_ptr, y_ptr, s_ptr, d_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    s, d = tl.inline_asm_elementwise("v_add3_u32 $0, $2, $3, 0\nv_xor_b32 $1, $2, $3", "=&v,=&v,v,v", [x, y],
                                     dtype=(tl.int32, tl.int32), is_pure=True, pack=1)
    tl.store(s_ptr + offs, s)
    tl.store(d_ptr + offs, d)


@triton.jit
def packed_bytes_kernel(x_ptr, z_ptr, B: tl.constexpr):
    # four uint8 per 32-bit VGPR
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    z = tl.inline_asm_elementwise("v_and_b32 $0, 0x0f0f0f0f, $1", "=v,v", [x], dtype=tl.uint8, is_pure=True, pack=4)
    tl.store(z_ptr + offs, z)


@triton.jit
def float_scalar_kernel(x_ptr, z_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    z = tl.inline_asm_elementwise("v_fma_f32 $0, $1, $2, 1.0", "=v,v,v", [x, 2.0], dtype=tl.float32,
                                  is_pure=True, pack=1)
    tl.store(z_ptr + offs, z)


@triton.jit
def packed_words_kernel(x_ptr, z_ptr, B: tl.constexpr):
    # pack=4 on int32: four VGPRs in, four out; every slot computes 3x + 1 of its own value, so a
    # result routed to another element's slot shows as a wrong value
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    z = tl.inline_asm_elementwise("v_mul_lo_u32 $0, $4, 3\nv_add3_u32 $0, $0, 1, 0\n"
                                  "v_mul_lo_u32 $1, $5, 3\nv_add3_u32 $1, $1, 1, 0\n"
                                  "v_mul_lo_u32 $2, $6, 3\nv_add3_u32 $2, $2, 1, 0\n"
                                  "v_mul_lo_u32 $3, $7, 3\nv_add3_u32 $3, $3, 1, 0",
                                  "=&v,=&v,=&v,=&v,v,v,v,v", [x], dtype=tl.int32, is_pure=True, pack=4)
    tl.store(z_ptr + offs, z)


CASES = [
    Case(id="inline_asm_amdgcn/shift-int32", kernel=shift_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("int32", (B,), -1000, 1000)}, outputs={"z_ptr": Out("int32", (B,), poison="sentinel")},
         reference=lambda x_ptr: x_ptr << 3),
    Case(id="inline_asm_amdgcn/two-results-int32", kernel=two_results_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("int32", (B,), -1000, 1000), "y_ptr": Rand("int32", (B,), -1000, 1000)},
         outputs={"s_ptr": Out("int32", (B,), poison="sentinel"), "d_ptr": Out("int32", (B,), poison="sentinel")},
         reference=lambda x_ptr, y_ptr: (x_ptr + y_ptr, x_ptr ^ y_ptr)),
    Case(id="inline_asm_amdgcn/pack4-uint8", kernel=packed_bytes_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("uint8", (B,))}, outputs={"z_ptr": Out("uint8", (B,), poison="sentinel")},
         reference=lambda x_ptr: x_ptr & np.uint8(0x0F)),
    Case(id="inline_asm_amdgcn/float-scalar-operand", kernel=float_scalar_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("fp32", (B,))}, outputs={"z_ptr": Out("fp32", (B,))},
         reference=lambda x_ptr: x_ptr * 2 + 1),
    Case(id="inline_asm_amdgcn/pack4-int32-registers", kernel=packed_words_kernel, constexprs={"B": B},
         inputs={"x_ptr": Rand("int32", (B,), -1000, 1000)}, outputs={"z_ptr": Out("int32", (B,), poison="sentinel")},
         reference=lambda x_ptr: x_ptr * np.int32(3) + np.int32(1)),
    Case(id="inline_asm_amdgcn/pack4-padded-uint8", kernel=packed_bytes_kernel, constexprs={"B": 64},
         inputs={"x_ptr": Rand("uint8", (64,))}, outputs={"z_ptr": Out("uint8", (64,), poison="sentinel")},
         reference=lambda x_ptr: x_ptr & np.uint8(0x0F), options={"num_warps": 4}),
]
