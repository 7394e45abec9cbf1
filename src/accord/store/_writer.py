"""``GroupCommitWriter``: appends events one at a time, commits them in batches.

The agent runtime produces events one by one (a streamed reply is thousands of small deltas)
and must not show a client an event a crash could lose. The writer sits between the two: the
runtime ``await``\\ s ``append(event)``, a background task commits whatever has accumulated in
one ``append_events`` transaction, and only then hands the batch to ``on_committed``, which
delivers it. While one batch commits the next one fills, so the commit rate adapts to the
load: one event per transaction when idle, thousands when streaming fast. It works with any
``SessionStore``. Above: the agent runtime. Below: the ``SessionStore`` protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Generic, Literal, Self, TypeVar

import anyio
from anyio.abc import TaskGroup
from anyio.lowlevel import checkpoint

from ._errors import WriterClosed
from ._protocol import SessionStore
from ._records import StoredEvent

#: ``append`` yields to other tasks at least once per this many events.
APPEND_YIELD_EVERY = 64

#: The records a writer carries: :class:`StoredEvent` or a subclass of it (the agent
#: runtime appends its stamped envelopes, and gets the same objects back once committed).
EventT = TypeVar("EventT", bound=StoredEvent)

#: Called with each committed batch, in order, one batch at a time.
OnCommitted = Callable[[Sequence[EventT]], Awaitable[None]]

#: Default bound on events appended but not yet committed and delivered. At the ~150-byte
#: deltas of a streamed reply this is about 0.6 MB, and as one transaction it commits in a few
#: milliseconds; a producer that gets further ahead of the disk than this waits (backpressure).
DEFAULT_MAX_PENDING: Final = 4096

_State = Literal["new", "running", "closing", "closed", "failed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WriterStatistics:
    """A snapshot of a :class:`GroupCommitWriter`.

    Attributes:
        pending: events appended but not yet committed and delivered.
        max_pending: the bound on ``pending``; ``append`` waits while it is reached.
        committed_events: events committed and delivered so far.
        committed_batches: transactions committed so far.
    """

    pending: int
    max_pending: int
    committed_events: int
    committed_batches: int


async def _deliver_nowhere(batch: Sequence[object]) -> None:
    """The default ``on_committed``: nothing to deliver."""


class GroupCommitWriter(Generic[EventT]):
    """Commits appended events to a store in batches, then hands each batch on.

    ``on_committed`` gets the very objects that were appended (a writer of a
    :class:`StoredEvent` subclass hands that subclass back), so a caller keeps no parallel
    record of what is in flight.

    Use it as an async context manager; it runs its commit task in a task group of its own::

        async with GroupCommitWriter(store, deliver) as writer:
            await writer.append(event)   # returns once buffered; waits if the buffer is full
            await writer.flush()         # returns once everything appended is delivered

    Guarantees: events are committed in append order, each batch in one ``append_events``
    transaction, and ``on_committed`` sees every batch after its commit, in order, one at a
    time. Leaving the block normally commits and delivers everything appended first.

    Failure: if a commit or ``on_committed`` raises, the writer stops, the body of the
    ``async with`` is cancelled, and the error is raised from the ``async with`` (unwrapped
    when it is the only one); ``append`` and ``flush`` in other tasks raise
    :class:`WriterClosed` with the error as ``__cause__``. Events not yet committed when the
    block exits with an error or a cancellation are dropped, exactly as a crash would drop
    them, and since they were never delivered no client saw them.

    One writer may carry many sessions. Before deleting a session, stop producing its events
    and ``flush()``: a batch that names a deleted session fails with ``UnknownSession``.
    Likewise ``flush()`` before ``update_session`` when the stored state must not run ahead of
    the stored events. ``on_committed`` must not wait on the writer (``append`` or ``flush``):
    the commit task is the one that would have to make room, so it would wait for itself.
    """

    def __init__(
        self,
        store: SessionStore,
        on_committed: OnCommitted[EventT] | None = None,
        *,
        max_pending: int = DEFAULT_MAX_PENDING,
        commit_window: float = 0.0,
    ) -> None:
        """Prepare a writer; it starts in ``async with``.

        Args:
            store: where the events go.
            on_committed: awaited with each batch after it is committed (e.g. to send the
                events to clients); its errors stop the writer like commit errors.
            max_pending: at most this many events are appended but not yet delivered.
            commit_window: seconds to let events gather before a commit (0: commit as soon as
                the commit task runs). Fewer, larger transactions cost less (each one is a
                hand-off to the database thread); ``flush()``, closing, or a half-full buffer
                end the wait early.

        Raises:
            ValueError: ``max_pending`` is less than 1, or ``commit_window`` is negative.
        """
        if max_pending < 1:
            raise ValueError(f"max_pending must be at least 1, got {max_pending}")
        if commit_window < 0:
            raise ValueError(f"commit_window must not be negative, got {commit_window}")
        self._commit_window = commit_window
        self._hurry: anyio.Event | None = None
        self._store = store
        self._on_committed: OnCommitted[EventT] = on_committed or _deliver_nowhere
        self._max_pending = max_pending
        self._state: _State = "new"
        self._error: BaseException | None = None
        self._pending: list[EventT] = []
        self._in_flight = 0
        self._appended = 0
        self._delivered = 0
        self._batches = 0
        self._task_group: TaskGroup | None = None
        # Created in __aenter__: anyio events need a running event loop.
        self._work: anyio.Event | None = None
        self._progress: anyio.Event | None = None

    def statistics(self) -> WriterStatistics:
        """Return a snapshot of the writer's counters."""
        return WriterStatistics(
            pending=len(self._pending) + self._in_flight,
            max_pending=self._max_pending,
            committed_events=self._delivered,
            committed_batches=self._batches,
        )

    def _closed_error(self) -> WriterClosed:
        if self._state == "failed":
            error = WriterClosed("the writer stopped: committing events failed")
            error.__cause__ = self._error
            return error
        return WriterClosed(f"the writer is {self._state}, not running")

    def _notify_progress(self) -> None:
        assert self._progress is not None
        self._progress.set()
        self._progress = anyio.Event()

    async def append(self, event: EventT) -> None:
        """Buffer one event for the next commit; waits while ``max_pending`` are buffered.

        Returning means buffered, not committed: ``on_committed`` reports the commit, and
        ``flush()`` waits for it.

        Raises:
            WriterClosed: the writer is not running (not started, closing, closed, or failed).
        """
        # No event-loop round trip per event: yield only when full, and once per
        # ``APPEND_YIELD_EVERY`` events so the committer (and cancellation) get their turn.
        if not self._appended % APPEND_YIELD_EVERY:
            await checkpoint()
        while True:
            if self._state != "running":
                raise self._closed_error()
            if len(self._pending) + self._in_flight < self._max_pending:
                break
            assert self._progress is not None
            await self._progress.wait()
        self._pending.append(event)
        self._appended += 1
        if self._hurry is not None and len(self._pending) * 2 >= self._max_pending:
            self._hurry.set()
        assert self._work is not None
        self._work.set()

    async def flush(self) -> None:
        """Wait until every event appended before this call is committed and delivered.

        Raises:
            WriterClosed: the writer stopped (a commit failed, or it was closed) first.
        """
        target = self._appended
        if self._hurry is not None:
            self._hurry.set()
        await checkpoint()
        while self._delivered < target:
            if self._state in ("failed", "closed"):
                raise self._closed_error()
            assert self._progress is not None
            await self._progress.wait()

    async def _run(self) -> None:
        try:
            while True:
                if not self._pending:
                    if self._state == "closing":
                        return
                    self._work = anyio.Event()
                    await self._work.wait()
                    continue
                if self._commit_window and self._state == "running":
                    assert self._hurry is not None
                    with anyio.move_on_after(self._commit_window):
                        await self._hurry.wait()
                    self._hurry = anyio.Event()
                batch, self._pending = self._pending, []
                self._in_flight = len(batch)
                await self._store.append_events(batch)
                self._batches += 1
                await self._on_committed(batch)
                self._in_flight = 0
                self._delivered += len(batch)
                self._notify_progress()
        except Exception as exc:
            self._state = "failed"
            self._error = exc
            raise
        finally:
            if self._state != "failed":
                self._state = "closed"
            # Wake appenders and flushers in other tasks so that they raise WriterClosed.
            self._notify_progress()

    async def __aenter__(self) -> Self:
        """Start the commit task and return the writer.

        Raises:
            RuntimeError: the writer was already started once.
        """
        if self._state != "new":
            raise RuntimeError("a GroupCommitWriter can be started only once")
        self._work = anyio.Event()
        self._progress = anyio.Event()
        if self._commit_window:
            self._hurry = anyio.Event()
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        self._state = "running"
        task_group.start_soon(self._run, name=f"GroupCommitWriter({self._store!r})")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        """Commit and deliver what is left (on a normal exit), then stop the commit task.

        Raises:
            Exception: the error that stopped the writer, or the body's own error.
        """
        assert self._task_group is not None and self._work is not None
        if self._state == "running":
            self._state = "closing"
            self._work.set()
            if self._hurry is not None:
                self._hurry.set()
        try:
            return await self._task_group.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            error = self._unwrap(group)
        raise error

    def _unwrap(self, group: BaseExceptionGroup[BaseException]) -> BaseException:
        """The exception to raise for the task group's ``group``: its only member when there
        is one, once ``WriterClosed`` errors caused by the commit failure are left out."""
        members = [
            member
            for member in group.exceptions
            if not (
                isinstance(member, WriterClosed)
                and self._error is not None
                and member.__cause__ is self._error
            )
        ]
        if len(members) == 1:
            return members[0]
        return group.derive(members) if members else group
