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
