"""The launch fast path with torch tensors, against the fake two-device libcuda (run in a process of
its own by test_nvidia_launch_fake.py, with TRITIUM_FAKECUDA=1 and torch's CPU build): CPU
tensors pose as CUDA tensors of the device in their ``fake_device`` attribute, and torch's CUDA
queries (current stream, current device) are stood in for, so the launch path runs as on a GPU
host where torch has initialised CUDA.  Every case checks what the fake driver recorded (device,
stream, grid, block, parameter values) and that repeated launches take the fast path (no call
of ``JITFunction.run``)."""
import os
import struct
import threading

import numpy as np
import pytest

if os.environ.get("TRITIUM_FAKECUDA") != "1":
    pytest.skip("run through test_nvidia_launch_fake.py", allow_module_level=True)

import fakecuda  # noqa: E402

FAKE = fakecuda.load()
FAKE.n_params.value = 0  # set per launch: the fake reads that many parameter slots
os.environ["TRITIUM_BACKEND"] = "nvidia"

import torch  # noqa: E402

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.runtime import direct_binder  # noqa: E402
from tritium.runtime.driver import LaunchDeviceError  # noqa: E402
from tritium.tools.tensor_descriptor import TensorDescriptor  # noqa: E402
from tritium_nvidia.runtime import device_pointers, queries  # noqa: E402
from tritium_nvidia.plugin import nvidia_plugin as plugin  # noqa: E402

STREAMS = {0: 0x5000, 1: 0x5100}   # each device's "current stream", as torch would answer
CURRENT = [0]                       # torch's current device

torch.Tensor.is_cuda = property(lambda t: hasattr(t, "fake_device"))
torch.Tensor.get_device = lambda t: getattr(t, "fake_device", -1)
_host_device = device_pointers._torch_device
device_pointers._torch_device = lambda t: t.fake_device if hasattr(t, "fake_device") else _host_device(t)
torch.cuda.is_initialized = lambda: True
torch._C._cuda_getCurrentRawStream = lambda device: STREAMS[device]
torch._C._cuda_getDevice = lambda: CURRENT[0]


@tritium.jit
def axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tritium.jit
def maybe_bias(x_ptr, bias_ptr, n, BLOCK: tl.constexpr, HAS_BIAS: tl.constexpr = False):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n)
    if HAS_BIAS:
        v += tl.load(bias_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, v, mask=offs < n)


@tritium.jit(do_not_specialize=["n"])
def copy_dns(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@tritium.jit
def copy_desc(src_desc, out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), src_desc.load([0]))


def on(device, *tensors):
    for t in tensors:
        t.fake_device = device
    return tensors


def tensors(device=0, n=1024):
    return on(device, torch.randn(n), torch.randn(n), torch.empty(n))


