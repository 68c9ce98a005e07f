"""Compile errors carry both places: the user's ``file:line:col`` and, as Triton 3.6 writes it,
``at L:C:`` counted from the function's ``def`` line (1) and its dedented text (column 0); an
error in a called @jit function is raised again at every call, each level's ``__cause__`` the
level below."""
import inspect
import pickle

import pytest

import tritium
import tritium.language as tl
from tritium import CompilationError
from tritium.compiler.errors import CompileTimeAssertionFailure


def _places(fn, text):
    """(file line, 1-based file column, line from def, 0-based column in the dedented text) of
    the first occurrence of ``text`` in ``fn``'s source, found from the source alone."""
    lines, first = inspect.getsourcelines(fn.fn)
    d = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("def "))
    indent = len(lines[d]) - len(lines[d].lstrip())
    for i, ln in enumerate(lines[d:], start=d):
        if text in ln:
            col = ln.index(text)
            return first + i, col + 1, i - d + 1, col - indent
    raise AssertionError(text)


def _compile(fn, sig=None, constexprs=None):
    return tritium.compile(fn, signature=sig or {}, constexprs=constexprs or {}, target="interpreter")


@tritium.jit
def _adds_a_string():
    x = 1
    0 + "a"


@tritium.jit
def _shifts_a_float(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, 1.0 << offs)


def test_first_line_has_file_position_and_def_relative_position():
    with pytest.raises(CompilationError) as info:
        _compile(_adds_a_string)
    msg = str(info.value)
    line, col, rel_line, rel_col = _places(_adds_a_string, '0 + "a"')
    assert (rel_line, rel_col) == (3, 4)
    head, quoted, caret = msg.splitlines()[:3]
    assert head.startswith(f"{__file__}:{line}:{col}: in _adds_a_string at {rel_line}:{rel_col}: ")
    assert "unsupported operand type(s) for +: 'int' and 'str'" in head
    assert quoted.strip() == '0 + "a"' and caret.strip() == "^"
    assert info.value.position == (rel_line, rel_col) and info.value.lineno == line and info.value.calls == []


def test_position_of_an_expression_inside_a_statement():
    with pytest.raises(CompilationError) as info:
        _compile(_shifts_a_float, {"x_ptr": "*i32"})
    line, col, rel_line, rel_col = _places(_shifts_a_float, "1.0 << offs")
    assert f"{__file__}:{line}:{col}: in _shifts_a_float at {rel_line}:{rel_col}: " in str(info.value)
    quoted, caret = str(info.value).splitlines()[1:3]
    assert quoted.index("1.0 << offs") == caret.index("^")


class _Holder:
    @tritium.jit
    def indented(x_ptr):  # defined inside a class: columns are counted in the dedented text
        offs = tl.arange(0, 16)
        tl.store(x_ptr + offs, tl.arange(0, 100))


def test_indented_definition_counts_columns_from_the_def():
    with pytest.raises(CompilationError) as info:
        _compile(_Holder.indented, {"x_ptr": "*i32"})
    line, col, rel_line, rel_col = _places(_Holder.indented, "tl.arange(0, 100)")
    assert (rel_line, rel_col) == (3, 27) and col == rel_col + 4 + 1
    assert f":{line}:{col}: in indented at {rel_line}:{rel_col}: " in str(info.value)


@tritium.jit
def _leaf(x):
    y = x * 2
    tl.static_assert(x.dtype == tl.float32, "_leaf wants fp32")
    return y


@tritium.jit
def _middle(x):
    return _leaf(x) + 1


@tritium.jit
def _calls_twice_down(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, _middle(tl.load(x_ptr + offs)))


def test_nested_error_chain():
    with pytest.raises(CompileTimeAssertionFailure) as info:
        _compile(_calls_twice_down, {"x_ptr": "*i32"})
    outer = info.value
    middle = outer.__cause__
    leaf = middle.__cause__
    assert isinstance(middle, CompileTimeAssertionFailure) and isinstance(leaf, CompileTimeAssertionFailure)
    assert leaf.__cause__ is None  # a static_assert is the whole story
    l_line, l_col, l_rel, l_rcol = _places(_leaf, "tl.static_assert")
    m_line, m_col, m_rel, m_rcol = _places(_middle, "_leaf(x)")
    k_line, k_col, k_rel, k_rcol = _places(_calls_twice_down, "_middle(")
    head = f"{__file__}:{l_line}:{l_col}: in _leaf at {l_rel}:{l_rcol}: static_assert failed: _leaf wants fp32"
    m_call = f"  called from {__file__}:{m_line}:{m_col} in _middle at {m_rel}:{m_rcol}:"
    k_call = f"  called from {__file__}:{k_line}:{k_col} in _calls_twice_down at {k_rel}:{k_rcol}:"
    assert str(leaf).splitlines()[0] == head and "called from" not in str(leaf)
    assert str(middle).splitlines()[0] == head and str(middle).splitlines()[3] == m_call
    assert m_call not in str(leaf) and k_call not in str(middle)
    lines = str(outer).splitlines()
    assert lines[0] == head and lines[3] == m_call and lines[6] == k_call
    assert lines[7].strip() == "tl.store(x_ptr + offs, _middle(tl.load(x_ptr + offs)))"
    assert lines[7].index("_middle(") == lines[8].index("^")
    # every level's traceback is free of the code generator's frames
    assert middle.__traceback__ is None and leaf.__traceback__ is None
    # the kind, the places and the chain text survive pickling (errors from compile workers)
    again = pickle.loads(pickle.dumps(outer))
    assert type(again) is CompileTimeAssertionFailure and str(again) == str(outer)
    assert again.position == (l_rel, l_rcol) and len(again.calls) == 2


