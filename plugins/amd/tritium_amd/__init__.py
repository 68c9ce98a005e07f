"""Tritium's AMD backend: TTGIR -> AMDGCN -> hsaco, launched with hip-python."""

__version__ = "0.1.0"
