"""What turns TTGIR into NVPTX LLVM IR: :class:`~.target_info.NVIDIATargetInfo` (the shared
lowering's answers for NVIDIA), the tensor-core and ``cp.async`` ops (:mod:`.tensor_cores`) and
the TMA ops (:mod:`.tma`)."""
