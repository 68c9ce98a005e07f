"""From LLVM IR to a cubin: LLVM's NVPTX code generation, libdevice, nvJitLink and ``ptxas``
(:mod:`.binary`), where the external tools come from (:mod:`.tools`), the cubin reader
(:mod:`.elf`) and hand-written LLVM IR kernels that test the path without the compiler
(:mod:`.kernels`).  None of it needs a GPU."""
