"""Device-library calls on AMD (``tritium_amd.lowering.device_libs``): names mapped to ocml's, ROCm's
bitcode linked when it is installed (exercised with a small synthetic library built here, placed
where ROCm keeps it: no real ocml is available on this machine), the plain-IR fallback otherwise
(JIT-run on the host against exact or numpy references), and the error at the kernel's line for a
function neither provides."""
import ctypes
import math
from fractions import Fraction

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.language.extra import libdevice
from tritium_amd.lowering import device_libs, ocml_fallback
from tritium_amd.toolchain.elf import check_hsaco

F32, F64, I32, I64 = ir.FloatType(), ir.DoubleType(), ir.IntType(32), ir.IntType(64)
_C = {F32: ctypes.c_float, F64: ctypes.c_double, I32: ctypes.c_int32, I64: ctypes.c_int64}


@pytest.fixture(autouse=True)
def _no_rocm(monkeypatch, tmp_path):
    # this machine has no ROCm; make sure of it whatever the environment says
    for v in ("ROCM_PATH", "ROCM_HOME", "HIP_PATH"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setattr(device_libs, "_rocm_roots", lambda: [tmp_path / "no-rocm"])
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def jit():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    engines = []

    def build(symbol, ret, *params):
        module = ir.Module(name="m")
        module.triple = llvm.get_default_triple()
        assert ocml_fallback.define(module, symbol, ir.FunctionType(ret, list(params)))
        mod = llvm.parse_assembly(str(module))
        mod.verify()
        engine = llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine())
        engine.finalize_object()
        engines.append(engine)
        return ctypes.CFUNCTYPE(_C[ret], *(_C[p] for p in params))(engine.get_function_address(symbol))
    return build


def test_names_map_to_ocml_or_the_fallback():
    assert device_libs.resolve("__nv_tanhf") == "__ocml_tanh_f32"
    assert device_libs.resolve("__nv_exp2") == "__ocml_exp2_f64"
    assert device_libs.resolve("__nv_atan2f") == "__ocml_atan2_f32"
    assert device_libs.resolve("__nv_float2int_rn") == "__nv_float2int_rn"     # not ocml's: the fallback's
    assert device_libs.resolve("__nv_no_such_function") is None
    assert device_libs.resolve("__nv_j0f") is None                               # ocml has it; the fallback not


def _next(x, dtype, direction):
    return np.nextafter(dtype(x), dtype(direction))


@pytest.mark.parametrize("ty", [F32, F64])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "sqrt", "rcp"])
@pytest.mark.parametrize("mode", ["z", "d", "u"])
def test_directed_rounding_is_exact(jit, ty, op, mode):
    """``__nv_fadd_rd`` & co.: the result is the float next to the exact value on the asked side
    (checked with exact rational arithmetic)."""
    dtype = np.float32 if ty == F32 else np.float64
    unary = op in ("sqrt", "rcp")
    f = jit(f"__nv_{'f' if ty == F32 else 'd'}{op}_r{mode}", ty, *([ty] * (1 if unary else 2)))
    rng = np.random.default_rng(2)
    xs = rng.uniform(0.01 if op == "sqrt" else -100, 100, 400).astype(dtype)
    ys = rng.uniform(-100, 100, 400).astype(dtype)
    xs[:8] = [1.0, 3.0, 2.0, 0.1, 1e-3, 7.0, 1.5, 4.0]     # some exact results
    for x, y in zip(xs, ys):
        got = dtype(f(float(x)) if unary else f(float(x), float(y)))
        fx, fy = Fraction(float(x)), Fraction(float(y))
        if op == "sqrt":
            exact_sq = fx
            below_ok = Fraction(float(got)) ** 2 <= exact_sq
            above_ok = Fraction(float(got)) ** 2 >= exact_sq
            nxt_up, nxt_dn = _next(got, dtype, np.inf), _next(got, dtype, -np.inf)
            if mode in ("z", "d"):
                assert below_ok and Fraction(float(nxt_up)) ** 2 > exact_sq, (x, got)
            else:
                assert above_ok and Fraction(float(nxt_dn)) ** 2 < exact_sq, (x, got)
            continue
        exact = {"add": lambda: fx + fy, "sub": lambda: fx - fy, "mul": lambda: fx * fy, "div": lambda: fx / fy,
                 "rcp": lambda: 1 / fx}[op]()
        g = Fraction(float(got))
        toward = mode if mode != "z" else ("d" if exact > 0 else "u")
        if toward == "d":
            assert g <= exact < Fraction(float(_next(got, dtype, np.inf))), (x, y, got)
        else:
            assert Fraction(float(_next(got, dtype, -np.inf))) < exact <= g, (x, y, got)