@tritium.jit
def _returns_by_branch(n):
    if n == 0:
        return tl.arange(0, 4)
    else:
        return tl.arange(0, 8)


@tritium.jit
def _calls_branchy(n):
    _returns_by_branch(n)


def test_inconsistent_returns_point_at_the_else_return():
    with pytest.raises(CompilationError) as info:
        _compile(_calls_branchy, {"n": "i32"})
    inner = info.value.__cause__
    line, col, rel, rcol = _places(_returns_by_branch, "return tl.arange(0, 8)")
    assert (rel, rcol) == (5, 8)
    assert str(inner).startswith(f"{__file__}:{line}:{col}: in _returns_by_branch at 5:8: Inconsistent return types")
    assert "in _calls_branchy at 2:4:" in str(info.value)


@tritium.jit
def _not_of_tuple():
    not (0, 0)


@tritium.jit
def _not_of_constexpr(x_ptr, FLAG: tl.constexpr):
    offs = tl.arange(0, 16)
    if not FLAG:
        tl.store(x_ptr + offs, offs)


def test_not_of_a_tuple_is_rejected_at_its_place():
    with pytest.raises(CompilationError, match="`not` of a tuple is not supported") as info:
        _compile(_not_of_tuple)
    assert info.value.__cause__ is None
    assert "in _not_of_tuple at 2:4: " in str(info.value)


def test_not_of_a_constexpr_still_folds():
    np = pytest.importorskip("numpy")
    for flag, want in ((False, np.arange(16, dtype=np.int32)), (True, np.full(16, -7, np.int32))):
        x = np.full(16, -7, np.int32)
        _not_of_constexpr[(1,)](x, FLAG=flag, backend="interpreter")
        np.testing.assert_array_equal(x, want)


# --- tl.range(..., disable_licm=True) / tl.condition(c, disable_licm=True) -------------------------

@tritium.jit
def _licm_nest(x_ptr, z_ptr, n, m, OUTER_OFF: tl.constexpr, INNER_OFF: tl.constexpr):
    r = tl.arange(0, 16)
    acc = tl.zeros((16,), dtype=tl.float32)
    for i in tl.range(0, n, disable_licm=OUTER_OFF):
        for k in tl.range(0, m, disable_licm=INNER_OFF):
            ramp = tl.exp(r.to(tl.float32) * 0.25)  # invariant to both loops
            acc += ramp * tl.load(x_ptr + (i * m + k) * 16 + r) * (i + 1).to(tl.float32)
    tl.store(z_ptr + r, acc)


@tritium.jit
def _licm_while(x_ptr, z_ptr, n, OFF: tl.constexpr):
    r = tl.arange(0, 16)
    acc = tl.zeros((16,), dtype=tl.float32)
    i = 0
    while tl.condition(i < n, disable_licm=OFF):
        acc += tl.load(x_ptr + i * 16 + r) * tl.sqrt(r.to(tl.float32) + 2.0)
        i += 1
    tl.store(z_ptr + r, acc)


_NEST_SIG = {"x_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32", "m": "i32", "OUTER_OFF": "constexpr",
             "INNER_OFF": "constexpr"}
_WHILE_SIG = {"x_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32", "OFF": "constexpr"}


def _ttir(fn, sig, target="interpreter", **constexprs):
    from tritium.ttir.ir import parse_module
    k = tritium.compile(fn, signature=sig, constexprs=constexprs, target=target, stage="ttir")
    return k.asm["ttir"], parse_module(k.asm["ttir"])  # the annotation reads back from the text


