"""The layers of DESIGN.md, checked on the source: every import in ``airflow_hoodie/``, lazy
ones inside functions included (``if TYPE_CHECKING:`` blocks excluded: they never run).

- ``table/`` (the format) imports nothing from actions, spark or the Airflow layers, so
  Spark executors, the triggerer and the CLI can use it alone;
- ``actions/`` imports nothing from spark or the Airflow layers;
- ``hooks/`` imports nothing from triggers, operators or sensors;
- no import cycle (strongly connected component of the module graph) spans two top-level
  packages: a cycle between layers is a layer violation one of its edges hides;
- no module is over 600 lines and no function over 80 (sync or async, methods and nested
  functions included): split along a real seam rather than raising the limits.

Each failure names ``file:line`` and the rule it breaks.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "airflow_hoodie"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE
AIRFLOW_LAYERS = ("hooks", "operators", "sensors", "triggers", "plugins", "health")

#: top-level package -> the top-level packages it must not import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "table": ("actions", "spark", *AIRFLOW_LAYERS),
    "actions": ("spark", *AIRFLOW_LAYERS),
    "hooks": ("triggers", "operators", "sensors"),
}

#: one import: (importing module, imported module, file, line)
Edge = tuple[str, str, Path, int]


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """Ids of the nodes inside ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``) blocks."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
                    (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
                for inner in node.body:
                    skipped.update(id(n) for n in ast.walk(inner))
    return skipped


def _resolve(name: str, modules: dict[str, Path]) -> str:
    """The module of ours ``name`` refers to (a name imported from a module is that module)."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skipped = _type_checking_nodes(tree)
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # ``from pkg import module`` imports that module
            found += [(f"{target}.{alias.name}", node.lineno) if f"{target}.{alias.name}" in modules
                      else (target, node.lineno) for alias in node.names]
    resolved = [(module, _resolve(name, modules), path, line) for name, line in found
                if name == PACKAGE or name.startswith(PACKAGE + ".")]
    return list(dict.fromkeys(resolved))  # ``from m import a, b``: one import of m


def _top(module: str, modules: dict[str, Path]) -> str:
    """The top-level package a module belongs to; modules directly under ``airflow_hoodie``
    (config, errors, cli, ...) belong to none of them: ``<root>``."""
    parts = module.split(".")
    if len(parts) > 1 and (ROOT / parts[1]).is_dir():
        return parts[1]
    return "<root>"


def _edges() -> tuple[dict[str, Path], list[Edge]]:
    modules = _modules()
    edges = [edge for name, path in modules.items() for edge in _imports(name, path, modules)]
    return modules, edges


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT.parent)}:{line}"


def test_each_layer_imports_only_the_layers_below_it() -> None:
    modules, edges = _edges()
    broken = []
    for source, target, path, line in edges:
        src, dst = _top(source, modules), _top(target, modules)
        if dst in FORBIDDEN.get(src, ()):
            broken.append(f"{_where(path, line)}: {source} imports {target}, but {src}/ must import nothing from "
                          f"{', '.join(FORBIDDEN[src])} (DESIGN.md, Layers)")
    assert not broken, "\n".join(broken)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the module graph is deep enough to matter)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def test_no_import_cycle_spans_two_top_level_packages() -> None:
    modules, edges = _edges()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for source, target, _path, _line in edges:
        if source != target:
            graph[source].add(target)
    broken = []
    for component in _strongly_connected(graph):
        packages = sorted({_top(m, modules) for m in component})
        if len(packages) < 2:
            continue
        members = set(component)
        crossing = [f"{_where(path, line)}: {source} imports {target}" for source, target, path, line in edges
                    if source in members and target in members
                    and _top(source, modules) != _top(target, modules)]
        broken.append(f"an import cycle of {len(component)} modules spans {', '.join(packages)} (a cycle between "
                      "layers hides a layer violation); its imports across packages:\n  " + "\n  ".join(crossing))
    assert not broken, "\n".join(broken)


def test_the_scan_sees_lazy_imports_and_skips_type_checking_blocks(tmp_path: Path) -> None:
    """The scan itself: an import inside a function counts, one under TYPE_CHECKING does not."""
    source = tmp_path / "probe.py"
    source.write_text("from typing import TYPE_CHECKING\n"
                      "if TYPE_CHECKING:\n    from airflow_hoodie.spark import upsert\n"
                      "def f():\n    from airflow_hoodie.actions import commit\n", encoding="utf-8")
    modules = _modules()
    found = {(target, line) for _s, target, _p, line in _imports("airflow_hoodie.table.probe", source, modules)}
    assert found == {("airflow_hoodie.actions.commit", 5)}


# ------------------------------------------------------------------ sizes
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _source_files() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def test_the_package_has_source_files():
    assert len(_source_files()) > 100


def test_no_module_is_over_600_lines():
    offenders = []
    for path in _source_files():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            offenders.append(f"{path.relative_to(ROOT.parent)}: {lines} lines")
    assert not offenders, f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(offenders)


def test_no_function_is_over_80_lines():
    offenders = []
    for path in _source_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # decorators excluded, docstring included: the lines of the def itself
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    offenders.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}: {lines} lines")
    assert not offenders, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(offenders)
