"""The one device-library function Tritium's AMD kernels need, written here in LLVM IR so that no
ROCm bitcode is linked: ``__printf_alloc``.

LLVM's AMDGPU printf lowering (the OpenCL printf-buffer scheme) turns each ``printf`` call into
``__printf_alloc(bytes)`` plus stores of a format id and the arguments, and describes the formats
in the code object's ``amdhsa.printf`` metadata; the runtime allocates the buffer (the hidden
``hidden_printf_buffer`` kernel argument) and prints its records after the kernel.  The buffer
starts with two 32-bit words, the write offset and the capacity; records follow from byte 8.  A
reservation that would overflow returns null (the printf is dropped), as in ROCm's device library.

The definition is appended to the kernel's LLVM IR (hidden visibility: resolved inside the code
object, no dynamic relocation) only when the kernel calls ``printf``."""
from __future__ import annotations

#: byte offset of ``hidden_printf_buffer`` from ``llvm.amdgcn.implicitarg.ptr`` (code object v5)
PRINTF_BUFFER_OFFSET = 72
HEADER_BYTES = 8

PRINTF_ALLOC_IR = f"""
declare ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()

define hidden ptr addrspace(1) @__printf_alloc(i32 %bytes) {{
entry:
  %implicit = call ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %slot = getelementptr i8, ptr addrspace(4) %implicit, i64 {PRINTF_BUFFER_OFFSET}
  %buf = load ptr addrspace(1), ptr addrspace(4) %slot, align 8
  %size.ptr = getelementptr i8, ptr addrspace(1) %buf, i64 4
  %size = load i32, ptr addrspace(1) %size.ptr, align 4
  %first = load atomic i32, ptr addrspace(1) %buf syncscope("agent") monotonic, align 4
  br label %try
try:
  %offset = phi i32 [ %first, %entry ], [ %seen, %retry ]
  %end = add i32 %offset, %bytes
  %fits = icmp ule i32 %end, %size
  br i1 %fits, label %reserve, label %full
reserve:
  %pair = cmpxchg ptr addrspace(1) %buf, i32 %offset, i32 %end syncscope("agent") monotonic monotonic, align 4
  %seen = extractvalue {{ i32, i1 }} %pair, 0
  %won = extractvalue {{ i32, i1 }} %pair, 1
  br i1 %won, label %done, label %retry
retry:
  br label %try
done:
  %off64 = zext i32 %offset to i64
  %pos = add i64 %off64, {HEADER_BYTES}
  %record = getelementptr i8, ptr addrspace(1) %buf, i64 %pos
  ret ptr addrspace(1) %record
full:
  ret ptr addrspace(1) null
}}
"""


def add_device_runtime(llir: str) -> str:
    """``llir`` plus the definitions its calls need (``__printf_alloc`` when it calls ``printf``)."""
    if '@"printf"(' in llir or "@printf(" in llir:
        return llir + PRINTF_ALLOC_IR
    return llir
