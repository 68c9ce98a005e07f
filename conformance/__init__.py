"""Tritium's cross-backend conformance suite.

The same data-driven cases (``conformance/cases/``) run on every installed backend; each checks
a kernel's outputs against a reference computed independently in numpy.  Entry points:
``tritium conformance`` / ``python -m conformance`` (:mod:`conformance.cli`) and
``pytest conformance --tritium-backend NAME`` (:mod:`conformance.conftest`).
"""
from .case import Case, CopyOf, Err, Gen, Out, Rand, Scalar

__all__ = ["Case", "CopyOf", "Err", "Gen", "Out", "Rand", "Scalar"]
