"""A function that returns a value on one path and falls off its end on another returns poison on
that path (Triton 3.6's ``test_poison_return``), and a number a function returns is a scalar
tensor, not a compile-time constant (Triton's ``visit_Return`` decays it)."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl


@triton.jit
def _return_poison(x):
    a = False
    if a:
        return x


@triton.jit
def poison_kernel(Out):
    tl.store(Out, _return_poison(0))


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_the_path_without_a_return_yields_poison(target):
    backend = "nvidia" if target.startswith("cuda") else "amd"
    k = poison_kernel.warmup(np.zeros((), np.int32), grid=(1,), backend=backend, target=target)
    assert "ub.poison" in k.asm["ttir"], k.asm["ttir"]
    if backend == "nvidia":  # AMD's optimiser drops a store of poison, as Triton's test notes
        assert "poison" in k.asm["llir"]


def test_a_fallthrough_function_runs_on_the_interpreter():
    out = np.full((), -1, np.int32)
    poison_kernel[(1,)](out)  # the value is unspecified; the launch must work


@triton.jit
def _one():
    return 1


@triton.jit
def returned_number_kernel(Out):
    y = tl.full((), 127, tl.int8) + _one()
    tl.static_assert(y.dtype == tl.int32)
    tl.store(Out, y)


def test_a_returned_number_is_an_int32_scalar_tensor():
    out = np.zeros((), np.int32)
    returned_number_kernel[(1,)](out)
    assert out == 128
