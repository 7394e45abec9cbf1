"""One listening connection per PostgreSQL store: the dispatcher that wakes its followers.

Every append to the PostgreSQL store ends with a ``NOTIFY`` (``"<session id> <last seq>"``).
A process may follow hundreds of sessions at once (one follower per attached client); they
share one :class:`NoteDispatcher`: one dedicated connection that ``LISTEN``\\ s, in one thread
of its own (psycopg's async API is asyncio-only; this runs on trio too), which sets the
:class:`~._follow.Wakeup` of every follower of the notified session. A hundred followers hold
one connection and one thread, not a hundred of each.

The dispatcher starts with the first follower (which waits until the ``LISTEN`` is in place, so
an append committed after its first read always wakes it) and stops when the store closes. A
lost connection (the database restarted) is re-established every ``retry_seconds``; each time
it is lost and each time it is back, every follower is woken, since notifications sent
meanwhile are gone: the followers read the table, which holds the events, and lose nothing.

Above: ``_postgres`` (the store's ``follow_events``). Below: ``_follow``'s ``Wakeups``,
psycopg, anyio (``from_thread`` with the event loop's token: the wake-ups are set on the event
loop's thread, never from this one).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from ._follow import Wakeups

if TYPE_CHECKING:
    import psycopg

__all__ = ("LISTEN_APPLICATION_NAME", "NoteDispatcher", "parse_note")

logger = logging.getLogger("accord.store")

#: ``application_name`` of the listening connection (what ``pg_stat_activity`` shows).
LISTEN_APPLICATION_NAME: Final = "accord-listen"
#: How long one wait for notifications lasts before the thread checks whether to stop.
_WAIT_SECONDS: Final = 0.25


def parse_note(payload: str) -> tuple[str, int] | None:
    """``(session id, last seq)`` from a notification's payload, or ``None`` if malformed."""
    session_id, _, seq = payload.rpartition(" ")
    if session_id and seq.isdigit():
        return session_id, int(seq)
    return None


class NoteDispatcher:
    """The shared listening connection of one store, and the thread that waits on it.

    Args:
        connect: Opens a connection with ``LISTEN`` already issued (run in a thread).
        wakeups: The store's followers; the notified session's are woken.
        where: The database as it may be shown to a person (for the log).
        retry_seconds: How long to wait before connecting again after a failure.
    """

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[Any]],
        wakeups: Wakeups,
        *,
        where: str,
        retry_seconds: float,
    ) -> None:
        """Prepare the dispatcher; nothing connects before :meth:`start`."""
        self._connect = connect
        self._wakeups = wakeups
        self._where = where
        self._retry_seconds = retry_seconds
        self._lock = anyio.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        #: Listening connections opened so far (the first, then one per reconnection).
        self.connections_opened = 0

    @property
    def running(self) -> bool:
        """Whether the listening thread runs."""
        return self._thread is not None and self._thread.is_alive()

    async def start(self) -> None:
        """Make sure the dispatcher runs, listening (when the database answers) on return.

        Idempotent and cheap once running. A database that cannot be reached is not an error
        here: the thread keeps trying, and the follower's own reads say what is wrong.
        """
        if self.running:
            await anyio.lowlevel.checkpoint()
            return
        async with self._lock:
            if self.running or self._stop.is_set():
                return
            conn: psycopg.Connection[Any] | None
            try:
                conn = await anyio.to_thread.run_sync(self._open)
            except Exception as exc:  # psycopg.Error: the thread retries
                logger.warning("cannot listen on %s: %s; retrying", self._where, exc)
                conn = None
            token = anyio.lowlevel.current_token()
            thread = threading.Thread(
                target=self._run, args=(conn, token), name="accord-listen", daemon=True
            )
            self._thread = thread
            thread.start()

    async def stop(self) -> None:
        """Stop the thread and close the connection (within a quarter second); idempotent."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(thread.join)

    def _open(self) -> psycopg.Connection[Any]:
        conn = self._connect()
        self.connections_opened += 1
        return conn

    def _run(
        self, conn: psycopg.Connection[Any] | None, token: anyio.lowlevel.EventLoopToken
    ) -> None:
        import psycopg

        def wake(session_ids: set[str] | None) -> bool:
            try:
                anyio.from_thread.run_sync(self._wake, session_ids, token=token)
            except RuntimeError:  # the event loop is gone: nobody is left to wake
                return False
            return True

        try:
            while not self._stop.is_set():
                if conn is None:
                    try:
                        conn = self._open()
                    except psycopg.Error as exc:
                        logger.debug("listening on %s: %s", self._where, exc)
                        self._stop.wait(self._retry_seconds)
                        continue
                    logger.info("listening on %s again", self._where)
                    if not wake(None):  # what was notified meanwhile is lost: look again
                        return
                try:
                    session_ids = {
                        note[0]
                        for notify in conn.notifies(timeout=_WAIT_SECONDS, stop_after=1)
                        if (note := parse_note(notify.payload)) is not None
                    }
                except psycopg.Error as exc:
                    logger.warning(
                        "lost the listening connection to %s (%s); polling meanwhile",
                        self._where,
                        exc,
                    )
                    conn.close()
                    conn = None
                    if not wake(None):
                        return
                    continue
                if session_ids and not wake(session_ids):
                    return
        finally:
            if conn is not None:
                conn.close()

    def _wake(self, session_ids: set[str] | None) -> None:
        if session_ids is None:
            self._wakeups.notify_all()
            return
        for session_id in session_ids:
            self._wakeups.notify(session_id)
