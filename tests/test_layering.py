"""The package layering drawn in docs/architecture.md is the layering of the code.

Every import of every module under ``src/accord`` (at module level, inside functions, under
``TYPE_CHECKING``: a dependency is a dependency) is resolved to the accord package it names;
the set of packages each package imports must be exactly the one the architecture page's
layer table lists for it. An import that breaks the layering fails here, and so does a row
of the table that the code no longer needs: change the page and the code together.

A package also uses another only through its public names: an import that reaches into another
package's private module (``from ..coder._config import ...``) or takes a private name from it
(``from ..coder import _helper``) fails here too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "src" / "accord"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

#: A row of the layer table: | `accord.name` | job | imports |
_ROW = re.compile(r"^\|\s*`accord\.(?P<package>[a-z_]+)`\s*\|.*\|\s*(?P<imports>[^|]*?)\s*\|\s*$")


def documented_layers(page: str) -> dict[str, set[str]]:
    """The layer table of the architecture page: package -> the packages it may import."""
    section = page.split("## Layers", 1)[1].split("\n## ", 1)[0]
    layers: dict[str, set[str]] = {}
    for line in section.splitlines():
        match = _ROW.match(line)
        if match is None:
            continue
        imports = match["imports"]
        names = set() if imports == "none" else {n.strip() for n in imports.split(",")}
        layers[match["package"]] = names
    return layers


def _module_parts(path: Path, sources: Path) -> list[str]:
    parts = ["accord", *path.relative_to(sources).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_packages(sources: Path) -> dict[str, dict[str, list[str]]]:
    """package -> {imported accord package -> where ("file:line")}, across packages only."""
    found: dict[str, dict[str, list[str]]] = {}
    for path in sorted(sources.rglob("*.py")):
        module = _module_parts(path, sources)
        package = module[1] if len(module) > 1 else ""
        if not package:
            continue  # accord/__init__.py: the top, importing nothing of its own is not checked
        # What a relative import is relative to: the package the module is in.
        base = module if path.name == "__init__.py" else module[:-1]
        found.setdefault(package, {})
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[list[str]] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = base[: len(base) - node.level + 1]
                    target = anchor + (node.module.split(".") if node.module else [])
                else:
                    target = (node.module or "").split(".")
                if target == ["accord"]:  # from accord import client: the names are packages
                    targets += [["accord", alias.name] for alias in node.names]
                else:
                    targets.append(target)
            elif isinstance(node, ast.Import):
                targets += [alias.name.split(".") for alias in node.names]
            for target in targets:
                if target[0] != "accord" or len(target) < 2 or target[1] == package:
                    continue
                where = f"{path.relative_to(sources.parent)}:{getattr(node, 'lineno', 0)}"
                found[package].setdefault(target[1], []).append(where)
    return found


def _import_targets(node: ast.AST, base: list[str]) -> list[list[str]]:
    """The dotted names an import statement reaches, names taken from a module included."""
    if isinstance(node, ast.Import):
        return [alias.name.split(".") for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        module = base[: len(base) - node.level + 1] + (
            node.module.split(".") if node.module else []
        )
    else:
        module = (node.module or "").split(".")
    return [[*module, alias.name] for alias in node.names]


def private_imports(sources: Path) -> list[str]:
    """Every import of another accord package's private module or name ("file:line name")."""
    found: list[str] = []
    for path in sorted(sources.rglob("*.py")):
        module = _module_parts(path, sources)
        if len(module) < 2:
            continue
        package = module[1]
        base = module if path.name == "__init__.py" else module[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for target in _import_targets(node, base):
                if len(target) < 3 or target[0] != "accord" or target[1] == package:
                    continue
                if any(part.startswith("_") for part in target[2:]):
                    where = f"{path.relative_to(sources.parent)}:{getattr(node, 'lineno', 0)}"
                    found.append(f"{where} {'.'.join(target)}")
    return found


def layering_violations(sources: Path, layers: dict[str, set[str]]) -> list[str]:
    """Every way the code at ``sources`` differs from the documented ``layers``."""
    problems: list[str] = []
    actual = imported_packages(sources)
    for package, imports in sorted(actual.items()):
        if package not in layers:
            problems.append(f"accord.{package} has no row in the layer table")
            continue
        for target, where in sorted(imports.items()):
            if target not in layers[package]:
                problems.append(
                    f"accord.{package} imports accord.{target}, which the layer table does "
                    f"not allow ({', '.join(where[:3])})"
                )
        for target in sorted(layers[package] - imports.keys()):
            problems.append(
                f"the layer table lets accord.{package} import accord.{target}, "
                "but it no longer does: remove it from the table"
            )
    for package in sorted(layers.keys() - actual.keys()):
        problems.append(f"the layer table names accord.{package}, which does not exist")
    return problems


def test_the_code_imports_exactly_what_the_architecture_page_documents() -> None:
    layers = documented_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    assert layers, "no layer table found in docs/architecture.md"
    assert layering_violations(SOURCES, layers) == []


def test_no_package_imports_another_package_s_private_modules_or_names() -> None:
    assert private_imports(SOURCES) == []


def test_the_documented_layers_have_no_cycle() -> None:
    layers = documented_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    done: set[str] = set()

    def visit(package: str, path: tuple[str, ...]) -> None:
        assert package not in path, "import cycle: " + " -> ".join((*path, package))
        if package in done:
            return
        for target in layers.get(package, set()):
            visit(target, (*path, package))
        done.add(package)

    for package in layers:
        visit(package, ())


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    "bad_import",
    [
        "from ..client import connect",
        "from ..client._session import ClientSession",
        "import accord.client",
        "from accord.client import connect",
        "from .. import client",
    ],
)
def test_a_deliberately_bad_import_is_reported(tmp_path: Path, bad_import: str) -> None:
    """A synthetic tree: events may import schema only; one module reaches up into client."""
    sources = tmp_path / "accord"
    _write(sources, "__init__.py", "")
    _write(sources, "schema/__init__.py", "")
    _write(sources, "client/__init__.py", "from ..events import Event\n")
    _write(sources, "events/__init__.py", "from ._good import Event\n")
    _write(sources, "events/_good.py", "from ..schema import Model\nfrom . import _bad\n")
    _write(sources, "events/_bad.py", f"def late():\n    {bad_import}\n")
    layers = {"schema": set(), "events": {"schema"}, "client": {"events"}}
    problems = layering_violations(sources, layers)
    assert len(problems) == 1, problems
    assert problems[0].startswith("accord.events imports accord.client")
    assert "events/_bad.py:2" in problems[0]
    # Without the bad line, the same tree is clean.
    _write(sources, "events/_bad.py", "def late():\n    from ..schema import Model\n")
    assert layering_violations(sources, layers) == []


