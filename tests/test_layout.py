"""The package's layout: no import circle, and no module reads another's private names.

Both are read from the source with :mod:`ast`, every import counted (those
done only for type checking and those inside functions too), so that a
circle cannot hide behind ``TYPE_CHECKING`` or a lazy import.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "lodestar"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules) -> dict[str, set[str]]:
    """The lodestar modules ``name`` imports, each with the local names it binds to them."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    bound: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    bound.setdefault(f"{base}.{alias.name}", set()).add(alias.asname or alias.name)
                elif base in modules:
                    bound.setdefault(base, set())
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules and alias.asname:
                    bound.setdefault(alias.name, set()).add(alias.asname)
    bound.pop(name, None)
    return bound


def test_no_module_imports_itself_through_others():
    modules = _modules()
    graph = {name: set(_imports(name, path, modules)) for name, path in modules.items()}
    # A package's __init__ imports its submodules by design (re-exports); a
    # circle through a package's own __init__ is not a circle of concepts.
    graph = {
        name: {t for t in targets if not (name.startswith(t + ".") and t in graph)}
        for name, targets in graph.items()
    }
    circles = []
    state: dict[str, int] = {}

    def visit(name, path):
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                circles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert circles == []


def test_no_module_reads_another_modules_private_names():
    modules = _modules()
    reads = []
    for name, path in modules.items():
        local_names = {
            local: target
            for target, locals_ in _imports(name, path, modules).items()
            for local in locals_
        }
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in local_names
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                reads.append(f"{name}: {node.value.id}.{node.attr}")
    assert reads == []
