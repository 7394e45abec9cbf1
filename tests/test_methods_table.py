"""``docs/methods.md`` lists every method of the schema's v1 tables, truthfully.

The page has one row per method of ``AGENT_METHODS``, ``CLIENT_METHODS`` and
``PROTOCOL_METHODS`` (``mcp/message`` twice: a request the client handles, a notification the
agent handles). This test fails when a method has no row, when a row names a method the tables
do not have, when a row's kind or gate disagrees with the table, when a role cell names an API
that does not exist, when a named test does not exist, and when the agent side says
``serves`` for a method neither ``AgentRuntime`` nor ``CoderRuntime`` implements (or
``not yet`` for one that one of them does).
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accord.agent import AgentRuntime
from accord.client import ClientSession, ConnectedAgent, NesSession, connect
from accord.coder import CoderRuntime
from accord.engines import SessionContext, TerminalHandle, TurnContext
from accord.roles import Agent
from accord.schema.methods import AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS, MethodSpec

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "methods.md"

#: The public classes a role cell may name (``Class.attribute``).
NAMESPACE: dict[str, type[Any]] = {
    "AgentRuntime": AgentRuntime,
    "CoderRuntime": CoderRuntime,
    "SessionContext": SessionContext,
    "TurnContext": TurnContext,
    "TerminalHandle": TerminalHandle,
    "ConnectedAgent": ConnectedAgent,
    "ClientSession": ClientSession,
    "NesSession": NesSession,
}
SERVING_RUNTIMES = (AgentRuntime, CoderRuntime)
ROLE_WORDS = ("serves:", "calls:", "both:", "not yet")
NAMED = re.compile(r"`([A-Za-z_]\w*)\.([A-Za-z_]\w*)`")
CONNECT_OPTION = re.compile(r"`connect\((?:(\w+)=\.\.\.)?\)`")
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


@dataclass(frozen=True)
class Row:
    method: str
    handled_by: str
    kind: str
    gate: str
    agent_side: str
    client_side: str
    tests: str


def rows() -> list[Row]:
    found: list[Row] = []
    for line in PAGE.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == 7, f"a row of docs/methods.md has {len(cells)} cells: {line}"
        found.append(Row(cells[0].strip("`"), *cells[1:]))
    return found


def expected() -> dict[tuple[str, str], MethodSpec]:
    table: dict[tuple[str, str], MethodSpec] = {}
    for side, methods in (("agent", AGENT_METHODS), ("client", CLIENT_METHODS)):
        for name, spec in methods.items():
            table[(name, side)] = spec
    for name, spec in PROTOCOL_METHODS.items():
        table[(name, "either")] = spec
    return table


def served_by_a_runtime(spec: MethodSpec) -> bool:
    if spec.method == "initialize":
        return True  # answered by accord.roles.Agent itself
    return any(
        getattr(runtime, spec.handler) is not getattr(Agent, spec.handler)
        for runtime in SERVING_RUNTIMES
    )


def test_every_method_of_the_schema_tables_has_exactly_one_row() -> None:
    listed = [(row.method, row.handled_by) for row in rows()]
    duplicates = sorted({key for key in listed if listed.count(key) > 1})
    assert not duplicates, f"methods listed twice in docs/methods.md: {duplicates}"
    missing = sorted(set(expected()) - set(listed))
    assert not missing, f"methods of the schema tables with no row in docs/methods.md: {missing}"
    unknown = sorted(set(listed) - set(expected()))
    assert not unknown, f"rows of docs/methods.md for methods the tables do not have: {unknown}"


def test_kinds_and_gates_agree_with_the_tables() -> None:
    table = expected()
    for row in rows():
        spec = table[(row.method, row.handled_by)]
        assert row.kind == spec.kind, row.method
        if spec.capability is not None:
            path = ".".join(spec.capability)
            assert f"`{path}`" in row.gate, f"{row.method}: the gate must name `{path}`"
        assert row.gate, row.method


def test_role_cells_say_what_accord_does_and_name_apis_that_exist() -> None:
    connect_options = set(inspect.signature(connect).parameters)
    for row in rows():
        for cell in (row.agent_side, row.client_side):
            assert cell.startswith(ROLE_WORDS), f"{row.method}: {cell!r}"
            for owner, attribute in NAMED.findall(cell):
                assert owner in NAMESPACE, f"{row.method}: unknown class {owner!r}"
                assert hasattr(NAMESPACE[owner], attribute), f"{row.method}: {owner}.{attribute}"
            for option in CONNECT_OPTION.findall(cell):
                assert not option or option in connect_options, f"{row.method}: connect({option})"


def test_the_agent_side_says_serves_exactly_for_the_methods_a_runtime_implements() -> None:
    table = expected()
    for row in rows():
        if row.handled_by != "agent":
            continue
        served = served_by_a_runtime(table[(row.method, row.handled_by)])
        says = row.agent_side.startswith("serves:")
        assert says == served, (
            f"{row.method}: docs/methods.md says {row.agent_side!r}, but "
            f"{'a runtime implements it' if served else 'no runtime implements it'}"
        )
        assert served or row.agent_side == "not yet", row.method


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def test_every_named_test_exists() -> None:
    for row in rows():
        if row.tests == "not yet":
            continue
        refs = TEST_REF.findall(row.tests)
        assert refs, f"{row.method}: the tests cell names no test ({row.tests!r})"
        left = TEST_REF.sub("", row.tests).replace(",", "").strip()
        assert not left, f"{row.method}: the tests cell has more than test names: {left!r}"
        for file, name in refs:
            path = ROOT / file
            assert path.is_file(), f"{row.method}: {file} does not exist"
            assert name in _test_names(path), f"{row.method}: {file} has no {name}"
