"""Hand-written LLVM IR kernels used to test the binary path and the driver without the compiler
pipeline (the TTGIR -> LLVM lowering lives elsewhere)."""

#: ``add_kernel(x: *fp32, y: *fp32, out: *fp32, n: i32, alpha: fp32)``:
#: ``out[i] = x[i] + alpha * y[i]`` for ``i < n``, over a 3-D grid of 1-D blocks: the linear block
#: index is ``(z * nctaid.y + y) * nctaid.x + x`` so any grid shape covers ``n``.
VECTOR_ADD_LLIR = r"""
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()

define ptx_kernel void @add_kernel(ptr addrspace(1) noalias %x, ptr addrspace(1) noalias %y,
                                   ptr addrspace(1) noalias %out, i32 %n, float %alpha) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %bx = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %by = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
  %bz = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()
  %gx = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %gy = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()
  %zy = mul i32 %bz, %gy
  %zy1 = add i32 %zy, %by
  %row = mul i32 %zy1, %gx
  %block = add i32 %row, %bx
  %base = mul i32 %block, %ntid
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %exit
body:
  %idx = sext i32 %i to i64
  %px = getelementptr float, ptr addrspace(1) %x, i64 %idx
  %py = getelementptr float, ptr addrspace(1) %y, i64 %idx
  %po = getelementptr float, ptr addrspace(1) %out, i64 %idx
  %vx = load float, ptr addrspace(1) %px, align 4
  %vy = load float, ptr addrspace(1) %py, align 4
  %ay = fmul float %alpha, %vy
  %s = fadd float %vx, %ay
  store float %s, ptr addrspace(1) %po, align 4
  br label %exit
exit:
  ret void
}
"""

#: ``exp_kernel(x: *fp32, out: *fp32, n: i32)``: ``out[i] = __nv_expf(x[i])`` (needs libdevice).
EXP_LIBDEVICE_LLIR = r"""
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare float @__nv_expf(float)

define ptx_kernel void @exp_kernel(ptr addrspace(1) %x, ptr addrspace(1) %out, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %bx = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = mul i32 %bx, %ntid
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %exit
body:
  %idx = sext i32 %i to i64
  %px = getelementptr float, ptr addrspace(1) %x, i64 %idx
  %po = getelementptr float, ptr addrspace(1) %out, i64 %idx
  %v = load float, ptr addrspace(1) %px, align 4
  %e = call float @__nv_expf(float %v)
  store float %e, ptr addrspace(1) %po, align 4
  br label %exit
exit:
  ret void
}
"""
