"""Entry point of the frontend: a ``@jit`` function and its specialization to a TTIR module."""
from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32

from ..language import dtypes as tl
from ..language.core import constexpr, tuple as tl_tuple
from .builder import Builder
from .codegen import CodeGenerator
from .errors import CompilationError
from .semantic import check_dtype


def ast_to_ttir(fn, signature: dict, constexprs: dict, attrs: dict, options, target,
                kernel_name: str | None = None) -> ModuleOp:
    """Generate the TTIR module of kernel ``fn``: one public ``tt.func`` named ``kernel_name`` (default:
    the function's name), and private functions for its non-inlined callees."""
    arg_values, arg_attrs = [], []

    def leaf(path, ty):
        """A leaf of a tuple argument (``path``: argument index, then indices): a constexpr or
        a run-time type (its attributes appended to ``arg_attrs``)."""
        if isinstance(ty, tuple):
            items = [leaf(path + (i,), t) for i, t in enumerate(ty)]
            return type(ty)(*items) if hasattr(type(ty), "_fields") else tl_tuple(items)
        if ty == "constexpr" or path in constexprs:
            return constexpr(constexprs.get(path))
        try:
            t = tl.str_to_ty(ty)
        except (KeyError, ValueError) as e:
            raise CompilationError(f"argument '{fn.arg_names[path[0]]}{''.join(f'[{i}]' for i in path[1:])}': "
                                   f"unknown type {ty!r} ({e})", filename=fn.file,
                                   lineno=fn.file_position(fn.parse())[0], fn_name=fn.__name__) from None
        arg_attrs.append({k: IntegerAttr(int(v), i32) for k, v in (attrs.get(path) or {}).items()})
        return t

    for index, name in enumerate(fn.arg_names):
        if isinstance(signature.get(name), tuple) and name not in constexprs:
            arg_values.append(leaf((index,), signature[name]))
            continue
        if signature.get(name) == "constexpr" or name in constexprs:
            if name in constexprs:
                value = constexprs[name]
            else:
                value = fn.params[fn.arg_names.index(name)].default
            arg_values.append(constexpr(value))
            continue
        try:
            ty = tl.str_to_ty(signature[name])
        except (KeyError, ValueError) as e:
            raise CompilationError(f"argument '{name}': unknown type {signature.get(name)!r} ({e})",
                                   filename=fn.file, lineno=fn.file_position(fn.parse())[0],
                                   fn_name=fn.__name__) from None
        arg_values.append(ty)
        a = {}
        for k, v in (attrs.get(name) or {}).items():
            a[k] = IntegerAttr(int(v), i32)
        arg_attrs.append(a)
    builder = Builder(fn.file)
    builder.options = options
    builder.target = target
    gen = CodeGenerator(fn, builder, arg_values, kernel_name or fn.__name__, is_kernel=True, arg_attrs=arg_attrs,
                        noinline=False)
    for name, v in _named_leaves(fn.arg_names, arg_values):
        if isinstance(v, tl.dtype):
            try:
                check_dtype(v, builder)
            except TypeError as e:
                raise CompilationError(f"argument '{name}': {e}", filename=fn.file,
                                       lineno=fn.file_position(fn.parse())[0], col=fn.file_position(fn.parse())[1],
                                       source_line=fn.source_line(fn.file_position(fn.parse())[0]),
                                       fn_name=fn.__name__) from None
    builder.codegen = gen
    gen.generate()
    try:
        builder.module.verify()
    except Exception as e:  # noqa: BLE001
        raise CompilationError(f"internal compiler error: the generated TTIR does not verify: {e}",
                               filename=fn.file, lineno=fn.file_position(fn.parse())[0], fn_name=fn.__name__) from None
    return builder.module


def _named_leaves(names, values):
    for name, v in zip(names, values):
        if isinstance(v, tuple):
            yield from _named_leaves([f"{name}[{i}]" for i in range(len(v))], v)
        else:
            yield name, v
