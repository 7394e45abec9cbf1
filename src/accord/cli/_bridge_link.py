"""What ``accord bridge`` does: an editor's transport forwarded to a remote agent across drops.

The editor launches ``accord bridge URL`` like any ACP agent; every message goes to the agent
at ``URL`` and back, unchanged, over a plain transport (:func:`accord.remote.open_remote`).
The bridge is an ACP peer of its own, above the transports: it notes the editor's
``initialize``, the sessions it opened, loaded or resumed (and their ``cwd``), its requests
still waiting for an answer and the last ``_meta["acp/cursor"]`` of each session's updates.
When the connection drops it answers those requests with -32603 (their answers went with it;
a running turn goes on on the agent), waits an :class:`accord.client.Backoff` pause, opens a
new transport, sends the editor's ``initialize`` again and ``session/resume`` for each
session from its cursor, then carries on, telling ``on_status`` one line each time. A
connection never established, a 401/403, or :data:`accord.client.RECONNECT_DEADLINE` passed
ends the bridge. A line from the editor that is not JSON is answered with the JSON-RPC parse
error here, as any agent would.

Above: :mod:`._bridge` (the command). Below: :mod:`accord.client`
(:class:`~accord.client.Backoff`), :mod:`accord.remote`, :mod:`accord.transports`.
"""

from __future__ import annotations

import itertools
import logging
import ssl
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, cast

import anyio
import anyio.abc

from ..client import RECONNECT_DEADLINE, Backoff
from ..errors import CURSOR_META_KEY, ConnectionClosed, TransportError
from ..remote import open_remote
from ..transports import MalformedFrame, Transport

__all__ = ("ReconnectGaveUp", "run_bridge")

_log = logging.getLogger("accord.cli")

#: Seconds the replayed ``initialize`` and each resume may take.
RESTORE_TIMEOUT = 60.0

_SESSION_OPENERS = frozenset({"session/new", "session/load", "session/resume"})

Opener = Callable[[], AbstractAsyncContextManager[Transport]]


class ReconnectGaveUp(ConnectionClosed):
    """The link was lost and reconnecting ended for good (the deadline passed, or the server
    refused the new connection); why was already told to ``on_status``."""


async def run_bridge(
    local: Transport,
    url: str,
    *,
    token: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    on_status: Callable[[str], None] | None = None,
    reconnect_deadline: float = RECONNECT_DEADLINE,
) -> None:
    """Forward between ``local`` and the agent at ``url`` until either side ends.

    ``reconnect_deadline``: seconds an outage may last before the bridge gives up.

    Raises:
        ConnectionRefused: the server refused the first connection (401: the token), or
            (over HTTP, where nothing is sent before the editor's first message) refused
            or redirected that message.
        ReconnectGaveUp: the link was lost and reconnecting gave up.
        TransportError: the remote agent could not take a message and will not again
            (the server answered garbage).
        OSError: the server cannot be reached at first.
    """

    def opener() -> AbstractAsyncContextManager[Transport]:
        return open_remote(url, token=token, ssl_context=ssl_context)

    await _Bridge(local, opener, on_status or _log.warning, reconnect_deadline).run()


@dataclass(slots=True)
class _Session:
    cwd: str
    cursor: str | None = None