class Runs:
    """Counts the launches that took the general path (``JITFunction.run`` files every one);
    ``count`` is reset by the cases once their first launches are done."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = direct_binder.fill

        def counting(*a, **k):
            self.count += 1
            return real(*a, **k)
        monkeypatch.setattr(direct_binder, "fill", counting)


@pytest.fixture(autouse=True)
def device0_current():
    drv = plugin.tritium_driver("nvidia")
    assert drv.device_count() == 2, "the driver in use is not the two-device fake"
    FAKE.lib.fake_reset_thread()
    drv.set_current_device(0)
    CURRENT[0] = 0
    yield drv
    FAKE.lib.fake_reset_thread()
    assert not fakecuda.foreign_drivers(), f"a real CUDA driver was loaded beside the fake: {fakecuda.foreign_drivers()}"


@pytest.fixture
def runs(monkeypatch):
    return Runs(monkeypatch)


def launched(call, params=0):
    """Run ``call``, check that it launched once, and return what the fake recorded (the first
    ``params`` parameter slots read)."""
    FAKE.n_params.value = params
    before = FAKE.count.value
    try:
        call()
    finally:
        FAKE.n_params.value = 0
    assert FAKE.count.value == before + 1, "nothing was launched"
    return FAKE.last


def divisible(kernel) -> list[bool]:
    """Per kernel parameter (in order), whether its TTIR carries ``tt.divisibility = 16``."""
    head = next(line for line in kernel.asm["ttir"].splitlines() if "tt.func public" in line)
    return ["tt.divisibility" in arg for arg in head.split(" loc(")[:-1]]


def f32(bits):
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def test_torch_tensors_take_the_fast_path(runs):
    x, y, out = tensors()
    for i in range(4):
        last = launched(lambda: axpy[(8,)](x, y, out, 1000, 2.5, BLOCK=128), 5)
        assert (last.device, last.stream, tuple(last.grid), last.block[0]) == (0, STREAMS[0], (8, 1, 1), 128)
        assert list(last.params[:3]) == [x.data_ptr(), y.data_ptr(), out.data_ptr()]
        assert last.params[3] & 0xFFFFFFFF == 1000 and f32(last.params[4]) == 2.5
        if i == 0:
            runs.count = 0
    assert runs.count == 0 and axpy._direct is not None
    assert axpy[(8,)](x, y, out, 1000, 2.5, BLOCK=128) is next(iter(axpy.kernel_cache.values()))
    # and not through the general binder either
    general, misses = axpy._fast, []
    axpy._fast = (lambda *a, **k: misses.append(a) or general[0](*a, **k),) + general[1:]
    try:
        for _ in range(3):
            launched(lambda: axpy[(8,)](x, y, out, 1000, 2.5, BLOCK=128))
        launched(lambda: axpy[(8,)](x, y, out, 1000, 2.5, BLOCK=128, stream=0x4242))
    finally:
        axpy._fast = general
    assert len(misses) == 1  # the explicit stream


@pytest.mark.parametrize("n, params, dtype", [(1, 4, None), (32, 5, "i32"), (33, 5, "i32"), (-7, 5, "i32"),
                                              (2 ** 40 + 3, 5, "i64"), (2 ** 63 + 5, 5, "u64")])
def test_integer_specializations(runs, n, params, dtype):
    x, y, out = tensors()
    for i in range(3):
        last = launched(lambda: axpy[(2,)](x, y, out, n, 1.5, BLOCK=64), params)
        if i == 0:
            runs.count = 0
    assert runs.count == 0
    kernel = axpy[(2,)](x, y, out, n, 1.5, BLOCK=64)
    assert len(kernel.runtime_signature) == params  # the three pointers, n unless it is 1, alpha
    if dtype is None:
        assert kernel.metadata["signature"]["n"] == "constexpr"
        assert f32(last.params[3]) == 1.5
    else:
        assert kernel.metadata["signature"]["n"] == dtype
        mask = 0xFFFFFFFF if dtype == "i32" else 0xFFFFFFFFFFFFFFFF
        assert last.params[3] & mask == n & mask
    assert divisible(kernel) == [True, True, True] + ([n % 16 == 0] if dtype else []) + [False]


def test_integer_out_of_range_is_reported(runs):
    from tritium.frontend.errors import KernelArgumentOverflowError
    x, y, out = tensors()
    for _ in range(2):
        with pytest.raises(KernelArgumentOverflowError, match="out of range"):
            axpy[(2,)](x, y, out, 2 ** 64, 1.5, BLOCK=64)


def test_bool_int_and_float_arguments_are_told_apart():
    x, y, out = tensors()
    seen = {}
    for alpha in (2.0, 2, True, 2.0, 2, True):
        axpy[(2,)](x, y, out, 100, alpha, BLOCK=64)
        sig = axpy[(2,)](x, y, out, 100, alpha, BLOCK=64).metadata["signature"]["alpha"]
        assert seen.setdefault(type(alpha), sig) == sig
    assert seen == {float: "fp32", int: "i32", bool: "i1"}
    for n in (1, True):  # 1 is compiled as a constant, True is an i1 argument
        kernel = axpy[(2,)](x, y, out, n, 2.0, BLOCK=64)
        assert kernel.metadata["signature"]["n"] == ("constexpr" if type(n) is int else "i1")


def test_constexprs_by_type_and_value_and_by_default(runs):
    x, bias, _ = tensors()
    kernels = set()
    for i in range(2):
        runs.count = 0
        kernels.add(id(maybe_bias[(4,)](x, None, 100, 64)))               # HAS_BIAS from its default
        kernels.add(id(maybe_bias[(4,)](x, None, 100, 64, HAS_BIAS=False)))
        kernels.add(id(maybe_bias[(4,)](x, bias, 100, 64, HAS_BIAS=True)))
        kernels.add(id(maybe_bias[(4,)](x, bias, 100, 64, HAS_BIAS=1)))  # 1 is not True
        kernels.add(id(maybe_bias[(4,)](x, None, 100, BLOCK=128)))
    assert len(kernels) == 4
    last = launched(lambda: maybe_bias[(4,)](x, bias, 100, 64, HAS_BIAS=True), 2)
    assert list(last.params[:2]) == [x.data_ptr(), bias.data_ptr()]
    assert runs.count == 0  # the second time round, none went through JITFunction.run


def test_launch_options_num_warps_and_num_stages(runs):
    x, y, out = tensors()
    for _ in range(3):
        runs.count = 0
        assert launched(lambda: axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64, num_warps=8)).block[0] == 256
        assert launched(lambda: axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64)).block[0] == 128
        assert launched(lambda: axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64, num_warps=2, num_stages=2)).block[0] == 64
    assert runs.count == 0


def test_other_launch_options_take_the_fast_path_too(runs):
    """A launch option beyond the autotuner's four (``enable_fp_fusion``, a backend's own such as
    ``overlap_dots``) is taken by the binder once a launch has passed it: each value its own
    specialization, the general path not visited again (it took 40 us a launch, against 1).  An
    unhashable value and an unknown keyword still get the general path's answers."""
    x, y, out = tensors()
    for _ in range(3):
        runs.count = 0
        plain = launched(lambda: axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64, enable_fp_fusion=False))
        assert launched(lambda: axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64, enable_fp_fusion=True,
                                           num_warps=2)).block[0] == 64
        launched(lambda: axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64, overlap_dots=False))
        assert launched(lambda: axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64)).block[0] == 128
    assert runs.count == 0 and plain.block[0] == 128
    assert {"enable_fp_fusion", "overlap_dots"} <= set(axpy._direct.options)
    fused = axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64, enable_fp_fusion=True, num_warps=2)
    unfused = axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64, enable_fp_fusion=False)
    assert fused is not unfused and fused.metadata["num_warps"] == 2
    assert runs.count == 0
    with pytest.raises(TypeError, match="unhashable"):
        axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64, enable_fp_fusion=[True])
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64, bogus=1)


