"""The NVIDIA binary steps: LLVM IR -> PTX (llvmlite's NVPTX target) -> cubin (nvJitLink or ptxas).

None of this needs a GPU.  The assembler and libdevice are located by :mod:`.tools`.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
import threading

import llvmlite.binding as llvm

from tritium.conversion.llvm_init import initialize_llvm

from . import tools
from .tools import ToolchainError

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"

# `-nvptx-fma-level` is a process-wide LLVM option; emission holds this lock while it is set.
_emit_lock = threading.Lock()


def normalize_arch(arch: int | str) -> str:
    """``90`` / ``"90"`` / ``"sm_90"`` -> ``"90"``; ``"90a"`` / ``"sm_90a"`` -> ``"90a"``."""
    text = str(arch).strip().lower()
    text = text[3:] if text.startswith("sm_") else text
    if not re.fullmatch(r"\d{2,3}[af]?", text):
        raise ValueError(f"unknown NVIDIA architecture {arch!r}: expected e.g. 80, 90 or '90a'")
    return text


def _target_machine(arch: str, opt_level: int, ptx_version: int):
    initialize_llvm()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(
        cpu=f"sm_{arch}", features=f"+ptx{ptx_version}", opt=opt_level, codemodel="default")


# --------------------------------------------------------------------------------------------
# libdevice
# --------------------------------------------------------------------------------------------

def calls_libdevice(module) -> bool:
    return any(f.is_declaration and f.name.startswith("__nv_") for f in module.functions)


def libdevice_symbols(path: str | None = None) -> frozenset | None:
    """Names of the functions libdevice defines (None when libdevice is not installed)."""
    path = path or tools.find_libdevice()
    return None if path is None else _libdevice_symbols(path)


@functools.lru_cache(maxsize=4)
def _libdevice_symbols(path: str) -> frozenset:
    with open(path, "rb") as f:
        return frozenset(fn.name for fn in llvm.parse_bitcode(f.read()).functions if not fn.is_declaration)


_REFLECT_FLAGS = """target triple = "{triple}"
!llvm.module.flags = !{{!0}}
!0 = !{{i32 4, !"nvvm-reflect-ftz", i32 {ftz}}}
"""


def link_libdevice(module, path: str | None = None, ftz: bool = True) -> bool:
    """Link libdevice into ``module`` (an ``llvmlite.binding.ModuleRef``) when it calls ``__nv_*``
    functions; returns whether it linked.  ``ftz`` sets ``nvvm-reflect-ftz``, which selects the
    flush-to-zero variants inside libdevice (Triton's default).  Non-kernel definitions are made
    internal so that the optimizer drops the unused part of the library."""
    if not calls_libdevice(module):
        return False
    path = path or tools.find_libdevice()
    if path is None:
        raise ToolchainError(tools.missing_libdevice_message())
    with open(path, "rb") as f:
        lib = llvm.parse_bitcode(f.read())
    lib.triple = module.triple or TRIPLE
    lib.data_layout = module.data_layout or DATA_LAYOUT
    keep = {f.name for f in module.functions if not f.is_declaration}
    module.link_in(lib)
    if "nvvm-reflect-ftz" not in str(module):
        module.link_in(llvm.parse_assembly(_REFLECT_FLAGS.format(triple=module.triple, ftz=int(ftz))))
    for fn in module.functions:
        if not fn.is_declaration and fn.name not in keep:
            fn.linkage = "internal"
    return True


# --------------------------------------------------------------------------------------------
# LLVM IR -> PTX
# --------------------------------------------------------------------------------------------

def _optimize(module, tm, opt_level: int) -> None:
    pto = llvm.PipelineTuningOptions(speed_level=opt_level)
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(module, pb)


def llir_to_ptx(llvm_ir_text: str, arch: int | str, opt_level: int = 3, enable_fp_fusion: bool = True,
                ptx_version: int | None = None, libdevice_path: str | None = None,
                ftz: bool = True) -> str:
    """Compile LLVM IR text to PTX for ``sm_<arch>`` (``arch`` like ``90``, ``"90a"``).

    Links libdevice if the IR calls ``__nv_*`` functions, runs the new pass manager's
    ``O<opt_level>`` pipeline, then emits PTX.  ``ptx_version`` (e.g. ``87``) defaults to the newest
    that both LLVM and the installed assembler accept.  ``enable_fp_fusion=False`` forbids
    contracting multiplies and adds into FMA (the PTX then uses ``.rn`` forms that ptxas leaves
    alone too)."""
    arch = normalize_arch(arch)
    ptx_version = tools.choose_ptx_version(arch, ptx_version)
    if ptx_version > tools.LLVM_MAX_PTX:
        raise ValueError(f"PTX ISA {ptx_version / 10:.1f} is newer than LLVM can emit "
                         f"({tools.LLVM_MAX_PTX / 10:.1f})")
    initialize_llvm()
    module = llvm.parse_assembly(llvm_ir_text)
    if not module.triple:
        module.triple = TRIPLE
    if not module.data_layout:
        module.data_layout = DATA_LAYOUT
    link_libdevice(module, libdevice_path, ftz=ftz)
    module.verify()
    tm = _target_machine(arch, opt_level, ptx_version)
    with _emit_lock:
        llvm.set_option("tritium", f"-nvptx-fma-level={1 if enable_fp_fusion else 0}")
        # LLVM's loop strength reduction off for NVPTX: LSR turns the addresses a pipelined loop
        # copies from into per-element induction variables, which ptxas carries in unpaired register
        # halves and copies into one reused pair before each ``cp.async`` (the copies then wait on
        # each other); without it each address is a fresh 64-bit sum in a pair of its own, as in
        # Triton's loops.  Matmul 4096^3 on the H200 (with ``pointer-offsets``): 0.93-1.03 ->
        # 1.02-1.07 of Triton.
        llvm.set_option("tritium", "-disable-lsr=true")
        try:
            if opt_level > 0:
                _optimize(module, tm, opt_level)
            ptx = tm.emit_assembly(module)
        finally:  # the option is the process's: another target's code generation must not inherit it
            llvm.set_option("tritium", "-disable-lsr=false")
    return ptx


def ptx_kernel_names(ptx: str) -> list[str]:
    return re.findall(r"^\s*\.(?:visible\s+)?\.entry\s+([\w$.]+)", ptx, flags=re.M)


def ptx_shared_bytes(ptx: str) -> int:
    """Static shared memory declared in the PTX (``.shared .align A .b8 name[N]``)."""
    return sum(int(n) for n in re.findall(r"\.shared\s+(?:\.align\s+\d+\s+)?\.b8\s+[\w$]+\[(\d+)\]", ptx))


# --------------------------------------------------------------------------------------------
# PTX -> cubin
# --------------------------------------------------------------------------------------------

_FUNC_RE = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?")


def parse_resource_report(log: str) -> dict[str, dict[str, int]]:
    """Per-function resources from ``ptxas -v`` / nvJitLink ``-verbose`` output:
    ``{name: {"registers", "spill_stores", "spill_loads", "stack", "shared", "barriers"}}``."""
    report: dict[str, dict[str, int]] = {}
    current = None
    for line in log.splitlines():
        m = _FUNC_RE.search(line)
        if m:
            current = report.setdefault(m.group(1), {})
            continue
        if current is None:
            continue
        for key, pattern in (("stack", r"(\d+) bytes stack frame"),
                             ("spill_stores", r"(\d+) bytes spill stores"),
                             ("spill_loads", r"(\d+) bytes spill loads"),
                             ("registers", r"Used (\d+) registers"),
                             ("barriers", r"used (\d+) barriers"),
                             ("shared", r"(\d+) bytes smem")):
            m = re.search(pattern, line, flags=re.I)
            if m:
                current[key] = int(m.group(1))
    return report


def _cubin_nvjitlink(ptx: str, arch: str, name: str, opt_level: int, enable_fp_fusion: bool,
                     maxnreg: int | None) -> tuple[bytes, str]:
    from cuda.bindings import nvjitlink

    opts = [f"-arch=sm_{arch}", f"-O{opt_level}", "-verbose"]
    if maxnreg:
        opts.append(f"-maxrregcount={maxnreg}")
    if not enable_fp_fusion:
        opts.append("-Xptxas=--fmad=false")
    handle = nvjitlink.create(len(opts), opts)
    try:
        data = ptx.encode()
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), f"{name}.ptx")
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as e:
            size = nvjitlink.get_error_log_size(handle)
            log = bytearray(size)
            if size:
                nvjitlink.get_error_log(handle, log)
            text = bytes(log).rstrip(b"\0").decode(errors="replace")
            raise RuntimeError(f"nvJitLink failed to assemble {name!r} for sm_{arch}: {e}\n"
                               f"{text}") from None
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
        size = nvjitlink.get_info_log_size(handle)
        info = bytearray(size)
        if size:
            nvjitlink.get_info_log(handle, info)
        return bytes(cubin), bytes(info).rstrip(b"\0").decode(errors="replace")
    finally:
        nvjitlink.destroy(handle)


def _cubin_ptxas(ptx: str, arch: str, name: str, opt_level: int, enable_fp_fusion: bool,
                 maxnreg: int | None, ptxas: str) -> tuple[bytes, str]:
    with tempfile.TemporaryDirectory(prefix="tritium-ptxas-") as tmp:
        src, dst = os.path.join(tmp, "kernel.ptx"), os.path.join(tmp, "kernel.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        cmd = [ptxas, "-v", f"-arch=sm_{arch}", f"-O{opt_level}", src, "-o", dst]
        if maxnreg:
            cmd.insert(1, f"--maxrregcount={maxnreg}")
        if not enable_fp_fusion:
            cmd.insert(1, "--fmad=false")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"ptxas failed to assemble {name!r} for sm_{arch} "
                               f"(exit {proc.returncode}):\n{proc.stderr}{proc.stdout}")
        with open(dst, "rb") as f:
            return f.read(), proc.stderr + proc.stdout


def ptx_to_cubin(ptx: str, arch: int | str, name: str = "kernel", opt_level: int = 3,
                 enable_fp_fusion: bool = True, maxnreg: int | None = None,
                 metadata: dict | None = None, assembler: str | None = None) -> bytes:
    """Assemble PTX to a cubin for ``sm_<arch>`` with ``tools.default_assembler()``
    (``TRITIUM_ASSEMBLER`` when set, else a whole-program ``ptxas`` when one is found and not of an
    older CUDA major version than nvJitLink, else nvJitLink).

    ``assembler`` forces ``"nvjitlink"`` or ``"ptxas"``.  When ``metadata`` is given it receives
    ``assembler`` (what was used), ``resource_log`` (the raw verbose log), ``resources`` (the parsed
    per-function report) and, for ``name``, ``n_regs``, ``n_spills`` (bytes) and ``shared``
    (static shared memory bytes, unless already set)."""
    arch = normalize_arch(arch)
    use = assembler
    if use is None:
        use = tools.default_assembler() or "nvjitlink"
    if use == "nvjitlink":
        if tools.nvjitlink_version() is None and assembler is None:
            raise ToolchainError(tools.missing_assembler_message())
        cubin, log = _cubin_nvjitlink(ptx, arch, name, opt_level, enable_fp_fusion, maxnreg)
    elif use == "ptxas":
        ptxas = tools.find_ptxas()
        if ptxas is None:
            raise ToolchainError(tools.missing_assembler_message() if assembler is None else
                                 f"ptxas was not found: `pip install {tools.PTXAS_PACKAGE}` "
                                 "or set TRITIUM_PTXAS_PATH")
        cubin, log = _cubin_ptxas(ptx, arch, name, opt_level, enable_fp_fusion, maxnreg, ptxas)
    else:
        raise ValueError(f"assembler must be 'nvjitlink' or 'ptxas', got {assembler!r}")
    if metadata is not None:
        resources = parse_resource_report(log)
        metadata["assembler"] = use
        metadata["resource_log"] = log
        metadata["resources"] = resources
        own = resources.get(name, {})
        if own:
            metadata["n_regs"] = own.get("registers", 0)
            metadata["n_spills"] = own.get("spill_stores", 0)
        metadata.setdefault("shared", own.get("shared", ptx_shared_bytes(ptx)))
    return cubin
