"""The session lifecycle: one transition table, and the object that enforces it.

Everything that affects whether a live session accepts a prompt lives here (the h11 rule):

* ``idle``: no turn runs; a prompt starts one (``running``).
* ``running``: a turn runs. ``session/cancel`` moves it to ``cancelling``; the turn's end
  brings it back to ``idle``. A second prompt is refused (:class:`PromptInProgress`, -32602).
* ``cancelling``: the turn was asked to stop and has not ended yet; prompts are still refused.
* ``loading``: ``session/load`` or ``session/resume`` is restoring the session (cancelling any
  turn first); prompts are refused until it is ``ready``.
* ``closing``: ``session/close`` (or a delete) waits for the running turn to end.
* ``closed``: gone from memory; every request for it answers -32002.

``cancel`` is accepted everywhere but ``closed`` and changes nothing when no turn runs (ACP
lets a client cancel at any time). :data:`TRANSITIONS` is the table; :func:`transition_diagram`
draws it for the docs.

An absent ``(state, trigger)`` pair is illegal. Who caused it decides the error: a prompt the
client sent at the wrong time answers -32602 (busy) or -32002 (closed); a trigger only the
runtime sends (``turn_end``, ``ready``) at the wrong time is a bug and raises
:class:`~accord.errors.LocalProtocolError`.

This module sits on :mod:`accord.errors`; the runtime's session object owns one lifecycle.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from ..engines import StateTable
from ..errors import LocalProtocolError
from ._errors import PromptInProgress, session_not_found

__all__ = ("TRANSITIONS", "LifecycleState", "LifecycleTrigger", "SessionLifecycle")

LifecycleState: TypeAlias = Literal["idle", "running", "cancelling", "loading", "closing", "closed"]
"""Where a live session is in its lifecycle."""

LifecycleTrigger: TypeAlias = Literal["prompt", "cancel", "turn_end", "reload", "ready", "close"]
"""What happened to it: a client request (``prompt``, ``cancel``, ``reload`` for load and
resume, ``close`` for close and delete) or the runtime's own progress (``turn_end``,
``ready``)."""

TRANSITIONS: Final[StateTable[LifecycleState, LifecycleTrigger]] = StateTable(
    {
        ("idle", "prompt"): "running",
        ("idle", "cancel"): "idle",
        ("idle", "reload"): "loading",
        ("idle", "close"): "closed",
        ("running", "cancel"): "cancelling",
        ("running", "turn_end"): "idle",
        ("running", "reload"): "loading",
        ("running", "close"): "closing",
        ("cancelling", "cancel"): "cancelling",
        ("cancelling", "turn_end"): "idle",
        ("cancelling", "reload"): "loading",
        ("cancelling", "close"): "closing",
        ("loading", "cancel"): "loading",
        ("loading", "turn_end"): "loading",
        ("loading", "ready"): "idle",
        ("loading", "close"): "closed",
        ("closing", "cancel"): "closing",
        ("closing", "turn_end"): "closed",
    },
    initial="idle",
    final=("closed",),
)
"""``(state, trigger) -> next state``; a pair that is absent is an illegal transition."""

_RUNTIME_TRIGGERS: Final = frozenset({"turn_end", "ready"})


def transition_diagram() -> str:
    """Return :data:`TRANSITIONS` as a Mermaid state diagram (the docs embed this output)."""
    return TRANSITIONS.diagram(loops=False)


class SessionLifecycle:
    """The lifecycle state of one live session, advanced only through :data:`TRANSITIONS`."""

    __slots__ = ("session_id", "state")

    def __init__(self, session_id: str, state: LifecycleState = "idle") -> None:
        """Start ``session_id`` in ``state`` (a session becomes live ``idle``)."""
        self.session_id = session_id
        self.state: LifecycleState = state

    def apply(self, trigger: LifecycleTrigger) -> LifecycleState:
        """Advance by ``trigger`` and return the new state.

        Raises:
            PromptInProgress: a prompt while a turn runs, is being cancelled, or the session
                is loading (-32602).
            SessionNotActive: anything but a runtime trigger on a closing or closed session
                (-32002).
            LocalProtocolError: a runtime trigger at the wrong time (a bug in the runtime).
        """
        target = TRANSITIONS.step(self.state, trigger)
        if target is None:
            raise self._illegal(trigger)
        self.state = target
        return target

    def _illegal(self, trigger: LifecycleTrigger) -> Exception:
        if trigger in _RUNTIME_TRIGGERS:
            return LocalProtocolError(
                f"session {self.session_id!r}: {trigger} while {self.state} is not a legal "
                "transition"
            )
        if self.state in ("closing", "closed"):
            return session_not_found(self.session_id, f"the session is {self.state}")
        if trigger == "prompt":
            doing = {
                "running": "is already running a prompt turn",
                "cancelling": "is still cancelling its previous prompt turn",
                "loading": "is being loaded or resumed",
            }.get(self.state, f"is {self.state}")
            return PromptInProgress(
                f"session {self.session_id!r} {doing}; ACP allows one prompt at a time, send "
                "the next one after the current turn has answered",
                {"sessionId": self.session_id, "reason": "busy", "state": self.state},
            )
        return LocalProtocolError(
            f"session {self.session_id!r}: {trigger} while {self.state} is not a legal transition"
        )

    @property
    def live(self) -> bool:
        """Whether the session still accepts requests (not closing or closed)."""
        return self.state not in ("closing", "closed")
