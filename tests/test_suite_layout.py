"""The test tree follows the naming rules of ``tests/README.md``.

Every Python file under ``tests/`` is a test module (``test_*.py``), a ``conftest.py``, a helper
of its directory named after it (``_<dir>_<what>.py``) or a shared helper in ``tests/helpers``;
basenames are unique (the test directories are not packages, so two equal names would collide
in ``sys.modules``); only ``tests/helpers`` has an ``__init__.py``; no test waits on a bound of
its own (``fail_after``, ``move_on_after`` and ``.wait`` take a name from
``helpers.timeouts``); a private module is imported only if ``tests/README.md`` ("Public
names") lists it, mirrored in :data:`PRIVATE_MODULES_KEPT`.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
#: Data and non-Python fixtures: not part of the naming rules.
_SKIPPED = {"golden", "__snapshots__"}
#: ``fail_after(5)``, ``move_on_after(0.5)``, ``process.wait(10)``: a literal bound.
_LITERAL_BOUND = re.compile(r"(?:\bfail_after|\bmove_on_after|\.wait)\(\s*[0-9.]+\s*\)")


#: The private modules tests may import, each listed with its reason in ``tests/README.md``.
PRIVATE_MODULES_KEPT = frozenset(
    {
        "accord.agent._cursor",
        "accord.agent._kept_state",
        "accord.agent._restore",
        "accord.agent._tracing",
        "accord.remote._admission",
        "accord.remote._server",
        "accord.remote._websocket",
        "accord.cli._agent_spec",
        "accord.cli._bridge_link",
        "accord.cli._build_agent",
        "accord.cli._display",
        "accord.cli._elicit",
        "accord.cli._main",
        "accord.cli._serve",
        "accord.cli._settings",
        "accord.client._fs",
        "accord.client._mcp_host",
        "accord.client._session",
        "accord.client._terminals",
        "accord.coder._acp_mcp",
        "accord.coder._agent",
        "accord.coder._openai_chat",
        "accord.coder._chat_body",
        "accord.engines.pydantic_ai._history",
        "accord.coder._commands",
        "accord.coder._config",
        "accord.coder._files",
        "accord.coder._mcp",
        "accord.coder._modes",
        "accord.coder._open",
        "accord.coder._paths",
        "accord.coder._process",
        "accord.coder._prompt",
        "accord.coder._prompt_cache",
        "accord.coder._search",
        "accord.coder._session",
        "accord.engines.pydantic_ai._pipe",
        "accord.engines.pydantic_ai._title",
        "accord.remote._client",
        "accord.remote._http_client",
        "accord.roles._capabilities",
        "accord.roles._generated_roles",
        "accord.schema._generated_v1",
        "accord.store._codec",
        "accord.store._postgres_listen",
        "accord.store._postgres_schema",
        "accord.store._schema",
        "accord.store._sqlite",
        "accord.testing._transport_check",
        "accord.transports._fd",
        "accord.transports._memory",
        "accord.transports._stream",
        "accord.transports._subprocess",
        "accord.tui._app",
        "accord.tui._conversation",
        "accord.tui._elicitation",
        "accord.tui._footer",
        "accord.tui._permission",
        "accord.tui._picker",
        "accord.tui._prompt",
        "accord.tui._providers",
        "accord.tui._tool_card",
    }
)


def private_imports(source: str) -> set[str]:
    """The private ``accord`` modules ``source`` imports.

    Both spellings count: ``import accord.x._y`` / ``from accord.x._y import z`` and
    ``from accord.x import _y``.
    """
    found: set[str] = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:  # not this check's business: collecting the file reports it
        return found
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] != "accord":
                continue
            private = next((i for i, part in enumerate(parts) if part.startswith("_")), None)
            if private is not None:
                found.add(".".join(parts[: private + 1]))
    return found


def python_files(root: Path) -> list[Path]:
    """Every ``.py`` file below ``root``, data directories left out."""
    return sorted(
        path
        for path in root.rglob("*.py")
        if not _SKIPPED & set(path.relative_to(root).parts) and "__pycache__" not in path.parts
    )


def layout_problems(root: Path) -> list[str]:
    """Every way the tree at ``root`` breaks the naming rules (see the module doc)."""
    problems: list[str] = []
    files = python_files(root)
    for name, count in Counter(path.name for path in files).items():
        if count > 1 and name not in ("conftest.py", "__init__.py"):
            problems.append(f"{name} is the basename of {count} files")
    for path in files:
        relative = path.relative_to(root)
        top = relative.parts[0] if len(relative.parts) > 1 else ""
        name = path.name
        if name == "__init__.py":
            if relative.parts != ("helpers", "__init__.py"):
                problems.append(f"{relative}: test directories are not packages")
        elif name.startswith("test_") or name == "conftest.py" or top == "helpers":
            pass
        elif not top:
            problems.append(f"{relative}: a helper at the top belongs in helpers/")
        elif not name.startswith(f"_{path.parent.name}_"):
            problems.append(f"{relative}: a helper of {path.parent.name}/ is _{path.parent.name}_*")
        if path != Path(__file__).resolve() and _LITERAL_BOUND.search(path.read_text("utf-8")):
            problems.append(f"{relative}: a literal wait bound; use helpers.timeouts")
        for module in sorted(private_imports(path.read_text("utf-8")) - PRIVATE_MODULES_KEPT):
            problems.append(f"{relative}: imports {module}; use a public name or list it")
    return problems


def test_the_test_tree_follows_its_naming_rules() -> None:
    assert layout_problems(TESTS) == []


@pytest.mark.parametrize(
    ("relative", "text", "problem"),
    [
        ("agent/_support.py", "", "agent/_support.py: a helper of agent/ is _agent_*"),
        ("tool.py", "", "tool.py: a helper at the top belongs in helpers/"),
        ("agent/__init__.py", "", "agent/__init__.py: test directories are not packages"),
        ("cli/test_agent.py", "", "test_agent.py is the basename of 2 files"),
        (
            "cli/test_wait.py",
            "with anyio.fail_after(5):\n",
            "cli/test_wait.py: a literal wait bound; use helpers.timeouts",
        ),
        (
            "cli/test_exit.py",
            "assert process.wait(10) == 0\n",
            "cli/test_exit.py: a literal wait bound; use helpers.timeouts",
        ),
        (
            "cli/test_private.py",
            "from accord.client._view import SessionView\n",
            "cli/test_private.py: imports accord.client._view; use a public name or list it",
        ),
        (
            "cli/test_private.py",
            "from accord.agent import _pipeline\n",
            "cli/test_private.py: imports accord.agent._pipeline; use a public name or list it",
        ),
        (
            "cli/test_private.py",
            "import accord.store._follow as follow\nfrom accord.client._fs import resolve_within\n",
            "cli/test_private.py: imports accord.store._follow; use a public name or list it",
        ),
    ],
)
def test_a_file_against_the_rules_is_reported(
    tmp_path: Path, relative: str, text: str, problem: str
) -> None:
    """A synthetic tree that follows the rules, then one file that does not."""
    for good in (
        "conftest.py",
        "agent/conftest.py",
        "agent/test_agent.py",
        "agent/_agent_support.py",
        "helpers/__init__.py",
        "helpers/timeouts.py",
        "golden/v1/anything.py",
    ):
        (tmp_path / good).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / good).write_text("with anyio.fail_after(TIMEOUT):\n", encoding="utf-8")
    assert layout_problems(tmp_path) == []
    (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / relative).write_text(text, encoding="utf-8")
    assert layout_problems(tmp_path) == [problem]
