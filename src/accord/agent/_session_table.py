"""The runtime's sessions: create, load, resume, fork, close, delete, list.

:class:`SessionTable` keeps the live sessions of a runtime, shared by every connection it
serves (:mod:`._links`), and implements the ACP session methods against the store and the
engine. The client of the connection a method serves is "the caller":

* **new**: the record is stored first (``cwd`` must be an existing directory and every
  additional directory absolute, see :mod:`._directories`; MCP servers are recorded as
  sent), then the engine opens the session.
* **load**: an unknown id answers -32002; the request's ``cwd`` must equal the stored one.
  That directory must still exist (else -32602, the history kept: :mod:`._directories`).
  The whole stored chain is replayed (a replaying attachment, :mod:`._attachment`) before
  the response; tool calls it leaves unfinished (a crash mid-turn) are then ended as
  ``failed``.
* **resume**: as load, without the replay.
* **attach**: load or resume of a session that is live here while the caller is not attached
  to it (another client has it open, or it waits out its grace period after its last client
  left) attaches the caller to the live session: no new epoch, its turn goes on, the stored
  record is left as it is (the caller's ``mcpServers`` and ``additionalDirectories`` are not
  applied: the session keeps those it went live with). ``session/load`` first replays the
  history up to that moment to the caller alone; the caller is asked every question the
  turn has open. If no turn runs here and another process continued the session meanwhile,
  the live copy is first brought up to date.
* **elsewhere**: another process sharing the store may continue a session that is live here
  (its turn ran there). :meth:`SessionTable.catch_up` brings the live copy up to date from
  the store: before a turn here (under this process's claim, :mod:`._ownership`) and when a
  client attaches; the client's prompt then continues from the stored history.
* **cursor**: with ``_meta["acp/cursor"]`` (:mod:`._cursor`), load and resume send the caller
  exactly the stored events after the cursor, before the response, and no replay; a cursor
  that cannot be honoured is refused before anything changes
  (:class:`~accord.errors.CursorRejected`).
* **fork**: the store copies the session under a new id (the source is unchanged) and the
  copy becomes live.
* **close**: detaches the caller; when no other client is attached, cancels the running turn
  and waits for it to end, closes the engine session and forgets the session; what is stored
  stays. Closing a stored but inactive session succeeds.
* **delete**: closes the session if it is live, then removes it from the store; an unknown id
  succeeds silently.
* **archive** / **unarchive** (unstable): the store's flag; archiving a live session shuts it
  first (as close with no other client). Load and resume of an archived session are refused
  (-32602, ``data.reason`` ``archived``): the schema asks clients to unarchive first, and a
  session hidden from the list should not come back live unnoticed.
* **list**: a page of the store's listing (``cwd`` filter, ``archived`` filter: archived
  sessions hidden unless asked for, each listed one saying whether it is; opaque cursor,
  capped page) of the sessions with history: one with no stored event (opened and never
  prompted nor changed) is not listed, though it can still be loaded, resumed or forked.

Every one of them reaches the caller's client the same way (:meth:`SessionTable._attach`, "attach
after X; tell me when you have sent it"): an :class:`~._attachment.Attachment` started live
after the last committed ``seq`` (new, fork, resume, attach), from the store after a cursor,
or replaying the history up to the last committed ``seq`` (load); the response then waits
until the attachment has sent everything committed before it.

A client loading or resuming a session it alone is attached to (a reload) bumps its epoch on
the same bus: a turn of the old epoch is cancelled, and whatever it still yields is dropped.
Every activation bumps the stored epoch.

When a client leaves (:meth:`SessionTable.leave`), its attachments are dropped; a session left
with no client attached stays live for the runtime's grace period (:meth:`SessionTable.expire`)
and is then closed, not deleted. With a grace period of 0 (the default, and what stdio uses:
its one client leaving ends the process) a session left alone has its turn cancelled, as
before sessions could outlive connections.

Activation announcements (``available_commands_update`` when commands are offered, and
``session_info_update`` with the title) are sent right after the response
(:func:`accord.jsonrpc.after_reply`): editors such as Zed drop updates for a session id they
have not seen in a response yet. Nothing else of the session reaches the client before them:
its prompts and controls wait for :attr:`LiveSession.announced`. The response says how many
follow (``_meta.accord.announcements``) and each carries ``_meta.accord.announcement``, so
accord's client can wait for them.

Operations on one session id are serialized (a per-id lock); different sessions proceed
concurrently. Below: the store, the engine, :mod:`._restore`, :mod:`._live_session`. Above: the
runtime (``AgentRuntime``), which owns one table.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import TypeAdapter

from ..engines import (
    Engine,
    EngineCapabilities,
    EngineSession,
    SessionContext,
    TitleChanged,
    ToolCallEnded,
    ToolCallTracker,
    new_id,
)
from ..errors import InvalidParams
from ..jsonrpc import after_reply, current_request_id
from ..schema import (
    AvailableCommandsUpdateSessionUpdate,
    ListSessionsRequest,
    ListSessionsResponse,
    McpServer,
    SessionInfo,
    SessionInfoUpdateSessionUpdate,
    SessionUpdate,
)
from ..store import ARCHIVE_FILTERS, ArchiveFilter, SessionRecord, SessionStore
from ._attachment import DEFAULT_ATTACHMENT_QUEUE, Attachment
from ._client_services import ConnectionPicker, client_services
from ._controls import Controls
from ._cursor import check_cursor
from ._directories import check_absolute, check_working_directory
from ._elicitation import ClientElicitation, advertised_modes
from ._elsewhere import ElsewhereFeed
from ._errors import session_not_found
from ._links import ClientLink
from ._live_session import LiveSession
from ._mcp_caller import AcpMcpCaller, AcpMcpRouter
from ._pipeline import DeliveryPipeline, Tap
from ._restore import Replay, RestoredState
from ._titles import normalize_title, store_client_title
from ._turn import CLEANUP_TIMEOUT_SECONDS

if TYPE_CHECKING:
    from ..roles import AgentSideConnection

__all__ = ("SessionTable", "iso_time")

logger = logging.getLogger("accord.agent")

_ANNOUNCEMENT: dict[str, Any] = {"accord": {"announcement": True}}
"""``_meta`` of an activation announcement (counted by accord's client, see the module)."""

_LIST_SCAN_PAGES = 8
"""Store pages one ``session/list`` reads at most while passing over unused sessions."""

_MCP_SERVERS: TypeAdapter[list[McpServer]] = TypeAdapter(list[McpServer])


def _archive_filter(value: str | None) -> ArchiveFilter:
    """The store's filter for ``session/list``'s ``archived`` (omitted: ``exclude``).

    Raises:
        InvalidParams: a value this agent does not know (-32602, as the schema asks).
    """
    if value is None:
        return "exclude"
    for known in ARCHIVE_FILTERS:
        if value == known:
            return known
    raise InvalidParams(
        f"unknown archived filter {value!r}: this agent knows {', '.join(ARCHIVE_FILTERS)}",
        {"archived": value, "supported": list(ARCHIVE_FILTERS)},
    )


def iso_time(moment: datetime) -> str:
    """ISO 8601 in UTC with a ``Z`` suffix, as ACP shows times."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class _KeyedLocks:
    """One lock per key, created on demand and forgotten when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[anyio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncGenerator[None]:
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = anyio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


class SessionTable:
    """The live sessions of a runtime, and the session methods (module docstring).

    Args:
        engine: The engine that opens sessions.
        store: Where sessions are kept.
        link: Returns the caller's link (the client of the connection being served).
        page_size: ``session/list`` page size (the store caps it).
        turn_grace: Seconds a cancelled turn gets before its engine step is cancelled.
        grace: Seconds a session with no client attached stays live.
        max_queue: Envelopes an attachment queues before it falls behind.
        taps: Called with every committed envelope of every session (the activity log).
        live_from_elsewhere: Relay to each attached client the events other processes
            commit to its session (:mod:`._elsewhere`).
    """

    def __init__(
        self,
        engine: Engine,
        store: SessionStore,
        *,
        link: Callable[[], ClientLink],
        page_size: int,
        turn_grace: float,
        grace: float = 0.0,
        max_queue: int = DEFAULT_ATTACHMENT_QUEUE,
        taps: Sequence[Tap] = (),
        live_from_elsewhere: bool = False,
    ) -> None:
        """Create an empty table; see the class docstring for the arguments."""
        self._engine = engine
        self._capabilities: EngineCapabilities = engine.capabilities
        self._store = store
        self._link = link
        self._page_size = page_size
        self._turn_grace = turn_grace
        self.grace = grace
        self._max_queue = max_queue
        self._taps = tuple(taps)
        self._live_from_elsewhere = live_from_elsewhere
        self._locks = _KeyedLocks()
        self.live: dict[str, LiveSession] = {}
        # The sessions each departed client left with no client attached (leave() again
        # returns them); forgotten with the link.
        self._alone: weakref.WeakKeyDictionary[ClientLink, list[LiveSession]]
        self._alone = weakref.WeakKeyDictionary()

    # ------------------------------------------------------------------ lookups

    def active(self, session_id: str) -> LiveSession:
        """The live session ``session_id``, which the caller is attached to.

        Raises:
            SessionNotActive: it is not live on this connection (-32002).
        """
        session = self.live.get(session_id)
        if session is None or not session.lifecycle.live or self._link() not in session.links:
            raise session_not_found(
                session_id, "it is not active on this connection (load or resume it first)"
            )
        return session

    async def _stored(self, session_id: str) -> SessionRecord:
        record = await self._store.get_session(session_id)
        if record is None:
            raise session_not_found(session_id)
        return record

    # ------------------------------------------------------------------ new / fork

    async def create(
        self, cwd: str, additional_directories: Sequence[str], mcp_servers: Sequence[McpServer]
    ) -> LiveSession:
        """``session/new``: store a new session and open it.

        Raises:
            InvalidParams: ``cwd`` is not an existing directory, or a directory is not
                absolute (:mod:`._directories`).
            RequestError: the engine refused the session (nothing stays stored).
        """
        check_absolute("additionalDirectories", additional_directories)
        await check_working_directory(cwd)
        controls = Controls(self._capabilities)
        now = datetime.now(UTC)
        record = SessionRecord(
            session_id=new_id(),
            cwd=cwd,
            additional_directories=tuple(additional_directories),
            mcp_servers=tuple(server.to_wire() for server in mcp_servers),
            created_at=now,
            updated_at=now,
            state={"format": 1, **controls.to_json(), "permissions": {}, "stateSeq": 0},
        )
        await self._store.create_session(record)
        restored = RestoredState(record, self._capabilities)
        link = self._link()
        try:
            session = await self._open(record, restored, mcp_servers, epoch=0, link=link)
            await self._attach(session, link)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._store.delete_session(record.session_id)
            raise
        await self._announce(session, record.updated_at, link)
        return session

    async def fork(
        self,
        source_id: str,
        cwd: str,
        additional_directories: Sequence[str],
        mcp_servers: Sequence[McpServer],
    ) -> LiveSession:
        """``session/fork``: copy a stored session under a new id and open the copy.

        Raises:
            SessionNotActive: the source is not stored (-32002).
            InvalidParams: ``cwd`` is not an existing directory, or a directory is not
                absolute (:mod:`._directories`).
        """
        check_absolute("additionalDirectories", additional_directories)
        await check_working_directory(cwd)
        source = await self._stored(source_id)
        now = datetime.now(UTC)
        forked = await self._store.fork_session(
            source_id,
            SessionRecord(
                session_id=new_id(),
                cwd=cwd,
                additional_directories=tuple(additional_directories),
                mcp_servers=tuple(server.to_wire() for server in mcp_servers),
                title=source.title,
                title_by_client=source.title_by_client,
                created_at=now,
                updated_at=now,
            ),
        )
        restored = RestoredState(forked, self._capabilities)
        await restored.catch_up(self._store, forked.session_id)
        forked = await self._store.update_session(forked.session_id, epoch=forked.epoch + 1)
        link = self._link()
        try:
            session = await self._open(forked, restored, mcp_servers, epoch=forked.epoch, link=link)
            await self._attach(session, link)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._store.delete_session(forked.session_id)
            raise
        await session.save(self._store)
        await self._announce(session, forked.updated_at, link)
        return session

    # ------------------------------------------------------------------ load / resume

    async def restore(
        self,
        session_id: str,
        cwd: str,
        additional_directories: Sequence[str],
        mcp_servers: Sequence[McpServer] | None,
        *,
        replay_history: bool,
        cursor: object = None,
    ) -> LiveSession:
        """``session/load`` (``replay_history``) or ``session/resume``; with ``cursor``
        (not ``None``), only the stored events after it are sent.

        Raises:
            SessionNotActive: no such session is stored (-32002).
            InvalidParams: ``cwd`` differs from the stored one or is no longer an existing
                directory, or a path is not absolute (:mod:`._directories`).
            CursorRejected: ``cursor`` cannot be honoured (nothing changed).
        """
        check_absolute("cwd", [cwd])
        check_absolute("additionalDirectories", additional_directories)
        link = self._link()
        async with self._locks.hold(session_id):
            record = await self._stored(session_id)
            if record.archived:
                raise InvalidParams(
                    f"session {session_id!r} is archived: unarchive it (session/unarchive) before"
                    " loading or resuming it",
                    {"sessionId": session_id, "reason": "archived"},
                )
            if cwd != record.cwd:
                raise InvalidParams(
                    f"session {session_id!r} belongs to {record.cwd!r}, not {cwd!r}",
                    {"sessionId": session_id, "cwd": cwd, "storedCwd": record.cwd},
                )
            await check_working_directory(cwd, stored=True)
            live = self.live.get(session_id)
            if (
                live is not None
                and live.lifecycle.live
                and (link not in live.links or len(live.links) > 1)
            ):
                # Attach to a session live here; a client reloading a session others share
                # attaches again instead of restarting it. The client's acp MCP servers (a
                # client back after a reconnect) are its own.
                link.mcp.declare(mcp_servers if mcp_servers is not None else live.mcp_servers)
                self._detach(live, link)
                return await self._join(live, link, replay_history=replay_history, cursor=cursor)
            after: int | None = None
            if cursor is not None:
                if live is not None:
                    epoch_now, last = live.pipeline.epoch, live.pipeline.committed_seq
                else:
                    epoch_now, last = record.epoch, record.last_seq
                after = await check_cursor(
                    self._store, session_id, cursor, epoch=epoch_now, last_seq=last
                )
            session: LiveSession | None = None
            try:
                if live is not None:
                    epoch = await self._quiesce(live)
                    record = await self._stored(session_id)
                else:
                    epoch = record.epoch + 1
                servers = (
                    list(mcp_servers)
                    if mcp_servers is not None
                    else _MCP_SERVERS.validate_python(list(record.mcp_servers))
                )
                record = await self._store.update_session(
                    session_id,
                    additional_directories=tuple(additional_directories),
                    mcp_servers=[server.to_wire() for server in servers],
                    epoch=epoch,
                )
                restored = RestoredState(record, self._capabilities)
                await restored.catch_up(self._store, session_id)
                session = await self._open(
                    record, restored, servers, epoch=epoch, live=live, link=link
                )
                history = record if replay_history and after is None else None
                tracker = await self._attach(session, link, after=after, history=history)
                session.tracker = tracker
                await self._end_unfinished(session, tracker)
                await session.save(self._store)
                await session.settle(link)
                await self._announce(session, record.updated_at, link)
            except BaseException:
                # Nothing half-restored stays live: the client must load or resume again.
                if session is not None:
                    await self._discard(session)
                elif live is not None:
                    self._forget(live)
                raise
            if session.lifecycle.state == "loading":
                session.lifecycle.apply("ready")
            return session

    async def _join(
        self, live: LiveSession, link: ClientLink, *, replay_history: bool, cursor: object
    ) -> LiveSession:
        """Attach ``link`` to a session live here (module docstring: attach)."""
        if live.turn is None:
            await self.catch_up(live, owned=False)
        after: int | None = None
        if cursor is not None:
            pipeline = live.pipeline
            after = await check_cursor(
                self._store,
                live.session_id,
                cursor,
                epoch=pipeline.epoch,
                last_seq=pipeline.committed_seq,
            )
        history = None
        if replay_history and after is None:
            history = await self._stored(live.session_id)
        await self._attach(live, link, after=after, history=history)
        await live.settle(link)
        await self._announce(live, datetime.now(UTC), link)
        for question in list(live.questions):
            question.offer(link)
        return live

    async def catch_up(self, live: LiveSession, *, owned: bool) -> bool:
        """Bring ``live`` up to date if another process continued the session (module
        docstring: elsewhere); return whether it was behind.

        Between turns here only. The engine session is opened again on the stored history,
        and the controls, title, commands and remembered answers are the stored ones; the
        pipeline numbers its next event after the stored chain, and each attached client gets
        from the store what it was not relayed yet. ``owned``: this process holds the
        session's claim (its turn is about to run), so tool calls the other process left
        unfinished (it died mid-turn) are ended as after a load; without the claim, another
        process may be running a turn, and nothing is written.
        """
        record = await self._stored(live.session_id)
        known = live.pipeline.last_seq
        if record.last_seq <= known or live.pipeline.writer is not None:
            return False
        restored = RestoredState(record, self._capabilities)
        tracker = ToolCallTracker() if owned else None
        await restored.catch_up(self._store, live.session_id, tracker=tracker, tools_after=known)
        engine_session = await self._open_engine(
            record, restored, live.mcp_servers, self._link(), [live]
        )
        previous, live.engine = live.engine, engine_session
        live.pipeline.continue_after(record.last_seq)
        live.controls = restored.controls
        live.permissions = restored.permissions
        live.title = restored.title
        live.commands = restored.commands
        live.restore_engine_state(restored.engine_state, restored.engine_seq)
        await previous.aclose()
        if tracker is not None:
            await self._end_unfinished(live, tracker)
        return True

    async def _quiesce(self, live: LiveSession) -> int:
        """Stop a live session for a reload: new epoch, turn cancelled and ended, engine
        session closed. Returns the new epoch."""
        live.lifecycle.apply("reload")
        epoch = live.pipeline.new_epoch()
        turn = live.turn
        if turn is not None:
            turn.cancel()
            with anyio.move_on_after(self._turn_grace + CLEANUP_TIMEOUT_SECONDS):
                await turn.done.wait()
        await live.engine.aclose()
        # What the old epoch committed goes out first; the replay follows it.
        with anyio.move_on_after(CLEANUP_TIMEOUT_SECONDS):
            await live.settle()
        self._detach(live)
        return epoch

    async def _end_unfinished(self, session: LiveSession, tracker: ToolCallTracker) -> None:
        for tool_call_id in tracker.unfinished():
            ended = ToolCallEnded(tool_call_id=tool_call_id, status="failed")
            tracker.apply(ended)
            await session.publish(ended)

    async def _open(
        self,
        record: SessionRecord,
        restored: RestoredState,
        mcp_servers: Sequence[McpServer],
        *,
        epoch: int,
        link: ClientLink,
        live: LiveSession | None = None,
    ) -> LiveSession:
        """Open the engine session for ``record`` and make it live (or refresh ``live``);
        ``link`` is the client that asked (attached next, :meth:`_attach`)."""
        session_id = record.session_id
        holder: list[LiveSession] = []  # until the session is live: the caller's client
        engine_session = await self._open_engine(record, restored, mcp_servers, link, holder)
        if live is None:
            pipeline = DeliveryPipeline(
                session_id, self._store, epoch=epoch, next_seq=record.last_seq + 1
            )
            for tap in self._taps:
                pipeline.add_tap(tap)
            live = LiveSession(
                session_id=session_id,
                cwd=record.cwd,
                additional_directories=record.additional_directories,
                mcp_servers=tuple(mcp_servers),
                engine=engine_session,
                pipeline=pipeline,
                controls=restored.controls,
                permissions=restored.permissions,
                title=restored.title,
                commands=restored.commands,
                engine_state=restored.engine_state,
                engine_seq=restored.engine_seq,
            )
            self.live[session_id] = live
            self._go_live(live, link)
            holder.append(live)
            return live
        # Another process may have continued the session since it went live here.
        live.pipeline.continue_after(record.last_seq)
        live.cwd = record.cwd
        live.additional_directories = record.additional_directories
        live.mcp_servers = tuple(mcp_servers)
        live.engine = engine_session
        live.controls = restored.controls
        live.permissions = restored.permissions
        live.title = restored.title
        live.commands = restored.commands
        live.restore_engine_state(restored.engine_state, restored.engine_seq)
        holder.append(live)
        return live

    async def _open_engine(
        self,
        record: SessionRecord,
        restored: RestoredState,
        mcp_servers: Sequence[McpServer],
        link: ClientLink,
        holder: list[LiveSession],
    ) -> EngineSession:
        """Open the engine's session on ``restored``; ``holder`` has the live session once
        there is one (the client services ask its clients)."""
        session_id = record.session_id

        def candidates() -> list[AgentSideConnection]:
            if not holder:
                return [link.connection]
            session = holder[0]
            order = [session.driver] if session.driver is not None else []
            order.extend(session.links)
            return [each.connection for each in order if not each.gone]

        def callers() -> list[AcpMcpCaller]:
            if not holder:
                return [link.mcp]
            session = holder[0]
            order = [session.driver] if session.driver is not None else []
            order.extend(session.links)
            return [each.mcp for each in order if not each.gone]

        link.mcp.declare(mcp_servers)
        reader, writer, terminals = client_services(
            link.connection, session_id, ConnectionPicker(candidates)
        )
        asking = self._request_elicitation(link)
        try:
            engine_session = await self._engine.open_session(
                SessionContext(
                    session_id=session_id,
                    cwd=record.cwd,
                    additional_directories=record.additional_directories,
                    mcp_servers=tuple(mcp_servers),
                    history=restored.engine_state,
                    mode_id=restored.controls.mode_id,
                    config_values=MappingProxyType(dict(restored.controls.values)),
                    file_reader=reader,
                    file_writer=writer,
                    terminals=terminals,
                    title=restored.title,
                    elicitation=asking,
                    mcp_over_acp=AcpMcpRouter(mcp_servers, callers),
                )
            )
        finally:
            if asking is not None:
                asking.close()  # the request is about to be answered
        return engine_session

    def _request_elicitation(self, link: ClientLink) -> ClientElicitation | None:
        """Questions tied to the client's request being handled, if it can be asked any."""
        request_id = current_request_id()
        if request_id is None:  # not served over a connection
            return None
        connection = link.connection
        if not advertised_modes(connection):
            return None
        return ClientElicitation(connection, None, request_id=request_id)

    def _go_live(self, live: LiveSession, link: ClientLink) -> None:
        """Open ``live``'s task group (in ``link``'s host, see ``ClientLink.host``) and start
        the feed of other processes' events when the runtime follows them."""
        live.host(link.host)
        if self._live_from_elsewhere:
            feed = live.feed = ElsewhereFeed(live.pipeline)
            live.start_soon(feed.run, name=f"accord session {live.session_id} feed", key=feed)

    async def _attach(
        self,
        live: LiveSession,
        link: ClientLink,
        *,
        after: int | None = None,
        history: SessionRecord | None = None,
    ) -> ToolCallTracker:
        """Attach ``link``'s client to ``live``: the one way new, fork, load, resume, a resume
        from a cursor and a join reach a client (:mod:`._attachment`).

        With ``after`` (a cursor's ``seq``), the stored events after it are sent first; with
        ``history`` (the stored record, ``session/load``), the history up to now is replayed
        first (before this returns: a failed replay detaches the client and raises); else the
        client gets what commits from now on. Returns the tool-call tracker the replay rebuilt
        (empty without one); ``live.settle(link)`` then says when everything is sent.
        """
        pipeline = live.pipeline
        tracker = ToolCallTracker()
        if after is not None:
            attachment = Attachment.from_store(
                pipeline, link.channel, after=after, max_queue=self._max_queue
            )
        elif history is not None:
            until = pipeline.committed_seq
            replayed = Replay(
                self._store,
                live.session_id,
                restored=RestoredState(history, self._capabilities),
                tracker=tracker,
                until_seq=until,
            )
            attachment = Attachment.replaying(
                pipeline, link.channel, history=replayed, until=until, max_queue=self._max_queue
            )
        else:
            attachment = Attachment.live(
                pipeline, link.channel, after=pipeline.committed_seq, max_queue=self._max_queue
            )
        live.host(link.host)  # opened again if its host has ended (LiveSession.host)
        pipeline.attach(attachment)
        live.links[link] = attachment
        link.attachments[live.session_id] = attachment
        try:
            await attachment.replay()
        except BaseException:
            self._detach(live, link)
            raise
        live.start_for(
            link, attachment.run, name=f"accord session {live.session_id} sender", key=attachment
        )
        return tracker

    def _detach(self, live: LiveSession, link: ClientLink | None = None) -> None:
        """Detach ``link`` (every client when ``None``) from ``live``."""
        for each in [link] if link is not None else list(live.links):
            attachment = live.links.pop(each, None)
            if attachment is not None:
                live.pipeline.detach(attachment)
            if each.attachments.get(live.session_id) is attachment:
                each.attachments.pop(live.session_id, None)

    async def _announce(
        self, session: LiveSession, updated_at: datetime, link: ClientLink | None = None
    ) -> None:
        """Send the activation announcements once the response is out (module docstring)."""
        commands = session.commands
        if commands is None:
            commands = self._capabilities.commands
        updates: list[SessionUpdate] = []
        if commands:
            updates.append(
                AvailableCommandsUpdateSessionUpdate(
                    available_commands=list(commands), meta=_ANNOUNCEMENT
                )
            )
        updates.append(
            SessionInfoUpdateSessionUpdate(
                title=session.title, updated_at=iso_time(updated_at), meta=_ANNOUNCEMENT
            )
        )
        announced = anyio.Event()
        session.announced = announced
        session.announcements = len(updates)
        channel = (link or self._link()).channel

        async def send() -> None:
            try:
                for update in updates:
                    await channel.send(session.session_id, update)
            finally:
                announced.set()

        if not after_reply(send):  # not served over a connection: nothing to wait for
            await send()

    # ------------------------------------------------------------------ close / delete

    async def close(self, session_id: str) -> None:
        """``session/close``: stop and forget a live session; stored data stays.

        Only the caller's own attachment is closed: a session live for other connections
        only (also one in its grace period, with none attached) is left running, as a
        session that is not live here would be.

        Raises:
            SessionNotActive: the session is neither live nor stored (-32002).
        """
        link = self._link()
        async with self._locks.hold(session_id):
            live = self.live.get(session_id)
            if live is None or link not in live.links:
                await self._stored(session_id)
                return
            if any(each is not link for each in live.links):
                self._detach(live, link)  # others still have it open
                return
            await self._shut(live)

    def leave(self, link: ClientLink) -> list[LiveSession]:
        """``link``'s client has gone: detach it everywhere; return the sessions it leaves
        with no client attached (with no grace period, their turns are cancelled)."""
        if link.left:
            return self._alone.get(link, [])
        link.leave()
        alone: list[LiveSession] = []
        for session_id in list(link.attachments):
            live = self.live.get(session_id)
            if live is None:
                link.attachments.pop(session_id, None)
                continue
            self._detach(live, link)
            if not live.links:
                alone.append(live)
                if self.grace <= 0 and live.turn is not None:
                    logger.info(
                        "session %s: its last client disconnected; cancelling its turn", session_id
                    )
                    live.request_cancel()
        self._alone[link] = alone
        return alone

    async def expire(self, live: LiveSession) -> None:
        """Close ``live`` once it has had no client attached for the grace period.

        A running turn is waited for, unless it waits for an answer nobody is attached to
        give (then it is cancelled). A client attaching meanwhile keeps the session live.
        """
        await anyio.sleep(self.grace)
        while self.live.get(live.session_id) is live and not live.links:
            turn = live.turn
            if turn is None:
                async with self._locks.hold(live.session_id):
                    if self.live.get(live.session_id) is live and not live.links and not live.turn:
                        logger.info(
                            "session %s: no client for %ss; closed", live.session_id, self.grace
                        )
                        await self._shut(live)
                return
            if live.questions:
                live.request_cancel()
            with anyio.move_on_after(max(self.grace, 0.05)):
                await turn.done.wait()

    async def delete(self, session_id: str) -> None:
        """``session/delete``: close the session if live, then remove it from the store."""
        async with self._locks.hold(session_id):
            live = self.live.get(session_id)
            if live is not None:
                await self._shut(live)
            await self._store.delete_session(session_id)

    async def _shut(self, live: LiveSession) -> None:
        turn = live.turn
        live.lifecycle.apply("close")
        if turn is not None:
            turn.cancel()
            await turn.done.wait()
        self._forget(live)
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT_SECONDS):
            await live.engine.aclose()

    async def _discard(self, live: LiveSession) -> None:
        """Forget a session and close its engine session (after a failed restore)."""
        self._forget(live)
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT_SECONDS):
            await live.engine.aclose()

    def _forget(self, live: LiveSession) -> None:
        if live.lifecycle.state != "closed":
            live.lifecycle.state = "closed"
        self._detach(live)
        live.end()
        if self.live.get(live.session_id) is live:
            del self.live[live.session_id]

    async def close_all(self) -> None:
        """Close every live session (the runtime is shutting down)."""
        for session_id in list(self.live):
            async with self._locks.hold(session_id):
                live = self.live.get(session_id)
                if live is not None:
                    await self._shut(live)

    # ------------------------------------------------------------------ title / status

    async def set_title(self, session_id: str, title: str) -> str:
        """``session/set_title``: store the normalized title (:mod:`._titles`); return it.

        A session live here publishes it (stored in its chain, sent to every attached client
        as ``session_info_update``) and saves it in its record; any other stored session has
        its record's title replaced. Either way a later load or resume announces it.

        Raises:
            InvalidParams: the title fails validation (-32602; nothing changes).
            SessionNotActive: no such session is stored (-32002).
        """
        stored = normalize_title(session_id, title)
        async with self._locks.hold(session_id):
            live = self.live.get(session_id)
            if live is not None and live.lifecycle.live:
                await live.announced.wait()
                await store_client_title(self._store, session_id, stored, live)
                await live.publish(TitleChanged(title=stored))
                await live.save(self._store)
                await live.settle(self._link())
            else:
                await self._stored(session_id)
                await store_client_title(self._store, session_id, stored, live)
        return stored

    async def status(self, session_id: str) -> tuple[str, dict[str, Any]]:
        """``session/status``: ``open`` (live here) or ``saved`` (stored only), with what
        accord adds in ``_meta.accord`` (``running``: a turn runs; ``clients``: how many are
        attached; ``archived``). Reads only: nothing is loaded, attached or changed.

        Raises:
            SessionNotActive: the session is neither live here nor stored (-32002).
        """
        live = self.live.get(session_id)
        if live is not None and live.lifecycle.live:
            details = {"running": live.turn is not None, "clients": len(live.links)}
            return "open", {**details, "archived": False}
        record = await self._stored(session_id)
        return "saved", {"running": False, "clients": 0, "archived": record.archived}

    async def archive(self, session_id: str, *, archived: bool) -> None:
        """``session/archive`` (``archived``) or ``session/unarchive``: set the stored flag.

        Archiving a session live here first shuts it as ``session/close`` would with no other
        client attached: its turn is cancelled and waited for, every attached client is
        detached and the engine session closed (an archived session is not live anywhere
        here). Setting the flag it already has succeeds.

        Raises:
            SessionNotActive: no such session is stored (-32002).
        """
        async with self._locks.hold(session_id):
            await self._stored(session_id)
            live = self.live.get(session_id)
            if archived and live is not None:
                await self._shut(live)
            await self._store.update_session(session_id, archived=archived)

    # ------------------------------------------------------------------ list

    async def list(self, request: ListSessionsRequest) -> ListSessionsResponse:
        """``session/list``: one page, newest first.

        Raises:
            InvalidParams: ``cwd`` is not absolute, or the cursor is invalid (-32602).
        """
        if request.cwd is not None:
            check_absolute("cwd", [request.cwd])
        archived = _archive_filter(request.archived)
        sessions: list[SessionInfo] = []
        cursor = request.cursor
        # Sessions with nothing stored (opened, never used) are not history: passed over,
        # reading on (a bounded number of store pages) so that a page is not left empty.
        for _ in range(_LIST_SCAN_PAGES):
            page = await self._store.list_sessions(
                cwd=request.cwd,
                cursor=cursor,
                limit=self._page_size - len(sessions),
                archived=archived,
            )
            sessions.extend(
                SessionInfo(
                    session_id=summary.session_id,
                    cwd=summary.cwd,
                    additional_directories=list(summary.additional_directories),
                    title=summary.title,
                    updated_at=iso_time(summary.updated_at),
                    archived=summary.archived,
                )
                for summary in page.sessions
                if summary.last_seq > 0
            )
            cursor = page.next_cursor
            if cursor is None or len(sessions) >= self._page_size:
                break
        fields: dict[str, Any] = {"sessions": sessions}
        if cursor is not None:
            fields["next_cursor"] = cursor
        return ListSessionsResponse(**fields)
