"""The house's layering, measured from the source: import circles between the project's modules
and imports of the project's own modules placed inside functions (which hide circles and make a
module's dependencies invisible).  The bounds are ratchets: lower them as the code improves."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"tritium": ROOT / "core", "tritium_nvidia": ROOT / "plugins/nvidia/tritium_nvidia",
            "tritium_amd": ROOT / "plugins/amd/tritium_amd"}
#: a package whose __init__ gathers submodules that use each other through the package
ALLOWED_CIRCLES = [{"tritium.language", "tritium.language.random", "tritium.language.standard"}]
MAX_FUNCTION_LEVEL_IMPORTS = 45


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            rel = path.relative_to(root).with_suffix("")
            if "_triton_shim" in rel.parts:
                continue  # Triton's names over Tritium's, imported only under the alias
            parts = [p for p in rel.parts if p != "__init__"]
            mods[".".join([pkg, *parts])] = path
    return mods


def _targets(mods: dict, name: str, is_pkg: bool, node) -> list[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = name.split(".") if is_pkg else name.split(".")[:-1]
            parts = parts[:len(parts) - node.level + 1]
            base = ".".join(parts + ([node.module] if node.module else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    out = []
    for t in names:
        while t and t not in mods:
            t = t.rpartition(".")[0]
        if t:
            out.append(t)
    return out


def import_graph() -> tuple[dict[str, set[str]], list[tuple[str, str]]]:
    """Module-level imports (outside ``if TYPE_CHECKING``) as edges, and function-level ones."""
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    inner: list[tuple[str, str]] = []
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"

        def visit(node, in_func: bool) -> None:
            for ch in ast.iter_child_nodes(node):
                if isinstance(ch, (ast.Import, ast.ImportFrom)):
                    for t in _targets(mods, name, is_pkg, ch):
                        if in_func:
                            inner.append((name, t))
                        elif t != name:
                            edges[name].add(t)
                elif isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(ch, True)
                elif isinstance(ch, ast.If) and "TYPE_CHECKING" in ast.dump(ch.test):
                    continue
                else:
                    visit(ch, in_func)

        visit(ast.parse(path.read_text()), False)
    return edges, inner


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.add(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def test_no_new_import_circles():
    edges, _ = import_graph()
    found = circles(edges)
    extra = [c for c in found if c not in ALLOWED_CIRCLES]
    assert not extra, "modules importing each other at module level: " + "; ".join(
        " <-> ".join(sorted(c)) for c in extra)


def test_function_level_imports_of_project_modules_do_not_grow():
    _, inner = import_graph()
    assert len(inner) <= MAX_FUNCTION_LEVEL_IMPORTS, (
        f"{len(inner)} imports of the project's modules inside functions (at most "
        f"{MAX_FUNCTION_LEVEL_IMPORTS}); import at module level, or break the circle that forbids it")


def test_the_analysis_sees_a_circle():
    """The checker itself: a two-module circle is found, a chain is not."""
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]
    assert circles({"a": {"b"}, "b": set()}) == []
