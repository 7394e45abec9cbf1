"""Turn ownership: one process at a time runs a session's turns.

Several server processes may serve one session store (PostgreSQL, or one SQLite file): any of
them can load a session, but only one may run its turn at a time. Before a turn the runtime
claims the session in the store (:meth:`~accord.store.SessionStore.claim_session`, a lease),
renews the lease while the turn runs (every third of its length) and releases it when the turn
ends. A process that dies stops renewing; once its lease has expired (at once, if it was a
process of the same machine that no longer exists) another process may claim the session,
load it (whatever the dead owner committed is replayed, its unfinished tool calls closed as
after any crash) and carry on.

A process whose copy of the session is behind the store (another process appended to it
since it was opened here) brings it up to date once the claim is granted, before its turn
runs: the runtime passes ``catch_up`` (``SessionTable.catch_up``: the engine session opened
again on the stored history, the next ``seq`` after the stored chain), so the turn continues
from what the other process committed and never forks the history.

Refusals are -32602 with ``data.reason`` so a client can tell them from bad params:

* ``"busy"`` (:class:`SessionOwnedElsewhere`): another process runs a turn of the session
  now (the same answer as a second prompt in one process);
* ``"stale"`` (:class:`SessionChangedElsewhere`): only for a caller of :meth:`TurnOwnership.turn`
  that gives no ``catch_up``: its copy is out of date and continuing would fork the history.

Above: the runtime's ``prompt``. Below: :mod:`accord.store`, :mod:`accord.errors`.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol

import anyio

from ..engines import new_id
from ..errors import InvalidParams, SessionBusy
from ..store import SessionStore, StoreError

__all__ = (
    "DEFAULT_TURN_LEASE_SECONDS",
    "SessionChangedElsewhere",
    "SessionOwnedElsewhere",
    "StartSoon",
    "TurnOwnership",
)

logger = logging.getLogger("accord.agent")

#: How long a claim on a running session lasts without renewal. The owner renews it every
#: third of that while its turn runs, so a process that dies frees its sessions within this.
DEFAULT_TURN_LEASE_SECONDS: Final = 30.0


class SessionOwnedElsewhere(SessionBusy, InvalidParams):
    """Another process runs a turn of this session now (-32602, ``reason: "busy"``)."""


class SessionChangedElsewhere(SessionBusy, InvalidParams):
    """Another process continued this session after it was opened here (-32602,
    ``reason: "stale"``); ``session/load`` brings this process's copy up to date."""


class StartSoon(Protocol):
    """Starts a task in a long-lived task group (the live session's:
    ``LiveSession.start_soon``)."""

    def __call__(
        self,
        func: Callable[..., Coroutine[Any, Any, None]],
        *args: Any,
        name: str,
        key: object = None,
    ) -> None:
        """Run ``func(*args)`` in a task (``key``: started again should the group be lost
        and opened again, see ``LiveSession.start_soon``)."""
        ...


def _machine() -> str:
    """This host and PID namespace: processes with the same value can see each other's pids."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = "-"
    return f"{socket.gethostname()}|{namespace}"


def _owner_id() -> str:
    return f"{_machine()}/{os.getpid()}/{new_id()}"


def dead_local_owner(owner: str) -> bool:
    """Whether ``owner`` names a process of this machine (and PID namespace) that is gone.

    Owners on other machines, or whose process still exists (or whose pid was reused by
    another process), are not known to be dead: their lease has to expire.
    """
    machine, _, rest = owner.partition("/")
    pid_text, _, _ = rest.partition("/")
    if machine != _machine() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


class TurnOwnership:
    """Claims sessions for this runtime's turns (see the module docstring).

    Args:
        store: The session store shared with the other processes.
        lease_seconds: How long a claim lasts without renewal.
    """

    def __init__(
        self, store: SessionStore, *, lease_seconds: float = DEFAULT_TURN_LEASE_SECONDS
    ) -> None:
        """Create the claimer; see the class docstring for the arguments."""
        if not lease_seconds > 0:
            raise ValueError(f"lease_seconds must be positive, got {lease_seconds!r}")
        self._store = store
        self.lease_seconds = lease_seconds
        #: This runtime's id in the store's claims (host, pid and a unique suffix).
        self.owner = _owner_id()

    @asynccontextmanager
    async def turn(
        self,
        session_id: str,
        known_seq: int,
        *,
        start_soon: StartSoon,
        catch_up: Callable[[], Awaitable[object]] | None = None,
    ) -> AsyncGenerator[None]:
        """Hold the claim on ``session_id`` for the body (a turn), renewing it meanwhile.

        Args:
            session_id: The session whose turn is about to run.
            known_seq: The last ``seq`` this process knows of the session.
            start_soon: Starts the renewing task in a long-lived task group (the live
                session's, which outlives the prompting client's connection); the task ends
                with the body.
            catch_up: Brings this process's copy up to date with the store, under the claim,
                when the stored session has events this process has not (another process
                continued it); without it, that is refused as "stale".

        Raises:
            SessionOwnedElsewhere: another process holds a live claim.
            SessionChangedElsewhere: the stored session has events this process has not, and
                no ``catch_up`` was given.
        """
        claim = await self._store.claim_session(
            session_id, self.owner, lease_seconds=self.lease_seconds
        )
        if not claim.held_by(self.owner) and dead_local_owner(claim.owner):
            # The holder was a process of this machine that died (kill -9, a crash): no
            # need to wait for its lease to run out.
            logger.info("session %s: taking over from a dead process", session_id)
            claim = await self._store.claim_session(
                session_id, self.owner, lease_seconds=self.lease_seconds, replacing=claim.owner
            )
        if not claim.held_by(self.owner):
            raise SessionOwnedElsewhere(
                f"session {session_id!r} is running a prompt turn in another accord process;"
                " ACP allows one prompt at a time, send it again once that turn has ended",
                {"sessionId": session_id, "reason": "busy", "state": "running elsewhere"},
            )
        renewals: set[anyio.CancelScope] = set()
        released = False
        try:

            async def renew() -> None:
                # It may run again (key: the live session's task group opened anew).
                with anyio.CancelScope() as scope:
                    if released:
                        return
                    renewals.add(scope)
                    try:
                        await self._renew(session_id)
                    finally:
                        renewals.discard(scope)

            start_soon(renew, name=f"accord session {session_id} claim", key=renew)
            if claim.last_seq > known_seq:
                if catch_up is None:
                    raise SessionChangedElsewhere(
                        f"session {session_id!r} was continued by another accord process after"
                        " it was opened here; load it again (session/load) to see what happened"
                        " there and carry on from it",
                        {"sessionId": session_id, "reason": "stale"},
                    )
                await catch_up()
            yield
        finally:
            released = True
            for scope in list(renewals):
                scope.cancel()
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                try:
                    await self._store.release_session(session_id, self.owner)
                except StoreError as exc:
                    logger.warning("session %s: releasing the claim failed: %s", session_id, exc)

    async def _renew(self, session_id: str) -> None:
        while True:
            await anyio.sleep(self.lease_seconds / 3)
            try:
                claim = await self._store.claim_session(
                    session_id, self.owner, lease_seconds=self.lease_seconds
                )
            except StoreError as exc:
                logger.warning("session %s: renewing the claim failed: %s", session_id, exc)
                continue
            if not claim.held_by(self.owner):
                # Renewals came too late (a stalled process): another process took over.
                # Its appends and ours cannot both land (seqs collide and the store refuses
                # the later ones), so the history stays whole; say what happened.
                logger.error(
                    "session %s: another process took over the session during this turn;"
                    " what this turn still produces will be refused by the store",
                    session_id,
                )
                return
