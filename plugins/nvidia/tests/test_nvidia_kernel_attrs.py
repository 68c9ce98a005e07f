"""CPU-only: what kernel options and hint builtins leave in the NVIDIA stages' text: ``maxnreg=``
as ``.maxnreg`` on the kernel's entry (not on its noinline callees), ``tl.assume`` as
``llvm.assume``, ``tl.debug_barrier`` as a CTA barrier, ``tl.extra.cuda``'s special-register reads."""
import re

import pytest

import tritium as triton
import tritium.language as tl


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


@triton.jit(noinline=True)
def zero_out(x_ptr):
    tl.store(x_ptr, 0)


@triton.jit
def calls_a_noinline_function(x_ptr):
    zero_out(x_ptr)
    tl.store(x_ptr + 1, 0)


def test_maxnreg_is_set_on_the_entry_only():
    k = triton.compile(calls_a_noinline_function, target="cuda:90", signature={"x_ptr": "*i32"}, maxnreg=42)
    ptx = k.asm["ptx"]
    assert ".func " in ptx  # the callee stayed a function
    assert re.search(r"\.visible \.entry [^{;]*\.maxnreg 42", ptx)
    assert not re.search(r"\.func [^{;]*\.maxnreg", ptx)
    assert k.asm["cubin"][:4] == b"\x7fELF"


def test_no_maxnreg_without_the_option():
    k = triton.compile(calls_a_noinline_function, target="cuda:90", signature={"x_ptr": "*i32"})
    assert ".maxnreg" not in k.asm["ptx"]


@triton.jit
def assumes(out_ptr, n, BLOCK: tl.constexpr):
    rest = n - tl.program_id(0) * BLOCK
    tl.assume(rest >= BLOCK)
    tl.store(out_ptr + tl.program_id(0), rest)


def test_assume_reaches_llvm():
    k = triton.compile(assumes, target="cuda:90", signature={"out_ptr": "*i32", "n": "i32"},
                       constexprs={"BLOCK": 128})
    assert "llvm.intr.assume" in k.asm["ttir"]
    assert re.search(r"call void @\"?llvm\.assume\"?\(i1 ", k.asm["llir"])
    assert k.asm["cubin"][:4] == b"\x7fELF"


@triton.jit
def barrier_between(x_ptr, lock_ptr):
    r = tl.arange(0, 128)
    tl.store(x_ptr + r, tl.load(x_ptr + r) + 1.0)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


def test_debug_barrier_is_a_cta_barrier_before_the_release():
    k = triton.compile(barrier_between, target="cuda:90", signature={"x_ptr": "*fp32", "lock_ptr": "*i32"})
    assert "gpu.barrier" in k.asm["ttir"]
    ptx = k.asm["ptx"]
    store, bar, atom = ptx.index("st.global"), ptx.index("bar.sync"), ptx.index("atom.global")
    assert store < bar < atom


@triton.jit
def timed_loop(out1_ptr, out2_ptr):
    start = tl.extra.cuda.globaltimer()
    off = tl.arange(0, 128)
    for i in range(100):
        tl.store(out1_ptr + off, tl.load(out1_ptr + off) + 1)
    end = tl.extra.cuda.globaltimer()
    tl.store(out2_ptr, end - start)


@triton.jit
def which_sm(out_ptr):
    tl.store(out_ptr + tl.program_id(0), tl.extra.cuda.smid())
    offs = tl.arange(0, tl.extra.cuda.num_threads())
    tl.store(out_ptr + offs, offs + tl.extra.cuda.num_warps())


def test_special_registers_are_read_as_triton_reads_them():
    k = triton.compile(timed_loop, target="cuda:90", signature={"out1_ptr": "*i64", "out2_ptr": "*i64"})
    assert k.asm["ptx"].count("%globaltimer") == 2  # impure: each call reads the clock again
    k = triton.compile(which_sm, target="cuda:90", signature={"out_ptr": "*i32"}, num_warps=2)
    assert k.asm["ptx"].count("%smid") == 1
    assert "tensor<64xi32>" in k.asm["ttir"]  # num_threads: 2 warps of 32
    assert k.asm["cubin"][:4] == b"\x7fELF"


@triton.jit
def _exp2_kernel(x_ptr):
    p = x_ptr + tl.arange(0, 128)
    tl.store(p, tl.math.exp2(tl.load(p)))


@pytest.mark.parametrize("ftz", [True, False])
def test_enable_reflect_ftz_picks_the_approximate_exp2(ftz):
    # Triton's option: flush denormals in ex2.approx (and libdevice's nvvm-reflect-ftz) or keep them
    ptx = triton.compile(_exp2_kernel, target="cuda:90", signature={"x_ptr": "*fp32"},
                         enable_reflect_ftz=ftz).asm["ptx"]
    assert ("ex2.approx.ftz.f32" in ptx) == ftz and "ex2.approx" in ptx