@pytest.mark.parametrize("name, ref, lo, hi", [
    ("sinh", np.sinh, -8, 8), ("cosh", np.cosh, -8, 8), ("asin", np.arcsin, -1, 1), ("acos", np.arccos, -1, 1),
    ("cbrt", np.cbrt, -50, 50), ("exp10", lambda x: 10.0 ** x, -6, 6), ("erfc", np.vectorize(math.erfc), -4, 4),
    ("lgamma", np.vectorize(math.lgamma), 0.1, 8), ("tgamma", np.vectorize(math.gamma), 0.2, 6),
    ("erfinv", None, -0.99, 0.99)])
def test_fp32_functions_through_fp64(jit, name, ref, lo, hi):
    """fp32 ocml functions the fallback computes in fp64 and rounds once: within 1 ulp of fp32."""
    f = jit(f"__ocml_{name}_f32", F32, F32)
    xs = np.random.default_rng(3).uniform(lo, hi, 500).astype(np.float32)
    got = np.array([f(float(x)) for x in xs], dtype=np.float64)
    if name == "erfinv":
        np.testing.assert_allclose(np.vectorize(math.erf)(got), xs, rtol=2e-6, atol=1e-7)
        return
    np.testing.assert_allclose(got, ref(xs.astype(np.float64)), rtol=1.2e-7, atol=1e-30)


def test_classification_conversions_and_bits(jit):
    isnan, isinf = jit("__ocml_isnan_f64", I32, F64), jit("__ocml_isinf_f32", I32, F32)
    signbit, fin = jit("__ocml_signbit_f64", I32, F64), jit("__ocml_isfinite_f32", I32, F32)
    for v in (0.0, -0.0, 1.5, -2.0, math.inf, -math.inf, math.nan):
        assert bool(isnan(v)) == math.isnan(v) and bool(isinf(v)) == math.isinf(v)
        assert bool(signbit(v)) == (math.copysign(1, v) < 0) and bool(fin(v)) == math.isfinite(v)
    for mode, rnd in (("rn", round), ("rz", math.trunc), ("rd", math.floor), ("ru", math.ceil)):
        f = jit(f"__nv_float2int_{mode}", I32, F32)
        for v in (-2.5, -1.5, -0.4, 0.5, 1.5, 2.6, 1000.7):
            assert f(v) == rnd(v), (mode, v)
    clz, popc, ffs, brev = (jit(f"__nv_{n}", I32, I32) for n in ("clz", "popc", "ffs", "brev"))
    for u in (0, 1, 12, 0x7FFFFFFF, -1, -(2 ** 31), 0x00F0):
        w = u & 0xFFFFFFFF
        assert clz(u) == 32 - w.bit_length() and popc(u) == bin(w).count("1")
        assert ffs(u) == (w & -w).bit_length()
        assert brev(u) & 0xFFFFFFFF == int(format(w, "032b")[::-1], 2)
    mulhi, umulhi = jit("__nv_mulhi", I32, I32, I32), jit("__nv_umulhi", I32, I32, I32)
    for a, b in ((3, 5), (-7, 2 ** 30), (2 ** 31 - 1, 2 ** 31 - 1), (-1, -1)):
        assert mulhi(a, b) == (a * b) >> 32
        assert umulhi(a, b) & 0xFFFFFFFF == ((a & 0xFFFFFFFF) * (b & 0xFFFFFFFF)) >> 32


@triton.jit
def libdevice_calls(x_ptr, y_ptr, z_ptr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, libdevice.sin(x) + libdevice.exp(x))
    tl.store(z_ptr + offs, libdevice.erfcinv(x.to(tl.float32)))


@triton.jit
def j0_call(x_ptr):
    offs = tl.arange(0, 64)
    tl.store(x_ptr + offs, libdevice.j0(tl.load(x_ptr + offs)))


SIG = {"x_ptr": "*fp64", "y_ptr": "*fp64", "z_ptr": "*fp32"}


@pytest.mark.parametrize("target", ["hip:gfx942", "hip:gfx1100"])
def test_fallback_defines_every_call(target):
    """Without ROCm, fp64 ``sin``/``exp`` come from the plain-IR library: the code object is
    self-contained.  ``erfcinv`` has no fallback: refused at its line."""
    with pytest.raises(triton.CompilationError, match=r"no implementation of the extern function __nv_erfcinvf"):
        triton.compile(libdevice_calls, target=target, signature=SIG, constexprs={})
    with pytest.raises(triton.CompilationError, match=r"libdevice.j0\(tl.load"):
        triton.compile(j0_call, target=target, signature={"x_ptr": "*fp32"}, constexprs={})


