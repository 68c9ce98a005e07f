"""remove-layout-conversions never gives a value a layout that holds more registers per thread than
the one it has.

The kernel is the shape of an Inductor batch-norm backward reduction (``XBLOCK=1``, a
``1 x R0_BLOCK`` accumulator, per-channel ``1 x 1`` loads). Lanes of a ``1 x 1`` tensor's default
layout run along its size-1 dimension; carried onto the ``1 x 2048`` loop body, that layout
replicated all 2,048 elements into every thread: 58 KB of spills, a 90 s compile and a kernel
six times slower than Triton's in ``torch.compile`` of a small conv net (bench/torch_compile_e2e.py).
"""
import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType

import tritium as triton
import tritium.language as tl
from tritium.ttgir.encodings import DistributedEncoding
from tritium.ttgir.ir import parse_module
from tritium.ttgir.layouts import total_elems_per_thread


@triton.jit
def bn_backward_partial(mask_ptr, grad_ptr, x_ptr, mean_ptr, out_ptr, XBLOCK: tl.constexpr,
                        R0_BLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < 64
    x0 = xindex % 32
    x1 = xindex // 32
    mean = tl.load(mean_ptr + x0, xmask, eviction_policy="evict_last")
    acc = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, 8192, R0_BLOCK):
        r0 = r0_offset + tl.arange(0, R0_BLOCK)[None, :]
        rmask = r0 < 8192
        off = 1024 * x0 + 32768 * (r0 // 1024) + 262144 * x1 + (r0 % 1024)
        dead = tl.load(mask_ptr + off, rmask & xmask, other=0.0).to(tl.int1)
        g = tl.load(grad_ptr + (x0 + 32 * (r0 // 1024) + 256 * x1), rmask & xmask, other=0.0)
        x = tl.load(x_ptr + off, rmask & xmask, other=0.0)
        v = tl.where(dead, 0.0, g * 0.0009765625) * (x - mean)
        acc = tl.where(rmask & xmask, acc + v, acc)
    tl.store(out_ptr + xindex, tl.sum(acc, 1)[:, None], xmask)


SIG = {"mask_ptr": "*i1", "grad_ptr": "*fp32", "x_ptr": "*fp32", "mean_ptr": "*fp32", "out_ptr": "*fp32"}


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
@pytest.mark.parametrize("num_warps", [4, 16])
def test_no_value_holds_more_than_its_share(target, num_warps):
    k = triton.compile(bn_backward_partial, target=target, signature=SIG,
                       constexprs={"XBLOCK": 1, "R0_BLOCK": 2048}, options={"num_warps": num_warps},
                       attrs={n: {"tt.divisibility": 16} for n in SIG}, stage="ttgir")
    module = parse_module(k.asm["ttgir"], verify=False)
    threads = num_warps * (64 if target.startswith("hip") else 32)
    worst = {}
    for op in module.walk():
        for r in op.results:
            t = r.type
            if isinstance(t, TensorType) and isinstance(t.encoding, DistributedEncoding):
                shape = tuple(t.get_shape())
                n = total_elems_per_thread(t.encoding, shape)
                share = max(1, int(np.prod(shape)) // threads)
                if n > 4 * share:
                    worst[f"{op.name} {shape}"] = (n, share)
    assert not worst, f"values holding far more than their share of registers (held, share): {worst}"
