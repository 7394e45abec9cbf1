"""Live updates of a session whose turn runs in another process sharing the store.

Several server processes share one store (PostgreSQL); a client attached to a session
through process B must see a turn that process A runs, live and in order. The events are in
the store as soon as A commits them, so B needs no link to A: an :class:`ElsewhereFeed`
follows the session in the store (:meth:`~accord.store.SessionStore.follow_events`: woken by
``LISTEN``/``NOTIFY`` on PostgreSQL, by polling on SQLite) and offers every committed event
that this process did not write (a ``seq`` beyond what its own pipeline has stamped) to the
session's pipeline (:meth:`~._pipeline.DeliveryPipeline.offer_elsewhere`), which offers it to
every attached client's :class:`~._attachment.Attachment`. Each attachment sends them exactly as
its own: in ``seq`` order, never twice (it skips what is at or below its cursor), catching up
from the store if it falls behind.

What it relays does not change B's copy of the session by itself: while A's turn runs, B's
prompts answer "busy" (:mod:`._ownership`); once A's claim is released, B's next prompt first
brings its copy up to date from the store (``SessionTable.catch_up``) and continues from A's
turn.

A database that goes away ends the follower with a ``StoreError``; the feed logs it and
follows again, from the last ``seq`` it saw, once the store answers (nothing is skipped).

Above: the session table (one feed per live session, run in the session's task group, when
the runtime is asked to). Below:
:mod:`accord.store`, :mod:`accord.events`, :mod:`._pipeline`.
"""

from __future__ import annotations

import logging
from typing import Final

import anyio

from ..events import envelope_from_stored
from ..store import StoreClosed, StoreError
from ._pipeline import DeliveryPipeline

__all__ = ("RETRY_SECONDS", "ElsewhereFeed")

logger = logging.getLogger("accord.agent")

#: How long the feed waits before following again after the store failed.
RETRY_SECONDS: Final = 1.0


class ElsewhereFeed:
    """Offers a session's pipeline the events other processes commit to the session.

    Args:
        pipeline: The session's pipeline here (its store, what this process stamped, and the
            attachments to offer the events to).
    """

    def __init__(self, pipeline: DeliveryPipeline) -> None:
        """Create the feed; see the class docstring for the arguments."""
        self._pipeline = pipeline
        #: The last ``seq`` the feed has looked at (relayed, or passed as this process's).
        self.followed = pipeline.committed_seq
        #: Events relayed from other processes.
        self.relayed = 0

    async def run(self) -> None:
        """Follow the session and relay until cancelled (the session's task group ends) or
        the store is closed."""
        pipeline = self._pipeline
        while True:
            try:
                async with pipeline.store.follow_events(
                    pipeline.session_id, after_seq=self.followed
                ) as batches:
                    async for batch in batches:
                        for stored in batch:
                            if stored.seq > pipeline.last_seq:
                                pipeline.offer_elsewhere(envelope_from_stored(stored))
                                self.relayed += 1
                        self.followed = batch[-1].seq
            except StoreClosed:
                return
            except StoreError as exc:
                logger.warning(
                    "session %s: following the store for other processes' updates failed"
                    " (%s); trying again",
                    pipeline.session_id,
                    exc,
                )
                await anyio.sleep(RETRY_SECONDS)
            except Exception:
                # A bug here must not take the connection (and its other sessions) down.
                logger.exception(
                    "session %s: relaying other processes' updates failed; trying again",
                    pipeline.session_id,
                )
                await anyio.sleep(RETRY_SECONDS)