@pytest.mark.parametrize("grid, expect", [((5,), (5, 1, 1)), ((5, 2), (5, 2, 1)), ((5, 2, 3), (5, 2, 3)),
                                          (5, (5, 1, 1)), ([5, 2], (5, 2, 1)),
                                          (lambda meta: (tritium.cdiv(1000, meta["BLOCK"]), meta["num_warps"]), (16, 4, 1))])
def test_grids(runs, grid, expect):
    x, y, out = tensors()
    for _ in range(3):
        runs.count = 0
        assert tuple(launched(lambda: axpy[grid](x, y, out, 1000, 1.0, BLOCK=64)).grid) == expect
    assert runs.count == 0
    before = FAKE.count.value
    axpy[(0,)](x, y, out, 1000, 1.0, BLOCK=64)  # an empty grid launches nothing
    assert FAKE.count.value == before


def test_keyword_arguments_and_errors(runs):
    x, y, out = tensors()
    for _ in range(2):
        last = launched(lambda: axpy[(3,)](y_ptr=y, x_ptr=x, out_ptr=out, n=100, alpha=1.0, BLOCK=64), 3)
        assert list(last.params[:3]) == [x.data_ptr(), y.data_ptr(), out.data_ptr()]
    with pytest.raises(TypeError, match="missing 1 required argument: 'alpha'"):
        axpy[(3,)](x, y, out, 100, BLOCK=64)
    with pytest.raises(TypeError, match="takes 6 arguments but 7 were given"):
        axpy[(3,)](x, y, out, 100, 1.0, 64, 5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        axpy[(3,)](x, y, out, 100, 1.0, BLOCK=64, bogus=1)


def test_misaligned_tensor_is_another_specialization():
    x, y, out = tensors()
    xs, = on(0, x[1:])
    aligned = axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64)
    for _ in range(2):
        last = launched(lambda: axpy[(2,)](xs, y, out, 100, 1.0, BLOCK=64), 1)
        assert last.params[0] == xs.data_ptr()
    misaligned = axpy[(2,)](xs, y, out, 100, 1.0, BLOCK=64)
    assert divisible(aligned)[:3] == [True, True, True] and divisible(misaligned)[:3] == [False, True, True]


