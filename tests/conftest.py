"""Suite-wide fixtures: async backends and the schema check of every message on the wire.

Every async test (``@pytest.mark.anyio``) runs on asyncio and on trio through the one
``anyio_backend`` fixture here. A test or module whose code runs on asyncio only says so with
``@pytest.mark.asyncio_only("why")`` (e.g. pydantic-ai, Textual, the official SDK); a directory
whose code is asyncio-only throughout overrides ``anyio_backend`` in its own ``conftest.py``
with the reason in the docstring.

Every test runs with a process-wide wire observer (``accord.jsonrpc.set_wire_observer``) that
validates each JSON-RPC message sent or received by any connection in the test process against
the official ACP v1 ``schema.unstable.json`` (fetched by ``scripts/fetch_schema.sh``): params by
method, results through the id of the request they answer. A message that does not validate
fails the test at teardown, with the schema's explanation. Tests that feed deliberately
malformed input (an in-process peer that misbehaves on purpose, garbage frames) or talk to
third-party agents whose output is not ours to vouch for, opt out with
``@pytest.mark.wire_unchecked("reason")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from helpers.wire_schema import WireValidator

from accord.jsonrpc import set_wire_observer

ANYIO_BACKENDS = ("asyncio", "trio")
"""The backends every async test runs on unless it is marked ``asyncio_only``."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "wire_unchecked(reason): do not schema-check the messages of this test",
    )
    config.addinivalue_line(
        "markers",
        "asyncio_only(reason): the code under test runs on asyncio only; no trio run",
    )


@pytest.fixture(params=ANYIO_BACKENDS)
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The backend an async test runs on: each of :data:`ANYIO_BACKENDS` in turn."""
    return request.param


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests marked ``asyncio_only`` get asyncio alone (before the fixture's own params)."""
    if (
        "anyio_backend" in metafunc.fixturenames
        and metafunc.definition.get_closest_marker("asyncio_only") is not None
    ):
        metafunc.parametrize("anyio_backend", ["asyncio"])


@pytest.fixture(scope="session")
def wire_validator() -> WireValidator:
    """The schema validator shared by the whole run (the schema is loaded once)."""
    return WireValidator()


@pytest.fixture(autouse=True)
def _check_wire_messages(
    request: pytest.FixtureRequest, wire_validator: WireValidator
) -> Iterator[list[str]]:
    """Validate every message crossing a connection during the test (see module doc)."""
    failures: list[str] = []
    if request.node.get_closest_marker("wire_unchecked") is not None:
        yield failures
        return

    def observe(direction: Literal["sent", "received"], message: Any) -> None:
        try:
            wire_validator.validate(message, direction)
        except AssertionError as error:
            failures.append(str(error))

    previous = set_wire_observer(observe)
    try:
        yield failures
    finally:
        set_wire_observer(previous)
    if failures:
        shown = "\n\n".join(failures[:5])
        more = f"\n\n... and {len(failures) - 5} more" if len(failures) > 5 else ""
        pytest.fail(f"{len(failures)} message(s) on the wire broke the ACP schema:\n{shown}{more}")


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's own configuration directory (``XDG_CONFIG_HOME``), and no model provider's
    key in the environment: what the coder reads and writes of its settings stays the test's."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(variable, "placeholder")  # restored by monkeypatch after
        monkeypatch.delenv(variable)
    return tmp_path / "config"
