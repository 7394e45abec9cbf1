"""How the recent prompt turns of each session ended, for clients that lost their link.

A client whose link dropped while its prompt ran never gets that prompt's answer: the turn
goes on here, and the client reconnects and resumes the session. To tell it how its turn
ended, the runtime keeps, per session, the tag of the running turn's prompt (the
``_meta.accord.prompt`` the client put on it) and the tags and stop reasons of the last few
turns that ended (:data:`KEPT_PER_SESSION`), for :data:`KEPT_SESSIONS` sessions at most (the
least recently prompted are forgotten first). ``session/resume`` and ``session/load`` answer
with them in ``_meta.accord`` (``turn.tag``, ``endedTurns``); the ``_accord/turn`` notice of a
turn's end carries the same two fields (``tag``, ``stopReason``).

Only this process's turns are known: a session continued by another process, or a turn that
ran before a restart, is not. Tags are not secrets (any attached client is told them).

Above: :mod:`._runtime`. Below: nothing but the schema's types.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any, Final

from ..schema import StopReason

__all__ = ("KEPT_PER_SESSION", "KEPT_SESSIONS", "TurnOutcomes")

#: Ended turns kept per session: a client that was away while a few more turns ran still
#: finds its own.
KEPT_PER_SESSION: Final = 8

#: Sessions whose turns are kept (about 1 KB each at most).
KEPT_SESSIONS: Final = 4096


class _Kept:
    __slots__ = ("ended", "running")

    def __init__(self) -> None:
        self.running: str | None = None
        self.ended: deque[tuple[str, StopReason]] = deque(maxlen=KEPT_PER_SESSION)


class TurnOutcomes:
    """The running turn's tag and the recently ended turns of each session (module docs)."""

    def __init__(self, sessions: int = KEPT_SESSIONS) -> None:
        """Keep the turns of at most ``sessions`` sessions."""
        self._sessions = sessions
        self._kept: OrderedDict[str, _Kept] = OrderedDict()

    def started(self, session_id: str, tag: str | None) -> None:
        """A turn of ``session_id`` started, prompted with ``tag`` (None: untagged)."""
        kept = self._kept.pop(session_id, None) or _Kept()
        kept.running = tag
        self._kept[session_id] = kept
        while len(self._kept) > self._sessions:
            self._kept.popitem(last=False)

    def ended(self, session_id: str, tag: str | None, stop: StopReason | None) -> None:
        """The running turn of ``session_id`` ended with ``stop`` (None: it was torn down
        without one, as when its session closed: it is then not reported)."""
        kept = self._kept.get(session_id)
        if kept is None:
            return
        kept.running = None
        if tag is not None and stop is not None:
            kept.ended.append((tag, stop))

    def meta(self, session_id: str) -> dict[str, Any]:
        """What ``session/resume`` and ``session/load`` add to ``_meta.accord``: the ended
        turns, oldest first (``endedTurns``: ``[{"tag", "stopReason"}]``), if any."""
        kept = self._kept.get(session_id)
        if kept is None or not kept.ended:
            return {}
        return {"endedTurns": [{"tag": tag, "stopReason": stop} for tag, stop in kept.ended]}

    def running(self, session_id: str) -> str | None:
        """The tag of the running turn's prompt, if it has one."""
        kept = self._kept.get(session_id)
        return None if kept is None else kept.running
