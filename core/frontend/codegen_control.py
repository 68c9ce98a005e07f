"""Control flow for the code generator: ``if``/``else`` (static or ``scf.if``), early returns,
``for`` (``scf.for``, or unrolled over ``static_range`` and tuples) and ``while`` (``scf.while``)."""
from __future__ import annotations

import ast

from xdsl.dialects import scf, ub
from xdsl.dialects.builtin import IntegerAttr, UnitAttr, i32
from xdsl.ir import Block, Region

from ..language import dtypes as tl
from ..language.core import condition, constexpr, range as tl_range, static_range, tensor
from . import semantic as sem
from .builder import ir_type
from ..ttir.mlir_ops import LOOP_ANNOTATION, LoopAnnotationAttr


def _unwrap(x):
    return x.value if isinstance(x, constexpr) else x


def _static(x) -> bool:
    return not isinstance(x, tensor) and not (isinstance(x, tuple) and any(isinstance(v, tensor) for v in x))


def contains_return(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


def terminates(stmts) -> bool:
    """Whether every path through ``stmts`` ends in a return."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return terminates(last.body) and terminates(last.orelse)
    return False


def assigned_names(stmts) -> list[str]:
    out: list[str] = []
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in out:
                out.append(n.id)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id not in out:
                out.append(n.target.id)
    return out


class ControlFlowMixin:
    # -- if ---------------------------------------------------------------------------------------
    def visit_If(self, node: ast.If):
        cond = self.visit(node.test)
        if _static(cond):
            self.visit_compound(node.body if _unwrap(cond) else node.orelse)
            return
        cond = self._scalar_condition(cond, node, "if")
        if contains_return(node):
            self._returning_if(node, cond)
        else:
            self._plain_if(node, cond)

    def _scalar_condition(self, cond, node, what: str) -> tensor:
        if cond.type.is_block() and what == "if" and cond.type.numel == 1:
            # a one-element tensor is taken as its element (with a warning), as in Triton 3.6
            sem.warn_at_user_line(self.builder, "If conditional called with multidimensional Tensor instead of "
                                  f"scalar; please use \"if ({ast.unparse(node.test)}).item()\" instead")
            cond = cond.item(_builder=self.builder)
        if cond.type.is_block():
            ambiguous = "Boolean value of Tensor with more than one value is ambiguous: " if what == "if" else ""
            raise self._error(node, f"{ambiguous}the condition of `{what}` must be a scalar, got a tensor of shape "
                              f"{list(cond.type.shape)}; reduce it first (e.g. with tl.max)")
        return sem.cast(cond, tl.int1, self.builder) if cond.type.scalar != tl.int1 else cond

    def _run_branch(self, stmts, before: dict):
        block = Block()
        self.lscope = dict(before)
        with self.builder.at(block):
            self.visit_compound(stmts)
        return block, self.lscope

    def _plain_if(self, node, cond):
        before = self.lscope
        then_block, then_scope = self._run_branch(node.body, before)
        else_block, else_scope = self._run_branch(node.orelse, before)
        names = [n for n in then_scope if n in else_scope and then_scope[n] is not else_scope[n]]
        merged = dict(before)
        yields: list[tuple] = []  # slots (name, path into a tuple) whose value the if yields
        for n in names:
            t, e = _norm(then_scope[n]), _norm(else_scope[n])
            if isinstance(t, tuple) and isinstance(e, tuple) and _structure(t) == _structure(e):
                # a tuple assigned in both branches: merged leaf by leaf
                slots = []
                for (path, tl_), (_, el) in zip(_leaves(t), _leaves(e)):
                    if tl_ is el or (_static(tl_) and _static(el) and _unwrap(tl_) == _unwrap(el)
                                     and type(_unwrap(tl_)) is type(_unwrap(el))):
                        continue
                    if not (_is_scalar_like(tl_) and _is_scalar_like(el)):
                        slots = None
                        break
                    slots.append((n, path))
                if slots is not None:
                    merged[n] = t
                    yields.extend(slots)
                    continue
                if n in before:
                    raise self._error(node, f"'{n}' is assigned tuples whose elements differ in kind in the two "
                                      "branches of `if`")
                continue
            if _static(t) and _static(e) and not isinstance(t, tuple) and _unwrap(t) == _unwrap(e) \
                    and type(_unwrap(t)) is type(_unwrap(e)):
                merged[n] = t
                continue
            if isinstance(t, tuple) or isinstance(e, tuple) or not _is_scalar_like(t) or not _is_scalar_like(e):
                if n in before:
                    raise self._error(node, f"'{n}' is assigned values of different kinds in the two branches of `if`")
                continue  # a name local to the branches: not visible after the if
            merged[n] = t
            yields.append((n, ()))
        t_leaves = [self._slot_value(then_scope, y, node) for y in yields]
        e_leaves = [self._slot_value(else_scope, y, node) for y in yields]
        tys = [self._unify(a, b, _slot_name(y), node) for y, a, b in zip(yields, t_leaves, e_leaves)]
        t_vals = self._materialize(then_block, t_leaves, tys)
        e_vals = self._materialize(else_block, e_leaves, tys)
        then_block.add_op(scf.YieldOp(*t_vals))
        else_block.add_op(scf.YieldOp(*e_vals))
        op = self.builder.insert(scf.IfOp(cond.handle, [ir_type(t) for t in tys], Region(then_block), Region(else_block)))
        self.lscope = merged
        self._bind_slots(yields, op.results, dict(zip(yields, tys)))

    def _unify(self, a, b, name, node) -> tl.dtype:
        """The type both branch values of ``name`` are yielded as."""
        if isinstance(a, tensor) and isinstance(b, tensor):
            if a.type != b.type:
                # Triton's wording first (its tests look for it), then what to do
                lead = {"return value": f"Inconsistent return types: {a.type} and {b.type}",
                        "the conditional expression": "Ternary expression with dynamic condition has "
                                                      f"inconsistent types {a.type} and {b.type}"}.get(
                    name, f"Mismatched type for {name} between then block ({a.type}) and else block ({b.type})")
                raise self._error(node, f"{lead}; make them the same (e.g. with .to())")
            return a.type
        if isinstance(a, tensor):
            return a.type
        if isinstance(b, tensor):
            return b.type
        return sem.scalar_type_of_python(_unwrap(a)) if _unwrap(a) is not None else sem.scalar_type_of_python(_unwrap(b))

    def _materialize(self, block: Block, vals, tys):
        out = []
        with self.builder.at(block):
            for v, t in zip(vals, tys):
                v = sem.to_tensor(v, self.builder, t.scalar if not isinstance(v, tensor) else None)
                if v.type != t:
                    if v.type.is_block() != t.is_block():
                        v = sem.broadcast_to_shape(v, t.shape, self.builder) if t.is_block() else v
                    v = sem.cast(v, t.scalar, self.builder)
                out.append(v.handle)
        return out

    def _returning_if(self, node, cond):
        before = self.lscope
        branches = []
        for stmts in (node.body, node.orelse):
            self.returned, self.ret_value, self.ret_node = False, None, None
            block, _ = self._run_branch(stmts, before)
            branches.append((block, self.ret_value if self.returned else None, self.ret_node))
        (tb, tv, then_return), (eb, ev, else_return) = branches
        from .codegen import _flatten_values, _rebuild_values
        if (tv is None) != (ev is None) and not self.is_kernel:
            # the branch without a return falls off the end of the function (the statements after
            # the `if` were moved into it): as in Triton, that path returns poison of the type the
            # other path returns
            value, block, at = (tv, eb, then_return) if tv is not None else (ev, tb, else_return)
            flat = _flatten_values(value)
            tys = [self._unify(a, a, "return value", at or node) for a in flat]
            with self.builder.at(block):
                poison = [tensor(self.builder.insert(ub.PoisonOp(ir_type(t))).result, t) for t in tys]
            if tv is None:
                tv = _rebuild_values(value, poison)
            else:
                ev = _rebuild_values(value, poison)
        if tv is not None and ev is not None:
            # a number one branch returns becomes a value where the other returns another value
            tflat, eflat = [], []
            try:
                structure = _pair_returns(tv, ev, tflat, eflat)
            except ValueError as e:
                raise self._error(node, str(e)) from None
        else:
            structure = tv if tv is not None else ev
            tflat, eflat = _flatten_values(tv), _flatten_values(ev)
            if len(tflat) != len(eflat):
                raise self._error(node, "the branches of `if` return different numbers of values")
        # a type that disagrees is reported at the else branch's return, as Triton does
        tys = [self._unify(a, b, "return value", else_return or node) for a, b in zip(tflat, eflat)]
        tb.add_op(scf.YieldOp(*self._materialize(tb, tflat, tys)))
        eb.add_op(scf.YieldOp(*self._materialize(eb, eflat, tys)))
        op = self.builder.insert(scf.IfOp(cond.handle, [ir_type(t) for t in tys], Region(tb), Region(eb)))
        self.ret_value = _rebuild_values(structure, [tensor(r, t) for r, t in zip(op.results, tys)])
        self.returned = True
        self.lscope = before

    def visit_IfExp(self, node):
        cond = self.visit(node.test)
        if _static(cond):
            return self.visit(node.body if _unwrap(cond) else node.orelse)
        cond = self._scalar_condition(cond, node, "x if c else y")
        tb, eb = Block(), Block()
        with self.builder.at(tb):
            t = self.visit(node.body)
        with self.builder.at(eb):
            e = self.visit(node.orelse)
        if _unwrap(t) is None and _unwrap(e) is None:  # arms run for their effects: `store(a) if c else store(b)`
            tb.add_op(scf.YieldOp())
            eb.add_op(scf.YieldOp())
            self.builder.insert(scf.IfOp(cond.handle, [], Region(tb), Region(eb)))
            return None
        if _unwrap(t) is None or _unwrap(e) is None:
            raise self._error(node, "one arm of the conditional expression `x if c else y` has no value "
                              "(a call that returns nothing) and the other has one; give both a value or neither")
        ty = self._unify(t, e, "the conditional expression", node)
        tb.add_op(scf.YieldOp(*self._materialize(tb, [t], [ty])))
        eb.add_op(scf.YieldOp(*self._materialize(eb, [e], [ty])))
        op = self.builder.insert(scf.IfOp(cond.handle, [ir_type(ty)], Region(tb), Region(eb)))
        return tensor(op.results[0], ty)

    # -- for --------------------------------------------------------------------------------------
    def visit_For(self, node: ast.For):
        if node.orelse:
            raise self._error(node, "unsupported Python construct in a kernel: for ... else")
        it = self.visit(node.iter)
        if isinstance(it, static_range):
            start, end, step = (int(_unwrap(x)) for x in (it.start, it.end, it.step))
            for i in range(start, end, step):
                self._assign(node.target, constexpr(i))
                self._loop_body(node.body)
            return
        if isinstance(_unwrap(it), (tuple, list)):
            for v in _unwrap(it):
                self._assign(node.target, v)
                self._loop_body(node.body)
            return
        if not isinstance(it, tl_range):
            raise self._error(node.iter, "a for loop in a kernel must iterate over range(), tl.range(), "
                              "tl.static_range() or a tuple")
        if not isinstance(node.target, ast.Name):
            raise self._error(node.target, "the loop variable must be a single name")
        self._dynamic_for(node, it)

    def _loop_body(self, stmts):
        self.loop_depth += 1
        try:
            self.visit_compound(stmts)
        finally:
            self.loop_depth -= 1

    def _dynamic_for(self, node, it):
        b = self.builder
        lb, ub, step = (sem.to_tensor(x, b) for x in (it.start, it.end, it.step))
        for x, what in ((lb, "start"), (ub, "end"), (step, "step")):
            if x.type.is_block() or not x.type.scalar.is_int():
                raise self._error(node.iter, f"range {what} must be an integer scalar, got {x.type}")
        step_c = _unwrap(it.step)
        if isinstance(step_c, int) and step_c == 0:
            raise self._error(node.iter, "range() step must not be zero")
        iv_ty = tl.int64 if tl.int64 in (lb.type, ub.type, step.type) or tl.uint64 in (lb.type, ub.type, step.type) else tl.int32
        lb, ub, step = (sem.cast(x, iv_ty, b) for x in (lb, ub, step))
        negative = isinstance(step_c, int) and step_c < 0
        if negative:
            # iterate k = 0 .. ceil((lb - ub) / -step) and compute iv = lb + k * step
            n = sem.floordiv(sem.add(sem.sub(lb, ub, b), -step_c - 1, b), -step_c, b)
            n = sem.maximum(n, 0, False, b)
            lo, hi, st = sem.to_tensor(0, b, iv_ty), n, sem.to_tensor(1, b, iv_ty)
        else:
            lo, hi, st = lb, ub, step
        before = self.lscope
        names = [n for n in assigned_names(node.body) if n in before and n != node.target.id]

        def run_body(block: Block, carried, types):
            self.lscope = dict(before)
            with b.at(block):
                iv = tensor(block.args[0], iv_ty)
                if negative:
                    iv = sem.add(lb, sem.mul(iv, step_c, b), b)
                self.lscope[node.target.id] = iv
                self._bind_slots(carried, block.args[1:], types)
                self._loop_body(node.body)
            return self.lscope

        def dry(carried, types):
            return run_body(Block(arg_types=[ir_type(iv_ty)] + [ir_type(types[n]) for n in carried]), carried, types)

        carried, types, inits = self._carried(names, before, node, dry)
        body = Block(arg_types=[ir_type(iv_ty)] + [ir_type(types[n]) for n in carried])
        scope = run_body(body, carried, types)
        body.add_op(scf.YieldOp(*self._materialize(body, [self._slot_value(scope, n, node) for n in carried],
                                                   [types[n] for n in carried])))
        op = b.insert(scf.ForOp(lo.handle, hi.handle, st.handle, [v.handle for v in inits], Region(body)))
        # an option given as None (or constexpr None) is not set
        if _unwrap(getattr(it, "num_stages", None)) is not None:
            op.attributes["tt.num_stages"] = IntegerAttr(int(_unwrap(it.num_stages)), i32)
        if _unwrap(getattr(it, "loop_unroll_factor", None)) is not None:
            op.attributes["tt.loop_unroll_factor"] = IntegerAttr(int(_unwrap(it.loop_unroll_factor)), i32)
        for hint in ("disallow_acc_multi_buffer", "flatten", "warp_specialize"):
            if _unwrap(getattr(it, hint, False)):
                op.attributes[f"tt.{hint}"] = UnitAttr()
        _annotate_licm(op, getattr(it, "disable_licm", False))
        self.lscope = dict(before)
        self._bind_slots(carried, op.results, types)

    # A loop carries *slots*: ``(name, path)``, a name's value (path ``()``) or, for a name holding
    # a tuple, one leaf of it (``path`` indexes into the tuple).  A tuple is carried leaf by leaf.
    def _bind_slots(self, slots, handles, types):
        for slot, h in zip(slots, handles):
            n, path = slot
            self.lscope[n] = _replace_at(_norm(self.lscope[n]), path, tensor(h, types[slot]))

    def _slot_value(self, scope, slot, node):
        n, path = slot
        v = _norm(scope.get(n))
        for i in path:
            v = v[i]
        return v

    def _carried(self, names, before, node, dry):
        """Decide which slots (names, and the leaves of names holding tuples) a loop carries and
        their types, with dry runs of the body on scratch blocks (their ops are discarded).
        Returns ``(slots, types, initial values)``."""
        cands, first = [], {}
        for n in names:
            for path, leaf in _leaves(_norm(before[n])):
                if isinstance(leaf, tensor) or (isinstance(leaf, constexpr) and isinstance(leaf.value, (bool, int, float))):
                    cands.append((n, path))
                    first[(n, path)] = leaf
        types = {s: (first[s].type if isinstance(first[s], tensor) else sem.scalar_type_of_python(first[s].value))
                 for s in cands}
        saved_ret = (self.returned, self.ret_value)
        after = {}
        for _ in range(3):  # later rounds settle names whose type a previous round promoted
            after = dry(cands, types)
            changed = False
            for n in names:
                if isinstance(_norm(before[n]), tuple) and n in after and \
                        _structure(_norm(after[n])) != _structure(_norm(before[n])):
                    self.lscope = before
                    raise self._error(node, f"loop-carried tuple '{n}' is {_describe_value(_norm(before[n]))} before "
                                      f"the loop but {_describe_value(_norm(after[n]))} inside it; keep its structure "
                                      "the same")
            for s in cands:
                v = self._slot_value(after, s, node)
                if isinstance(v, tensor) and v.type != types[s]:
                    if isinstance(first[s], tensor):
                        self.lscope = before
                        raise self._error(node, f"loop-carried variable '{_slot_name(s)}' has type {first[s].type} "
                                          f"before the loop but is assigned {v.type} inside it; keep its type the same")
                    types[s] = v.type
                    changed = True
            if not changed:
                break
        self.lscope = before
        self.returned, self.ret_value = saved_ret
        carried = []
        for s in cands:
            v = self._slot_value(after, s, node)
            if not (isinstance(v, constexpr) and isinstance(first[s], constexpr) and v.value == first[s].value):
                carried.append(s)
        inits = []
        for n in carried:
            v, t = first[n], types[n]
            v = sem.to_tensor(v, self.builder, t.scalar if not isinstance(v, tensor) else None)
            if v.type != t:
                v = sem.broadcast_to_shape(v, t.shape, self.builder) if t.is_block() else v
                v = sem.cast(v, t.scalar, self.builder)
            inits.append(v)
        return carried, {n: types[n] for n in carried}, inits

    # -- while ------------------------------------------------------------------------------------
    def visit_While(self, node: ast.While):
        if node.orelse:
            raise self._error(node, "unsupported Python construct in a kernel: while ... else")
        b = self.builder
        before = self.lscope
        names = [n for n in assigned_names(node.body) if n in before]

        def bind(block: Block, carried, types):
            self.lscope = dict(before)
            self._bind_slots(carried, block.args, types)

        def run_body(block: Block, carried, types):
            bind(block, carried, types)
            with b.at(block):
                self._loop_body(node.body)
            return self.lscope

        def dry(carried, types):
            return run_body(Block(arg_types=[ir_type(types[n]) for n in carried]), carried, types)

        carried, types, inits = self._carried(names, before, node, dry)
        tys = [types[n] for n in carried]
        cond_block = Block(arg_types=[ir_type(t) for t in tys])
        bind(cond_block, carried, types)
        with b.at(cond_block):
            cond = self.visit(node.test)
            disable_licm = False
            if isinstance(cond, condition):  # while tl.condition(c, disable_licm=...)
                cond, disable_licm = cond.condition, cond.disable_licm
            if _static(cond):
                raise self._error(node.test, "a while loop's condition must depend on run-time values "
                                  "(a constexpr condition can never end the loop without break)")
            cond = self._scalar_condition(cond, node, "while")
            b.insert(scf.ConditionOp(cond.handle, *cond_block.args))
        body_block = Block(arg_types=[ir_type(t) for t in tys])
        scope = run_body(body_block, carried, types)
        body_block.add_op(scf.YieldOp(*self._materialize(body_block, [self._slot_value(scope, n, node) for n in carried],
                                                         tys)))
        op = b.insert(scf.WhileOp([v.handle for v in inits], [ir_type(t) for t in tys], Region(cond_block),
                                  Region(body_block)))
        _annotate_licm(op, disable_licm)
        self.lscope = dict(before)
        self._bind_slots(carried, op.results, types)

    def visit_Break(self, node):
        raise self._error(node, "unsupported Python construct in a kernel: break")

    def visit_Continue(self, node):
        raise self._error(node, "unsupported Python construct in a kernel: continue")


def _annotate_licm(op, disable_licm) -> None:
    """``disable_licm=True`` on a loop: ``llvm.loop_annotation = #llvm.loop_annotation<licm =
    <disable = true>>``, as Triton spells it; nothing is hoisted out of the loop."""
    flag = _unwrap(disable_licm)
    if isinstance(flag, tensor):
        raise TypeError("disable_licm must be a constexpr bool, got a run-time value")
    if flag:
        op.attributes[LOOP_ANNOTATION] = LoopAnnotationAttr(True)


def _norm(v):
    """A constexpr holding a tuple, as a tuple of constexprs (so that its leaves can be carried)."""
    if isinstance(v, constexpr) and isinstance(v.value, tuple):
        from .codegen import _wrap
        return _wrap(v.value)
    return v


def _leaves(v, path=()) -> list:
    if isinstance(v, tuple):
        out = []
        for i, x in enumerate(v):
            out.extend(_leaves(_norm(x), path + (i,)))
        return out
    return [(path, v)]


def _structure(v):
    return tuple(_structure(_norm(x)) for x in v) if isinstance(v, tuple) else None


def _replace_at(v, path, new):
    if not path:
        return new
    from .codegen import _remake
    items = list(v)
    items[path[0]] = _replace_at(_norm(items[path[0]]), path[1:], new)
    return _remake(v, items)


def _slot_name(slot) -> str:
    n, path = slot
    return n + "".join(f"[{i}]" for i in path)


def _pair_returns(a, b, a_vals: list, b_vals: list):
    """The structure both branches of a returning ``if`` return: where either gives a run-time
    value, or the two give different numbers, both values are collected (to be yielded) and a
    placeholder tensor stands in the structure; equal compile-time values stay as they are."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) != len(b):
            raise ValueError("the branches of `if` return different numbers of values")
        return tuple(_pair_returns(x, y, a_vals, b_vals) for x, y in zip(a, b))
    if not isinstance(a, tensor) and not isinstance(b, tensor) and not isinstance(a, tuple) \
            and not isinstance(b, tuple) and type(_unwrap(a)) is type(_unwrap(b)) and _unwrap(a) == _unwrap(b):
        return a
    if not (_is_scalar_like(a) and _is_scalar_like(b)):
        raise ValueError("the branches of `if` return different kinds of values "
                         f"({_describe_value(a)} and {_describe_value(b)})")
    a_vals.append(a)
    b_vals.append(b)
    return a if isinstance(a, tensor) else b if isinstance(b, tensor) else tensor(None, tl.int32)


def _describe_value(v) -> str:
    if isinstance(v, tensor):
        return f"a {v.type} value"
    if isinstance(v, tuple):
        return f"a tuple of {len(v)}"
    return f"the compile-time value {_unwrap(v)!r}"


def _is_scalar_like(v) -> bool:
    return isinstance(v, tensor) or (isinstance(v, constexpr) and isinstance(v.value, (bool, int, float)))
