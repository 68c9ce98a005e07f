"""CPU-only: LLVM IR -> PTX -> cubin, libdevice linking, tool discovery errors."""
import pytest

from tritium_nvidia.toolchain import binary, elf, kernels, tools


def _assemblers():
    out = []
    if tools.nvjitlink_version() is not None:
        out.append("nvjitlink")
    if tools.find_ptxas() is not None:
        out.append("ptxas")
    return out


def test_ptx_header_and_entry():
    ptx = binary.llir_to_ptx(kernels.VECTOR_ADD_LLIR, 80)
    assert ".target sm_80" in ptx
    assert binary.ptx_kernel_names(ptx) == ["add_kernel"]
    assert "%tid.x" in ptx and "ld.global" in ptx


def test_arch_specific_target():
    assert ".target sm_90a" in binary.llir_to_ptx(kernels.VECTOR_ADD_LLIR, "90a")
    assert binary.normalize_arch("sm_90a") == "90a"
    with pytest.raises(ValueError, match="unknown NVIDIA architecture"):
        binary.normalize_arch("hopper")


def test_fp_fusion_switch():
    fused = binary.llir_to_ptx(kernels.VECTOR_ADD_LLIR, 90, enable_fp_fusion=True)
    unfused = binary.llir_to_ptx(kernels.VECTOR_ADD_LLIR, 90, enable_fp_fusion=False)
    assert "fma.rn.f32" in fused
    assert "fma" not in unfused and "mul.rn.f32" in unfused


def test_ptx_version_choice():
    assert tools.cuda_version_to_ptx(12, 4) == 84
    assert tools.cuda_version_to_ptx(12, 8) == 87
    assert tools.cuda_version_to_ptx(13, 0) == 90
    ptx = binary.llir_to_ptx(kernels.VECTOR_ADD_LLIR, 90, ptx_version=83)
    assert ".version 8.3" in ptx


@pytest.mark.skipif(tools.find_libdevice() is None, reason="libdevice.10.bc not installed")
def test_libdevice_linked_only_when_called():
    ptx = binary.llir_to_ptx(kernels.EXP_LIBDEVICE_LLIR, 90)
    assert "__nv_expf" not in ptx and "ex2.approx" in ptx
    import llvmlite.binding as llvm
    binary.initialize_llvm()
    m = llvm.parse_assembly(kernels.VECTOR_ADD_LLIR)
    assert binary.link_libdevice(m) is False


def test_missing_libdevice_message(monkeypatch, tmp_path):
    import llvmlite.binding as llvm
    binary.initialize_llvm()
    monkeypatch.setattr(tools, "find_libdevice", lambda: None)
    with pytest.raises(tools.ToolchainError, match="pip install nvidia-nvvm"):
        binary.link_libdevice(llvm.parse_assembly(kernels.EXP_LIBDEVICE_LLIR))


@pytest.mark.parametrize("arch", [80, 90, "90a"])
@pytest.mark.parametrize("assembler", _assemblers() or [pytest.param("none", marks=pytest.mark.skip("no assembler"))])
def test_cubin_is_elf_with_kernel(arch, assembler):
    md = {}
    ptx = binary.llir_to_ptx(kernels.VECTOR_ADD_LLIR, arch)
    cubin = binary.ptx_to_cubin(ptx, arch, "add_kernel", metadata=md, assembler=assembler)
    info = elf.read_cubin(cubin)
    assert info.machine == elf.EM_CUDA
    assert info.arch == int(str(arch)[:2])
    assert "add_kernel" in info.functions
    assert ".nv.info" in info.sections and ".nv.info.add_kernel" in info.sections
    assert md["assembler"] == assembler
    assert 0 < md.get("n_regs", 0) < 64, md["resource_log"]
    assert md["n_spills"] == 0 and md["shared"] == 0


