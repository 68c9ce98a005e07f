"""A compiled kernel's cubin where Triton's cache keeps it, for PyTorch Inductor's own launcher.

Inductor sets ``TRITON_CACHE_DIR``, compiles, and then looks for ``<dir>/<kernel.hash>/<name>.cubin``;
a kernel found there is launched by torch's C++ launcher (``StaticallyLaunchedCudaKernel``) with
the signature's non-constexpr values, one CTA a program, ``32 * num_warps`` threads and
``metadata.shared`` bytes.  These tests compile for sm_90 without a GPU: the copy is made only for
kernels that launch that way, and torch's own class reads it as it would read Triton's."""
import os
import subprocess
import sys
import textwrap

import pytest

import tritium
import tritium.language as tl
from tritium.compiler.compiler import ASTSource
from tritium.runtime.cache import plain_launch_params, publish_binary


@tritium.jit
def scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha + tl.load(y_ptr + offs, mask=m), mask=m)


@tritium.jit(repr=lambda spec: "renamed_kernel")
def renamed(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.arange(0, BLOCK).to(tl.float32))


@tritium.jit
def device_descriptor(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[n, n], strides=[n, 1], block_shape=[BLOCK, BLOCK])
    tl.store(out_ptr + tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :], desc.load([0, 0]))


SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "alpha": "fp32", "BLOCK": "constexpr"}


def compile_like_inductor(fn=scale_add, sig=SIG, constexprs=None, **options):
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(3)}
    return tritium.compile(ASTSource(fn, sig, constexprs or {"BLOCK": 256}, attrs), target="cuda:90",
                           options={"num_warps": 4, "num_stages": 1, **options})


@pytest.fixture
def triton_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "tritium"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    return tmp_path / "triton"


def test_the_cubin_lands_where_triton_keeps_it(triton_dir):
    k = compile_like_inductor()
    path = triton_dir / k.hash / "scale_add.cubin"
    assert path.read_bytes() == k.asm["cubin"]
    assert plain_launch_params(k) == ["*fp32", "*fp32", "*fp32", "i32", "fp32"]
    # a second compile (a cache hit) finds the copy and leaves it as it is
    assert publish_binary(compile_like_inductor()) == path
    assert [p.name for p in triton_dir.rglob("*") if p.is_file()] == ["scale_add.cubin"]


def test_no_copy_without_triton_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    k = compile_like_inductor()
    assert publish_binary(k) is None
    assert not (tmp_path / k.hash).exists()  # Tritium's own entry is there, under its own key


def test_no_copy_where_a_plain_launch_would_be_wrong(triton_dir):
    # the entry symbol is not the function's name: a launcher looking the function up by name fails
    k = tritium.compile(ASTSource(renamed, {"x_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 64}), target="cuda:90")
    assert k.name == "renamed_kernel" and plain_launch_params(k) is None
    # a kernel with global scratch (maps built in the kernel) takes one more pointer than its signature
    k = compile_like_inductor(device_descriptor, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                              {"BLOCK": 32})
    assert int(k.metadata.get("global_scratch_size", 0)) > 0 and plain_launch_params(k) is None
    assert not triton_dir.exists()


def test_the_entry_must_declare_exactly_the_signatures_values(triton_dir):
    k = compile_like_inductor()
    assert plain_launch_params(k) is not None
    k.asm["ptx"] = k.asm["ptx"].replace(".param .u32 scale_add_param_3", ".param .u32 scale_add_param_3,\n\t.param .u32 extra", 1)
    assert ".param .u32 extra" in k.asm["ptx"]
    assert plain_launch_params(k) is None


def test_torchs_static_launcher_reads_it_as_triton_s(tmp_path):
    """In a process where ``import triton`` is Tritium, Inductor's path for the kernel is the copy,
    and torch's ``StaticallyLaunchedCudaKernel`` takes the kernel: its value types, threads and bytes."""
    pytest.importorskip("torch", reason="PyTorch Inductor's static launcher is torch's")
    code = textwrap.dedent(f"""
        import os, sys
        os.environ["TRITON_CACHE_DIR"] = {str(tmp_path / "triton")!r}
        os.environ["TRITIUM_CACHE_DIR"] = {str(tmp_path / "tritium")!r}
        import tritium
        tritium.install_as_triton()
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_nvidia_static_launch import compile_like_inductor
        from torch._inductor.runtime.cache_dir_utils import triton_cache_dir
        from torch._inductor.runtime.runtime_utils import triton_hash_to_path_key
        try:
            from torch._inductor.runtime.static_triton_launcher import StaticallyLaunchedCudaKernel
        except ImportError:
            from torch._inductor.runtime.static_cuda_launcher import StaticallyLaunchedCudaKernel
        k = compile_like_inductor()
        path = os.path.join(triton_cache_dir(0), triton_hash_to_path_key(k.hash), k.src.fn.__name__ + ".cubin")
        assert os.path.exists(path), path
        k._cubin_path = path
        s = StaticallyLaunchedCudaKernel(k)
        extra = "O" if s.has_global_scratch else ""
        print(s.name, s.arg_tys, s.num_warps, s.shared == k.metadata.shared, extra)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    name, arg_tys, warps, shared_ok, *extra = out.stdout.split()
    assert (name, arg_tys, warps, shared_ok) == ("scale_add", "OOOif", "4", "True")
