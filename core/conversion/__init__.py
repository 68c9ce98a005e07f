"""Conversions out of TTGIR: the shared TTGIR -> LLVM IR lowering and the target-info interface
each GPU plugin implements for it."""
