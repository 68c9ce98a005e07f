"""Global scratch: ``allocate-global-scratch`` lays out each program's buffers (calls included),
the lowering takes the launch's scratch as the kernel's last parameter, and the launch asks the
allocator in force for ``blocks x num_ctas x size`` bytes and passes it there."""
import pytest

from tritium.compiler.kernel import CompiledKernel
from tritium.runtime import _allocation
from tritium.ttgir.ir import parse_module
from tritium.ttgir.passes.allocate_global_scratch import AllocateGlobalScratch, scratch_alignment, scratch_size

TTGIR = """
module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32} {
  tt.func private @callee() {
    %0 = ttg.global_scratch_alloc {alignment = 64 : i32, nbytes = 100 : i32} : !tt.ptr<i8>
    tt.return
  }
  tt.func public @kernel() {
    %0 = ttg.global_scratch_alloc {alignment = 8 : i32, nbytes = 24 : i32} : !tt.ptr<i8>
    tt.call @callee() : () -> ()
    %1 = ttg.global_scratch_alloc {alignment = 128 : i32, nbytes = 128 : i32} : !tt.ptr<i8>
    tt.return
  }
}
"""


def test_layout_of_buffers_and_calls():
    m = parse_module(TTGIR)
    AllocateGlobalScratch().run(m)
    funcs = {f.sym_name.data: f for f in m.body.block.ops}
    callee, kernel = funcs["callee"], funcs["kernel"]
    assert (scratch_size(callee), scratch_alignment(callee)) == (128, 64)  # 100 rounded to its alignment
    offsets = [op.attributes["ttg.global_scratch_memory_offset"].value.data for op in kernel.walk()
               if "ttg.global_scratch_memory_offset" in op.attributes]
    assert offsets == [0, 64, 256]  # 24 bytes, the callee's 128 on 64, then 128 on 128
    assert (scratch_size(m), scratch_alignment(m)) == (384, 128)


def test_no_scratch_leaves_no_attributes():
    m = parse_module('module attributes {"ttg.num-warps" = 4 : i32} {\n tt.func public @k() {\n tt.return\n }\n}')
    AllocateGlobalScratch().run(m)
    assert "ttg.global_scratch_memory_size" not in m.attributes


class _Backend:
    class info:
        binary_ext = "bin"


class _Driver:
    def __init__(self):
        self.launches = []

    def load_binary(self, name, binary, metadata, device):
        return type("Handle", (), {"device": device})()

    def make_launcher(self, handle, metadata, signature):
        self.signature = dict(signature)
        return lambda grid, stream, args: self.launches.append((grid, stream, list(args)))


class _Buffer:
    def __init__(self, size):
        self.size = size

    def data_ptr(self):
        return 0x1000


def test_launch_asks_the_allocator_and_passes_the_buffer_last():
    driver = _Driver()
    k = CompiledKernel(_Backend(), None, {"bin": b""}, {"name": "k", "global_scratch_size": 384,
                                                        "global_scratch_align": 128, "num_ctas": 2},
                       {0: "*fp32", 1: "i32"})
    k.backend.driver = lambda: driver
    asked = []
    _allocation.set_allocator(lambda size, align, stream: asked.append((size, align, stream)) or _Buffer(size))
    try:
        k._launcher(0)((3, 2, 1), 7, ["x", 5])
    finally:
        _allocation.set_allocator(None)
    assert driver.signature == {0: "*fp32", 1: "i32", 2: "*i8"}
    assert asked == [(3 * 2 * 2 * 384, 128, 7)]  # blocks x num_ctas x bytes per program
    (grid, stream, args), = driver.launches
    assert args[:2] == ["x", 5] and isinstance(args[2], _Buffer) and args[2].size == 4608


def test_without_an_allocator_the_error_names_set_allocator(monkeypatch):
    monkeypatch.setattr(_allocation, "_torch_scratch", lambda size, device: None)  # as in a process without torch
    with pytest.raises(RuntimeError, match="set_allocator"):
        _allocation.allocate_scratch(128, 128, 4, 1, None)