def test_do_not_specialize(runs):
    x, _, out = tensors()
    for i, n in enumerate((1, 32, 1, 32)):
        last = launched(lambda: copy_dns[(1,)](x, out, n, 64), 3)
        assert last.params[2] & 0xFFFFFFFF == n
        if i == 0:
            runs.count = 0
    assert len(copy_dns.kernel_cache) == 1 and runs.count == 0


def test_device1_tensors_while_device0_current(runs):
    a1 = tensors(1)
    a0 = tensors(0)
    for i in range(6):
        args = a1 if i % 2 else a0
        last = launched(lambda: axpy[(2,)](*args, 100, 1.0, BLOCK=64), 1)
        assert last.device == i % 2 and last.stream == STREAMS[i % 2] and last.params[0] == args[0].data_ptr()
        assert FAKE.current_context_device() == 0
        if i == 1:
            runs.count = 0
    assert runs.count == 0


def test_mixed_devices_are_rejected_before_launching():
    (x0, _, out0), (_, y1, _) = tensors(0), tensors(1)
    axpy[(2,)](*tensors(0), 100, 1.0, BLOCK=64)
    before = FAKE.count.value
    for _ in range(2):
        with pytest.raises(LaunchDeviceError, match="x_ptr on cuda:0.*y_ptr on cuda:1|y_ptr on cuda:1.*x_ptr on cuda:0"):
            axpy[(2,)](x0, y1, out0, 100, 1.0, BLOCK=64)
    assert FAKE.count.value == before


def test_host_tensor_is_refused():
    x, y, out = tensors()
    host = torch.randn(1024)
    axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64)
    with pytest.raises(LaunchDeviceError, match="out_ptr"):
        axpy[(2,)](x, y, host, 100, 1.0, BLOCK=64)


def test_launches_follow_torchs_current_stream():
    """What CUDA-graph capture relies on: the capture stream is torch's current stream."""
    x, y, out = tensors()
    for stream in (0x5000, 0x7777, 0x7777, 0x5000):
        STREAMS[0] = stream
        assert launched(lambda: axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64)).stream == stream
    STREAMS[0] = 0x5000
    assert launched(lambda: axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64, stream=0x4242)).stream == 0x4242


def test_torch_current_device_elsewhere(device0_current):
    x, y, out = tensors(0)
    axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64)
    CURRENT[0] = 1
    device0_current.set_current_device(1)
    last = launched(lambda: axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64))
    assert last.device == 0 and FAKE.current_context_device() == 1


def test_other_threads_launch_with_their_own_slots():
    x, y, out = tensors()
    axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64)
    errors, records = [], []

    def work():
        try:
            plugin.tritium_driver("nvidia").set_current_device(0)
            for _ in range(3):
                records.append(launched(lambda: axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64), 1).params[0])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors and records == [x.data_ptr()] * 3


def test_other_argument_kinds_after_the_pattern_is_set():
    x, y, out = tensors()
    axpy[(2,)](x, y, out, 100, 1.0, BLOCK=64)
    raw = [tritium.reinterpret(t.data_ptr(), tl.float32) for t in (x, y, out)]
    device_pointers.pointer_device = lambda ptr: 0  # the fake does not know these CPU addresses
    last = launched(lambda: axpy[(2,)](*raw, 100, 1.0, BLOCK=64, backend="nvidia"), 3)
    assert list(last.params[:3]) == [x.data_ptr(), y.data_ptr(), out.data_ptr()]
    host = np.zeros(1024, np.float32)

    class OnDevice0:
        __cuda_array_interface__ = {"data": (host.ctypes.data, False), "shape": (1024,), "typestr": "<f4", "version": 3}
        device = 0
    last = launched(lambda: axpy[(2,)](OnDevice0(), y, out, 100, 1.0, BLOCK=64), 2)
    assert last.params[0] == host.ctypes.data and last.params[1] == y.data_ptr()