def _loops_around(module, op_name):
    """The loop ops enclosing the first ``op_name``, innermost first."""
    op = next(o for o in module.walk() if o.name == op_name)
    out, p = [], op.parent_op()
    while p is not None:
        if p.name in ("scf.for", "scf.while"):
            out.append(p)
        p = p.parent_op()
    return out


@pytest.mark.parametrize("outer_off, inner_off, loops_kept", [
    (False, False, 0),  # hoisted out of both loops
    (True, False, 1),   # out of the inner loop only, into the outer one's body
    (False, True, 2),   # stays in the inner loop (nothing leaves a loop marked disable_licm)
    (True, True, 2),
])
def test_disable_licm_keeps_invariant_code_in_its_loop(outer_off, inner_off, loops_kept):
    from tritium.ttir.mlir_ops import licm_disabled
    text, module = _ttir(_licm_nest, _NEST_SIG, OUTER_OFF=outer_off, INNER_OFF=inner_off)
    loops = _loops_around(module, "math.exp")
    assert len(loops) == loops_kept
    fors = [o for o in module.walk() if o.name == "scf.for"]  # outer first
    assert [licm_disabled(o) for o in fors] == [outer_off, inner_off]
    marked = text.count("{llvm.loop_annotation = #llvm.loop_annotation<licm = <disable = true>>}")
    assert marked == outer_off + inner_off


def test_condition_disable_licm_on_while():
    from tritium.ttir.mlir_ops import licm_disabled
    for off in (True, False):
        _, module = _ttir(_licm_while, _WHILE_SIG, OFF=off)
        (loop,) = [o for o in module.walk() if o.name == "scf.while"]
        assert licm_disabled(loop) == off


@pytest.mark.parametrize("outer_off, inner_off", [(True, False), (False, True), (True, True), (False, False)])
def test_disable_licm_results(outer_off, inner_off):
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng()
    n, m = 3, 4
    x = rng.uniform(-1, 1, n * m * 16).astype(np.float32)
    z = np.full(16, np.nan, np.float32)  # poisoned
    _licm_nest[(1,)](x, z, n, m, OUTER_OFF=outer_off, INNER_OFF=inner_off, backend="interpreter")
    xs = x.reshape(n, m, 16).astype(np.float64)
    ramp = np.exp(np.arange(16) * 0.25)
    want = sum((i + 1) * ramp * xs[i, k] for i in range(n) for k in range(m))
    np.testing.assert_allclose(z, want, rtol=1e-5, atol=1e-5)
    for n_trips in (5, 0):
        x = rng.uniform(-1, 1, max(n_trips, 1) * 16).astype(np.float32)
        z = np.full(16, np.nan, np.float32)
        _licm_while[(1,)](x, z, n_trips, OFF=True, backend="interpreter")
        want = x.reshape(-1, 16)[:n_trips].astype(np.float64).sum(0) * np.sqrt(np.arange(16) + 2.0)
        np.testing.assert_allclose(z, want, rtol=1e-5, atol=1e-5)


def test_disable_licm_metadata_on_the_back_edge_in_llir():
    """As Triton emits it: ``!llvm.loop`` on the loop's back-edge branch naming a distinct,
    self-referencing node that lists ``llvm.licm.disable`` (compiled for cuda:90; no device needed)."""
    import re
    pytest.importorskip("tritium_nvidia")
    k = tritium.compile(_licm_nest, signature=_NEST_SIG, constexprs={"OUTER_OFF": False, "INNER_OFF": True},
                        target="cuda:90")
    llir = k.asm["llir"]
    edges = re.findall(r'br label %"(for\.header[\w.]*)", !llvm\.loop !(\d+)', llir)
    assert len(edges) == 1  # the inner loop's back edge only
    loop_id = edges[0][1]
    (props,) = re.findall(rf"^!{loop_id} = distinct !\{{ !{loop_id}, !(\d+) \}}$", llir, re.M)
    assert re.search(rf'^!{props} = !\{{ !"llvm.licm.disable" \}}$', llir, re.M)
    assert "cubin" in k.asm  # LLVM read the metadata and built the kernel
    k = tritium.compile(_licm_while, signature=_WHILE_SIG, constexprs={"OFF": True}, target="cuda:90", stage="llir")
    assert re.search(r'br label %"while\.before[\w.]*", !llvm\.loop !\d+', k.asm["llir"])
    for fn, sig, cx in ((_licm_nest, _NEST_SIG, {"OUTER_OFF": False, "INNER_OFF": False}),
                        (_licm_while, _WHILE_SIG, {"OFF": False})):
        k = tritium.compile(fn, signature=sig, constexprs=cx, target="cuda:90", stage="llir")
        assert "llvm.licm.disable" not in k.asm["llir"] and "!llvm.loop" not in k.asm["llir"]
