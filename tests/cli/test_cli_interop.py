"""``accord run`` driving a third-party agent: the example agent of the official TypeScript
SDK (``@agentclientprotocol/sdk``, installed into ``.interop/`` by
``scripts/fetch_interop_agents.sh``; skipped when missing, failed with
``ACCORD_INTEROP_STRICT=1``). It reads a file, then asks permission to edit a configuration
file, and takes a few seconds (it simulates work).
"""

from __future__ import annotations

import os
import shlex
import shutil

import pytest
from _cli_support import ROOT, accord
from helpers.timeouts import TIMEOUT

from accord.cli import ExitCode

pytestmark = [pytest.mark.subprocess, pytest.mark.interop]

SDK_AGENT = ROOT / ".interop/acp-sdk-1/node_modules/@agentclientprotocol/sdk/dist/examples/agent.js"


@pytest.fixture
def sdk_agent() -> str:
    """The ``--agent`` command line of the SDK's example agent."""
    node = shutil.which("node")
    missing = None
    if not SDK_AGENT.exists():
        missing = f"{SDK_AGENT.relative_to(ROOT)} is missing; run scripts/fetch_interop_agents.sh"
    elif node is None:
        missing = "node is not on PATH"
    if missing is not None:
        if os.environ.get("ACCORD_INTEROP_STRICT") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    assert node is not None
    return shlex.join([node, str(SDK_AGENT)])


BEFORE_THE_QUESTION = [
    "I'll help you with that. Let me start by reading some files to understand the current "
    "situation.",
    "[tool completed] read: Reading project files",
    " Now I understand the project structure. I need to make some changes to improve it.",
    "[permission?] edit: Modifying critical configuration file",
    "  path: /home/user/project/config.json",
    '  input: {"path":"/home/user/project/config.json",'
    '"content":"{\\"database\\": {\\"host\\": \\"new-host\\"}}"}',
]


def test_approve_all_lets_the_sdk_agent_edit(sdk_agent: str) -> None:
    done = accord(
        "run", "--agent", sdk_agent, "--approve-all", "improve my project", timeout=TIMEOUT
    )
    assert done.returncode == ExitCode.OK, done.stderr
    *lines, summary = done.stdout.splitlines()
    assert lines == [
        *BEFORE_THE_QUESTION,
        "[permission] allowed once",
        "[tool completed] edit: Modifying critical configuration file",
        " Perfect! I've successfully updated the configuration. The changes have been applied.",
    ]
    assert summary.startswith("[done, session ")


def test_deny_all_makes_the_sdk_agent_skip_the_edit(sdk_agent: str) -> None:
    done = accord("run", "--agent", sdk_agent, "--deny-all", "improve my project", timeout=TIMEOUT)
    assert done.returncode == ExitCode.PERMISSION_REFUSED, done.stderr
    *lines, summary = done.stdout.splitlines()
    assert lines == [
        *BEFORE_THE_QUESTION,
        "[permission] refused",
        " I understand you prefer not to make that change. I'll skip the configuration update.",
    ]
    assert summary.startswith("[done, session ")