def test_tensor_descriptor_argument(monkeypatch):
    src, out = on(0, torch.randn(64), torch.empty(64))
    for _ in range(2):
        last = launched(lambda: copy_desc[(1,)](TensorDescriptor.from_tensor(src, [64]), out, BLOCK=64), 1)
        assert last.params[0] == src.data_ptr()
    # from then on the flattened launch takes the companion kernel's generated binder, not the
    # general JITFunction.run (about 100 us of Python, more than a large matmul's GPU time)
    companion = next(iter(copy_desc._descriptor_companions.values()))
    assert companion._direct is not None and companion._direct.cache  # its generated binder, filled

    def general(*args, **kwargs):
        raise AssertionError("the descriptor launch took the general path")

    monkeypatch.setattr(companion, "run", general)
    src2 = on(0, torch.randn(64))[0]
    last = launched(lambda: copy_desc[(1,)](TensorDescriptor.from_tensor(src2, [64]), out, BLOCK=64), 1)
    assert last.params[0] == src2.data_ptr()


def test_descriptor_launches_take_their_own_binder(monkeypatch):
    """After a first launch through the general path, a launch with host descriptors takes the
    function's descriptor binder straight to the companion's direct launcher: neither the
    function's nor the companion's ``run`` is called, and the map comes from the backend's
    mapper, not a hook call per descriptor.  So do launches with an autotuner's options and with
    any other option once one launch has passed it."""
    from tritium.hooks.backend import InstalledBackend
    from tritium.runtime.descriptors import DescriptorBinder
    src, out = on(0, torch.randn(64), torch.empty(64))
    grids = []

    def grid(meta):
        grids.append(type(meta["src_desc"]).__name__)
        return (1,)
    # (the third as an autotuner's Config launches: num_warps, num_ctas, num_stages, maxnreg)
    for _ in range(2):
        for launch in (lambda d: copy_desc[(1,)](d, out, BLOCK=64),
                       lambda d: copy_desc[(1,)](d, out, BLOCK=64, num_warps=4),
                       lambda d: copy_desc[(1,)](d, out, BLOCK=64, num_warps=4, num_ctas=1, num_stages=3, maxnreg=128),
                       lambda d: copy_desc[(1,)](d, out, BLOCK=64, enable_fp_fusion=False, num_warps=4),
                       lambda d: copy_desc[(1,)](d, out, BLOCK=64, overlap_dots=False),
                       lambda d: copy_desc[grid](d, out, BLOCK=64)):
            launched(lambda: launch(TensorDescriptor.from_tensor(src, [64])), 1)
    assert type(copy_desc._direct) is DescriptorBinder
    assert {"num_ctas", "maxnreg", "enable_fp_fusion", "overlap_dots"} <= set(copy_desc._direct.options)
    companion = copy_desc._direct.companion

    def general(*args, **kwargs):
        raise AssertionError("the descriptor launch took the general path")
    with monkeypatch.context() as m:
        m.setattr(copy_desc, "run", general)
        m.setattr(companion, "run", general)
        m.setattr(InstalledBackend, "tensor_descriptor_map", general)
        src2 = on(0, torch.randn(64))[0]
        grids.clear()
        for launch in (lambda d: copy_desc[(1,)](d, out, BLOCK=64),
                       lambda d: copy_desc[(1,)](d, out, BLOCK=64, num_warps=4),
                       lambda d: copy_desc[(1,)](d, out, BLOCK=64, num_warps=4, num_ctas=1, num_stages=3, maxnreg=128),
                       lambda d: copy_desc[(1,)](d, out, BLOCK=64, enable_fp_fusion=False, num_warps=4),
                       lambda d: copy_desc[(1,)](d, out, BLOCK=64, overlap_dots=False),
                       lambda d: copy_desc[grid](d, out, BLOCK=64)):
            last = launched(lambda: launch(TensorDescriptor.from_tensor(src2, [64])), 1)
            assert last.params[0] == src2.data_ptr() and last.device == 0
        assert grids == ["TensorDescriptor"]  # the user's grid sees the descriptor, not its parts
    # memory on the other device: the general path, which launches there and files a binder of its own
    src3, out3 = on(1, torch.randn(64), torch.empty(64))
    CURRENT[0] = 1
    last = launched(lambda: copy_desc[(1,)](TensorDescriptor.from_tensor(src3, [64]), out3, BLOCK=64), 1)
    assert last.params[0] == src3.data_ptr() and last.device == 1
    assert type(copy_desc._direct) is DescriptorBinder and len(copy_desc._descriptor_binders) == 2
    # an argument outside the layout (a plain tensor where a descriptor was) reaches the general
    # path, which reports it at the kernel's source
    with pytest.raises(Exception):
        copy_desc[(1,)](src3, out3, BLOCK=64)
    # an unknown keyword gets the general path's answer
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        copy_desc[(1,)](TensorDescriptor.from_tensor(src3, [64]), out3, BLOCK=64, bogus=1)