def test_bad_ptx_error_names_kernel():
    if not _assemblers():
        pytest.skip("no assembler")
    with pytest.raises(RuntimeError, match="'broken'"):
        binary.ptx_to_cubin(".version 9.0\n.target sm_90\nnonsense;", 90, "broken")


def test_no_assembler_message(monkeypatch):
    monkeypatch.setattr(tools, "nvjitlink_version", lambda: None)
    monkeypatch.setattr(tools, "find_ptxas", lambda: None)
    with pytest.raises(tools.ToolchainError) as e:
        binary.ptx_to_cubin(".version 9.0\n", 90, "k")
    assert "pip install nvidia-nvjitlink" in str(e.value) and "nvidia-cuda-nvcc" in str(e.value)


def test_ptxas_env_override(monkeypatch, tmp_path):
    tools.find_ptxas.cache_clear()
    monkeypatch.setenv("TRITIUM_PTXAS_PATH", str(tmp_path / "nope"))
    try:
        with pytest.raises(tools.ToolchainError, match="TRITIUM_PTXAS_PATH"):
            tools.find_ptxas()
    finally:
        tools.find_ptxas.cache_clear()


def test_cache_key_names_the_assembler(monkeypatch):
    """Switching assemblers (nvJitLink, or a ptxas of another version or path) changes every
    kernel's cache key: the same PTX gives different machine code through each.  The plugin
    answers ``tritium_toolchain_hash``, which the stage runner puts in the key."""
    from tritium.hooks.manager import get_backend
    from tritium.hooks.types import GPUTarget
    target = GPUTarget("cuda", 90, 32)
    backend = get_backend("nvidia")
    keys = {}
    monkeypatch.delenv("TRITIUM_ASSEMBLER", raising=False)
    monkeypatch.delenv("TRITIUM_PTXAS_PATH", raising=False)
    for name, jit, ptxas in (("nvjitlink", (13, 5), "/usr/bin/ptxas"), ("ptxas-a", None, "/a/ptxas"),
                             ("ptxas-b", None, "/b/ptxas")):
        monkeypatch.setattr(tools, "nvjitlink_version", lambda v=jit: v)
        monkeypatch.setattr(tools, "find_ptxas", lambda p=ptxas: p)
        monkeypatch.setattr(tools, "ptxas_version", lambda p: (12, 8))
        keys[name] = backend.toolchain_hash(target)
    assert "assembler=nvjitlink 13.5" in keys["nvjitlink"] and "assembler=ptxas 12.8 /a/ptxas" in keys["ptxas-a"]
    assert len(set(keys.values())) == 3
    # the key follows the assembler chosen at each compile: forcing one later in the process
    # changes it (a cached identity would file nvJitLink's cubins under the ptxas key)
    monkeypatch.setattr(tools, "nvjitlink_version", lambda: (13, 0))
    monkeypatch.setattr(tools, "ptxas_version", lambda p: (13, 0))
    before = backend.toolchain_hash(target)
    monkeypatch.setenv("TRITIUM_ASSEMBLER", "nvjitlink")
    after = backend.toolchain_hash(target)
    assert "assembler=ptxas 13.0 /b/ptxas" in before and "assembler=nvjitlink 13.0" in after


