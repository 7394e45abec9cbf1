"""Stopping a pydantic-ai run promptly when the client cancels the turn.

The runtime signals cancellation by setting the turn's event (:attr:`TurnContext.cancelled`).
pydantic-ai stops a run with ``AgentRun.cancel()``: it cancels the task driving the run, tears
down the model stream (closing the HTTP response) and running tools, keeps everything the run
completed (the partial response included) and raises ``RunCancelled`` at the end of
``agent.iter()``, where the session turns it into a normal, cancelled end of turn.

:class:`CancelWatch` connects the two. The session checks the flag every time the consumer
resumes it (so a streaming reply stops at the next delta), and a timer checks it every
:data:`POLL_INTERVAL` (so a model that has gone silent, or a long tool, is stopped too).

The task that ``AgentRun.cancel()`` cancels is the one driving the session's async generator:
the runtime's task. So the watch only fires while that task is *inside* pydantic-ai
(``armed``), never while it is suspended at a ``yield`` running the runtime's own code, and not
while a permission request is pending (that request returns ``cancelled`` by itself).

The timer is an asyncio ``call_later`` handle rather than a task: the watch must run beside an
async generator, where no task group may span a ``yield``, and pydantic-ai runs on asyncio
only, so the handle costs nothing a task would not.

This module sits on pydantic-ai and the engine protocol; the session uses one watch per turn.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from pydantic_ai.run import AgentRun

from ...agent._engine import TurnContext

__all__ = ("POLL_INTERVAL", "CancelWatch")

POLL_INTERVAL: Final = 0.05
"""Seconds between checks while the run is silent: the bound on how late a cancel lands
(a cancel during a stream lands at the next delta); checking costs microseconds."""


class CancelWatch:
    """Cancels one pydantic-ai run soon after its turn is cancelled; see the module docstring.

    Args:
        turn: The turn whose cancellation to watch.
    """

    __slots__ = ("_handle", "_loop", "_run", "_turn", "armed", "fired", "permission_pending")

    def __init__(self, turn: TurnContext) -> None:
        """Create a watch; :meth:`start` begins watching a run."""
        self._turn = turn
        self._run: AgentRun[Any, Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self.armed = False
        """Whether the driving task is inside pydantic-ai (the only time it may be cancelled)."""
        self.permission_pending = False
        """Whether a permission request is waiting (it ends itself on cancellation)."""
        self.fired = False
        """Whether the watch cancelled the run."""

    def start(self, run: AgentRun[Any, Any]) -> None:
        """Watch ``run``, from inside it (armed)."""
        self._run = run
        self._loop = asyncio.get_running_loop()
        self.armed = True
        self._schedule()

    def resume(self) -> None:
        """The driving task is back inside pydantic-ai: cancel now if the turn was cancelled."""
        self.armed = True
        if self._turn.cancelled:
            self._fire()

    def stop(self) -> None:
        """Stop watching (the run ended)."""
        self.armed = False
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule(self) -> None:
        assert self._loop is not None
        self._handle = self._loop.call_later(POLL_INTERVAL, self._tick)

    def _tick(self) -> None:
        if self._turn.cancelled and self.armed and not self.permission_pending:
            self._fire()
        if not self.fired:
            self._schedule()

    def _fire(self) -> None:
        if self.fired or self._run is None:
            return
        self.fired = True
        self._run.cancel()
