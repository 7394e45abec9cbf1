"""Prompt turns: the session's lifecycle table, the per-turn event stream, the turn's result.

Everything that decides a session's state lives in :data:`TRANSITIONS` (h11-style: a state
change anywhere else is a bug)::

    idle --prompt--> running --cancel--> cancelling
    running/cancelling --finish--> idle          any --close--> closed

A turn's events travel through one bounded memory stream from the connection's notification
worker (which folds each update into the view, then hands the event over without a task per
message) to whoever iterates the :class:`TurnStream`. A slow reader slows the agent down
(backpressure) instead of piling up memory; a reader that stops early simply stops receiving,
and the turn goes on folding into the view.

Above: :class:`~accord.client.ClientSession`. Below: the events and anyio memory streams.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Final, Literal, Self, TypeAlias

import anyio
import anyio.lowlevel

from ..engines import StateTable
from ..errors import LocalProtocolError, SessionBusy, TurnLost
from ..schema import PromptResponse, StopReason, Usage
from ._events import TurnEvent
from ._state import ToolCallState

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = (
    "TRANSITIONS",
    "TURN_EVENT_BUFFER",
    "TURN_TRANSITIONS",
    "SessionState",
    "TurnPhase",
    "TurnResult",
    "TurnStream",
    "transition",
)

#: Events a turn stream holds before the agent is made to wait: a few screens of streamed
#: text, so a reader that renders in bursts never stalls the agent, while memory stays small.
TURN_EVENT_BUFFER = 512

SessionState: TypeAlias = Literal["idle", "running", "cancelling", "closed"]
"""Where a session is in its lifecycle (see :data:`TRANSITIONS`)."""

_SessionEvent: TypeAlias = Literal["prompt", "cancel", "finish", "close"]

#: (state, event) -> next state. Pairs not listed are illegal.
TRANSITIONS: Final[StateTable[SessionState, _SessionEvent]] = StateTable(
    {
        ("idle", "prompt"): "running",
        ("idle", "cancel"): "idle",
        ("running", "cancel"): "cancelling",
        ("cancelling", "cancel"): "cancelling",
        ("running", "finish"): "idle",
        ("cancelling", "finish"): "idle",
        ("closed", "finish"): "closed",
        ("idle", "close"): "closed",
        ("running", "close"): "closed",
        ("cancelling", "close"): "closed",
        ("closed", "close"): "closed",
    },
    initial="idle",
    final=("closed",),
)

TurnPhase: TypeAlias = Literal["waiting", "open", "answered", "finished"]
"""Where a prompt turn is on the client's side: ``waiting`` (sent to an agent that will say
where the turn starts, ``_accord/turn``: updates before that are not the turn's), ``open`` (the
agent's updates are the turn's), ``answered`` (the answer arrived: the turn's text and tool
calls are taken, later updates are not its), ``finished`` (its result or error is set; waiters
wake)."""

_TurnEvent: TypeAlias = Literal["start", "answer", "finish"]

#: (phase, event) -> next phase of a turn; the answer may be seen twice (the connection's
#: ``on_answer`` hook, then the end of the request), finishing twice is a bug. A turn answered
#: while ``waiting`` never started on the agent (refused) or sent nothing.
TURN_TRANSITIONS: Final[StateTable[TurnPhase, _TurnEvent]] = StateTable(
    {
        ("waiting", "start"): "open",
        ("waiting", "answer"): "answered",
        ("open", "answer"): "answered",
        ("answered", "answer"): "answered",
        ("answered", "finish"): "finished",
        ("finished", "answer"): "finished",
    },
    initial="waiting",
    final=("finished",),
)


def transition(session_id: str, state: SessionState, event: _SessionEvent) -> SessionState:
    """The state after ``event``.

    Raises:
        SessionBusy: a prompt while a turn is running (ACP allows one at a time).
        LocalProtocolError: any other illegal step, e.g. a prompt on a closed session.
    """
    new = TRANSITIONS.step(state, event)
    if new is not None:
        return new
    if event == "prompt" and state in ("running", "cancelling"):
        raise SessionBusy(f"session {session_id} is already running a prompt turn")
    raise LocalProtocolError(f"cannot {event} session {session_id}: it is {state}")


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnResult:
    """How a prompt turn ended.

    Attributes:
        stop_reason: why the agent stopped (``end_turn``, ``cancelled``, ...).
        text: the text of the agent's messages in this turn.
        tool_calls: the tool calls started or updated in this turn (latest snapshots).
        usage: the turn's token usage, when the agent reports it (unstable ACP).
        response: the agent's ``session/prompt`` answer as received; for a turn whose link
            dropped and that was followed to its end after the reconnect, one rebuilt from
            the stop reason the agent told (no ``usage``, no ``_meta``).
    """

    stop_reason: StopReason
    text: str
    tool_calls: tuple[ToolCallState, ...]
    usage: Usage | None
    response: PromptResponse


class _Turn:
    """The bookkeeping of the running turn (one per session at a time)."""

    __slots__ = (
        "done",
        "error",
        "outcome",
        "phase",
        "relinked",
        "result",
        "send",
        "tag",
        "text",
        "text_parts",
        "told",
        "tool_call_ids",
        "tool_calls",
    )

    def __init__(
        self, send: MemoryObjectSendStream[TurnEvent] | None, *, tag: str | None = None
    ) -> None:
        self.send = send
        #: The prompt's tag when the agent says where the turn starts (``waiting`` until then).
        self.tag = tag
        #: The turn's phase (:data:`TURN_TRANSITIONS`): ``open`` where the agent says the turn
        #: starts (at once without a tag), ``answered`` where the agent's answer falls among the
        #: updates (the prompt's ``on_answer`` hook), ``finished`` at the end.
        self.phase: TurnPhase = "open" if tag is None else "waiting"
        self.tool_call_ids: dict[str, None] = {}
        self.text_parts: list[str] = []
        # The turn's text and tool calls, taken when the turn is answered.
        self.text = ""
        self.tool_calls: tuple[ToolCallState, ...] = ()
        self.result: TurnResult | None = None
        self.error: BaseException | None = None
        #: Set on entering ``finished``.
        self.done = anyio.Event()
        #: After its link dropped: how the turn ended (its stop reason) or why that cannot be
        #: learned (:class:`~accord.errors.TurnLost`), once known; ``told`` is set then.
        self.outcome: StopReason | TurnLost | None = None
        self.told = anyio.Event()
        #: Whether its session was resumed on a new link while it ran: then a prompt that is
        #: not its own (another client's, after it ended) closes it to updates.
        self.relinked = False

    def tell(self, outcome: StopReason | TurnLost) -> None:
        """Record how the turn ended after its link dropped (the first word stands)."""
        if self.outcome is None:
            self.outcome = outcome
            self.told.set()

    def advance(self, event: _TurnEvent) -> bool:
        """Move the turn's phase by ``event``; return whether the phase changed.

        Raises:
            LocalProtocolError: an illegal step (finishing twice: a bug in the session).
        """
        phase = TURN_TRANSITIONS.step(self.phase, event)
        if phase is None:
            raise LocalProtocolError(f"a prompt turn cannot {event} when {self.phase}")
        changed = phase != self.phase
        self.phase = phase
        if changed and phase == "finished":
            self.done.set()
        return changed

    def emit_nowait(self, event: TurnEvent) -> bool:
        """Hand an event to the stream's reader if its buffer has room.

        Returns False when the buffer is full: then :meth:`emit` must deliver it.
        """
        send = self.send
        if send is None:
            return True
        try:
            send.send_nowait(event)
        except anyio.WouldBlock:
            return False
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.close_stream()  # the reader left: the view still gets everything
        return True

    async def emit(self, event: TurnEvent) -> None:
        """Hand an event to the stream's reader, waiting while its buffer is full."""
        if self.emit_nowait(event):
            return
        assert self.send is not None
        try:
            await self.send.send(event)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.close_stream()

    def close_stream(self) -> None:
        if self.send is not None:
            self.send.close()
            self.send = None


