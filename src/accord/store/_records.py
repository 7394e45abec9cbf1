"""The plain data a session store keeps: sessions, events, and pages of a listing.

These frozen dataclasses are the whole vocabulary shared by the stores (``_memory``,
``_sqlite``), the group-commit writer (``_writer``) and the agent runtime above them. They know
nothing of event classes: an event's body is its already-serialized JSON ``payload``, and a
session's ``state`` is a JSON object the store never looks into. Below this module: the
standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeAlias

#: A JSON object (``dict`` with ``str`` keys and JSON values). The store checks that it
#: serializes (a value that does not raises ``TypeError``) and gives back a fresh copy on
#: every read, so mutating a returned object never changes what is stored.
JsonObject: TypeAlias = dict[str, Any]


def _require_aware(name: str, value: datetime) -> None:
    if value.tzinfo is None:
        raise ValueError(f"{name} must be timezone-aware (use datetime.now(UTC)), got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """One stored session: where it runs, what it is called, and the runtime's opaque state.

    Attributes:
        session_id: the ACP ``sessionId``; unique within a store.
        cwd: the absolute working directory the session was created (or last loaded) with.
        additional_directories: extra absolute workspace roots, in the client's order.
        mcp_servers: the MCP server configurations the client sent (wire JSON objects).
        title: a human-readable title, or ``None``.
        created_at: when the session was created (timezone-aware).
        updated_at: last activity; listings are ordered by it, newest first (timezone-aware).
        epoch: the runtime's epoch counter (opaque to the store).
        last_seq: the highest ``seq`` stored for this session (0 before the first event).
        state: everything else the runtime needs to resume (mode, config values, remembered
            permission decisions, system prompt, engine state); opaque to the store.
        archived: the session is archived (ACP ``session/archive``): listings leave it out
            unless asked for it; its history is kept.
        title_by_client: a client set ``title`` (ACP ``session/set_title``): a title the agent
            generates does not replace it (``set_engine_title`` refuses it).
    """

    session_id: str
    cwd: str
    created_at: datetime
    updated_at: datetime
    additional_directories: tuple[str, ...] = ()
    mcp_servers: tuple[JsonObject, ...] = ()
    title: str | None = None
    epoch: int = 0
    last_seq: int = 0
    state: JsonObject = field(default_factory=dict[str, Any])
    archived: bool = False
    title_by_client: bool = False

    def __post_init__(self) -> None:
        _require_aware("created_at", self.created_at)
        _require_aware("updated_at", self.updated_at)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredEvent:
    """One event of a session's canonical event chain, as persisted.

    Attributes:
        session_id: the session the event belongs to.
        seq: position in the session's chain; strictly increasing per session, starting at 1.
        epoch: the runtime's epoch when the event happened.
        turn_id: the prompt turn that produced it, or ``None`` outside a turn.
        agent_id: which agent (or sub-agent) produced it.
        kind: the event's kind tag (e.g. ``"message_delta"``); lets readers skip payloads.
        layer: the event's layer tag (opaque to the store).
        payload: the event serialized as JSON (UTF-8 bytes); stored and returned verbatim.
        created_at: when the event happened (timezone-aware).
    """

    session_id: str
    seq: int
    epoch: int
    turn_id: str | None
    agent_id: str
    kind: str
    layer: str
    payload: bytes
    created_at: datetime

    def __post_init__(self) -> None:
        if self.created_at.tzinfo is None:  # inlined: this runs for every event read
            _require_aware("created_at", self.created_at)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSummary:
    """What a listing shows of a session: the ACP ``SessionInfo`` fields plus a few counters.

    Listings leave out ``state`` and ``mcp_servers`` on purpose: ``state`` may hold a whole
    model message history, and a page of 100 of those is not a cheap thing to read. Use
    ``get_session`` for the full :class:`SessionRecord`.

    Attributes:
        session_id: the ACP ``sessionId``.
        cwd: the session's working directory.
        additional_directories: extra workspace roots.
        title: the title, or ``None``.
        created_at: creation time.
        updated_at: last activity (the listing's sort key).
        last_seq: the highest stored ``seq`` (0 if no events).
        archived: the session is archived.
    """

    session_id: str
    cwd: str
    additional_directories: tuple[str, ...]
    title: str | None
    created_at: datetime
    updated_at: datetime
    last_seq: int
    archived: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionPage:
    """One page of ``list_sessions``.

    Attributes:
        sessions: the sessions on this page, newest ``updated_at`` first (ties: by
            ``session_id``, descending).
        next_cursor: pass it back as ``cursor`` for the next page; ``None`` on the last page.
    """

    sessions: tuple[SessionSummary, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionClaim:
    """Who may run a session's turns, after a ``claim_session`` call.

    One process at a time runs a session's turns: it claims the session first, a lease that
    it renews while the turn runs and releases when the turn ends. A process that dies stops
    renewing, and once ``expires_at`` has passed another process may claim the session.

    Attributes:
        owner: the holder of the lease (the caller's own id when the claim was granted).
        expires_at: when the lease ends unless renewed (timezone-aware).
        last_seq: the session's stored ``last_seq`` as the claim was decided, so the new owner
            can tell whether another process appended events since it last looked.
    """

    owner: str
    expires_at: datetime
    last_seq: int

    def held_by(self, owner: str) -> bool:
        """Whether ``owner`` holds the lease."""
        return self.owner == owner
