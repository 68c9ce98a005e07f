"""The code generator: walks a ``@jit`` function's Python AST and emits TTIR.

Values during generation are ``tensor`` (IR values), ``constexpr`` (compile-time Python values),
tuples of values, or plain Python objects (modules, functions, dtypes).  Control flow on
constexprs is evaluated at compile time; on tensors it becomes ``scf.if``/``scf.for``/``scf.while``.
Statements after an ``if`` that returns are moved into the branches that do not return, so
early returns become structured control flow.  Control-flow statements live in the
``ControlFlowMixin`` (``codegen_control``).
"""
from __future__ import annotations

import ast
import operator

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, i32

from ..language import dtypes as tl, functions as F
from ..language.core import builder_keyword, constexpr, is_builtin, tensor, tuple as tl_tuple
from ..ttir import ops as tt
from . import semantic as sem
from . import semantic_tensor as semt
from .builder import Builder, ir_type
from .codegen_control import ControlFlowMixin, contains_return, terminates
from .errors import CompilationError, describe, error_class, original
from .scope import PY_BUILTINS, global_value, is_plain_data, non_constexpr_global_message
from .. import knobs, language
from ..ttgir.analysis.axis_info import PartialAxisInfo
from ..language.core import JITCallable, condition, range as tl_range, semantics, static_range
from . import builder, semantic_descriptor, semantic_dot_scaled, semantic_extern, semantic_memory

# the language's builtins reach the semantic layer through the registry the language owns
semantics.register(sem, semt, semantic_memory, semantic_extern, semantic_dot_scaled, semantic_descriptor, builder)


def _unwrap(x):
    return x.value if isinstance(x, constexpr) else x


def _check_result_used(fn, node, gen) -> None:
    """A call of a ``@must_use_result`` function whose result is dropped is an error."""
    fn = _unwrap(fn)
    note = getattr(fn, "_must_use_result", False)
    if not note and getattr(fn, "__self__", None) is not None and isinstance(fn.__self__, tensor):
        note = getattr(getattr(language, getattr(fn, "__name__", ""), None), "_must_use_result", False)
    if note:
        what = ast.unparse(node.func)
        raise gen._error(node, f"the result of {what} must be used (assigned or passed on), not dropped",
                         notes=[f"The result of {what} is not being used." + (f" {note}" if isinstance(note, str) else "")])


def _position(node) -> tuple[int, int] | None:
    """A node's place counted from its function's ``def`` line (1) and dedented column (0): the
    ``at L:C:`` of an error message."""
    line = getattr(node, "lineno", None)
    return (line, getattr(node, "col_offset", 0)) if line is not None else None


def _is_static(x) -> bool:
    """Whether ``x`` is known at compile time: no tensor in it, at any depth of tuples."""
    x = _unwrap(x)
    if isinstance(x, tensor):
        return False
    return not isinstance(x, tuple) or all(_is_static(v) for v in x)


def _is_namedtuple(v) -> bool:
    return isinstance(v, tuple) and hasattr(type(v), "_fields")


def _remake(like, items):
    """A tuple of ``items`` of the same kind as ``like``: its named-tuple class, a ``tl.tuple``
    (keeping field names), or a plain tuple."""
    if _is_namedtuple(like):
        return type(like)(*items)
    if isinstance(like, tl_tuple):
        return tl_tuple(items, like.type if like._fields_names else None)
    return tuple(items)


def _wrap(v):
    """A Python value as a kernel value: numbers, strings and None become constexprs, tuples keep
    their kind with their elements wrapped."""
    if isinstance(v, (tensor, constexpr)):
        return v
    if isinstance(v, tuple):
        return _remake(v, [_wrap(x) for x in v])
    if isinstance(v, (bool, int, float, str)) or v is None:
        return constexpr(v)
    return v


_BINOPS = {
    ast.Add: ("add", operator.add), ast.Sub: ("sub", operator.sub), ast.Mult: ("mul", operator.mul),
    ast.Div: ("truediv", operator.truediv), ast.FloorDiv: ("floordiv", operator.floordiv),
    ast.Mod: ("mod", operator.mod), ast.BitAnd: ("and_", operator.and_), ast.BitOr: ("or_", operator.or_),
    ast.BitXor: ("xor_", operator.xor), ast.LShift: ("shl", operator.lshift), ast.RShift: ("shr", operator.rshift),
    ast.Pow: (None, operator.pow), ast.MatMult: ("matmul", operator.matmul),
}
_CMPOPS = {
    ast.Lt: ("less_than", operator.lt), ast.LtE: ("less_equal", operator.le), ast.Gt: ("greater_than", operator.gt),
    ast.GtE: ("greater_equal", operator.ge), ast.Eq: ("equal", operator.eq), ast.NotEq: ("not_equal", operator.ne),
    ast.Is: (None, operator.is_), ast.IsNot: (None, operator.is_not), ast.In: (None, lambda a, b: a in b),
    ast.NotIn: (None, lambda a, b: a not in b),
}


