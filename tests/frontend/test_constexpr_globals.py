"""Which globals a compiled kernel may read, and constexpr parameters in ``do_not_specialize``:
Triton 3.6's rules and wording (its test_compile_errors.py).  A plain Python global (``N = 42``) is
not a compile-time constant there: only ``N = tl.constexpr(42)`` is, unless
``TRITON_ALLOW_NON_CONSTEXPR_GLOBALS`` is set; the interpreter runs the kernel as Python and reads
any global."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium import knobs
from tritium.backends.compiler import GPUTarget
from tritium.compiler import ASTSource
from tritium.frontend.errors import CompilationError

PLAIN = 42
ANNOTATED: tl.constexpr = 42
CONSTEXPR = tl.constexpr(42)
PLAIN_TUPLE = (1, 2)
TARGET = GPUTarget("cuda", 90, 32)


@triton.jit
def reads_plain(out):
    tl.store(out, PLAIN)


@triton.jit
def reads_annotated(out):
    tl.store(out, ANNOTATED)


@triton.jit
def reads_tuple(out):
    tl.store(out, PLAIN_TUPLE[1])


@triton.jit
def reads_constexpr(out):
    tl.store(out, CONSTEXPR)


def _compile(fn):
    return triton.compile(ASTSource(fn, {"out": "*i32"}, constexprs={}), target=TARGET)


@pytest.mark.parametrize("fn, name", [(reads_plain, "PLAIN"), (reads_annotated, "ANNOTATED"),
                                      (reads_tuple, "PLAIN_TUPLE")])
def test_plain_global_is_rejected(fn, name):
    with pytest.raises(CompilationError) as e:
        _compile(fn)
    assert f"Cannot access global variable {name} from within @jit'ed function" in str(e.value)
    assert "tl.store(out" in str(e.value)  # points at the kernel's line


def test_constexpr_global_compiles():
    assert "42" in _compile(reads_constexpr).asm["ttir"]


def test_knob_allows_plain_globals(monkeypatch):
    monkeypatch.setenv("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS", "1")
    assert knobs.compilation.allow_non_constexpr_globals is True
    assert "42" in _compile(reads_plain).asm["ttir"]


def test_interpreter_reads_plain_globals():
    out = np.full(1, -1, dtype=np.int32)
    with knobs.runtime.scope():
        knobs.runtime.backend = "interpreter"
        reads_plain[(1,)](out)
    assert out[0] == 42


@triton.jit(do_not_specialize=["N"])
def constexpr_not_specialized(N: tl.constexpr):
    pass


def test_constexpr_in_do_not_specialize():
    with pytest.raises(CompilationError, match="N marked as constexpr and listed in do_not_specialize") as e:
        triton.compile(ASTSource(constexpr_not_specialized, {}, constexprs={"N": 5}), target=TARGET)
    assert "Remove constexpr designation" in str(e.value)


def test_cache_entry_under_knob_does_not_answer_without_it(monkeypatch):
    monkeypatch.setenv("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS", "1")
    _compile(reads_plain)  # cached under the knob
    monkeypatch.delenv("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS")
    with pytest.raises(CompilationError, match="Cannot access global variable PLAIN"):
        _compile(reads_plain)
