"""The NVIDIA TTGIR passes and what they create: the ``nvidia_mma`` / ``nvmma_shared`` layouts
(:mod:`.encodings`), the ``ttng`` ops (:mod:`.dialect`), and the passes the ``ttgir`` stage runs:
accelerate-matmul onto the tensor cores (:mod:`.accelerate_matmul`), the asynchronous operand
loads and dot waits (:mod:`.async_operands`, :mod:`.async_dot`) and the TMA passes with the tile
geometry and scratch sizes of a descriptor access (:mod:`.tma`)."""