def test_queries_switch_to_torch_once_initialised(monkeypatch):
    queries.reset()
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    assert queries.stream_of(0) == 0 and queries.current_device() == 0
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    assert queries.stream_of(1) == STREAMS[1]
    assert queries.NAMESPACE["stream_of"] is torch._C._cuda_getCurrentRawStream


@tritium.jit
def scalar_kinds(out_ptr, a, b, c, d, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), (a + b + c + d).to(tl.float32))


def test_the_c_launcher_writes_every_scalar_kind(runs):
    from tritium_nvidia.runtime import c_launch
    if c_launch.load() is None:
        pytest.skip("no C compiler or Python headers here: launches keep the Python slot writes")
    out = on(0, torch.empty(64))[0]
    big = 2 ** 40 + 3
    launched(lambda: scalar_kinds[(2, 3)](out, -5, big, 0.1, True, BLOCK=64))
    kernel = next(iter(scalar_kinds.kernel_cache.values()))
    assert sorted(kernel.runtime_signature.values()) == sorted(["*fp32", "i32", "i64", "fp32", "i1"]), \
        kernel.runtime_signature
    for _ in range(3):
        last = launched(lambda: scalar_kinds[(2, 3)](out, -5, big, 0.1, True, BLOCK=64), 5)
    go = next(iter(scalar_kinds._direct.cache.values()))[0]
    # the direct launcher is C's: checks, slot writes and the launch in one call
    assert type(go).__name__ == "Direct" and "c_launch.Direct" in go.source
    assert tuple(last.grid) == (2, 3, 1) and last.stream == STREAMS[0]
    assert last.params[0] == out.data_ptr()
    assert last.params[1] & 0xFFFFFFFF == (-5) & 0xFFFFFFFF
    assert last.params[2] == big
    assert f32(last.params[3]) == np.float32(0.1)
    assert last.params[4] & 0xFFFFFFFF == 1
    # a grid the C function does not take (a list) and an empty one: the Python statements run
    # (the same specialization: 1 would be another, a constant)
    assert tuple(launched(lambda: scalar_kinds[[4]](out, 2, big, 0.5, False, BLOCK=64), 5).grid) == (4, 1, 1)
    before = FAKE.count.value
    scalar_kinds[(0, 3)](out, 2, big, 0.5, False, BLOCK=64)
    assert FAKE.count.value == before