class TurnStream:
    """The events of one prompt turn, ending with :class:`~accord.client.TurnFinished`.

    Iterate it (``async for event in session.stream("...")``) to the end, or leave early with
    :meth:`aclose` (or ``async with``, or by dropping it): the turn goes on, folding into the
    session's view, and :meth:`wait_finished` still returns its result. If the turn fails (the
    agent answered with an error, or died), iteration raises that error after the events that
    preceded it.
    """

    def __init__(self, turn: _Turn, receive: MemoryObjectReceiveStream[TurnEvent]) -> None:
        self._turn = turn
        self._receive = receive
        self._raised = False

    def __del__(self) -> None:
        # A stream dropped unread must not keep the agent waiting on its full buffer.
        self._receive.close()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> TurnEvent:
        receive = self._receive
        try:
            try:
                return receive.receive_nowait()
            except anyio.WouldBlock:
                return await receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            receive.close()
        error = self._turn.error
        if error is not None and not self._raised:
            self._raised = True
            raise error
        raise StopAsyncIteration

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop receiving events; the turn itself goes on (cancel it with the session)."""
        self._receive.close()
        await anyio.lowlevel.checkpoint()

    @property
    def result(self) -> TurnResult | None:
        """The turn's result once it has finished successfully, else None."""
        return self._turn.result

    async def wait_finished(self) -> TurnResult:
        """Stop receiving events, wait for the turn's end and return its result.

        Raises:
            RequestError: the agent answered the prompt with an error.
            ConnectionClosed: the connection ended first (``AgentProcessExited`` if the
                agent process died).
        """
        self._receive.close()
        await self._turn.done.wait()
        if self._turn.error is not None:
            raise self._turn.error
        assert self._turn.result is not None
        return self._turn.result
