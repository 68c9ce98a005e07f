"""The shared TTGIR -> LLVM lowering asks the target for its warp size and never assumes 32: with
a 64-lane target (an AMD-style wavefront), TTGIR built for 64 threads per warp lowers to valid
LLVM IR whose lane arithmetic and warp-shuffle reductions span 64 lanes.

The target info here is a test double built on the NVIDIA one (its instructions are not a real
wave64 ISA); what is checked is the core's arithmetic, not a device."""
import importlib

import llvmlite.binding as llvm
import pytest

import tritium
from tritium.hooks.types import GPUTarget, Options

nvidia = pytest.importorskip("tritium_nvidia.lowering.target_info")

import llvmlite.ir as ir  # noqa: E402


class Wave64(nvidia.NVIDIATargetInfo):
    def __init__(self):
        super().__init__(90)
        self.xor_masks = []

    @property
    def warp_size(self) -> int:
        return 64

    def lane_id(self, b, tid):
        return b.and_(tid, ir.Constant(ir.IntType(32), 63))

    def warp_id(self, b, tid):
        return b.lshr(tid, ir.Constant(ir.IntType(32), 6))

    def shuffle_xor(self, b, value, mask):
        self.xor_masks.append(mask)
        return super().shuffle_xor(b, value, mask)


F32 = "*fp32"
KERNELS = [
    ("vector_add", "add_kernel", {"x_ptr": F32, "y_ptr": F32, "output_ptr": F32, "n_elements": "i32"},
     {"BLOCK_SIZE": 1024}),
    ("fused_softmax", "softmax_kernel", {"output_ptr": F32, "input_ptr": F32, "input_row_stride": "i32",
                                         "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
     {"BLOCK_SIZE": 1024, "num_stages": 2}),
    ("layer_norm", "_layer_norm_fwd_fused", {**{n: F32 for n in "XYWB"}, "Mean": F32, "Rstd": F32, "stride": "i32",
                                             "N": "i32", "eps": "fp32"}, {"BLOCK_SIZE": 512}),
]


@pytest.mark.parametrize("mod, name, sig, consts", KERNELS, ids=[k[0] for k in KERNELS])
def test_lowers_for_64_lanes(mod, name, sig, consts):
    import tritium.conversion.ttgir_to_llvm.reduce  # noqa: F401  (registers scratch sizes)
    from tritium.conversion.ttgir_to_llvm import lower_to_llvm
    from tritium.ttgir.pass_lists import finalize_ttgir, make_ttgir
    from tritium.ttir.ir import parse_module
    fn = getattr(importlib.import_module(f"tritium.examples.{mod}"), name)
    ttir = tritium.compile(fn, signature=sig, constexprs=consts, target="interpreter", stage="ttir").asm["ttir"]
    target, options = GPUTarget("cuda", 90, 64), Options(num_warps=4, threads_per_warp=64)
    module = finalize_ttgir(make_ttgir(parse_module(ttir), target, options), target, options)
    from tritium.ttgir.ir import print_module
    ttgir = print_module(module)
    assert '"ttg.threads-per-warp" = 64' in ttgir and "threadsPerWarp = [64]" in ttgir
    info = Wave64()
    text, meta = lower_to_llvm(module, info, options)
    llvm.parse_assembly(text).verify()
    assert meta["threads_per_warp"] == 64
    assert "and i32" in text and ", 63" in text  # lane = tid & 63
    if "tt.reduce" in ttir:
        # a full-warp butterfly over 64 lanes needs the xor distance 32; 32 lanes would stop at 16
        assert 32 in info.xor_masks
