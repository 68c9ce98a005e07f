"""``allocate-global-scratch``: where each ``ttg.global_scratch_alloc`` lives in its program's part
of the launch's global scratch memory.

Every function that needs some gets ``ttg.global_scratch_memory_size`` /
``ttg.global_scratch_memory_alignment`` (bytes, its own buffers and those of the functions it
calls); each buffer and each call of a
function that has some gets ``ttg.global_scratch_memory_offset`` from the start of its function's
part.  Buffers are laid out one after another in program order, each aligned, and never share
bytes: a buffer a loop writes again (a tensor map made per iteration) is still the same buffer.
The module takes the kernel's size and alignment; the lowering gives the kernel one more
parameter (the launch's scratch), each program ``size`` bytes of it by its block index, and each
callee its part; the launcher allocates ``blocks x size`` bytes (``tritium.set_allocator``).
"""
from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32
from xdsl.ir import Operation

from ..ops import GlobalScratchAllocOp

SIZE = "ttg.global_scratch_memory_size"
ALIGNMENT = "ttg.global_scratch_memory_alignment"
OFFSET = "ttg.global_scratch_memory_offset"


def _round_up(n: int, step: int) -> int:
    return -(-n // step) * step


def scratch_size(op: Operation) -> int:
    """A function's (or a module's) bytes of global scratch per program (0: none)."""
    attr = op.attributes.get(SIZE)
    return attr.value.data if attr is not None else 0


def scratch_alignment(op: Operation) -> int:
    attr = op.attributes.get(ALIGNMENT)
    return attr.value.data if attr is not None else 1


def scratch_offset(op: Operation) -> int:
    attr = op.attributes.get(OFFSET)
    if attr is None:
        raise ValueError(f"{op.name} has no global scratch offset (run allocate-global-scratch)")
    return attr.value.data


class AllocateGlobalScratch:
    name = "allocate-global-scratch"

    def run(self, module: ModuleOp) -> None:
        funcs = {op.sym_name.data: op for op in module.body.block.ops if op.name == "tt.func"}
        done: dict[str, tuple[int, int]] = {}

        def place(name: str, stack: tuple[str, ...]) -> tuple[int, int]:
            if name in done:
                return done[name]
            if name in stack:
                raise ValueError(f"allocate-global-scratch: recursive call of {name}")
            func = funcs[name]
            offset, largest = 0, 1
            for op in func.walk():
                if isinstance(op, GlobalScratchAllocOp):
                    nbytes, align = op.nbytes.value.data, op.alignment.value.data
                elif op.name == "tt.call" and op.callee.string_value() in funcs:
                    nbytes, align = place(op.callee.string_value(), stack + (name,))
                else:
                    continue
                if nbytes:
                    offset = _round_up(offset, align)
                    op.attributes[OFFSET] = IntegerAttr(offset, i32)
                    offset += nbytes
                    largest = max(largest, align)
            size = _round_up(offset, largest)
            if size:
                func.attributes[SIZE] = IntegerAttr(size, i32)
                func.attributes[ALIGNMENT] = IntegerAttr(largest, i32)
            done[name] = (size, largest)
            return done[name]

        kernel = None
        for name, func in funcs.items():
            place(name, ())
            if func.body.blocks and func.is_public:
                kernel = kernel or func
        if kernel is not None and scratch_size(kernel):
            module.attributes[SIZE] = IntegerAttr(scratch_size(kernel), i32)
            module.attributes[ALIGNMENT] = IntegerAttr(scratch_alignment(kernel), i32)
