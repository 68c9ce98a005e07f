"""Host tensor descriptors as kernel arguments (``tritium.tools.tensor_descriptor``)."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _scale(x_desc, z_desc, s, BM: tl.constexpr, BN: tl.constexpr):
    off = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    z_desc.store(off, x_desc.load(off) * s)


def test_from_tensor_reads_shape_and_element_strides():
    x = np.zeros((8, 24), np.float32)[:, :16]
    d = TensorDescriptor.from_tensor(x, [4, 16])
    assert d.shape == [8, 16] and d.strides == [24, 1] and d.block_shape == [4, 16]


@pytest.mark.parametrize("kw,msg", [({"block_shape": [4, 12]}, "powers of two"),
                                    ({"strides": [1, 8]}, "contiguous"),
                                    ({"padding": "one"}, "padding")])
def test_bad_descriptors_are_refused(kw, msg):
    args = {"base": np.zeros((8, 8), np.float32), "shape": [8, 8], "strides": [8, 1], "block_shape": [4, 4]}
    args.update(kw)
    with pytest.raises(ValueError, match=msg):
        TensorDescriptor(**args)


def test_descriptor_arguments_launch_and_cache():
    x = np.random.rand(20, 40).astype(np.float32)
    z = np.zeros_like(x)
    seen = []

    def grid(meta):
        seen.append(type(meta["x_desc"]).__name__)
        return (triton.cdiv(20, meta["BM"]), triton.cdiv(40, meta["BN"]))

    xd, zd = TensorDescriptor.from_tensor(x, [8, 16]), TensorDescriptor.from_tensor(z, [8, 16])
    k1 = _scale[grid](xd, zd, 2.0, BM=8, BN=16)
    k2 = _scale[grid](xd, zd, 2.0, BM=8, BN=16)
    assert np.array_equal(z, x * 2) and k1 is k2 and seen == ["TensorDescriptor"] * 2
    assert "x_desc__base" in k1.metadata["arg_names"] and "x_desc__shape0" in k1.metadata["arg_names"]


@triton.jit
def _scale_counted(x_desc, z_desc, s, BM: tl.constexpr, BN: tl.constexpr):
    off = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    z_desc.store(off, x_desc.load(off) * s)


def test_descriptor_launches_show_in_the_kernels_cache():
    """As in Triton, ``kernel.kernel_cache`` (``device_caches[d][0]``) holds the CompiledKernel of
    every specialization launched, descriptor launches included (they compile a companion), and
    clearing it makes the next descriptor launch compile again."""
    from tritium.compiler import CompiledKernel
    rng = np.random.default_rng(3)
    x = rng.random((20, 40)).astype(np.float32)
    cache = _scale_counted.device_caches[0][0]
    cache.clear()
    outs = []
    for block in ([8, 16], [4, 8], [8, 16]):  # two specializations, the third launch a cache hit
        z = np.full_like(x, np.nan)
        xd, zd = TensorDescriptor.from_tensor(x, block), TensorDescriptor.from_tensor(z, block)
        outs.append(_scale_counted[(triton.cdiv(20, block[0]), triton.cdiv(40, block[1]))](
            xd, zd, 3.0, BM=block[0], BN=block[1]))
        np.testing.assert_allclose(z, x.astype(np.float64) * 3, rtol=1e-6)
    assert len(cache) == 2 and outs[0] is outs[2] and outs[0] is not outs[1]
    assert all(isinstance(k, CompiledKernel) for k in cache.values())
    assert {id(k) for k in cache.values()} == {id(outs[0]), id(outs[1])}
    assert all(key[0] == "tensor descriptors" for key in cache)
    cache.clear()
    assert len(cache) == 0
    z = np.full_like(x, np.nan)
    again = _scale_counted[(3, 3)](TensorDescriptor.from_tensor(x, [8, 16]), TensorDescriptor.from_tensor(z, [8, 16]),
                                   3.0, BM=8, BN=16)
    np.testing.assert_allclose(z, x.astype(np.float64) * 3, rtol=1e-6)
    assert again is not outs[0] and list(cache.values()) == [again]


def test_backend_tensor_map_becomes_a_parameter_and_tensor_map_ops(monkeypatch):
    """A backend that returns a hardware descriptor for a host descriptor (the
    ``tritium_tensor_descriptor_map`` hook) gets it as the companion's ``x__map`` pointer, and the
    descriptor's accesses become ``tt.descriptor_load`` / ``tt.descriptor_store`` on it."""
    from tritium.hooks.backend import InstalledBackend
    from tritium.runtime import descriptors
    asked = []
    monkeypatch.setattr(InstalledBackend, "tensor_descriptor_map",
                        lambda self, target, d: asked.append((self.name, d.block_shape)) or None)
    x = np.random.rand(20, 40).astype(np.float32)
    bound = [TensorDescriptor.from_tensor(x, [8, 16]), TensorDescriptor.from_tensor(np.zeros_like(x), [8, 16]), 2.0]
    assert descriptors.tensor_maps(bound, {"backend": "interpreter"}, warmup=False) == [None, None, None]
    assert [b for _, b in asked] == [[8, 16], [8, 16]]
    assert descriptors.tensor_maps(bound, {}, warmup=True) == [None, None, None]  # compile only: no device asked

    comp = descriptors.companion(_scale, ((2, True), (2, False), None, None, None))
    assert comp.arg_names[:7] == ["x_desc__base", "x_desc__shape0", "x_desc__shape1", "x_desc__stride0",
                                  "x_desc__stride1", "x_desc__map", "x_desc__block"]
    assert "z_desc__map" not in comp.arg_names
    sig = {"x_desc__base": "*fp32", "x_desc__map": "*u8", "z_desc__base": "*fp32", "s": "fp32"}
    sig.update({f"{d}__{k}{i}": "i32" for d in ("x_desc", "z_desc") for k in ("shape", "stride") for i in (0, 1)})
    cons = {"BM": 8, "BN": 16, "x_desc__block": (8, 16), "x_desc__padding": "zero", "z_desc__block": (8, 16),
            "z_desc__padding": "zero"}
    ttir = triton.compile(comp, target="cuda:90", signature=sig, constexprs=cons, stage="ttir").asm["ttir"]
    assert "tt.descriptor_load" in ttir and "tt.descriptor_store" not in ttir  # z_desc has no map
    assert ttir.count("tt.store") == 1


def test_tensor_map_must_be_a_pointer():
    @triton.jit
    def bad(x_ptr, n):
        d = tl.make_tensor_descriptor(x_ptr, [n], [1], [16], _tensor_map=n)
        d.load([0])
    with pytest.raises(triton.CompilationError, match="_tensor_map must be a pointer"):
        triton.compile(bad, target="cuda:90", signature={"x_ptr": "*fp32", "n": "i32"}, stage="ttir")
