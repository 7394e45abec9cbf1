"""A live session: what the runtime keeps in memory for a session a client has open.

:class:`LiveSession` ties together, for one session: the engine's session object, its
delivery pipeline (:mod:`._pipeline`: stamping ``seq`` and ``epoch``, storing, fanning out)
with the attachment of every client attached to it (:mod:`._links`), the questions its turn
has open, the tool-call tracker, the lifecycle
(:mod:`._lifecycle`), the controls, the remembered permission answers, the title, the
slash commands and the engine's last state snapshot.

A live session owns its tasks: :meth:`LiveSession.run` holds its task group from the moment
it goes live until it is closed (``session/close``, ``session/delete``, the end of its grace
period, the runtime closing), and the senders of its attachments, the feed of events other
processes commit to it (:mod:`._elsewhere`, one per session), the renewal of its turn's claim
(:mod:`._ownership`) and the turn notices to its clients run there
(:meth:`LiveSession.start_soon`), never in a client connection's task group: a session's
lifetime is not the lifetime of the connection that opened or prompted it. A task that serves
one client (its sender, its notices) is bound to that client too
(:meth:`LiveSession.start_for`): it is cancelled when the client leaves.

The group is opened (:meth:`LiveSession.host`) in the host of the client that makes the
session live (:attr:`~._links.ClientLink.host`: the runtime's ``serve()`` call for that
connection, which returns only once the session is closed; the connection itself when it was
built directly). Should that host end first, the group opens again in the host of a client
still attached, or of the next client to attach or prompt, and its standing tasks (the
senders, the feed, the claim's renewal) start again there, from where they were.
:class:`TurnHandle` is the running prompt turn, if any: its ids and the means to stop it.

The session's state record (``SessionRecord.state``) is :meth:`LiveSession.state_json`::

    {"format": 1, "mode": "ask", "config": {"model": "fast"}, "permissions": {...},
     "commands": [...] | null, "engineSeq": 12, "stateSeq": 41}

``stateSeq`` is the last ``seq`` whose effect the record includes; events after it
(a crash between an event's commit and the record's update) are folded in again when the
session is restored (:mod:`._restore`). ``engineSeq`` says where the engine's last state is:
the stored whole ``StateSnapshot`` at that ``seq`` with the ``state_appended`` events after it
(the record is saved after every turn, and its size no longer grows with the conversation).
When the stored chain does not hold the state (one set outside it, as the coder's opening
state, or after a failed store), the record has ``"engine": <the state>`` instead, as records
written before ``engineSeq`` have.

Below: :mod:`accord.events`, :mod:`accord.store`, the engine protocol. Above: the runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Final, Literal, TypeAlias

import anyio
from anyio.abc import TaskGroup
from pydantic import JsonValue

from ..engines import ROOT_AGENT_ID, EngineSession, Event, StateTable, ToolCallTracker
from ..errors import LocalProtocolError
from ..events import Envelope
from ..schema import AvailableCommand, McpServer
from ..store import SessionStore
from ._attachment import Attachment
from ._controls import Controls
from ._elsewhere import ElsewhereFeed
from ._lifecycle import SessionLifecycle
from ._links import ClientLink, Host, OpenQuestion
from ._permissions import PermissionMemory
from ._pipeline import DeliveryPipeline

__all__ = (
    "STATE_FORMAT",
    "TURN_TRANSITIONS",
    "LiveSession",
    "TurnHandle",
    "TurnPhase",
    "TurnTrigger",
)

#: Version of the state record layout above.
STATE_FORMAT: Final = 1


TurnPhase: TypeAlias = Literal["running", "cancelling", "stopping", "done"]
"""Where a prompt turn is: ``running``; ``cancelling`` (the client sent ``session/cancel``:
the engine sees ``TurnContext.cancelled`` and should wrap up); ``stopping`` (cut off: the
grace period ran out, or the session was reloaded; the engine's step is cancelled and no
further output is read); ``done`` (it ended and its events are delivered)."""

TurnTrigger: TypeAlias = Literal["cancel", "stop", "finish"]
"""What happens to a turn: the cancel request, the hard stop, its end."""

TURN_TRANSITIONS: Final[StateTable[TurnPhase, TurnTrigger]] = StateTable(
    {
        ("running", "cancel"): "cancelling",
        ("running", "stop"): "stopping",
        ("running", "finish"): "done",
        ("cancelling", "cancel"): "cancelling",
        ("cancelling", "stop"): "stopping",
        ("cancelling", "finish"): "done",
        ("stopping", "cancel"): "stopping",
        ("stopping", "stop"): "stopping",
        ("stopping", "finish"): "done",
        ("done", "cancel"): "done",
        ("done", "stop"): "done",
    },
    initial="running",
    final=("done",),
)
"""``(phase, trigger) -> next phase`` of a prompt turn on the agent's side; an absent pair
(finishing twice) is a bug in the runtime."""


class TurnHandle:
    """One running prompt turn: its ids, its phase (:data:`TURN_TRANSITIONS`), how to stop it.

    ``cancel()`` is the cooperative request (``session/cancel``): it sets the signal the
    engine sees as ``TurnContext.cancelled`` and cancels pending permission requests at once.
    ``hard_cancel()`` cancels the engine's current step (the runtime calls it after the grace
    period, or when the session is reloaded). ``finish()`` marks the end. The phase is the
    only state; ``cancel_event`` and ``done`` are its signals for waiters.
    """

    __slots__ = (
        "_permission_scopes",
        "_step",
        "cancel_event",
        "done",
        "epoch",
        "phase",
        "stepping",
        "tokens",
        "turn_id",
    )

    def __init__(self, turn_id: str, epoch: int) -> None:
        """Create the handle of turn ``turn_id`` in ``epoch``."""
        self.turn_id = turn_id
        self.epoch = epoch
        self.phase: TurnPhase = "running"
        #: Set on entering ``cancelling`` or ``stopping`` (the engine's cancellation signal).
        self.cancel_event = anyio.Event()
        #: Set on entering ``done``: the turn has ended and its events are delivered.
        self.done = anyio.Event()
        #: Whether the engine is producing its next output (only then is a hard cancel
        #: delivered into it; an output being published is finished first).
        self.stepping = False
        self._step: anyio.CancelScope | None = None
        self._permission_scopes: set[anyio.CancelScope] = set()
        #: Input and output tokens the turn's model calls reported (every agent's), or
        #: ``None`` while none reported any (the prompt's ``usage``).
        self.tokens: tuple[int, int] | None = None

    def _advance(self, trigger: TurnTrigger) -> None:
        phase = TURN_TRANSITIONS.step(self.phase, trigger)
        if phase is None:
            raise LocalProtocolError(f"turn {self.turn_id!r}: {trigger} while {self.phase}")
        self.phase = phase
        if phase in ("cancelling", "stopping"):
            self.cancel_event.set()
        elif phase == "done":
            self.done.set()

    @property
    def hard_cancelled(self) -> bool:
        """Whether the turn was cut off (its engine's output is no longer read)."""
        return self.phase == "stopping"

    def finish(self) -> None:
        """The turn has ended and its events are delivered (wakes :attr:`done` waiters)."""
        self._advance("finish")

    @property
    def cancelled(self) -> bool:
        """Whether the turn was asked to stop."""
        return self.cancel_event.is_set()

    def cancel(self) -> None:
        """Ask the turn to stop: set the signal, cancel pending permission requests."""
        self._advance("cancel")
        for scope in self._permission_scopes:
            scope.cancel()

    def hard_cancel(self) -> None:
        """Cancel the engine's current step; the turn reads no further output."""
        self._advance("stop")
        if self._step is not None and self.stepping:
            self._step.cancel()

    def enter_step(self, scope: anyio.CancelScope) -> None:
        """Register the cancel scope around the engine's steps."""
        self._step = scope

    def leave_step(self) -> None:
        """Forget the step scope (the engine is done)."""
        self._step = None

    def add_permission_scope(self, scope: anyio.CancelScope) -> None:
        """Register a pending permission request (cancelled on :meth:`cancel`)."""
        self._permission_scopes.add(scope)
        if self.cancelled:
            scope.cancel()

    def discard_permission_scope(self, scope: anyio.CancelScope) -> None:
        """Forget a permission request that ended."""
        self._permission_scopes.discard(scope)


class LiveSession:
    """Everything the runtime holds for one session while a client has it open."""

    __slots__ = (
        "_ended",
        "_group",
        "_host",
        "_hosted",
        "_pending",
        "_standing",
        "_tasks",
        "additional_directories",
        "announced",
        "announcements",
        "commands",
        "controls",
        "cwd",
        "driver",
        "engine",
        "feed",
        "lifecycle",
        "links",
        "mcp_servers",
        "permissions",
        "pipeline",
        "questions",
        "session_id",
        "title",
        "title_by_client",
        "tracker",
        "turn",
    )

    def __init__(
        self,
        *,
        session_id: str,
        cwd: str,
        additional_directories: tuple[str, ...],
        mcp_servers: tuple[McpServer, ...],
        engine: EngineSession,
        pipeline: DeliveryPipeline,
        controls: Controls,
        permissions: PermissionMemory,
        title: str | None,
        commands: tuple[AvailableCommand, ...] | None,
        engine_state: JsonValue,
        engine_seq: int | None = None,
    ) -> None:
        """Assemble a live session (the runtime builds these on new, load, resume, fork)."""
        self.session_id = session_id
        self.cwd = cwd
        self.additional_directories = additional_directories
        self.mcp_servers = mcp_servers
        self.engine = engine
        self.pipeline = pipeline
        #: The attached clients and their attachments, in the order they attached.
        self.links: dict[ClientLink, Attachment] = {}
        #: The client whose prompt runs the current turn (``None`` between turns).
        self.driver: ClientLink | None = None
        #: The questions the running turn has put to the clients and not yet settled.
        self.questions: set[OpenQuestion[Any]] = set()
        #: Relays other processes' events to the attached clients (``None``: not asked for).
        self.feed: ElsewhereFeed | None = None
        self.controls = controls
        self.permissions = permissions
        self.title = title
        #: A client set the title (learnt from the store if another process did: ._titles).
        self.title_by_client = False
        #: Slash commands changed by the engine during the session (``None``: the engine's).
        self.commands = commands
        self.restore_engine_state(engine_state, engine_seq)
        self.lifecycle = SessionLifecycle(session_id)
        self.tracker = ToolCallTracker()
        self.turn: TurnHandle | None = None
        #: Set once the activation announcements (commands, title) went to the client, which
        #: happens right after the activating response; the session's other traffic waits
        #: for it.
        self.announced = anyio.Event()
        #: How many announcements follow the activating response.
        self.announcements = 0
        self._group: TaskGroup | None = None
        self._host: Host | None = None
        self._hosted = False
        self._ended = anyio.Event()
        self._tasks = 0
        # Started before the group opened (started then); standing tasks (by key, see
        # start_soon): started again when the group opens again after its host ended.
        self._pending: list[tuple[Callable[..., Coroutine[Any, Any, None]], tuple[Any, ...], str]]
        self._pending = []
        self._standing: dict[
            object, tuple[Callable[..., Coroutine[Any, Any, None]], tuple[Any, ...], str]
        ] = {}

    def host(self, start: Host) -> None:
        """Make sure the session's task group is open or opening: if it is not, start
        :meth:`run` with ``start`` (a client's :attr:`~._links.ClientLink.host`).

        The first client makes the session live this way; a later one opens the group again
        when its host ended before the session did (a connection built without
        :meth:`~accord.agent.AgentRuntime.serve` closed): the standing tasks (the senders of
        the clients still attached, the feed) start again there, nothing lost.

        Raises:
            LocalProtocolError: the session is closed.
        """
        if self._ended.is_set():
            raise LocalProtocolError(f"session {self.session_id!r} is not live")
        if self._hosted:
            return
        self._hosted = True
        try:
            start(self.run)
        except BaseException:
            self._hosted = False
            raise
        self._host = start

    def _host_elsewhere(self, lost: Host | None) -> None:
        """The group's host ended before the session: open it again in the host of a client
        still attached (none: the next client to attach or prompt opens it)."""
        if self._ended.is_set() or not self._standing:
            return
        for link in list(self.links):
            if link.left or link.host == lost:
                continue
            try:
                self.host(link.host)
            except RuntimeError:  # that client's connection is closing too
                continue
            return

    async def run(self) -> None:
        """Hold the session's task group until :meth:`end`; its tasks are then cancelled.

        Started by :meth:`host`. Should its host end first, the group's tasks are cancelled
        and the standing ones start again when a client next opens the group."""
        try:
            if self._ended.is_set():
                return
            async with anyio.create_task_group() as group:
                self._group = group
                for key, (func, args, name) in list(self._standing.items()):
                    group.start_soon(self._counted, key, func, *args, name=name)
                pending, self._pending = self._pending, []
                for func, args, name in pending:
                    group.start_soon(self._counted, None, func, *args, name=name)
                await self._ended.wait()
                group.cancel_scope.cancel()
        finally:
            self._group = None
            self._hosted = False
            self._pending.clear()
            lost, self._host = self._host, None
            self._host_elsewhere(lost)

    def end(self) -> None:
        """The session is no longer live here: end :meth:`run` and cancel its tasks."""
        self._ended.set()
        self._standing.clear()

    @property
    def tasks(self) -> int:
        """How many tasks run in the session's task group (0 once it has ended)."""
        return self._tasks

    async def _counted(
        self, key: object, func: Callable[..., Coroutine[Any, Any, None]], *args: Any
    ) -> None:
        self._tasks += 1
        try:
            await func(*args)
        except anyio.get_cancelled_exc_class():
            raise  # a standing task stays: it starts again if the group opens again
        except BaseException:
            self._standing.pop(key, None)
            raise
        else:
            self._standing.pop(key, None)
        finally:
            self._tasks -= 1

    def start_soon(
        self,
        func: Callable[..., Coroutine[Any, Any, None]],
        *args: Any,
        name: str,
        key: object = None,
    ) -> None:
        """Run ``func(*args)`` in the session's task group (see the module docstring).

        With a ``key`` (unique to the task, e.g. the attachment it serves), the task is
        standing: should the group's host end before the session, it starts again when the
        group is opened again (:meth:`host`); it must then be able to go on where it was.

        Raises:
            LocalProtocolError: the session is not live (closed, or its group not opened:
                call :meth:`host` first).
        """
        if self._ended.is_set() or not self._hosted:
            raise LocalProtocolError(f"session {self.session_id!r} is not live")
        group = self._group
        if key is not None:
            self._standing[key] = (func, args, name)
            if group is not None:
                group.start_soon(self._counted, key, func, *args, name=name)
        elif group is not None:
            group.start_soon(self._counted, None, func, *args, name=name)
        else:
            self._pending.append((func, args, name))

    def start_for(
        self,
        link: ClientLink,
        func: Callable[..., Coroutine[Any, Any, None]],
        *args: Any,
        name: str,
        key: object = None,
    ) -> None:
        """Run ``func(*args)`` in the session's task group until it returns or ``link``'s
        client leaves (:meth:`~._links.ClientLink.leave`), whichever comes first (``key``:
        see :meth:`start_soon`)."""
        self.start_soon(link.bound, func, *args, name=name, key=key)

    async def publish(
        self,
        event: Event,
        *,
        turn_id: str | None = None,
        agent_id: str = ROOT_AGENT_ID,
        epoch: int | None = None,
    ) -> Envelope | None:
        """Publish ``event`` through the session's pipeline (current epoch unless given).

        Returns ``None`` when the event belongs to an older epoch (and was dropped).
        """
        pipeline = self.pipeline
        return await pipeline.publish(
            event,
            epoch=pipeline.epoch if epoch is None else epoch,
            turn_id=turn_id,
            agent_id=agent_id,
        )

    def request_cancel(self) -> None:
        """``session/cancel``: ask the running turn, if any, to stop."""
        if self.lifecycle.state == "closed":
            return
        self.lifecycle.apply("cancel")
        if self.turn is not None:
            self.turn.cancel()

    @property
    def last_seq(self) -> int:
        """The ``seq`` of the last event published."""
        return self.pipeline.last_seq

    async def settle(self, link: ClientLink | None = None) -> None:
        """Wait until every event published so far is committed and sent to ``link``'s client
        (what a response to it must come after); without ``link``, only committed."""
        await self.pipeline.settle(None if link is None else self.links.get(link))

    @property
    def has_engine_state(self) -> bool:
        """Whether the engine has a state yet (a snapshot, or one set or restored)."""
        return not self.pipeline.kept_state.empty

    async def read_engine_state(self) -> JsonValue:
        """The engine's last state (a new copy at each read).

        The pipeline keeps it (:mod:`._kept_state`) in memory, compressed, only until the
        store has committed it; after that it is read back from the stored state chain: the
        engine keeps the history it runs on, and the runtime does not keep a second copy.
        """
        pipeline = self.pipeline
        return await pipeline.kept_state.read(pipeline.store, self.session_id)

    def keep_engine_state(self, state: JsonValue) -> None:
        """Keep ``state``, set from outside the stored chain: the record holds it whole
        until the next snapshot (which is stored whole)."""
        self.pipeline.kept_state.replace(state, chained=False)

    def restore_engine_state(self, state: JsonValue, seq: int | None) -> None:
        """Keep a loaded or resumed state; ``seq``: the stored whole snapshot it was folded
        from (``None``: the record held it). The next snapshot is stored whole, and the
        pieces are dropped once it is committed."""
        self.pipeline.kept_state.replace(state, chained=False, seq=seq)

    async def _engine_json(self) -> dict[str, JsonValue]:
        """The record's engine part: where the chain holds the state, else the state."""
        kept = self.pipeline.kept_state
        if kept.seq is not None and kept.seq <= self.pipeline.committed_seq:
            return {"engineSeq": kept.seq}
        return {"engine": await self.read_engine_state()}

    async def state_json(self) -> dict[str, Any]:
        """The session's state record (see the module docstring)."""
        # Taken first: the record includes no more than it says, should a snapshot come in
        # while the engine state is read back from the store.
        state_seq = self.last_seq
        engine = await self._engine_json()
        return {
            "format": STATE_FORMAT,
            **self.controls.to_json(),
            "permissions": self.permissions.to_json(),
            "commands": None
            if self.commands is None
            else [command.to_wire() for command in self.commands],
            **engine,
            "stateSeq": state_seq,
        }

    async def save(self, store: SessionStore) -> None:
        """Persist the state, once every event published so far is committed (the title is
        stored as it changes, by :mod:`._titles`: a save never writes back an older one)."""
        await self.pipeline.flush()
        state = await self.state_json()
        await store.update_session(self.session_id, state=state)
