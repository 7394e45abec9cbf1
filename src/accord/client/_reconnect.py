"""Reconnecting to a served agent: new transport, ``initialize`` again, ``session/resume``.

``connect(url)`` (``reconnect=True``, the default) runs a :class:`Reconnector` in its task
group. It owns the link to the agent, one transport and one typed connection at a time: when
the transport is lost it tells the user (``on_status``), opens a new one (:class:`Backoff`:
jittered pauses, growing, up to :data:`RECONNECT_DEADLINE`; the backoff starts again only
after a link held for :attr:`Backoff.STABLE_AFTER`; a refused token or origin ends it at once),
initializes it as the first one was, hands it to the :class:`~accord.client.ConnectedAgent`
and resumes every session that connection tracks, each from the cursor its
:class:`~accord.client.SessionView` last saw (``_meta["acp/cursor"]``, an accord extension):
an agent that keeps cursors sends the updates after it before it answers; one that does not
resumes from now on. Requests in flight on the lost link fail with
:class:`~accord.errors.ConnectionClosed` (their answers went with it; a running turn goes on
on the agent), except a prompt to an agent that reports how turns end
(``_meta.accord.turnEnd``): it waits for its turn's end through the restore (see
:meth:`~accord.client.ClientSession.prompt`), and is told by :meth:`Relinkable._lost_link`
when the link is not restored.

The transports underneath are plain ones (``accord.remote.open_remote``): nothing below the
typed connection looks at an ACP message.

Above: :mod:`._connect`, :mod:`._connection`; ``accord bridge`` (its :class:`Backoff`).
Below: :mod:`accord.roles`, :mod:`accord.transports`, anyio.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Protocol, cast

import anyio
import anyio.abc

from ..errors import (
    ConnectionRefused,
    InvalidParams,
    LocalProtocolError,
    RequestError,
    TransportError,
    is_cursor_rejection,
)
from ..roles import ClientSideConnection
from ..transports import Transport

__all__ = ("RECONNECT_DEADLINE", "Backoff", "Reconnector", "Relinkable")

_log = logging.getLogger("accord.client")

#: Seconds to keep trying after a drop before giving up (a laptop waking, a server restart).
RECONNECT_DEADLINE = 120.0

#: Seconds the new link's ``initialize`` and each resume may take.
RESTORE_TIMEOUT = 60.0


class Relinkable(Protocol):
    """What a :class:`Reconnector` needs of the connection it serves (a ``ConnectedAgent``)."""

    @property
    def sessions(self) -> Mapping[str, object]:
        """The sessions to resume on a new link, by id."""
        ...

    def _relink(self, calls: ClientSideConnection, transport: Transport) -> None: ...

    def _drop(self, session_id: str, why: str) -> None: ...

    def _lost_link(self, why: str) -> None: ...

    async def _resume_in_place(self, session_id: str, *, with_cursor: bool) -> None: ...


Opener = Callable[[], AbstractAsyncContextManager[Transport]]
Setup = Callable[[ClientSideConnection, Transport], Awaitable[None]]


class Backoff:
    """When to try again after a drop: the pauses, the deadline, the reset after a stable link.

    :meth:`up` when a link is established, :meth:`wait` after each drop or failed attempt.
    ``connect(url)`` uses one per connection, ``accord bridge`` one per editor.
    """

    #: Pauses between attempts, the last repeated: quick at first, then gentle on the server.
    #: Each is jittered (:meth:`pause`).
    PAUSES: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0)

    #: Seconds a link must stay up before the next drop starts the backoff again: a server
    #: that accepts and drops at once is retried ever more slowly, not every 0.1 s.
    STABLE_AFTER = 10.0

    def __init__(
        self, on_status: Callable[[str], None], deadline: float = RECONNECT_DEADLINE
    ) -> None:
        """``on_status`` hears "lost" once per outage and the give-up line."""
        self._on_status = on_status
        self._deadline = deadline
        self._attempt = 0
        self._down_since: float | None = None
        self._up_since: float | None = None

    @classmethod
    def pause(cls, attempt: int, draw: Callable[[], float] = random.random) -> float:
        """Seconds to wait before attempt ``attempt`` (0 first): its step, jittered.

        A random point in the upper half of the step (``draw`` gives a number in [0, 1)), so
        many clients dropped by one restart come back spread out, not in lockstep, and none
        sooner than half its step.
        """
        base = cls.PAUSES[min(attempt, len(cls.PAUSES) - 1)]
        return base * (0.5 + draw() / 2)

    @staticmethod
    def refused_for_good(exc: BaseException) -> bool:
        """A refusal retrying cannot fix: the token (401) or the origin (403)."""
        return isinstance(exc, ConnectionRefused) and exc.status in (401, 403)

    def up(self) -> None:
        """A link is established (the outage, if any, is over)."""
        self._up_since = anyio.current_time()
        self._down_since = None

    async def wait(self) -> bool:
        """Pause before the next attempt; False (said to ``on_status``) past the deadline."""
        now = anyio.current_time()
        if self._down_since is None:
            self._down_since = now
            if self._up_since is not None and now - self._up_since >= self.STABLE_AFTER:
                self._attempt = 0  # it held a while: start the backoff again
            self._up_since = None
            self._on_status("connection to the agent lost; reconnecting")
        if now - self._down_since > self._deadline:
            self._on_status(f"could not reconnect to the agent within {self._deadline:.0f} s")
            return False
        await anyio.sleep(self.pause(self._attempt))
        self._attempt += 1
        return True


class Reconnector:
    """The link to a served agent, reopened after each drop (see the module docs)."""

    def __init__(
        self,
        opener: Opener,
        link: Callable[[Transport], ClientSideConnection],
        setup: Setup,
        on_status: Callable[[str], None] | None,
        deadline: float = RECONNECT_DEADLINE,
    ) -> None:
        """``opener`` opens a transport, ``link`` types it, ``setup`` initializes it."""
        self._opener = opener
        self._link = link
        self._setup = setup
        self._on_status = on_status or _log.warning
        self._deadline = deadline
        self._backoff = Backoff(self._on_status, deadline)
        self._agent: Relinkable | None = None
        self._scope = anyio.CancelScope()
        self._finished = anyio.Event()
        #: The current link's transport (the first one until a reconnect).
        self.transport: Transport | None = None
        #: Whether it stopped trying (refused, the deadline passed, or closed).
        self.gave_up = False
        #: How many times the link was re-established.
        self.reconnects = 0
        #: Why it stopped, once it has (one clause).
        self.why = "the connection was closed"

    def serve(self, agent: Relinkable) -> None:
        """The connection whose sessions each new link resumes."""
        self._agent = agent

    async def aclose(self) -> None:
        """Close the current link and stop reconnecting."""
        self.gave_up = True
        self._scope.cancel()
        await self._finished.wait()

    async def run(
        self,
        *,
        task_status: anyio.abc.TaskStatus[ClientSideConnection] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Open the first link (reported started with it), then keep one open.

        Raises:
            ConnectionRefused, OSError, TimeoutError: the first link could not be made (what
                its ``setup`` raised too); later failures end in :attr:`gave_up`.
        """
        try:
            with self._scope:
                await self._keep_linked(task_status)
        finally:
            self.gave_up = True
            self._finished.set()
            if self._agent is not None:
                self._agent._lost_link(self.why)

    async def _keep_linked(self, task_status: anyio.abc.TaskStatus[ClientSideConnection]) -> None:
        first = True
        while True:
            try:
                async with self._opener() as transport, self._link(transport) as calls:
                    with anyio.fail_after(None if first else RESTORE_TIMEOUT):
                        await self._setup(calls, transport)
                    self.transport = transport
                    if first:
                        first = False
                        self._backoff.up()
                        task_status.started(calls)
                    else:
                        await self._restore(calls, transport)
                    await calls.connection.wait_peer_closed()
            except (*_LOST, BaseExceptionGroup) as caught:
                exc = _alone(caught)
                if first or not isinstance(exc, _LOST):
                    raise exc from None
                if Backoff.refused_for_good(exc):
                    self._on_status(f"the agent's server refused to reconnect: {exc}")
                    self.why = f"the agent's server refused to reconnect ({exc})"
                    return
                _log.info("reconnect attempt failed: %s", exc)
            if not await self._backoff.wait():
                self.why = f"the agent could not be reached again within {self._deadline:.0f} s"
                return

    async def _restore(self, calls: ClientSideConnection, transport: Transport) -> None:
        """Hand the new link to the connection and resume its sessions from their cursors."""
        agent = self._agent
        assert agent is not None
        agent._relink(calls, transport)
        resumed = 0
        for session_id in list(agent.sessions):
            try:
                with anyio.fail_after(RESTORE_TIMEOUT):
                    await _resume(agent, session_id)
            except (RequestError, LocalProtocolError) as exc:
                _log.info("session %s not resumed: %s", session_id, exc)
                self._on_status(f"session {session_id} could not be resumed after reconnecting")
                agent._drop(session_id, f"the agent would not resume it ({exc})")
            else:
                resumed += 1
        self.reconnects += 1
        self._backoff.up()
        self._on_status(f"reconnected; resumed {resumed} session{'s' if resumed != 1 else ''}")


#: What ends one link (a drop, a failed attempt), not the reconnecting.
_LOST = (TransportError, OSError, TimeoutError, RequestError)


def _alone(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member groups (``exc`` itself otherwise)."""
    while isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        if len(group.exceptions) != 1:
            return group
        exc = group.exceptions[0]
    return exc


async def _resume(agent: Relinkable, session_id: str) -> None:
    """``session/resume`` from the session's cursor; from now on if the agent refuses it."""
    try:
        await agent._resume_in_place(session_id, with_cursor=True)
    except InvalidParams as exc:
        if not is_cursor_rejection(exc):
            raise
        _log.info("session %s: cursor refused (%s); resuming from now on", session_id, exc)
        await agent._resume_in_place(session_id, with_cursor=False)