def test_which_assembler_runs(monkeypatch):
    """TRITIUM_ASSEMBLER forces one; else TRITIUM_PTXAS_PATH selects that ptxas (as
    TRITON_PTXAS_PATH does for Triton); else a found ptxas comes before nvJitLink unless it is of an
    older CUDA major version; else nvJitLink; a ptxas that cannot say its version is passed over."""
    versions = {"/opt/cuda/bin/ptxas": (13, 0)}

    def version(path):
        if path not in versions:
            raise OSError(f"cannot run {path}")
        return versions[path]
    monkeypatch.setattr(tools, "nvjitlink_version", lambda: (13, 5))
    monkeypatch.setattr(tools, "find_ptxas", lambda: "/opt/cuda/bin/ptxas")
    monkeypatch.setattr(tools, "ptxas_version", version)
    monkeypatch.delenv("TRITIUM_ASSEMBLER", raising=False)
    monkeypatch.delenv("TRITIUM_PTXAS_PATH", raising=False)
    assert tools.default_assembler() == "ptxas"
    monkeypatch.setenv("TRITIUM_ASSEMBLER", "nvjitlink")
    assert tools.default_assembler() == "nvjitlink"
    monkeypatch.setenv("TRITIUM_ASSEMBLER", "cuobjdump")
    with pytest.raises(tools.ToolchainError, match="TRITIUM_ASSEMBLER must be"):
        tools.default_assembler()
    monkeypatch.delenv("TRITIUM_ASSEMBLER")
    versions["/opt/cuda/bin/ptxas"] = (12, 8)  # an older toolkit than nvJitLink 13.5
    assert tools.default_assembler() == "nvjitlink"
    monkeypatch.setenv("TRITIUM_PTXAS_PATH", "/opt/cuda/bin/ptxas")
    assert tools.default_assembler() == "ptxas"
    monkeypatch.delenv("TRITIUM_PTXAS_PATH")
    monkeypatch.setattr(tools, "nvjitlink_version", lambda: None)
    assert tools.default_assembler() == "ptxas"
    del versions["/opt/cuda/bin/ptxas"]  # broken: the wrapper's target is gone
    assert tools.default_assembler() is None
    monkeypatch.setattr(tools, "nvjitlink_version", lambda: (13, 0))
    assert tools.default_assembler() == "nvjitlink"
    monkeypatch.setattr(tools, "find_ptxas", lambda: None)
    assert tools.default_assembler() == "nvjitlink"
    monkeypatch.setattr(tools, "nvjitlink_version", lambda: None)
    assert tools.default_assembler() is None


@pytest.mark.skipif(tools.find_ptxas() is None, reason="no ptxas on this machine")
def test_named_ptxas_assembles(monkeypatch):
    """End to end: with TRITIUM_PTXAS_PATH set, ptx_to_cubin assembles with that ptxas."""
    ptxas = tools.find_ptxas()
    monkeypatch.setenv("TRITIUM_PTXAS_PATH", ptxas)
    v = tools.cuda_version_to_ptx(*tools.ptxas_version(ptxas))
    ptx = f".version {v // 10}.{v % 10}\n.target sm_80\n.address_size 64\n.visible .entry k()\n{{\n ret;\n}}\n"
    meta = {}
    cubin = binary.ptx_to_cubin(ptx, 80, "k", metadata=meta)
    assert meta["assembler"] == "ptxas" and cubin[:4] == b"\x7fELF"


def test_resource_report_parsing():
    log = ("ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
           "ptxas info    : Function properties for k\n"
           "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 368 bytes cmem[0]\n")
    r = binary.parse_resource_report(log)["k"]
    assert r == {"stack": 8, "spill_stores": 4, "spill_loads": 4, "registers": 40, "barriers": 1, "shared": 1024}


def test_toolchain_change_is_a_cache_miss(monkeypatch, tmp_path):
    """The stage runner's key holds the plugin's ``tritium_toolchain_hash``: the same kernel
    compiled after the assembler changed is a new cache entry, not the old one's cubin."""
    import tritium as triton
    import tritium.language as tl

    @triton.jit
    def copy(x, y):
        tl.store(y + tl.arange(0, 64), tl.load(x + tl.arange(0, 64)))

    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    sig = {"x": "*fp32", "y": "*fp32"}

    def entries():
        triton.compile(copy, target="cuda:90", signature=sig, stage="llir")
        return sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    monkeypatch.setattr(tools, "assembler_identity", lambda: "ptxas 12.8 /a/ptxas")
    first = entries()
    assert first
    assert entries() == first  # same toolchain: the entry is reused
    monkeypatch.setattr(tools, "assembler_identity", lambda: "ptxas 12.9 /a/ptxas")
    assert len(entries()) == len(first) + 1