def test_a_stale_or_missing_row_is_reported(tmp_path: Path) -> None:
    sources = tmp_path / "accord"
    _write(sources, "schema/__init__.py", "")
    _write(sources, "events/__init__.py", "from ..schema import Model\n")
    assert layering_violations(sources, {"schema": set()}) == [
        "accord.events has no row in the layer table"
    ]
    assert layering_violations(sources, {"schema": {"events"}, "events": {"schema"}}) == [
        "the layer table lets accord.schema import accord.events, but it no longer does: "
        "remove it from the table"
    ]


@pytest.mark.parametrize(
    ("line", "reported"),
    [
        ("from ..schema._models import Model", "accord.schema._models.Model"),
        ("from ..schema import _helper", "accord.schema._helper"),
        ("from accord.schema._models import Model", "accord.schema._models.Model"),
        ("import accord.schema._models", "accord.schema._models"),
        ("from .. import schema", None),
        ("from ..schema import Model", None),
        ("from ._good import Event", None),
        ("from accord.events._good import Event", None),
    ],
)
def test_a_private_import_across_packages_is_reported(
    tmp_path: Path, line: str, reported: str | None
) -> None:
    """A synthetic tree: events reaches into schema; its own private modules are its own."""
    sources = tmp_path / "accord"
    _write(sources, "__init__.py", "")
    _write(sources, "schema/__init__.py", "from ._models import Model\n")
    _write(sources, "schema/_models.py", "Model = object\n")
    _write(sources, "events/__init__.py", "")
    _write(sources, "events/_good.py", "Event = object\n")
    _write(sources, "events/_uses.py", f"def late():\n    {line}\n")
    found = private_imports(sources)
    if reported is None:
        assert found == []
    else:
        assert found == [f"accord/events/_uses.py:2 {reported}"]


def module_cycles(sources: Path) -> list[list[str]]:
    """The import cycles between modules of one package (``__init__`` left out: it re-exports
    its modules' names), each as its sorted module names; every import counts, lazy ones and
    those under ``TYPE_CHECKING`` too."""
    modules = {tuple(_module_parts(p, sources)): p for p in sources.rglob("*.py")}
    edges: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    for module, path in modules.items():
        if path.name == "__init__.py":
            continue
        targets: set[tuple[str, ...]] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for target in _import_targets(node, list(module[:-1])):
                for candidate in (tuple(target), tuple(target[:-1])):
                    found = modules.get(candidate)
                    same_package = candidate[:-1] == module[:-1]
                    if found is not None and found.name != "__init__.py" and same_package:
                        targets.add(candidate)
        targets.discard(module)
        edges[module] = targets
    # Tarjan's strongly connected components: every component of two or more is a cycle.
    index: dict[tuple[str, ...], int] = {}
    low: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...]] = []
    cycles: list[list[str]] = []

    def visit(node: tuple[str, ...]) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[tuple[str, ...]] = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(".".join(m) for m in component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(cycles)


def test_no_two_modules_of_a_package_import_each_other() -> None:
    assert module_cycles(SOURCES) == []


def test_a_cycle_between_two_modules_is_reported(tmp_path: Path) -> None:
    sources = tmp_path / "accord"
    _write(sources, "__init__.py", "")
    _write(sources, "client/__init__.py", "from ._a import A\nfrom ._b import B\n")
    _write(sources, "client/_a.py", "def f():\n    from ._b import B\n")
    _write(
        sources,
        "client/_b.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import _a\n",
    )
    _write(sources, "client/_c.py", "from ._a import f\n")
    assert module_cycles(sources) == [["accord.client._a", "accord.client._b"]]