@tritium.jit
def copy_device_desc(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    desc = tl.make_tensor_descriptor(src_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
    tl.store(out_ptr + tl.arange(0, BLOCK), desc.load([0]))


@pytest.mark.filterwarnings("ignore:kernel 'copy_device_desc'.*template not encoded")
def test_kernel_with_global_scratch_takes_the_fast_path(runs):
    """A kernel that builds its tensor maps on the device takes a scratch buffer per launch: after
    the first launch its launches still take the direct path (no ``JITFunction.run``, which cost
    over a millisecond a launch when it regenerated the binder each time), each with a fresh
    buffer from the allocator in force, its address the kernel's last parameter."""
    buffers = []

    def alloc(size, align, stream):
        buffers.append((size, align, stream, on(0, torch.empty(size, dtype=torch.int8))[0]))
        return buffers[-1][3]
    src, out = on(0, torch.randn(64), torch.empty(64))
    tritium.set_allocator(alloc)
    try:
        for i in range(4):
            last = launched(lambda: copy_device_desc[(3,)](src, out, 64, BLOCK=64, num_warps=4), 4)
            if i == 0:
                runs.count = 0
            size, align, stream, buf = buffers[-1]
            assert (size, align, stream) == (3 * 128, 128, STREAMS[0])  # 128 bytes a map, a program
            assert list(last.params[:2]) == [src.data_ptr(), out.data_ptr()]
            assert last.params[2] & 0xFFFFFFFF == 64 and last.params[3] == buf.data_ptr()
    finally:
        tritium.set_allocator(None)
    kernel = next(iter(copy_device_desc.kernel_cache.values()))
    assert kernel.metadata["global_scratch_size"] == 128 and "tensormap.replace" in kernel.asm["ptx"]
    assert runs.count == 0 and copy_device_desc._direct is not None and len(buffers) == 4


@tritium.jit
def copy_general(x_ptr, out_ptr, n, BLOCK: tl.constexpr):  # launched by the case below only
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_a_launcher_without_direct_form_keeps_the_general_path(runs, monkeypatch):
    """A launcher the backend has no direct form of: the general path launches it, and the binder
    is not generated again on each launch (it was, at about 1.4 ms a launch)."""
    drv = plugin.tritium_driver("nvidia")
    monkeypatch.setattr(type(drv), "make_direct_launcher", lambda self, *a: None)
    generated = []
    real = direct_binder.DirectBinder._generate
    monkeypatch.setattr(direct_binder.DirectBinder, "_generate", lambda self: generated.append(1) or real(self))
    x, y, out = tensors()
    for _ in range(4):
        last = launched(lambda: copy_general[(8,)](x, out, 1000, BLOCK=128), 3)
        assert list(last.params[:2]) == [x.data_ptr(), out.data_ptr()]
    kernel = next(iter(copy_general.kernel_cache.values()))
    assert kernel.no_direct == {0} and copy_general._direct is None
    assert len(generated) == 1


def _copy_body(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


copy_tuned = tritium.autotune(configs=[tritium.Config({"BLOCK": 128}, num_warps=2)], key=["n"])(tritium.jit(_copy_body))
copy_heur = tritium.heuristics({"BLOCK": lambda a: 256})(tritium.jit(_copy_body))
copy_opts = tritium.jit(_copy_body)


def test_autotuned_heuristics_and_config_options_take_the_fast_path(monkeypatch):
    """An autotuner's launch passes its config's options (``num_warps``, ``num_stages``,
    ``num_ctas``, ``maxnreg``); it and a ``@heuristics`` launch take the ``@jit`` function's
    launch fast path, not ``JITFunction.run`` each time (about 70 us of Python a launch)."""
    x, _, out = tensors()
    cases = [(copy_tuned.fn, lambda: copy_tuned[(8,)](x, out, 1000), 128, 64),
             (copy_heur.fn, lambda: copy_heur[lambda m: (4,)](x, out, 1000), 256, 128),
             (copy_opts, lambda: copy_opts[(8,)](x, out, 1000, BLOCK=128, num_ctas=1, maxnreg=None,
                                                 num_warps=4, num_stages=2), 128, 128)]
    for jit_fn, launch, block, threads in cases:
        for _ in range(2):
            last = launched(launch, 3)
        calls = []
        real = type(jit_fn).run
        monkeypatch.setattr(jit_fn, "run", lambda *a, **k: calls.append(1) or real(jit_fn, *a, **k))
        for _ in range(3):
            last = launched(launch, 3)
            assert list(last.params[:2]) == [x.data_ptr(), out.data_ptr()]
            assert last.params[2] & 0xFFFFFFFF == 1000 and last.block[0] == threads
        assert calls == [], f"{jit_fn.__name__}: the launch took JITFunction.run"
        kernel = next(iter(jit_fn.kernel_cache.values()))
        assert kernel.metadata["num_warps"] * 32 == threads
        assert f"end = {block} : i32}} : tensor<{block}xi32>" in kernel.asm["ttir"]  # the config's / rule's BLOCK


def _tile_dot_body(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    tile = r[:, None] * BLOCK + r[None, :]
    acc = tl.dot(tl.load(a_ptr + tile), tl.load(b_ptr + tile))
    tl.store(c_ptr + tl.program_id(0) * BLOCK * BLOCK + tile, acc)


tile_dot = tritium.jit(_tile_dot_body)
tile_dot_py = tritium.jit(_tile_dot_body)
tile_dot_off = tritium.jit(_tile_dot_body)
SLOTS = 132 * 2  # the fake's SMs x blocks an SM: a wave

#: grid -> the cluster the launch had: an even x and more than a wave pair programs 2i, 2i+1
PAIRING = [((SLOTS + 2,), (2, 1, 1)), ((SLOTS + 1,), (1, 1, 1)), ((SLOTS,), (1, 1, 1)), ((8,), (1, 1, 1)),
           ((2, SLOTS), (2, 1, 1)), ((1, SLOTS + 2), (1, 1, 1)), ((4, 2, SLOTS), (2, 1, 1))]


def _dot_operands():
    a, b = on(0, torch.randn(64 * 64).half(), torch.randn(64 * 64).half())
    return a, b, on(0, torch.empty(64 * 64))[0]


def test_kernels_with_a_dot_pair_neighbouring_programs_in_long_grids(runs):
    """An sm_90 kernel with a dot launches grids of an even x size and more programs than the
    device's block slots as clusters of two CTAs (``cuLaunchKernelEx``): on the first launch
    through the Python launcher, then through the fast path (C's where it is built)."""
    a, b, c = _dot_operands()
    first = launched(lambda: tile_dot[(SLOTS + 2,)](a, b, c, BLOCK=64), 3)
    assert tuple(first.cluster) == (2, 1, 1) and tuple(first.grid) == (SLOTS + 2, 1, 1)
    kernel = next(iter(tile_dot.kernel_cache.values()))
    assert kernel.metadata.get("pair_programs") is True and "wgmma.mma_async" in kernel.asm["ptx"]
    runs.count = 0
    for grid, cluster in PAIRING:
        last = launched(lambda: tile_dot[grid](a, b, c, BLOCK=64), 3)
        assert tuple(last.cluster) == cluster, (grid, tuple(last.cluster))
        assert tuple(last.grid) == (tuple(grid) + (1, 1))[:3] and last.block[0] == 128
        assert list(last.params[:3]) == [a.data_ptr(), b.data_ptr(), c.data_ptr()]
    assert runs.count == 0, "a launch left the fast path"
    from tritium_nvidia.runtime import c_launch
    if c_launch.load() is not None:  # the launches above were C's
        assert type(next(iter(tile_dot._direct.cache.values()))[0]).__name__ == "Direct"


def test_pairing_on_the_python_launch_path_and_off(monkeypatch):
    """The same choice where the launches stay in Python (``TRITIUM_CUDA_LAUNCH=bindings``); with
    ``knobs.nvidia.pair_programs`` off every launch is plain; a kernel without a dot never pairs."""
    from tritium import knobs
    a, b, c = _dot_operands()
    monkeypatch.setattr(knobs.nvidia, "launch_impl", "bindings")
    for grid, cluster in PAIRING:
        assert tuple(launched(lambda: tile_dot_py[grid](a, b, c, BLOCK=64)).cluster) == cluster, grid
    monkeypatch.setattr(knobs.nvidia, "launch_impl", None)
    monkeypatch.setattr(knobs.nvidia, "pair_programs", False)
    for grid, _ in PAIRING:
        assert tuple(launched(lambda: tile_dot_off[grid](a, b, c, BLOCK=64)).cluster) == (1, 1, 1), grid
    x, y, out = tensors()
    monkeypatch.setattr(knobs.nvidia, "pair_programs", True)
    assert tuple(launched(lambda: axpy[(SLOTS + 2,)](x, y, out, 1000, 2.5, BLOCK=128)).cluster) == (1, 1, 1)
    assert "pair_programs" not in next(iter(axpy.kernel_cache.values())).metadata
