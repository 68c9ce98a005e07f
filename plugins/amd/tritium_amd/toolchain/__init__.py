"""From LLVM IR to a code object: LLVM's AMDGPU code generation and ``ld.lld`` (:mod:`.binary`),
where the external tools come from (:mod:`.tools`), and the hsaco reader and checker
(:mod:`.elf`).  None of it needs a GPU or ROCm."""
