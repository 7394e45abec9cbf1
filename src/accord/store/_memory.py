"""``MemorySessionStore``: the ``SessionStore`` protocol in process memory, for tests.

It follows the same rules as the SQLite store, to the error: JSON values are validated and
copied in and out, timestamps come back in UTC, cursors and batch checks come from the shared
``_codec``. Nothing survives the process. Above: the agent runtime and tests. Below:
``_codec``, ``_records``, ``_errors``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Self

from anyio.lowlevel import checkpoint

from ._codec import (
    check_follows,
    check_lease,
    copy_json,
    decode_cursor,
    encode_cursor,
    given_fields,
    group_events,
    to_micros,
)
from ._errors import SessionExists, StoreClosed, UnknownSession
from ._follow import Wakeups, follow_session
from ._protocol import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    READ_BATCH_SIZE,
    UNCHANGED,
    ArchiveFilter,
    Unchanged,
)
from ._records import (
    JsonObject,
    SessionClaim,
    SessionPage,
    SessionRecord,
    SessionSummary,
    StoredEvent,
)


@dataclass(slots=True)
class _Entry:
    record: SessionRecord
    events: list[StoredEvent] = field(default_factory=list[StoredEvent])
    seqs: list[int] = field(default_factory=list[int])
    claim: SessionClaim | None = None


def _normalized(record: SessionRecord) -> SessionRecord:
    """A copy that shares nothing mutable with the caller, with UTC timestamps."""
    return replace(
        record,
        additional_directories=tuple(record.additional_directories),
        mcp_servers=tuple(copy_json(list(record.mcp_servers))),
        state=copy_json(record.state),
        created_at=record.created_at.astimezone(UTC),
        updated_at=record.updated_at.astimezone(UTC),
    )


def _in_utc(event: StoredEvent) -> StoredEvent:
    return replace(event, created_at=event.created_at.astimezone(UTC))


def _summary(record: SessionRecord) -> SessionSummary:
    return SessionSummary(
        session_id=record.session_id,
        cwd=record.cwd,
        additional_directories=record.additional_directories,
        title=record.title,
        created_at=record.created_at,
        updated_at=record.updated_at,
        last_seq=record.last_seq,
        archived=record.archived,
    )


class MemorySessionStore:
    """A :class:`SessionStore` that keeps everything in memory (lost when the process ends).

    Meant for tests and for agents that do not persist sessions. Behaves like
    ``SqliteSessionStore`` in every observable way except durability.
    """

    def __init__(self) -> None:
        """Create an empty store."""
        self._sessions: dict[str, _Entry] = {}
        self._closed = False
        self._wakeups = Wakeups()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("the session store is closed")

    def _entry(self, session_id: str) -> _Entry:
        entry = self._sessions.get(session_id)
        if entry is None:
            raise UnknownSession(f"no stored session {session_id!r}")
        return entry

    async def create_session(self, record: SessionRecord) -> None:
        """See :meth:`SessionStore.create_session`."""
        await checkpoint()
        self._check_open()
        if record.session_id in self._sessions:
            raise SessionExists(f"session {record.session_id!r} is already stored")
        self._sessions[record.session_id] = _Entry(_normalized(record))

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """See :meth:`SessionStore.get_session`."""
        await checkpoint()
        self._check_open()
        entry = self._sessions.get(session_id)
        return None if entry is None else _normalized(entry.record)

    async def update_session(
        self,
        session_id: str,
        *,
        cwd: str | Unchanged = UNCHANGED,
        additional_directories: Sequence[str] | Unchanged = UNCHANGED,
        mcp_servers: Sequence[JsonObject] | Unchanged = UNCHANGED,
        title: str | Unchanged | None = UNCHANGED,
        state: JsonObject | Unchanged = UNCHANGED,
        epoch: int | Unchanged = UNCHANGED,
        updated_at: datetime | Unchanged = UNCHANGED,
        archived: bool | Unchanged = UNCHANGED,
        title_by_client: bool | Unchanged = UNCHANGED,
    ) -> SessionRecord:
        """See :meth:`SessionStore.update_session`."""
        await checkpoint()
        self._check_open()
        entry = self._entry(session_id)
        record = replace(
            entry.record,
            **given_fields(
                cwd=cwd,
                additional_directories=additional_directories,
                mcp_servers=mcp_servers,
                title=title,
                state=state,
                epoch=epoch,
                updated_at=updated_at,
                archived=archived,
                title_by_client=title_by_client,
            ),
        )
        entry.record = _normalized(record)
        return _normalized(entry.record)

    async def set_engine_title(self, session_id: str, title: str | None) -> bool:
        """See :meth:`SessionStore.set_engine_title`."""
        await checkpoint()
        self._check_open()
        entry = self._entry(session_id)
        if entry.record.title_by_client:
            return False
        entry.record = replace(entry.record, title=title)
        return True

    async def append_events(self, events: Sequence[StoredEvent]) -> None:
        """See :meth:`SessionStore.append_events`."""
        await checkpoint()
        self._check_open()
        groups = group_events(events)
        # Check everything before changing anything: a batch is all or nothing.
        entries = [(self._entry(session_id), group) for session_id, group in groups.items()]
        for entry, group in entries:
            check_follows(entry.record.session_id, entry.record.last_seq, group)
        for entry, group in entries:
            entry.events.extend(
                event if event.created_at.tzinfo is UTC else _in_utc(event) for event in group
            )
            entry.seqs.extend(event.seq for event in group)
            last = group[-1]
            entry.record = replace(
                entry.record,
                last_seq=last.seq,
                updated_at=max(entry.record.updated_at, last.created_at.astimezone(UTC)),
            )
            self._wakeups.notify(last.session_id)

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, limit: int = READ_BATCH_SIZE
    ) -> list[StoredEvent]:
        """See :meth:`SessionStore.read_events`."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        await checkpoint()
        self._check_open()
        entry = self._sessions.get(session_id)
        if entry is None:
            return []
        start = bisect.bisect_right(entry.seqs, after_seq)
        return entry.events[start : start + limit]

    async def fork_session(self, source_id: str, new_record: SessionRecord) -> SessionRecord:
        """See :meth:`SessionStore.fork_session`."""
        await checkpoint()
        self._check_open()
        source = self._entry(source_id)
        if new_record.session_id in self._sessions:
            raise SessionExists(f"session {new_record.session_id!r} is already stored")
        record = _normalized(
            replace(
                new_record,
                state=source.record.state,
                epoch=source.record.epoch,
                last_seq=source.record.last_seq,
            )
        )
        new_id = record.session_id
        self._sessions[new_id] = _Entry(
            record,
            [replace(event, session_id=new_id) for event in source.events],
            list(source.seqs),
        )
        return _normalized(record)

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        cursor: str | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        archived: ArchiveFilter = "include",
    ) -> SessionPage:
        """See :meth:`SessionStore.list_sessions`."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        limit = min(limit, MAX_PAGE_SIZE)
        after = None if cursor is None else decode_cursor(cursor)
        await checkpoint()
        self._check_open()
        keyed = sorted(
            (
                ((to_micros(entry.record.updated_at), entry.record.session_id), entry.record)
                for entry in self._sessions.values()
                if (cwd is None or entry.record.cwd == cwd)
                and (archived == "include" or entry.record.archived == (archived == "only"))
            ),
            key=lambda item: item[0],
            reverse=True,
        )
        if after is not None:
            keyed = [item for item in keyed if item[0] < after]
        page = keyed[:limit]
        next_cursor = encode_cursor(*page[-1][0]) if len(keyed) > limit else None
        return SessionPage(
            sessions=tuple(_summary(record) for _, record in page), next_cursor=next_cursor
        )

    async def delete_session(self, session_id: str) -> None:
        """See :meth:`SessionStore.delete_session`."""
        await checkpoint()
        self._check_open()
        self._sessions.pop(session_id, None)

    async def claim_session(
        self,
        session_id: str,
        owner: str,
        *,
        lease_seconds: float,
        replacing: str | None = None,
    ) -> SessionClaim:
        """See :meth:`SessionStore.claim_session`."""
        check_lease(lease_seconds)
        await checkpoint()
        self._check_open()
        entry = self._entry(session_id)
        now = datetime.now(UTC)
        held = entry.claim
        if held is None or held.owner in (owner, replacing) or held.expires_at <= now:
            held = SessionClaim(
                owner=owner,
                expires_at=now + timedelta(seconds=lease_seconds),
                last_seq=entry.record.last_seq,
            )
            entry.claim = held
        return replace(held, last_seq=entry.record.last_seq)

    async def release_session(self, session_id: str, owner: str) -> None:
        """See :meth:`SessionStore.release_session`."""
        await checkpoint()
        self._check_open()
        entry = self._sessions.get(session_id)
        if entry is not None and entry.claim is not None and entry.claim.owner == owner:
            entry.claim = None

    def follow_events(
        self, session_id: str, *, after_seq: int = 0
    ) -> AbstractAsyncContextManager[AsyncIterator[list[StoredEvent]]]:
        """See :meth:`SessionStore.follow_events` (woken by this store's appends)."""
        return follow_session(
            self,
            self._wakeups,
            session_id,
            after_seq=after_seq,
            poll_seconds=math.inf,
            check_open=self._check_open,
        )

    async def aclose(self) -> None:
        """See :meth:`SessionStore.aclose`."""
        self._closed = True
        self._sessions.clear()
        self._wakeups.notify_all()
        await checkpoint()

    async def __aenter__(self) -> Self:
        """Return the store (nothing to open)."""
        await checkpoint()
        self._check_open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store."""
        await self.aclose()
