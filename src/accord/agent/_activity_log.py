"""The activity log: the privacy-safe activity projection of every committed event, as NDJSON.

:class:`ActivityLog` is a tap of the delivery pipeline (:mod:`._pipeline`): for every event
that qualifies, i.e. every event that was committed to the store (all three layers; events
dropped as stale or beyond the observe bound never qualify), it appends one line, the
:func:`~accord.events.to_activity` record of the envelope as JSON
(:func:`~accord.events.activity_to_json`), carrying its ``schema_version``. The projection's
rules hold for every line: no message text, prompt, reasoning, tool input or output, title,
path, URL or error text; ids appear only as correlation ids.

Give it to the runtime as ``AgentRuntime(engine, activity=ActivityLog(path))`` (or just a
path); ``accord serve --activity FILE`` does that. Several runtimes (one per client
connection) may share one log: the file is opened for appending and each line is written
with one unbuffered ``write``, so lines of different writers never interleave.

A failing write (disk full, file removed) is logged once and turns the log off; it never
fails a turn. Below: :mod:`accord.events`. Above: the runtime.
"""

from __future__ import annotations

import logging
import os
from typing import BinaryIO

from ..events import Envelope, activity_to_json, to_activity

__all__ = ("ActivityLog",)

logger = logging.getLogger("accord.agent")


class ActivityLog:
    """Appends the activity record of every committed event to an NDJSON file.

    Args:
        target: A file path (opened for appending, created if missing, closed by
            :meth:`close`) or a binary stream that stays the caller's.

    Raises:
        OSError: the file cannot be opened.
    """

    def __init__(self, target: str | os.PathLike[str] | BinaryIO) -> None:
        """Open the log; see the class docstring for ``target``."""
        if isinstance(target, str | os.PathLike):
            self._file: BinaryIO = open(target, "ab", buffering=0)  # noqa: SIM115 - closed by close()
            self._owned = True
        else:
            self._file = target
            self._owned = False
        #: Lines written so far.
        self.written = 0
        self._failed = False

    @property
    def failed(self) -> bool:
        """Whether a write failed (the log then writes nothing more)."""
        return self._failed

    def __call__(self, envelope: Envelope) -> None:
        """Append the record of one committed envelope (the pipeline's tap)."""
        if self._failed:
            return
        try:
            self._file.write(activity_to_json(to_activity(envelope)) + b"\n")
        except (OSError, ValueError) as exc:  # ValueError: written to a closed file
            self._failed = True
            logger.error("the activity log stopped: %s", exc)
            return
        self.written += 1

    def close(self) -> None:
        """Close the file if the log opened it (a stream given by the caller stays open)."""
        if self._owned:
            self._file.close()
