"""The direct binder's C launch step (``runtime/c_binder.py``) against the generated Python one:
the C ``Binder`` must find exactly the launches the Python key files, hand the direct launcher the
same values, and give everything else to its fallback with the call's own arguments.  No GPU and
no torch: tensors are stood in for by objects with ``data_ptr()``, ``dtype`` and ``get_device()``."""
import pytest

import tritium
import tritium.language as tl
from tritium.runtime import c_binder
from tritium.runtime.direct_binder import DirectBinder

if c_binder.load() is None:
    pytest.skip("no C compiler or Python headers here: launches keep the generated Python binder",
                allow_module_level=True)


class Tensor:
    def __init__(self, addr, dtype="fp32", device=0):
        self.addr, self.dtype, self.device = addr, dtype, device

    def data_ptr(self):
        return self.addr

    def get_device(self):
        return self.device


@tritium.jit(do_not_specialize=["m"], do_not_specialize_on_alignment=["k", "y_ptr"])
def kern(x_ptr, y_ptr, n, m, k, alpha, flag, nothing, BLOCK: tl.constexpr, MODE: tl.constexpr = "a"):
    pass


PATTERN = ("tensor", "tensor", "int", "int", "int", "float", "bool", "none", "constexpr", "constexpr")


class Recorder:
    def __init__(self, result="fallback"):
        self.calls, self.result = [], result

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return self.result


def make(options=()):
    b = DirectBinder(kern, PATTERN, options)
    fallback = Recorder()
    return b, b.in_c(fallback), fallback


def args(n=16, m=5, k=1, x=0x1000, y=0x2008, alpha=0.5, flag=True, block=64, **extra):
    return [Tensor(x), Tensor(y), n, m, k, alpha, flag, None, block], extra


INTS = [0, 1, 2, 16, 17, -1, -16, 2 ** 31 - 1, 2 ** 31, -2 ** 31, -2 ** 31 - 1, 2 ** 40, 2 ** 63 - 1]


@pytest.mark.parametrize("n", INTS)
@pytest.mark.parametrize("x", [0x1000, 0x1004, 0])
def test_the_c_key_finds_what_the_python_key_filed(n, x):
    b, c, fallback = make()
    a, _ = args(n=n, x=x, k=n, m=n)
    go = Recorder(None)
    b.cache[b.key(*a, "a")] = (go, "kernel")
    assert c((3,), *a) == "kernel" and not fallback.calls
    assert go.calls == [(((3,), x, 0x2008, n, n, n, 0.5, True), {})]


@pytest.mark.parametrize("change", [
    dict(n=17), dict(n=1), dict(n=2 ** 31), dict(k=2), dict(x=0x1008), dict(alpha=1), dict(flag=1),
    dict(block=128), dict(block=64.0)])
def test_another_specialization_goes_to_the_fallback(change):
    b, c, fallback = make()
    a, _ = args()
    b.cache[b.key(*a, "a")] = (Recorder(None), "kernel")
    other, _ = args(**change)
    assert c((1,), *other) == "fallback"
    assert fallback.calls == [(((1,), *other), {})]


def test_keys_told_apart_only_where_python_tells_them_apart():
    # do_not_specialize (m) and do_not_specialize_on_alignment (y_ptr; k: only "equal to one")
    b, c, fallback = make()
    a, _ = args(m=16, y=0x2000, k=16)
    go = Recorder(None)
    b.cache[b.key(*a, "a")] = (go, "kernel")
    for same in (dict(m=17, y=0x2004, k=16), dict(m=-3, y=0x2001, k=32)):
        other, _ = args(**same)
        assert c((1,), *other) == "kernel"
    other, _ = args(m=16, y=0x2000, k=1)
    assert c((1,), *other) == "fallback"
    assert len(go.calls) == 2 and len(fallback.calls) == 1


def test_keywords_defaults_and_options():
    b, c, fallback = make(options=("num_warps",))
    a, _ = args()
    go = Recorder(None)
    b.cache[b.key(*a, "a", 8)] = (go, "kernel")
    b.cache[b.key(*a, "b", 8)] = (go, "kernel b")
    names = ["x_ptr", "y_ptr", "n", "m", "k", "alpha", "flag", "nothing", "BLOCK"]
    assert c((1,), *a[:4], **dict(zip(names[4:], a[4:])), num_warps=8) == "kernel"
    assert c((1,), *a, MODE="b", num_warps=8) == "kernel b"
    assert len(go.calls) == 2 and not fallback.calls
    # no option given: another key; an unknown keyword, a repeated one, a missing argument,
    # one too many: the fallback, with the call's own arguments
    calls = [((1,), *a), ((1,), *a, "a", "extra")]
    for call in calls:
        assert c(*call) == "fallback"
    assert c((1,), *a, num_warps=8, stream=3) == "fallback"
    assert c((1,), *a, n=3, num_warps=8) == "fallback"
    assert c((1,), *a[:-1], num_warps=8) == "fallback"
    assert [x[0] for x in fallback.calls[:2]] == calls
    assert fallback.calls[2] == (((1,), *a), {"num_warps": 8, "stream": 3})
    assert len(fallback.calls) == 5


def test_a_callable_grid_and_errors():
    b, c, fallback = make()
    a, _ = args()
    go = Recorder(None)
    b.cache[b.key(*a, "a")] = (go, "kernel")
    seen = []

    def grid(meta):
        seen.append(meta)
        return (meta["n"] // 4,)
    b.cache[b.key(*a, "a")] = (go, type("K", (), {"metadata": {}})())
    c(grid, *a)
    assert go.calls[-1][0][0] == (4, 1, 1) and seen[0]["BLOCK"] == 64 and seen[0]["num_warps"] == 4
    # an error from the launch itself propagates; a tensor that cannot be read goes to the fallback

    def failing(*_):
        raise RuntimeError("launch failed")
    b.cache[b.key(*a, "a")] = (failing, "kernel")
    with pytest.raises(RuntimeError, match="launch failed"):
        c((1,), *a)

    class Broken(Tensor):
        def data_ptr(self):
            raise ValueError("no storage")
    bad = [Broken(0x1000)] + a[1:]
    assert c((1,), *bad) == "fallback" and not fallback.calls[0][1]


def test_the_backend_variable_is_part_of_the_key(monkeypatch):
    b, c, fallback = make()
    a, _ = args()
    b.cache[b.key(*a, "a")] = (Recorder(None), "kernel")
    monkeypatch.setenv("TRITIUM_BACKEND", "elsewhere")
    assert c((1,), *a) == "fallback"
    monkeypatch.delenv("TRITIUM_BACKEND")
    assert c((1,), *a) == "kernel"


def test_no_references_leak_on_either_path():
    import sys
    b, c, fallback = make()
    dtype = object()
    a, _ = args(n=16 * 1000003, m=3 * 1000003, alpha=float(1000003))
    a[0].dtype = a[1].dtype = dtype
    kernel, go, grid = object(), Recorder(None), (2,)
    b.cache[b.key(*a, "a")] = (go, kernel)
    miss = list(a)
    miss[2] = 17 * 1000003
    # objects no one else holds (small ints and interned strings move with the interpreter's use)
    watched = [kernel, go, grid, dtype, a[0], a[1], a[2], a[3], a[5], miss[2]]
    for _ in range(10):
        c(grid, *a), c(grid, *miss)
    go.calls.clear()
    fallback.calls.clear()
    before = [sys.getrefcount(o) for o in watched]
    for _ in range(1000):
        c(grid, *a)
        c(grid, *miss)
    go.calls.clear()
    fallback.calls.clear()
    assert [sys.getrefcount(o) for o in watched] == before
