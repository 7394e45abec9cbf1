"""A transport that survives dropped connections: reconnect, re-initialize, resume sessions.

:class:`ReconnectingTransport` sits between a client (or ``accord bridge``) and the transport
:func:`~accord.remote.open_remote` opens. It watches what goes by: the ``initialize`` request,
the sessions the client opened, loaded or resumed (and their ``cwd``), the requests still
waiting for an answer, and the last ``_meta["acp/cursor"]`` of each session's updates. When
the connection drops it tells the user (``on_status``), opens a new one (backing off with
jitter, up to :data:`RECONNECT_DEADLINE`; the backoff starts again only after a connection
held for :data:`STABLE_AFTER`; a refused token ends it at once), replays ``initialize`` and
resumes every session with :func:`resume_request`, then carries on. Requests that were in
flight on the lost connection are answered with an error saying so (their answers went with
it); the agent keeps running a turn whose connection dropped, and its updates after the
cursor come with the resume when the agent supports cursors (``_meta["acp/cursor"]``, an
accord extension); without one the client sees the session from the resume on.

Above: :mod:`._client` (``open_remote(url, reconnect=True)``), ``accord bridge``.
Below: anyio, :mod:`accord.transports`.
"""

from __future__ import annotations

import itertools
import logging
import random
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

import anyio
import anyio.abc

from ..errors import ConnectionClosed, ConnectionRefused, TransportError
from ..transports import MalformedFrame, Transport
from ._streamable import route_key, session_of

__all__ = (
    "CURSOR_META",
    "RECONNECT_DEADLINE",
    "ReconnectingTransport",
    "open_reconnecting",
    "resume_request",
    "retry_pause",
)

_log = logging.getLogger("accord.remote")

#: Where an update's cursor travels (``params._meta``); opaque to the client.
CURSOR_META = "acp/cursor"

#: Seconds to keep trying after a drop before giving up (a laptop waking, a server restart).
RECONNECT_DEADLINE = 120.0

#: Pauses between attempts, the last repeated: quick at first, then gentle on the server.
#: Each is jittered (:func:`retry_pause`).
BACKOFF = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0)

#: Seconds a connection must stay up before the next drop starts the backoff again: a
#: server that accepts and drops at once is retried ever more slowly, not every 0.1 s.
STABLE_AFTER = 10.0


def retry_pause(attempt: int, draw: Callable[[], float] = random.random) -> float:
    """Seconds to wait before attempt ``attempt`` (0 first): its backoff step, jittered.

    A random point in the upper half of the step (``draw`` gives a number in [0, 1)), so
    many clients dropped by one restart come back spread out, not in lockstep.
    """
    base = BACKOFF[min(attempt, len(BACKOFF) - 1)]
    return base * (0.5 + draw() / 2)


#: Seconds the replayed ``initialize`` and each resume may take.
RESTORE_TIMEOUT = 60.0

_SESSION_OPENERS = frozenset({"session/new", "session/load", "session/resume"})

Opener = Callable[[], AbstractAsyncContextManager[Transport]]


@dataclass(slots=True)
class _Session:
    cwd: str
    cursor: str | None = None


def resume_request(
    request_id: str, session_id: str, cwd: str, cursor: str | None
) -> dict[str, Any]:
    """The request that re-attaches a session after a reconnect (the hook for cursors).

    ``session/resume`` with the last cursor seen in ``_meta["acp/cursor"]``: an agent that
    keeps cursors sends the updates after it before the answer; one that does not resumes
    from now on.
    """
    params: dict[str, Any] = {"sessionId": session_id, "cwd": cwd}
    if cursor is not None:
        params["_meta"] = {CURSOR_META: cursor}
    return {"jsonrpc": "2.0", "id": request_id, "method": "session/resume", "params": params}


@asynccontextmanager
async def open_reconnecting(
    opener: Opener,
    *,
    on_status: Callable[[str], None] | None = None,
    deadline: float = RECONNECT_DEADLINE,
) -> AsyncGenerator[ReconnectingTransport]:
    """Open a transport with ``opener`` and keep it open across drops.

    Raises:
        ConnectionRefused: the first connection was refused (later ones end the transport).
        OSError: the first connection could not be made.
    """
    async with anyio.create_task_group() as tg:
        transport = ReconnectingTransport(opener, on_status or _log.warning, deadline)
        await tg.start(transport.run)
        try:
            yield transport
        finally:
            await transport.aclose()
            tg.cancel_scope.cancel()