class CodeGenerator(ControlFlowMixin, ast.NodeVisitor):
    def __init__(self, jit_fn, builder: Builder, arg_values: list, func_name: str, *, is_kernel: bool,
                 arg_attrs: list[dict] | None = None, noinline: bool = False, compiled: dict | None = None):
        self.jit_fn = jit_fn
        self.builder = builder
        self.arg_values = arg_values  # per parameter: a tl.dtype (runtime arg) or a constexpr
        self.func_name = func_name
        self.is_kernel = is_kernel
        self.arg_attrs = arg_attrs
        self.noinline = noinline
        self.compiled = compiled if compiled is not None else {}  # mangled name -> return structure
        self.gscope = jit_fn.global_scope()
        self.lscope: dict = {}
        self.returned = False
        self.ret_value = None
        self.loop_depth = 0
        self.last_node: ast.AST | None = None
        self.func_op: tt.FuncOp | None = None

    # -- entry ----------------------------------------------------------------------------------
    def generate(self):
        fn_node = self.jit_fn.parse()
        self.last_node = fn_node
        try:
            self.visit_FunctionDef(fn_node)
        except CompilationError:
            raise
        except Exception as e:  # noqa: BLE001 - every other error becomes a located user error
            raise self._error(self.last_node, e) from original(e)
        return self.func_op, self.ret_value

    def _error(self, node, exc_or_msg, notes: list[str] | None = None) -> CompilationError:
        msg = exc_or_msg if isinstance(exc_or_msg, str) else describe(exc_or_msg)
        line, col = self.jit_fn.file_position(node)
        cls = error_class(exc_or_msg)
        return cls(msg, filename=self.jit_fn.file, lineno=line, col=col,
                   source_line=self.jit_fn.source_line(line), fn_name=self.jit_fn.__name__, notes=notes,
                   position=_position(node))

    def visit(self, node):
        if node is None:
            return None
        prev_node, prev_loc = self.last_node, self.builder.loc
        if isinstance(node, (ast.stmt, ast.expr)):
            self.last_node = node
            line, col = self.jit_fn.file_position(node)
            if line is not None:
                self.builder.set_loc(line, col)
        own_loc = self.builder.loc
        try:
            result = super().visit(node)
        except CompilationError:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._error(self.last_node, e) from original(e)
        # children set their own locations; the ops this node creates after them carry its own
        self.builder.loc = own_loc
        if isinstance(node, ast.expr):
            self.last_node, self.builder.loc = prev_node, prev_loc
        return result

    def generic_visit(self, node):
        raise self._error(node, f"unsupported Python construct in a kernel: {type(node).__name__}")

    # -- function -------------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef):
        params = self.jit_fn.arg_names
        for arg, p in zip(node.args.args, getattr(self.jit_fn, "params", ())):
            if p.is_constexpr and (p.do_not_specialize or p.do_not_specialize_on_alignment):
                raise self._error(arg, f"{p.name} marked as constexpr and listed in do_not_specialize/"
                                       "do_not_specialize_on_alignment. Remove constexpr designation to skip "
                                       "specialization.")
        line, col = self.jit_fn.file_position(node)
        self.builder.set_loc(line, col)
        in_types = [v for v in _flatten_signature(self.arg_values) if not isinstance(v, constexpr)]
        func = tt.FuncOp(self.func_name, [ir_type(t) for t in in_types], [],
                         "public" if self.is_kernel else "private")
        if self.arg_attrs is not None and any(self.arg_attrs):
            func.arg_attrs = ArrayAttr([DictionaryAttr(a) for a in self.arg_attrs])
        func.attributes["noinline"] = _bool_attr(self.noinline)
        self.func_op = func
        self.builder.module.body.blocks[0].add_op(func)
        entry = func.entry
        for a in entry.args:
            a.location = self.builder.loc
        it = iter(entry.args)

        def value_of(v):  # a parameter's value: a tuple argument takes its leaves in order
            if isinstance(v, constexpr):
                return v
            if isinstance(v, tuple):
                return _remake(v, [value_of(x) for x in v])
            return tensor(next(it), v)
        for name, v in zip(params, self.arg_values):
            val = value_of(v)
            self.lscope[name] = val
            _name_arguments(val, name)
        with self.builder.at(entry):
            self.visit_compound(node.body)
            ret = self.ret_value if self.returned else None
            flat = _flatten_values(ret)
            if self.is_kernel and flat:
                raise self._error(self.last_node, "a kernel cannot return a value")
            self.builder.insert(tt.ReturnOp([t.handle for t in flat]))
            func.set_result_types([h.handle.type for h in flat])
        self.ret_value = ret
        return func

    def visit_compound(self, stmts):
        stmts = list(stmts)
        for i, stmt in enumerate(stmts):
            if self.returned:
                break  # code after a return is dead
            if isinstance(stmt, ast.If) and contains_return(stmt) and i + 1 < len(stmts):
                rest = stmts[i + 1:]
                stmt = _append_to_open_branches(stmt, rest)
                self.visit(stmt)
                return
            self.visit(stmt)

    # -- statements ---------------------------------------------------------------------------------
    def visit_Expr(self, node):
        if isinstance(node.value, ast.Call):
            node.value._tritium_result_unused = True  # checked against @must_use_result in visit_Call
        self.visit(node.value)

    def visit_Pass(self, node):
        pass

    def visit_Return(self, node):
        if self.loop_depth:
            raise self._error(node, "unsupported Python construct in a kernel: return inside a loop")
        value = self.visit(node.value) if node.value is not None else None
        if isinstance(value, constexpr) and value.value is None:
            value = None
        if value is not None and not isinstance(value, (tensor, tuple, constexpr)):
            value = constexpr(value)
        # as in Triton, a number a function returns becomes a scalar tensor (its callers see a
        # run-time value of the number's type, not a compile-time constant), as an assigned one does
        value = self._assigned_value(value)
        self.ret_value = value
        self.returned = True
        self.ret_node = node  # where a return whose type disagrees with another's is reported

    def visit_Assign(self, node):
        value = self._assigned_value(self.visit(node.value))
        for target in node.targets:
            self._assign(target, value)

    def _assigned_value(self, value):
        """A plain assignment (``x = 16``, ``x = BLOCK``) stores a number as a scalar tensor, as
        Triton does; ``x: tl.constexpr = ...`` keeps it a compile-time constant.  Tuples are
        handled item by item; dtypes, None, functions and other objects stay what they are."""
        if isinstance(value, tuple) and not isinstance(value, tensor):
            return _remake(value, [self._assigned_value(v) for v in value])
        raw = _unwrap(value)
        if isinstance(raw, (bool, int, float)) and not isinstance(value, tensor):
            return sem.to_tensor(raw, self.builder)
        return value

    def visit_AnnAssign(self, node):
        value = self.visit(node.value) if node.value is not None else None
        ann = self.visit(node.annotation)
        if ann is constexpr or (isinstance(ann, constexpr) and ann.value is constexpr):
            if isinstance(value, tensor):
                raise self._error(node, f"'{getattr(node.target, 'id', '?')}' is annotated tl.constexpr but its value is only known at run time")
            value = constexpr(value)
        elif value is not None:
            value = self._assigned_value(value)
        self._assign(node.target, value)

    def visit_AugAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self._error(node, "unsupported Python construct in a kernel: augmented assignment to "
                              f"{type(node.target).__name__}")
        lhs = self._load_name(node.target.id, node)
        value = self._binop(type(node.op), lhs, self.visit(node.value), node)
        self._assign(node.target, self._assigned_value(value))

    def _assign(self, target, value):
        if isinstance(target, ast.Subscript):
            raise self._error(target, "unsupported Python construct in a kernel: item assignment "
                              f"`{ast.unparse(target)} = ...` (tuples cannot be changed in place; build a new "
                              "tuple instead, e.g. `t = (x,) + t[1:]`)")
        if isinstance(target, ast.Name):
            if not isinstance(value, (tensor, constexpr, tuple)) and not callable(value) and not isinstance(value, tl.dtype):
                value = constexpr(value)
            self.lscope[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            vals = _unwrap(value)
            if isinstance(vals, tensor):
                raise self._error(target, f"cannot unpack a tensor into {len(target.elts)} names")
            if not isinstance(vals, (tuple, list)):
                raise self._error(target, f"cannot unpack {_describe(value)} into {len(target.elts)} names")
            vals = list(vals)
            if len(vals) != len(target.elts):
                raise self._error(target, f"cannot unpack {len(vals)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, vals):
                self._assign(t, v)
            return
        raise self._error(target, f"unsupported Python construct in a kernel: assignment to {type(target).__name__}")

    def visit_Assert(self, node):
        cond = self.visit(node.test)
        msg = self.visit(node.msg) if node.msg is not None else constexpr("")
        if _is_static(cond):
            if not _unwrap(cond):
                raise self._error(node, f"assertion failed: {_unwrap(msg)}" if _unwrap(msg) else "assertion failed")
            return
        semt.device_assert(cond, _unwrap(msg) or ast.unparse(node.test), self.builder)

    # -- expressions ----------------------------------------------------------------------------------
    def visit_Constant(self, node):
        return constexpr(node.value)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store):
            return node.id
        return self._load_name(node.id, node)

    def _load_name(self, name, node):
        if name in self.lscope:
            return self.lscope[name]
        if name in self.gscope:
            value = self.gscope[name]
            if is_plain_data(value) and not self._plain_globals_allowed():
                raise self._error(node, NameError(non_constexpr_global_message(name)))
            try:
                return global_value(name, value)
            except TypeError as e:
                raise self._error(node, str(e)) from None
        if name in PY_BUILTINS:
            return PY_BUILTINS[name]
        raise self._error(node, f"name '{name}' is not defined")

    def _plain_globals_allowed(self) -> bool:
        """Whether a kernel may read a global that is a plain Python value (``N = 42``) as a
        constant: Triton 3.6 rejects that (only ``N = tl.constexpr(42)`` is a compile-time constant)
        unless ``knobs.compilation.allow_non_constexpr_globals`` is set; its interpreter runs the
        kernel as Python and reads any global, and so does Tritium's."""
        return knobs.compilation.allow_non_constexpr_globals or self._for_interpreter()

    def _for_interpreter(self) -> bool:
        """Whether the kernel is compiled for the interpreter, which runs it as Python with no
        layouts (Triton's interpreter accepts what only layouts or compilation would refuse)."""
        return getattr(self.builder.target, "backend", None) == "interpreter"

    def visit_Tuple(self, node):
        return tuple(self.visit(e) for e in node.elts)

    visit_List = visit_Tuple

    def visit_ListComp(self, node):
        """``[f(v) for v in values if c]`` over a tuple or ``tl.static_range``, unrolled at compile
        time: a tuple of the results."""
        if len(node.generators) != 1 or node.generators[0].is_async:
            raise self._error(node, "unsupported Python construct in a kernel: a comprehension with "
                              f"{len(node.generators)} `for` clauses (write one)")
        comp = node.generators[0]
        it = self.visit(comp.iter)
        if isinstance(it, static_range):
            items = [constexpr(i) for i in range(*(int(_unwrap(x)) for x in (it.start, it.end, it.step)))]
        elif isinstance(_unwrap(it), (tuple, list)):
            items = list(_unwrap(it))
        else:
            raise self._error(comp.iter, "a comprehension in a kernel must iterate over a tuple or "
                              f"tl.static_range(), got {_describe(it)}")
        saved = dict(self.lscope)
        out = []
        try:
            for v in items:
                self._assign(comp.target, v)
                conds = [self.visit(c) for c in comp.ifs]
                if any(not _is_static(c) for c in conds):
                    raise self._error(node, "the condition of a comprehension must be a constexpr")
                if all(_unwrap(c) for c in conds):
                    out.append(self.visit(node.elt))
        finally:
            self.lscope = saved
        return tl_tuple(out)

    visit_GeneratorExp = visit_ListComp

    def visit_JoinedStr(self, node):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                val = self.visit(v.value)
                if isinstance(val, tensor):
                    raise self._error(v, "f-strings can only format constexpr values")
                spec = ast.unparse(v.format_spec)[2:-1] if v.format_spec is not None else ""
                parts.append(format(_unwrap(val), spec))
        return constexpr("".join(parts))

    def visit_Attribute(self, node):
        base = self.visit(node.value)
        attr = node.attr
        if attr == "type" and isinstance(base, constexpr):
            return base.type  # a compile-time value's type is its constexpr_type, as in Triton
        number = _unwrap(base)
        if isinstance(number, (bool, int, float)) and not hasattr(number, attr) and _is_tensor_attribute(attr):
            # a number used as a typed scalar (`value.dtype`, `one.to(tl.uint32)`): its tensor is
            # the constant Triton gives it (i32, i64/u64 by range; fp32, or fp64 out of range)
            base = sem.to_tensor(number, self.builder)
        if isinstance(base, tensor):
            if attr == "T":
                return semt.trans(base, (), self.builder)
            if attr == "dtype":
                return base.dtype
            if attr == "shape":
                return tuple(base.shape)
            if attr == "type":
                return base.type
            if attr == "numel":
                return base.numel
            if not hasattr(base, attr):
                raise self._error(node, f"a tensor has no attribute '{attr}'")
            return getattr(base, attr)
        obj = _unwrap(base)
        if not hasattr(obj, attr):
            raise self._error(node, f"'{type(obj).__name__}' object has no attribute '{attr}'")
        out = getattr(obj, attr)
        if isinstance(out, tuple) and not _is_static(out):
            return _wrap(out)  # a field of a named tuple of values
        if isinstance(out, (bool, int, float, str, tuple)) or out is None:
            return constexpr(out)
        return out

    def visit_Subscript(self, node):
        base = self.visit(node.value)
        idx = self.visit(node.slice)
        if isinstance(base, tensor):
            return sem_getitem(base, idx, self.builder)
        obj = _unwrap(base)
        i = _unwrap(idx)
        if isinstance(i, tensor):
            raise self._error(node, "indexing a tuple needs a constexpr index")
        if isinstance(i, tuple):
            i = tuple(_unwrap(x) for x in i)
        if isinstance(obj, tuple) and not isinstance(i, (int, slice)):
            raise self._error(node, f"a tuple index must be a constexpr integer or slice, got {_describe(idx)}")
        if isinstance(obj, tuple) and isinstance(i, int) and not -len(obj) <= i < len(obj):
            raise self._error(node, f"tuple index {i} is out of range for a tuple of {len(obj)} elements")
        out = obj[i]
        if isinstance(obj, tuple) and isinstance(i, slice):
            return _wrap(tl_tuple(out) if not isinstance(out, tl_tuple) else out)
        return constexpr(out) if isinstance(out, (bool, int, float, str)) or out is None else out

    def visit_Slice(self, node):
        lo = _unwrap(self.visit(node.lower)) if node.lower else None
        hi = _unwrap(self.visit(node.upper)) if node.upper else None
        st = _unwrap(self.visit(node.step)) if node.step else None
        return constexpr(slice(lo, hi, st))

    def visit_BinOp(self, node):
        return self._binop(type(node.op), self.visit(node.left), self.visit(node.right), node)

    def _binop(self, op_type, lhs, rhs, node):
        name, pyop = _BINOPS[op_type]
        lt, rt = _unwrap(lhs), _unwrap(rhs)
        if isinstance(lt, tuple) or isinstance(rt, tuple):
            # tuples at compile time: concatenation and repetition make a new tuple of the values
            if op_type is ast.Add and isinstance(lt, tuple) and isinstance(rt, tuple):
                return _wrap(tl_tuple(list(lt) + list(rt)))
            if op_type is ast.Mult and isinstance(_unwrap(rt if isinstance(lt, tuple) else lt), int):
                t, n = (lt, rt) if isinstance(lt, tuple) else (rt, lt)
                return _wrap(tl_tuple(list(t) * _unwrap(n)))
            raise self._error(node, f"unsupported operand types for {ast.unparse(node) if hasattr(node, 'op') else name}: "
                              f"{_describe(lhs)} and {_describe(rhs)}")
        if _is_static(lhs) and _is_static(rhs):
            return constexpr(pyop(_unwrap(lhs), _unwrap(rhs)))
        if name is None:
            raise self._error(node, "the ** operator is not supported on tensors; use tl.exp2/tl.log2 or a loop")
        if name == "matmul":
            return semt.dot(lhs, rhs, None, None, None, None, self.builder)
        return getattr(sem, name)(lhs, rhs, self.builder)

    def visit_UnaryOp(self, node):
        v = self.visit(node.operand)
        if _is_static(v):
            x = _unwrap(v)
            if isinstance(node.op, ast.Not) and isinstance(v, tuple):
                raise self._error(node, "`not` of a tuple is not supported in a kernel (its truth value is not a "
                                        "tensor or constexpr); test its length or its elements instead")
            return constexpr({ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                              ast.Invert: operator.invert}[type(node.op)](x))
        fn = {ast.USub: sem.minus, ast.UAdd: sem.plus, ast.Not: sem.not_, ast.Invert: sem.invert}[type(node.op)]
        return fn(v, self.builder)

    def visit_Compare(self, node):
        if len(node.ops) != 1:
            lhs = self.visit(node.left)
            vals = [lhs] + [self.visit(c) for c in node.comparators]
            if all(_is_static(v) for v in vals):
                return constexpr(all(_CMPOPS[type(op)][1](_unwrap(a), _unwrap(b))
                                     for op, a, b in zip(node.ops, vals, vals[1:])))
            raise self._error(node, "chained comparisons (a < b < c) are not supported on tensors; "
                              "split them with `&`")
        lhs, rhs = self.visit(node.left), self.visit(node.comparators[0])
        name, pyop = _CMPOPS[type(node.ops[0])]
        if isinstance(node.ops[0], (ast.Is, ast.IsNot)):  # identity, at compile time: `x is None`
            return constexpr(pyop(_unwrap(lhs), _unwrap(rhs)))
        if _is_static(lhs) and _is_static(rhs):
            return constexpr(pyop(_unwrap(lhs), _unwrap(rhs)))
        if name is None:
            raise self._error(node, f"'{type(node.ops[0]).__name__}' comparisons need constexpr operands")
        return getattr(sem, name)(lhs, rhs, self.builder)

    def visit_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        result = None
        for v in node.values:
            val = self.visit(v)
            if _is_static(val) and (result is None or _is_static(result)):
                x = _unwrap(val)
                if is_and and not x:
                    return constexpr(x)
                if not is_and and x:
                    return constexpr(x)
                result = constexpr(x)
                continue
            if result is None or _is_static(result):
                result = val if result is None else (val if (_unwrap(result) if is_and else not _unwrap(result)) else result)
                continue
            result = (sem.logical_and if is_and else sem.logical_or)(result, val, self.builder)
        return result

    def visit_Call(self, node):
        fn = self.visit(node.func)
        if getattr(node, "_tritium_result_unused", False):
            _check_result_used(fn, node, self)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(_unwrap(self.visit(a.value)))
            else:
                args.append(self.visit(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                kwargs.update(_unwrap(self.visit(k.value)))
            else:
                kwargs[k.arg] = self.visit(k.value)
        return self.call(fn, args, kwargs, node)

    def call(self, fn, args, kwargs, node):
        fn = _unwrap(fn)
        if isinstance(fn, JITCallable):
            return self.call_jit(fn, args, kwargs, node)
        if is_builtin(fn):
            return fn(*args, **{builder_keyword(fn): self.builder}, **kwargs)
        if fn is constexpr:
            return constexpr(_unwrap(args[0]) if args else None)
        if isinstance(fn, type) and issubclass(fn, tuple):
            # tl.tuple(values), tuple(values), a named tuple class: a tuple of the values as they are
            if hasattr(fn, "_fields"):
                return fn(*args, **kwargs)
            items = _unwrap(args[0]) if args else ()
            if isinstance(items, tensor):
                raise self._error(node, "cannot make a tuple of a tensor's elements; index it with constexprs")
            kind = _unwrap(kwargs.get("type", args[1] if len(args) > 1 else None))
            return tl_tuple(list(items), kind) if fn is tl_tuple or fn is tuple else fn(items)
        if fn is len and len(args) == 1 and isinstance(_unwrap(args[0]), (tuple, list)):
            return constexpr(len(_unwrap(args[0])))
        if fn in (zip, enumerate, reversed) and any(isinstance(_unwrap(a), tuple) for a in args):
            out = fn(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})
            return _wrap(tl_tuple([tl_tuple(x) if isinstance(x, tuple) else x for x in out]))
        if fn is isinstance:
            return constexpr(_isinstance(*args))
        if fn is hasattr and len(args) == 2 and not kwargs:
            # introspection at compile time, as in Triton: hasattr(x, "dtype") on a tensor
            return constexpr(hasattr(args[0], _unwrap(args[1])))
        if fn is tl_range or fn is static_range or fn is condition:
            return fn(*args, **kwargs)
        if fn in (min, max) and any(not _is_static(a) for a in args):
            f = F.minimum if fn is min else F.maximum
            out = args[0]
            for a in args[1:]:
                out = f(out, a, _builder=self.builder)
            return out
        if fn is print:
            # a device print, as in Triton: ``print("no arg")`` prints ``pid (0, 0, 0) no arg``
            # from every program (tl.static_print prints at compile time)
            return F.device_print(*(args if isinstance(_unwrap(args[0]), str) else [""] + args), _builder=self.builder)
        if fn is range:
            return tl_range(*args, **kwargs)
        if fn is abs and args and isinstance(args[0], tensor):
            return semt.abs_(args[0], self.builder)
        if isinstance(fn, tl.dtype):
            raise self._error(node, f"{fn!r}(...) is not a cast; use x.to({fn!r})")
        if any(not _is_static(a) for a in list(args) + list(kwargs.values())):
            name = getattr(fn, "__name__", repr(fn))
            raise self._error(node, f"cannot call the Python function '{name}' on run-time tensors; "
                              f"decorate it with @jit to use it in a kernel")
        out = fn(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})
        if isinstance(out, (tensor, constexpr, tuple)) or out is None or callable(out) or isinstance(out, tl.dtype):
            return out if not isinstance(out, tuple) else tuple(constexpr(o) if not isinstance(o, (tensor, constexpr)) else o for o in out)
        return constexpr(out)

    # -- calls to @jit functions ------------------------------------------------------------------------
    def _check_noinline_args(self, fn, values, node) -> None:
        """A compiled ``noinline`` function takes scalars (and pointers) only, as in Triton: a block
        would need one layout for every call site.  The interpreter, like Triton's, has no layouts
        and accepts blocks."""
        if self.builder.target is None or self._for_interpreter():
            return
        for name, v in zip(fn.arg_names, values):
            if isinstance(v, tensor) and v.type.is_block() and v.type.numel > 1:
                raise self._error(node, f"Function {fn.__name__} is marked noinline, but was called with "
                                        f"non-scalar argument {name}:{v.type}")

    def call_jit(self, fn, args, kwargs, node):
        bound = fn.bind_args(args, kwargs, in_kernel=True)
        values = []
        for name, v in zip(fn.arg_names, bound):
            if isinstance(v, tensor):
                # a tensor for a parameter annotated tl.constexpr is passed as a run-time value, as
                # Triton 3.6 does: the annotation binds launch arguments, not calls inside kernels
                # (its fused-attention tutorial passes `offs_m = start_m * BLOCK_M + tl.arange(...)`
                # to `offs_m: tl.constexpr`)
                values.append(v)
            elif fn.is_constexpr_param(name):
                values.append(constexpr(v))
            elif isinstance(_unwrap(v), tuple) and not _is_static(v):
                values.append(_as_argument(_unwrap(v)))  # a tuple of values: its tensors are passed
            else:
                # As in Triton, a value known at compile time (a number, None, a dtype, a function)
                # stays one in the callee, which is specialized on it (an axis, a flag, `x is None`).
                values.append(constexpr(v))
        if fn.noinline:
            self._check_noinline_args(fn, values, node)
        sig = [_signature_of(v) for v in values]
        divisibility = _known_divisibility(_flatten_values(values))
        mangled = fn.mangle(sig)
        if any(d > 1 for d in divisibility):  # the callee is specialized on what the caller knows
            mangled += "__div" + "_".join(map(str, divisibility))
        if mangled not in self.compiled:
            self.compiled[mangled] = "in progress"
            arg_attrs = [{"tt.divisibility": IntegerAttr(d, i32)} if d > 1 else {} for d in divisibility]
            gen = CodeGenerator(fn, Builder(self.builder.filename, self.builder.module), sig, mangled,
                                is_kernel=False, arg_attrs=arg_attrs, noinline=fn.noinline, compiled=self.compiled)
            gen.builder.options = self.builder.options
            gen.builder.target = self.builder.target
            gen.builder.codegen = gen
            try:
                _, ret = gen.generate()
            except CompilationError as e:
                # raised again at this call, the callee's error its cause (its frames dropped)
                line, col = self.jit_fn.file_position(node)
                raise e.called_from(self.jit_fn.file, line, col, self.jit_fn.source_line(line),
                                    self.jit_fn.__name__, _position(node)) from e.with_traceback(None)
            self.compiled[mangled] = ret
        elif self.compiled[mangled] == "in progress":
            raise self._error(node, f"recursive calls are not supported ({fn.__name__})")
        ret = self.compiled[mangled]
        flat_ret = _flatten_values(ret)
        call = self.builder.insert(tt.CallOp(mangled, [v.handle for v in _flatten_values(values)],
                                             [t.handle.type for t in flat_ret]))
        return _rebuild_values(ret, [tensor(r, t.type) for r, t in zip(call.results, flat_ret)])

    def call_inline(self, fn, args):
        """Emit a @jit function's body at the insertion point (combine regions of reduce/scan)."""
        fn = _unwrap(fn)
        if not isinstance(fn, JITCallable):
            raise TypeError(f"combine_fn must be a @jit function, got {fn!r}")
        return self.call_jit(fn, list(args), {}, self.last_node)


# --- helpers -------------------------------------------------------------------------------------

_TENSOR_FIELDS = frozenset(("dtype", "shape", "type", "numel", "T"))


def _is_tensor_attribute(name: str) -> bool:
    return name in _TENSOR_FIELDS or (not name.startswith("_") and hasattr(tensor, name))


def _bool_attr(v: bool):
    from xdsl.dialects.builtin import BoolAttr, IntegerType
    return BoolAttr(v, IntegerType(1))


def _isinstance(value, classes) -> bool:
    """``isinstance`` in a kernel: a constexpr is an instance of ``tl.constexpr`` and of its
    value's type (``isinstance(BLOCK, int)``, ``isinstance(x, tl.tensor)``)."""
    classes = _unwrap(classes)
    classes = tuple(_unwrap(c) for c in classes) if isinstance(classes, tuple) else classes
    return isinstance(value, classes) or (isinstance(value, constexpr) and isinstance(value.value, classes))


def _flatten_values(v) -> list[tensor]:
    if isinstance(v, tensor):
        return [v]
    if isinstance(v, (tuple, list)):
        out = []
        for x in v:
            out.extend(_flatten_values(x))
        return out
    return []


def _rebuild_values(structure, flat: list[tensor]):
    it = iter(flat)

    def go(s):
        if isinstance(s, tensor):
            return next(it)
        if isinstance(s, tuple):
            return _remake(s, [go(x) for x in s])
        return s
    return go(structure)


def _as_argument(v):
    """A tuple passed to a @jit function: tensors stay, every other leaf becomes a constexpr."""
    if isinstance(v, tensor):
        return v
    if isinstance(v, tuple):
        return _remake(v, [_as_argument(x) for x in v])
    return constexpr(v)


#: the largest divisibility a call passes on to its callee (as a kernel argument's ``tt.divisibility``)
MAX_ARG_DIVISIBILITY = 16


def _known_divisibility(args) -> list[int]:
    """Per run-time argument of a call, the power of two its value is known to be a multiple of
    (bytes for a pointer; 1 for unknown, blocks and floats), up to ``MAX_ARG_DIVISIBILITY``: a
    callee then knows what its caller knows (a kernel's 16-byte aligned pointer passed to a
    helper that makes a tensor descriptor of it, as Triton 3.6's attention tutorial does)."""
    facts = PartialAxisInfo()
    out = []
    for v in args:
        t = v.type
        if t.is_block() or not (t.is_ptr() or t.is_int()):
            out.append(1)
            continue
        out.append(min(facts.get(v.handle).divisibility[0], MAX_ARG_DIVISIBILITY))
    return out


def _signature_of(v):
    """A call argument's part of the callee's specialization: a tensor's type, a constexpr, or
    for a tuple the same structure of those."""
    if isinstance(v, tensor):
        return v.type
    if isinstance(v, tuple):
        return _remake(v, [_signature_of(x) for x in v])
    return v


def _name_arguments(val, name: str) -> None:
    """Name a parameter's block arguments after it (``%v`` in the TTIR text, as Triton prints
    them); the leaves of a tuple parameter all take its name (the printer numbers repeats)."""
    if isinstance(val, tensor):
        try:
            val.handle.name_hint = name
        except Exception:  # noqa: BLE001 - a name the IR syntax cannot spell: keep the number
            pass
    elif isinstance(val, (tuple, tl_tuple)):
        for x in val:
            _name_arguments(x, name)


def _flatten_signature(values) -> list:
    out = []
    for v in values:
        if isinstance(v, tuple):
            out.extend(_flatten_signature(v))
        else:
            out.append(v)
    return out


def _describe(v) -> str:
    v0 = _unwrap(v)
    if isinstance(v0, tensor):
        return f"a tensor of type {v0.type}"
    if isinstance(v0, tuple):
        return f"a tuple of {len(v0)}"
    return f"the constexpr {v0!r}"


def _append_to_open_branches(stmt: ast.If, rest: list) -> ast.If:
    new = ast.If(test=stmt.test,
                 body=stmt.body if terminates(stmt.body) else stmt.body + rest,
                 orelse=stmt.orelse if terminates(stmt.orelse) else stmt.orelse + rest)
    return ast.copy_location(new, stmt)


def sem_getitem(x: tensor, idx, builder: Builder) -> tensor:
    """``x[None, :, ...]``: each ``None`` inserts a size-1 dimension where it stands, each ``:``
    keeps the dimension there; as in Triton, a ``:`` past the last dimension is accepted."""
    idx = _unwrap(idx)
    items = list(idx) if isinstance(idx, tuple) else [idx]
    items = [_unwrap(i) for i in items]
    out = x
    for dim, it in enumerate(items):
        if it is None:
            out = semt.expand_dims(out, [dim], builder)
        elif not (isinstance(it, slice) and it == slice(None, None, None)):
            shown = ":".join("" if v is None else str(v) for v in (it.start, it.stop, it.step)[:3 if it.step else 2]) \
                if isinstance(it, slice) else repr(it)
            raise ValueError(f"unsupported tensor index: {shown} (a tensor can only be indexed with None "
                             "and ':')")
    return out