@triton.jit
def fp64_math(x_ptr, y_ptr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.exp(x) + tl.sin(x) + libdevice.pow(x, x) + libdevice.float2int_rn(x.to(tl.float32)))


@pytest.mark.parametrize("target", ["hip:gfx942", "hip:gfx1100"])
def test_fp64_math_compiles_without_rocm(target):
    k = triton.compile(fp64_math, target=target, signature={"x_ptr": "*fp64", "y_ptr": "*fp64"}, constexprs={})
    assert k.metadata["device_libs"] == ["fallback: __nv_float2int_rn __ocml_exp_f64 __ocml_pow_f64 __ocml_sin_f64"]
    assert "declare double @__ocml" not in k.asm["llir"]
    assert "v_fma_f64" in k.asm["amdgcn"] and "v_ldexp_f64" in k.asm["amdgcn"]
    check_hsaco(k.asm["hsaco"], k.metadata)


_SYNTHETIC_OCML = """
@__oclc_ISA_version = external addrspace(4) constant i32
@__oclc_daz_opt = external addrspace(4) constant i8
define double @__ocml_sin_f64(double %x) {
  %v = load i32, ptr addrspace(4) @__oclc_ISA_version
  %d = load i8, ptr addrspace(4) @__oclc_daz_opt
  %s = add i32 %v, 12345
  %e = zext i8 %d to i32
  %t = add i32 %s, %e
  %f = sitofp i32 %t to double
  %r = fmul double %x, %f
  ret double %r
}
define double @__ocml_exp_f64(double %x) {
  %r = fadd double %x, 0x4010000000000000
  ret double %r
}
define float @__ocml_erfcinv_f32(float %x) {
  %r = fmul float %x, 0x4014000000000000
  ret float %r
}
define float @__ocml_unused_f32(float %x) {
  ret float %x
}
"""


def _bitcode(text: str) -> bytes:
    m = llvm.parse_assembly(f'target triple = "amdgcn-amd-amdhsa"\ntarget datalayout = '
                           f'"{device_libs.data_layout()}"\n{text}')
    return m.as_bitcode()


@pytest.mark.parametrize("target, isa", [("hip:gfx942", 9402), ("hip:gfx1100", 11000)])
def test_rocm_bitcode_is_linked_when_installed(monkeypatch, tmp_path, target, isa):
    """A synthetic ocml (``__ocml_sin_f64`` reading the ISA-version and DAZ control constants) in
    ``<root>/amdgcn/bitcode``: the calls link to it, the ISA constant comes from its oclc library,
    the DAZ one (no library here) is defined directly, and what is not called is dropped."""
    d = tmp_path / "rocm" / "amdgcn" / "bitcode"
    d.mkdir(parents=True)
    (d / "ocml.bc").write_bytes(_bitcode(_SYNTHETIC_OCML))
    (d / "ockl.bc").write_bytes(_bitcode("define i64 @__ockl_unused() {\n  ret i64 7\n}\n"))
    (d / f"oclc_isa_version_{target[7:]}.bc").write_bytes(
        _bitcode(f"@__oclc_ISA_version = linkonce_odr hidden addrspace(4) constant i32 {isa}\n"))
    monkeypatch.setattr(device_libs, "_rocm_roots", lambda: [tmp_path / "rocm"])
    assert device_libs.bitcode_dir() == d
    assert device_libs.resolve("__nv_j0f") == "__ocml_j0_f32"        # ocml's, not the fallback's question
    k = triton.compile(libdevice_calls, target=target, signature=SIG, constexprs={})
    assert k.metadata["device_libs"] == ["ocml.bc", "ockl.bc", f"oclc_isa_version_{target[7:]}.bc"]
    llir = k.asm["llir"]
    assert "define internal double @__ocml_sin_f64" in llir and "12345" in llir
    assert f"@__oclc_ISA_version = internal addrspace(4) constant i32 {isa}" in llir.replace("hidden ", "")
    assert "@__oclc_daz_opt = internal" in llir.replace("hidden ", "")
    asm = k.asm["amdgcn"]
    assert "__ocml_unused_f32" not in asm and "__ockl_unused" not in asm
    check_hsaco(k.asm["hsaco"], k.metadata)
