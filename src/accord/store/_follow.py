"""Following a session's committed events: the loop every store's ``follow_events`` shares.

A follower reads the events table after a cursor (the last seq it yielded), yields what it
found, and sleeps until something wakes it: a :class:`Wakeup` that the store sets when it
knows of an append (its own appends in this process; PostgreSQL's ``NOTIFY`` for the other
processes), or a poll interval running out. The wake-up carries no data, only "look again":
the events come from the table, read strictly after the cursor, so a wake-up that was missed
(a lost ``NOTIFY``), coalesced (many appends, one wake-up) or spurious changes when the
follower looks, never what it yields: no gap, no duplicate, seq order.

The flag is level-triggered: it is cleared *before* each read, so an append that commits while
the read runs sets it again and the next wait returns at once.

:func:`follow_session` is every store's ``follow_events``: the checks, the registration of the
follower's flag, and the loop; a store gives it what differs (its poll interval, and for
PostgreSQL the shared listener to start before the first read).

Above: the stores' ``follow_events``. Below: ``_records``, anyio.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from typing import Protocol

import anyio

from ._protocol import READ_BATCH_SIZE
from ._records import StoredEvent

__all__ = ("EventReader", "Wakeup", "Wakeups", "check_follow_args", "follow", "follow_session")


class EventReader(Protocol):
    """What a follower needs of a store: ``read_events``."""

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, limit: int = READ_BATCH_SIZE
    ) -> list[StoredEvent]:
        """See :meth:`SessionStore.read_events`."""
        ...


class Wakeup:
    """A level-triggered "look again" flag for one follower (same event loop only)."""

    def __init__(self) -> None:
        """Create a flag that is not set."""
        self._event = anyio.Event()

    def set(self) -> None:
        """Wake the follower (now, or at its next wait if it is reading)."""
        self._event.set()

    def clear(self) -> None:
        """Forget earlier wake-ups (called just before a read)."""
        if self._event.is_set():
            self._event = anyio.Event()

    async def wait(self, seconds: float) -> None:
        """Return when the flag is set, or after ``seconds`` (``inf``: only when set)."""
        if math.isinf(seconds):
            await self._event.wait()
            return
        with anyio.move_on_after(seconds):
            await self._event.wait()


class Wakeups:
    """The followers of one store object, by session id: appends and notifications wake them."""

    def __init__(self) -> None:
        """Create an empty registry."""
        self._waiting: dict[str, set[Wakeup]] = {}

    @contextmanager
    def register(self, session_id: str) -> Generator[Wakeup]:
        """Register a follower of ``session_id`` for the body; yield its wake-up flag."""
        wakeup = Wakeup()
        self._waiting.setdefault(session_id, set()).add(wakeup)
        try:
            yield wakeup
        finally:
            waiting = self._waiting.get(session_id)
            if waiting is not None:
                waiting.discard(wakeup)
                if not waiting:
                    del self._waiting[session_id]

    def notify(self, session_id: str) -> None:
        """Wake every follower of ``session_id``."""
        for wakeup in self._waiting.get(session_id, ()):
            wakeup.set()

    def notify_all(self) -> None:
        """Wake every follower (the store closes, or notifications may have been lost)."""
        for waiting in self._waiting.values():
            for wakeup in waiting:
                wakeup.set()


def check_follow_args(after_seq: int, poll_seconds: float) -> None:
    """Refuse a negative cursor or a poll interval that is not a positive number.

    Raises:
        ValueError: one of them is.
    """
    valid = isinstance(after_seq, int) and not isinstance(after_seq, bool)  # pyright: ignore[reportUnnecessaryIsInstance]
    if not valid or after_seq < 0:
        raise ValueError(f"after_seq must be a non-negative integer, got {after_seq!r}")
    if not poll_seconds > 0:
        raise ValueError(f"poll_seconds must be positive, got {poll_seconds!r}")


async def follow(
    store: EventReader,
    session_id: str,
    *,
    after_seq: int,
    wakeup: Wakeup,
    poll_seconds: float,
    batch_size: int = READ_BATCH_SIZE,
) -> AsyncGenerator[list[StoredEvent]]:
    """Yield ``session_id``'s committed events after ``after_seq`` in batches, forever.

    Reads whenever ``wakeup`` is set or ``poll_seconds`` pass (``inf``: only on wake-ups).
    A full batch is followed by another read at once (a long backlog is read page by page).
    Errors of ``read_events`` (a store that is closed or cannot be reached) propagate.
    """
    cursor = after_seq
    while True:
        wakeup.clear()
        batch = await store.read_events(session_id, after_seq=cursor, limit=batch_size)
        if batch:
            cursor = batch[-1].seq
            yield batch
            if len(batch) == batch_size:
                continue
        await wakeup.wait(poll_seconds)


@asynccontextmanager
async def follow_session(
    store: EventReader,
    wakeups: Wakeups,
    session_id: str,
    *,
    after_seq: int,
    poll_seconds: float,
    check_open: Callable[[], None],
    listening: Callable[[], Awaitable[None]] | None = None,
) -> AsyncGenerator[AsyncIterator[list[StoredEvent]]]:
    """A store's ``follow_events``: ``session_id``'s events after ``after_seq``, live.

    Args:
        store: Where the events are read.
        wakeups: The store's followers (its appends, or its listener, wake them).
        session_id: The session to follow.
        after_seq: The cursor: only later events are yielded.
        poll_seconds: How often to read without a wake-up (``inf``: never).
        check_open: Raises ``StoreClosed`` when the store is closed.
        listening: Awaited once the follower is registered and before the first read, so
            that whatever wakes followers (PostgreSQL's ``LISTEN``) is in place by then.

    Raises:
        ValueError: ``after_seq`` is negative or not an integer.
        StoreClosed: from ``check_open``.
    """
    check_follow_args(after_seq, poll_seconds)
    check_open()
    with wakeups.register(session_id) as wakeup:
        if listening is not None:
            await listening()
        batches = follow(
            store, session_id, after_seq=after_seq, wakeup=wakeup, poll_seconds=poll_seconds
        )
        try:
            yield batches
        finally:
            await batches.aclose()
