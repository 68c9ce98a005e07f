"""The AMD binary steps: LLVM IR -> AMDGCN assembly and object (llvmlite's AMDGPU target) ->
hsaco (``ld.lld -shared``).  None of this needs a GPU or ROCm.

llvmlite's AMDGPU code generation mutates the module it is given (a second emission from the same
module aborts in instruction selection), so every emission parses the optimised IR afresh."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile

import llvmlite.binding as llvm

from tritium.conversion.llvm_init import initialize_llvm

from . import tools
from .tools import ToolchainError

TRIPLE = "amdgcn-amd-amdhsa"

_layout: str | None = None



def _target_machine(arch: str, opt_level: int = 3):
    initialize_llvm()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, features="", opt=opt_level, codemodel="default")


def data_layout() -> str:
    """The AMDGPU data layout of the bundled LLVM (asked of LLVM, never written down here)."""
    global _layout
    if _layout is None:
        _layout = str(_target_machine("gfx942").target_data)
    return _layout


def _parse(text: str, arch: str):
    module = llvm.parse_assembly(text)
    module.triple = TRIPLE
    module.data_layout = data_layout()
    return module


def optimize(llvm_ir: str, arch: str, opt_level: int = 3) -> str:
    """Verify ``llvm_ir`` and run the new pass manager's ``O<opt_level>`` pipeline for ``arch``;
    returns the optimised IR text (the input of every emission)."""
    module = _parse(llvm_ir, arch)
    module.verify()
    if opt_level > 0:
        tm = _target_machine(arch, opt_level)
        pb = llvm.create_pass_builder(tm, llvm.PipelineTuningOptions(speed_level=opt_level))
        pb.getModulePassManager().run(module, pb)
    return str(module)


def emit_assembly(optimized_ir: str, arch: str) -> str:
    """AMDGCN assembly of the (optimised) IR: the ``amdgcn`` stage, and what tests read."""
    return _target_machine(arch).emit_assembly(_parse(optimized_ir, arch))


def emit_object(optimized_ir: str, arch: str) -> bytes:
    """The relocatable AMDGPU ELF object of the (optimised) IR."""
    return _target_machine(arch).emit_object(_parse(optimized_ir, arch))


_INLINE_ASM = re.compile(r'\b(call|invoke|callbr)\b[^\n]*\basm\b[ a-z]*"')


def has_inline_asm(llvm_ir: str) -> bool:
    """Whether the module calls inline assembly (which llvmlite's LLVM cannot put in an object:
    it has no AMDGPU assembly parser, and object emission aborts the process)."""
    return bool(_INLINE_ASM.search(llvm_ir))


def assemble(asm: str, arch: str) -> bytes:
    """The relocatable object of AMDGCN assembly text, by an external AMDGPU assembler
    (``tools.find_assembler``)."""
    cmd = tools.find_assembler()
    if cmd is None:
        raise ToolchainError(tools.missing_assembler_message())
    with tempfile.TemporaryDirectory(prefix="tritium-as-") as tmp:
        src, dst = os.path.join(tmp, "kernel.s"), os.path.join(tmp, "kernel.o")
        with open(src, "w") as f:
            f.write(asm)
        proc = subprocess.run([*cmd, "-triple", TRIPLE, "-target-cpu", arch, "-filetype", "obj", src, "-o", dst],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the AMDGPU assembler failed (exit {proc.returncode}, {' '.join(cmd)}):\n"
                               f"{proc.stderr}{proc.stdout}")
        with open(dst, "rb") as f:
            return f.read()


def link_hsaco(obj: bytes, name: str = "kernel") -> bytes:
    """Link an AMDGPU object into an HSA code object with ``ld.lld -shared``."""
    lld = tools.find_lld()
    if lld is None:
        raise ToolchainError(tools.missing_lld_message())
    with tempfile.TemporaryDirectory(prefix="tritium-lld-") as tmp:
        src, dst = os.path.join(tmp, f"{name}.o"), os.path.join(tmp, f"{name}.hsaco")
        with open(src, "wb") as f:
            f.write(obj)
        proc = subprocess.run([*lld, "-shared", src, "-o", dst], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"ld.lld failed to link {name!r} (exit {proc.returncode}, "
                               f"{' '.join(lld)}):\n{proc.stderr}{proc.stdout}")
        with open(dst, "rb") as f:
            return f.read()


def llir_to_hsaco(llvm_ir: str, arch: str, name: str = "kernel", opt_level: int = 3) -> tuple[str, bytes]:
    """Both products at once: ``(amdgcn assembly, hsaco)``."""
    opt = optimize(llvm_ir, arch, opt_level)
    return emit_assembly(opt, arch), link_hsaco(emit_object(opt, arch), name)
