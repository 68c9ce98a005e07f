"""Backends embedded in the ``tritium`` distribution (the interpreter), registered through the
same plugin hooks as any installed backend."""
