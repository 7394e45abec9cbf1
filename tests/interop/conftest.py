"""Fixtures for the interop tests: the third-party agents' locations.

The agents are installed by ``scripts/fetch_interop_agents.sh`` (``make interop-deps``, which
``make test`` runs) into ``.interop/``. A test whose agent is missing is skipped with the reason
and the command that installs it, so a checkout without the fetch still runs green; with
``ACCORD_INTEROP_STRICT=1`` a missing agent fails the test instead (for CI).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INTEROP = ROOT / ".interop"
SDK1_MODULES = INTEROP / "acp-sdk-1" / "node_modules"
SDK1_EXAMPLES = SDK1_MODULES / "@agentclientprotocol" / "sdk" / "dist" / "examples"
SDK2_MODULES = INTEROP / "acp-sdk-2" / "node_modules"
FAST_AGENT = INTEROP / "fast-agent" / "venv" / "bin" / "fast-agent"
GEMINI = INTEROP / "gemini-cli" / "node_modules" / ".bin" / "gemini"
FETCH = "bash scripts/fetch_interop_agents.sh  (or: make interop-deps)"


def _require(path: Path, what: str) -> Path:
    if path.exists():
        return path
    message = f"{what} is not installed ({path.relative_to(ROOT)} missing); run {FETCH}"
    if os.environ.get("ACCORD_INTEROP_STRICT") == "1":
        pytest.fail(message)
    pytest.skip(message)


def _node() -> str:
    from shutil import which

    node = which("node")
    if node is None:
        message = "node is not on PATH: the npm agents cannot run"
        if os.environ.get("ACCORD_INTEROP_STRICT") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return node


@pytest.fixture
def sdk1_agent() -> list[str]:
    """The example agent of @agentclientprotocol/sdk 1.x (``dist/examples/agent.js``)."""
    script = _require(SDK1_EXAMPLES / "agent.js", "@agentclientprotocol/sdk 1.x")
    return [_node(), str(script)]


@pytest.fixture
def sdk1_dual_version_agent() -> list[str]:
    """The v1 + v2 example agent of @agentclientprotocol/sdk 1.x."""
    script = _require(SDK1_EXAMPLES / "dual-version-agent.js", "@agentclientprotocol/sdk 1.x")
    return [_node(), str(script)]


@pytest.fixture
def fast_agent() -> Path:
    """The ``fast-agent`` program of fast-agent-mcp, in its own venv."""
    return _require(FAST_AGENT, "fast-agent-mcp")


@pytest.fixture
def gemini_cli() -> list[str]:
    """The ``gemini`` program of @google/gemini-cli."""
    return [_node(), str(_require(GEMINI, "@google/gemini-cli"))]


@pytest.fixture
def sdk2_nes_types() -> Path:
    """The NES module's method table of @agentclientprotocol/sdk 2.x (``dist/nes/acp.d.ts``)."""
    sdk = SDK2_MODULES / "@agentclientprotocol" / "sdk"
    return _require(sdk / "dist" / "nes" / "acp.d.ts", "@agentclientprotocol/sdk 2.x")


def _programs(modules: Path, what: str, tmp_path: Path) -> object:
    """``program(name) -> [node, path]`` for a program of ``tests/interop/`` run with the SDK
    under ``modules`` (see :func:`sdk2_program`)."""
    sdk = _require(modules / "@agentclientprotocol" / "sdk", what)
    node = _node()
    (tmp_path / "node_modules").symlink_to(sdk.parent.parent)
    here = Path(__file__).resolve().parent

    def program(name: str) -> list[str]:
        source = here / name if "/" in name else here / "remote_sdk" / name
        target = tmp_path / source.name
        target.write_text(source.read_text())
        return [node, str(target)]

    return program


@pytest.fixture
def sdk1_program(tmp_path: Path) -> object:
    """Like :func:`sdk2_program`, with @agentclientprotocol/sdk 1.x (1.9.0)."""
    return _programs(SDK1_MODULES, "@agentclientprotocol/sdk 1.x", tmp_path)


@pytest.fixture
def sdk2_program(tmp_path: Path) -> object:
    """Run a program of ``tests/interop/remote_sdk/`` with @agentclientprotocol/sdk 2.x.

    Returns ``program(name) -> [node, path]``: the script is copied next to a link to the
    installed ``node_modules``, so its imports resolve there. A name with a directory
    (``nes_sdk/nes_client.mjs``) is a program of that directory of ``tests/interop/``.
    """
    return _programs(SDK2_MODULES, "@agentclientprotocol/sdk 2.x", tmp_path)
