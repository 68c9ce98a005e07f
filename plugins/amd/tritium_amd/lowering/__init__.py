"""What turns TTGIR into AMDGPU LLVM IR: :class:`~.target_info.AMDTargetInfo` (the shared
lowering's answers for AMD), the MFMA/WMMA dots (:mod:`.dot_matrix`), fp32/fp64 math in plain IR
(:mod:`.math_lib`, :mod:`.math_f64`), the device library (ROCm's bitcode or :mod:`.ocml_fallback`,
linked by :mod:`.device_libs`) and ``__printf_alloc`` (:mod:`.device_runtime`)."""