class _Bridge:
    """The editor's transport, one remote link at a time (see the module docs)."""

    def __init__(
        self,
        local: Transport,
        opener: Opener,
        on_status: Callable[[str], None],
        reconnect_deadline: float = RECONNECT_DEADLINE,
    ) -> None:
        self._local = local
        self._opener = opener
        self._on_status = on_status
        self._backoff = Backoff(on_status, reconnect_deadline)
        self._remote: Transport | None = None
        self._ready = anyio.Event()
        self._over = False  # reconnecting ended: nothing more goes to the agent
        self._failed: list[BaseException] = []
        self._initialize: dict[str, Any] | None = None
        self._established = False  # initialize was answered on some link
        self._pending: dict[str, dict[str, Any]] = {}
        self._sessions: dict[str, _Session] = {}
        self._internal: dict[str, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self._ids = itertools.count(1)

    async def run(self) -> None:
        """Until the editor closes its side or the link is gone for good; re-raises what
        ended it (the first link's failure, or a message that could not be sent)."""
        async with anyio.create_task_group() as tg:
            # The first link (or its failure) comes before anything the editor sends.
            await tg.start(self._keep_linked, tg.cancel_scope)
            if not self._failed:
                tg.start_soon(self._editor_to_agent, tg.cancel_scope)
        if self._failed:
            raise self._failed[0]

    # ------------------------------------------------------------------ the editor's side

    async def _editor_to_agent(self, scope: anyio.CancelScope) -> None:
        try:
            while True:
                message = await self._local.receive()
                if isinstance(message, MalformedFrame):
                    await self._local.send(_parse_error(message))
                    continue
                body = _object(message)
                self._track_outbound(body)
                if not await self._forward(body):
                    return
        except (anyio.EndOfStream, TransportError, anyio.BrokenResourceError):
            pass
        finally:
            scope.cancel()

    async def _forward(self, message: dict[str, Any]) -> bool:
        """Send ``message`` on the current link, waiting while reconnecting; False when no
        link will come (the reason kept to re-raise)."""
        while True:
            await self._ready.wait()
            if self._over or self._remote is None:
                if not self._failed:
                    self._failed.append(ConnectionClosed("reconnecting to the agent gave up"))
                return False
            try:
                await self._remote.send(message)
                return True
            except (TransportError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                if not self._established or Backoff.refused_for_good(exc):
                    self._failed.append(exc)  # never connected, or refused: say so
                    return False
                if "method" in message and "id" in message:
                    return True  # its error answer comes with the drop
                if self._ready.is_set():
                    self._ready = anyio.Event()

    async def _to_editor(self, message: Any, scope: anyio.CancelScope) -> None:
        try:
            await self._local.send(message)
        except (TransportError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            scope.cancel()  # the editor is gone: so is the bridge

    # ------------------------------------------------------------------ the agent's side

    async def _keep_linked(
        self,
        bridge: anyio.CancelScope,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        first = True
        try:
            while True:
                try:
                    async with self._opener() as remote, anyio.create_task_group() as tg:
                        tg.start_soon(self._pump, remote, tg.cancel_scope, bridge)
                        if not first:
                            with anyio.fail_after(RESTORE_TIMEOUT):
                                await self._restore(remote)
                        self._remote = remote
                        self._backoff.up()
                        self._ready.set()
                        if first:
                            first = False
                            task_status.started()
                        await anyio.sleep_forever()  # until the pump sees the link end
                except (Exception, BaseExceptionGroup) as caught:
                    exc = _alone(caught)
                    if first and isinstance(exc, Exception):
                        self._failed.append(exc)  # re-raised by run(): the command says why
                        task_status.started()
                        return
                    if not isinstance(exc, TransportError | OSError | TimeoutError):
                        raise exc from None
                    if Backoff.refused_for_good(exc):
                        self._give_up(f"the agent's server refused to reconnect: {exc}")
                        return
                    _log.info("reconnect attempt failed: %s", exc)
                self._remote = None
                if self._ready.is_set():
                    self._ready = anyio.Event()
                if not self._established:
                    return  # never initialized: nothing to resume
                await self._fail_pending(bridge)
                if not await self._backoff.wait():
                    self._give_up(None)  # the backoff said why
                    return
        finally:
            self._over = True
            self._ready.set()
            bridge.cancel()

    def _give_up(self, reason: str | None) -> None:
        """Reconnecting ended for good: :meth:`run` raises it (the command exits non-zero);
        ``reason`` is told to ``on_status`` unless already said."""
        if reason is not None:
            self._on_status(reason)
        if not self._failed:
            self._failed.append(ReconnectGaveUp(reason or "could not reconnect to the agent"))

    async def _pump(
        self, remote: Transport, link: anyio.CancelScope, bridge: anyio.CancelScope
    ) -> None:
        try:
            while True:
                message: Any = await remote.receive()
                if isinstance(message, MalformedFrame):
                    continue  # the remote connection answers its own malformed frames
                body = _object(message)
                key = _key(body.get("id")) if "method" not in body else None
                waiter = self._internal.pop(key, None) if key is not None else None
                if waiter is not None:
                    waiter[1].append(body)
                    waiter[0].set()
                    continue
                self._track_inbound(body)
                await self._to_editor(message, bridge)
        except (anyio.EndOfStream, TransportError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            link.cancel()

    async def _restore(self, remote: Transport) -> None:
        """Send ``initialize`` again and resume every session on a new link.

        Raises:
            ConnectionClosed: the agent refused ``initialize``.
        """
        if self._initialize is not None:
            answer = await self._call(remote, {**self._initialize, "id": self._new_id()})
            if "error" in answer:
                raise ConnectionClosed("the agent refused initialize after reconnecting")
        resumed = 0
        for session_id, session in list(self._sessions.items()):
            params: dict[str, Any] = {"sessionId": session_id, "cwd": session.cwd}
            if session.cursor is not None:
                params["_meta"] = {CURSOR_META_KEY: session.cursor}
            request = {"jsonrpc": "2.0", "method": "session/resume", "params": params}
            answer = await self._call(remote, {**request, "id": self._new_id()})
            if "error" in answer:
                self._on_status(f"session {session_id} could not be resumed after reconnecting")
                self._sessions.pop(session_id, None)
            else:
                resumed += 1
        self._on_status(f"reconnected; resumed {resumed} session{'s' if resumed != 1 else ''}")

    async def _call(self, remote: Transport, request: dict[str, Any]) -> dict[str, Any]:
        key = _key(request["id"])
        assert key is not None
        done = anyio.Event()
        answers: list[dict[str, Any]] = []
        self._internal[key] = (done, answers)
        await remote.send(request)
        await done.wait()
        return answers[0]

    def _new_id(self) -> str:
        return f"accord-bridge-{next(self._ids)}"

    # ------------------------------------------------------------------ bookkeeping

    def _track_outbound(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        key = _key(message.get("id"))
        if method == "initialize":
            self._initialize = message
        if method is not None and key is not None:
            self._pending[key] = message

    def _track_inbound(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method == "session/update":
            params = _object(message.get("params"))
            cursor = _object(params.get("_meta")).get(CURSOR_META_KEY)
            session = self._sessions.get(str(params.get("sessionId")))
            if session is not None and isinstance(cursor, str):
                session.cursor = cursor
            return
        key = _key(message.get("id"))
        if method is not None or key is None:
            return
        request = self._pending.pop(key, None)
        if request is None or "result" not in message:
            return
        params = _object(request.get("params"))
        if request.get("method") == "initialize":
            self._established = True
        elif request.get("method") in _SESSION_OPENERS:
            sid = _object(message.get("result")).get("sessionId") or params.get("sessionId")
            cwd = params.get("cwd")
            if isinstance(sid, str) and isinstance(cwd, str):
                self._sessions[sid] = _Session(cwd)
        elif request.get("method") == "session/close":
            self._sessions.pop(str(params.get("sessionId")), None)

    async def _fail_pending(self, bridge: anyio.CancelScope) -> None:
        """Answer the requests the lost link took with it."""
        pending, self._pending = self._pending, {}
        for request in pending.values():
            if request.get("method") == "initialize":
                continue
            error = {
                "code": -32603,
                "message": "the connection to the agent was lost before it answered; "
                "reconnecting (a running turn goes on on the agent)",
                "data": {"reconnecting": True},
            }
            await self._to_editor({"jsonrpc": "2.0", "id": request["id"], "error": error}, bridge)


def _key(message_id: Any) -> str | None:
    """A JSON-RPC id as a dict key (``1`` and ``"1"`` stay distinct), or None if not one."""
    if isinstance(message_id, bool):
        return None
    if isinstance(message_id, str):
        return f"s:{message_id}"
    if isinstance(message_id, int):
        return f"n:{message_id}"
    return None


def _object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _alone(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member groups (``exc`` itself otherwise)."""
    while isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        if len(group.exceptions) != 1:
            return group
        exc = group.exceptions[0]
    return exc


def _parse_error(frame: MalformedFrame) -> dict[str, Any]:
    envelope = frame.envelope or {}
    request_id = envelope.get("id")
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        request_id = None
    message = "Parse error" if frame.code == -32700 else "Invalid Request"
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": frame.code, "message": message, "data": frame.reason},
    }
