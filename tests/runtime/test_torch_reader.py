"""torch's tensor fields read in C++ (``runtime/torch_reader.py``): the same address, dtype and
device as torch's own calls, for the types it takes; everything else declined (None), so the C
binder asks through Python.  Then the C binder with the reader in use finds exactly what the
generated Python key filed, with real CPU tensors."""
import pytest

torch = pytest.importorskip("torch")

import tritium  # noqa: E402
import tritium.language as tl  # noqa: E402
from tritium.runtime import c_binder, torch_reader  # noqa: E402
from tritium.runtime.direct_binder import DirectBinder  # noqa: E402

if c_binder.load() is None or not torch_reader.wait(600):
    pytest.skip("no C/C++ compiler, Python headers or torch headers here: tensors are read through Python",
                allow_module_level=True)

reader = torch_reader.module()

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.uint8, torch.int16,
          torch.int32, torch.int64, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2, torch.complex64]


def python_fields(t):
    return t.data_ptr(), t.dtype, t.get_device()


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_same_fields_as_torchs_calls(dtype):
    base = torch.zeros(64, dtype=dtype)
    for t in (base, base[3:], base.view(8, 8).t(), base[::2], torch.empty(0, dtype=dtype)):
        got = reader.read(t)
        assert got == python_fields(t)
        assert got[1] is t.dtype


def test_parameters_are_read_and_other_types_declined():
    t = torch.randn(10)
    assert reader.read(torch.nn.Parameter(t)) == python_fields(t)

    class Sub(torch.Tensor):
        pass

    for v in (t.as_subclass(Sub), 5, None, t.numpy(), "x"):
        assert reader.read(v) is None


def test_declined_under_a_torch_function_mode():
    t = torch.randn(4)

    class Seen(torch.overrides.TorchFunctionMode):
        calls = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            Seen.calls += 1
            return func(*args, **(kwargs or {}))

    with Seen():
        assert reader.read(t) is None
        t.data_ptr()
    assert Seen.calls == 1 and reader.read(t) == python_fields(t)


def test_a_tensor_without_storage_reads_as_torch_says():
    m = torch.empty(3, device="meta")
    assert reader.read(m) == python_fields(m)


@tritium.jit(do_not_specialize_on_alignment=["y_ptr"])
def kern(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass


class Recorder:
    def __init__(self, result):
        self.calls, self.result = [], result

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return self.result


def test_the_binder_with_the_reader_finds_what_python_filed():
    b = DirectBinder(kern, ("tensor", "tensor", "int", "constexpr"))
    fallback = Recorder("fallback")
    c = b.in_c(fallback)
    x, y = torch.randn(64), torch.randn(64, dtype=torch.float16)
    go = Recorder(None)
    b.cache[b.key(x, y, 64, 32)] = (go, "kernel")
    assert c((2,), x, y, 64, 32) == "kernel" and not fallback.calls
    assert go.calls == [(((2,), x.data_ptr(), y.data_ptr(), 64), {})]
    # a misaligned x, another dtype, a parameter (read) and a subclass (through Python)
    assert c((2,), x[1:], y, 64, 32) == "fallback"
    assert c((2,), x.half(), y, 64, 32) == "fallback"
    assert c((2,), torch.nn.Parameter(x), y, 64, 32) == "kernel"

    class Sub(torch.Tensor):
        pass

    assert c((2,), x.as_subclass(Sub), y, 64, 32) == "kernel"
    assert len(fallback.calls) == 2 and len(go.calls) == 3
