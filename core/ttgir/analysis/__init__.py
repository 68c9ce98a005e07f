"""Analyses over TTIR/TTGIR that passes and the lowering query."""
