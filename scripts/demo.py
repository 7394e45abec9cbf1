"""An offline demo of the main job: the accord coding agent at work, end to end.

Starts accord's fake OpenAI-compatible server (a scripted model on loopback: no network, no
API key), then runs ``accord run`` with the built-in coding agent pointed at it. The agent
lists the project, reads the README, shows a plan, and answers; every step travels over ACP
exactly as it would with a real model, and the session is stored in a throwaway SQLite file.

Run: ``make demo`` (or ``.venv/bin/python scripts/demo.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = [
    ScriptedReply(
        text=["Let me look around the project first."],
        tool_calls=[ScriptedToolCall(name="list_directory", arguments={"path": "."})],
    ),
    ScriptedReply(
        tool_calls=[
            ScriptedToolCall(name="read_file", arguments={"path": "README.md", "limit": 40})
        ]
    ),
    ScriptedReply(
        tool_calls=[
            ScriptedToolCall(
                name="update_plan",
                arguments={
                    "steps": [
                        {"content": "Survey the layout", "status": "completed"},
                        {"content": "Read the README", "status": "completed"},
                        {"content": "Summarize for the user", "status": "in_progress"},
                    ]
                },
            )
        ]
    ),
    ScriptedReply(
        reasoning=["The README explains the layers; I can summarize now."],
        text=[
            "accord is the Agent Client Protocol for Python: ",
            "typed wire models generated from the official schema, a JSON-RPC core, ",
            "transports, an agent runtime with persistent sessions, a client runtime, ",
            "and this coding agent, all speaking ACP.",
        ],
    ),
]


def main() -> int:
    """Run the demo; returns ``accord run``'s exit code."""
    with FakeOpenAIServer(SCRIPT) as server, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "OPENAI_API_KEY": "demo-key-not-used-anywhere"}
        command = [
            sys.executable,
            "-m",
            "accord.cli",
            "run",
            "--model",
            "openai:fake-model",
            "--base-url",
            server.base_url,
            "--store",
            str(Path(tmp) / "sessions.sqlite3"),
            "--cwd",
            str(ROOT),
            "--approve-all",
            "Give me a short tour of this project.",
        ]
        print(f"$ accord run --model openai:fake-model --base-url {server.base_url} ...\n")
        return subprocess.run(command, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
