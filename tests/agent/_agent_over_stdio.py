"""The agent of the subprocess tests: ``AgentRuntime(ScriptedEngine)`` over stdio, on SQLite.

Usage: ``python _agent_over_stdio.py DATABASE [BACKEND]``. Prompts are commands
(``_agent_support.command_steps``): ``rich`` plays a turn with every kind of update,
``stream N DELAY`` streams N chunks DELAY seconds apart, ``title WORDS`` titles the session,
anything else is echoed.
"""

from __future__ import annotations

import sys

from _agent_support import FULL, command_steps

from accord.agent import AgentRuntime
from accord.roles import run_agent_stdio
from accord.store import SqliteSessionStore
from accord.testing import ScriptedEngine


def main(path: str, backend: str) -> None:
    engine = ScriptedEngine(respond=command_steps, capabilities=FULL)
    run_agent_stdio(AgentRuntime(engine, store=SqliteSessionStore(path)), backend=backend)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "asyncio")
