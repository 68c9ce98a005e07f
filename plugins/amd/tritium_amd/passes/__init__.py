"""The AMD TTGIR passes and the layouts they choose: ``amd_mfma`` / ``amd_wmma`` (:mod:`.encodings`),
the matrix instructions and their selection (:mod:`.instructions`), the LDS layout of a matrix
operand (:mod:`.shared_layout`), and the passes the ``ttgir`` stage runs: accelerate-matmul,
in-thread-transpose, optimize-epilogue and the stream pipeliner.  They import only core and the
plugin's :mod:`tritium_amd.options`."""