class ReconnectingTransport:
    """A :class:`~accord.transports.Transport` that reconnects (see the module docs)."""

    def __init__(self, opener: Opener, on_status: Callable[[str], None], deadline: float) -> None:
        """Use :func:`open_reconnecting`."""
        self._opener = opener
        self._on_status = on_status
        self._deadline = deadline
        send, receive = anyio.create_memory_object_stream[Any](1024)
        self._to_client = send
        self._from_agent = receive
        self._inner: Transport | None = None
        self._ready = anyio.Event()
        self._closed = False
        self._initialize: dict[str, Any] | None = None
        self._pending: dict[str, dict[str, Any]] = {}
        self._sessions: dict[str, _Session] = {}
        self._internal: dict[str, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self._ids = itertools.count(1)
        self._established = False  # initialize was answered on some connection
        self.reconnects = 0

    # ------------------------------------------------------------------ Transport

    async def send(self, message: dict[str, Any]) -> None:
        """Send ``message`` on the current connection (waiting while reconnecting).

        Raises:
            ConnectionClosed: closed, or reconnecting failed for good.
        """
        self._track_outbound(message)
        while True:
            await self._ready.wait()
            if self._closed or self._inner is None:
                raise ConnectionClosed("the connection to the remote agent is closed")
            try:
                await self._inner.send(message)
                return
            except (TransportError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                if not self._established or _refused_for_good(exc):
                    # Never connected (or refused): nothing to resume, say so to the caller.
                    self._give_up_quietly()
                    raise
                if "method" in message and "id" in message:
                    return  # its error answer comes with the drop
                if self._ready.is_set():
                    self._ready = anyio.Event()

    async def receive(self) -> Any:
        """The next message from the agent.

        Raises:
            anyio.EndOfStream: closed, or reconnecting failed for good.
        """
        try:
            return await self._from_agent.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        """Close the current connection and stop reconnecting."""
        self._closed = True
        self._ready.set()
        self._to_client.close()
        self._from_agent.close()

    # ------------------------------------------------------------------ the loop

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Connect, pump, and reconnect after each drop; reports started once connected."""
        first = True
        while not self._closed:
            try:
                async with self._opener() as inner, anyio.create_task_group() as tg:
                    tg.start_soon(self._pump, inner, tg.cancel_scope)
                    if first or await self._restored(inner):
                        self._inner = inner
                        self._up_since = anyio.current_time()
                        self._ready.set()
                    else:
                        tg.cancel_scope.cancel()
                    if first:
                        task_status.started()
                        first = False
            except (TransportError, OSError, TimeoutError) as exc:
                if first:
                    raise
                if _refused_for_good(exc):
                    self._give_up(f"the agent's server refused to reconnect: {exc}")
                    return
                _log.info("reconnect attempt failed: %s", exc)
            self._inner = None
            if self._ready.is_set():
                self._ready = anyio.Event()
            if self._closed:
                return
            if not self._established:
                self._give_up_quietly()
                return
            self._fail_pending()
            if not await self._wait_to_retry():
                return

    async def _wait_to_retry(self) -> bool:
        now = anyio.current_time()
        if self._down_since is None:
            self._down_since = now
            if self._up_since is not None and now - self._up_since >= STABLE_AFTER:
                self._attempt = 0  # it held a while: start the backoff again
            self._up_since = None
            self._on_status("connection to the agent lost; reconnecting")
        if now - self._down_since > self._deadline:
            self._give_up(f"could not reconnect to the agent within {self._deadline:.0f} s")
            return False
        await anyio.sleep(retry_pause(self._attempt))
        self._attempt += 1
        return True

    _down_since: float | None = None
    _up_since: float | None = None
    _attempt: int = 0

    def _give_up(self, why: str) -> None:
        self._on_status(why)
        self._give_up_quietly()

    def _give_up_quietly(self) -> None:
        self._closed = True
        self._ready.set()
        self._to_client.close()

    async def _pump(self, inner: Transport, scope: anyio.CancelScope) -> None:
        try:
            while True:
                message: Any = await inner.receive()
                if not isinstance(message, MalformedFrame):
                    body = _object(message)
                    key = route_key(body.get("id")) if "method" not in body else None
                    waiter = self._internal.pop(key, None) if key is not None else None
                    if waiter is not None:
                        waiter[1].append(body)
                        waiter[0].set()
                        continue
                    self._track_inbound(body)
                try:
                    await self._to_client.send(message)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
        except (anyio.EndOfStream, TransportError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            scope.cancel()

    async def _restored(self, inner: Transport) -> bool:
        """:meth:`_restore`; False (logged) if the fresh connection failed meanwhile."""
        try:
            await self._restore(inner)
        except (TransportError, TimeoutError, anyio.BrokenResourceError) as exc:
            if _refused_for_good(exc):
                self._give_up(f"the agent's server refused to reconnect: {exc}")
            _log.info("restoring the sessions failed: %s", exc)
            return False
        return True

    async def _restore(self, inner: Transport) -> None:
        """Replay ``initialize`` and resume every session on a fresh connection."""
        if self._initialize is not None:
            answer = await self._call(inner, {**self._initialize, "id": self._new_id()})
            if "error" in answer:
                raise ConnectionClosed("the agent refused initialize after reconnecting")
        resumed = 0
        for session_id, session in list(self._sessions.items()):
            request = resume_request(self._new_id(), session_id, session.cwd, session.cursor)
            answer = await self._call(inner, request)
            if "error" in answer:
                self._on_status(f"session {session_id} could not be resumed after reconnecting")
                self._sessions.pop(session_id, None)
            else:
                resumed += 1
        self.reconnects += 1
        self._down_since = None
        self._on_status(f"reconnected; resumed {resumed} session{'s' if resumed != 1 else ''}")

    async def _call(self, inner: Transport, request: dict[str, Any]) -> dict[str, Any]:
        key = route_key(request["id"])
        assert key is not None
        done = anyio.Event()
        answers: list[dict[str, Any]] = []
        self._internal[key] = (done, answers)
        await inner.send(request)
        with anyio.fail_after(RESTORE_TIMEOUT):
            await done.wait()
        return answers[0]

    def _new_id(self) -> str:
        return f"accord-reconnect-{next(self._ids)}"

    # ------------------------------------------------------------------ bookkeeping

    def _track_outbound(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        key = route_key(message.get("id"))
        if method == "initialize":
            self._initialize = message
        elif method is not None and key is not None:
            self._pending[key] = message

    def _track_inbound(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if (
            not self._established
            and method is None
            and self._initialize is not None
            and "result" in message
            and message.get("id") == self._initialize.get("id")
        ):
            self._established = True
        if method == "session/update":
            session_id = session_of(message)
            cursor = _object(_object(message.get("params")).get("_meta")).get(CURSOR_META)
            session = self._sessions.get(session_id or "")
            if session is not None and isinstance(cursor, str):
                session.cursor = cursor
            return
        if method is not None:
            return
        key = route_key(message.get("id"))
        request = self._pending.pop(key, None) if key is not None else None
        if request is None or "result" not in message:
            return
        if request.get("method") in _SESSION_OPENERS:
            params = _object(request.get("params"))
            sid = _object(message.get("result")).get("sessionId") or params.get("sessionId")
            cwd = params.get("cwd")
            if isinstance(sid, str) and isinstance(cwd, str):
                self._sessions[sid] = _Session(cwd)
        elif request.get("method") == "session/close":
            self._sessions.pop(session_of(request) or "", None)

    def _fail_pending(self) -> None:
        """Answer the requests the lost connection took with it."""
        pending, self._pending = self._pending, {}
        for request in pending.values():
            error = {
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {
                    "code": -32603,
                    "message": "the connection to the agent was lost before it answered; "
                    "reconnecting (a running turn goes on on the agent)",
                    "data": {"reconnecting": True},
                },
            }
            try:
                self._to_client.send_nowait(error)
            except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                _log.warning("could not answer request %r after the drop", request.get("id"))


def _object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _refused_for_good(exc: BaseException) -> bool:
    """A refusal retrying cannot fix: the token (401) or the origin (403)."""
    return isinstance(exc, ConnectionRefused) and exc.status in (401, 403)
