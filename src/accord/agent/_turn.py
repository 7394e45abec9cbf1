"""One prompt turn: drive the engine, check and publish what it yields, stop it on cancel.

:class:`TurnRunner` runs one ``session/prompt``:

1. The prompt is recorded as :class:`~accord.events.UserMessageChunk` events, one per block,
   all with one new message id, so ``session/load`` replays it. Live, they go to the other
   attached clients only (with their ``messageId``): the prompting client shows what it sent
   (an editor that appended the echo would show the prompt twice).
2. The engine's ``run_turn`` is iterated one step at a time, each step inside its own cancel
   scope. Every output is checked against the rules of the engine protocol (runtime-only
   event kinds, message ids, the tool-call lifecycle through the session's
   :class:`~accord.engines.ToolCallTracker`, offered modes and config values); a broken rule
   raises :class:`~accord.errors.LocalProtocolError` and fails the turn. Then it is published
   on the session's bus (stored, then sent) and its effect applied (title, engine state,
   controls, commands). A ``TitleChanged`` is first stored in the record, or dropped when a
   client set the title (:mod:`._titles`).
3. Permission requests from the engine (:meth:`TurnContext.request_permission`) become
   ``session/request_permission`` to every attached client, each once everything published
   before has reached it; the first valid answer wins and the others are cancelled
   (:class:`._links.OpenQuestion`); elicitations likewise, to the clients that advertised the
   mode. Remembered "always" answers are given without asking (:mod:`._permissions`).
4. Cancellation (``session/cancel``, or the last client leaving with no grace period, see
   :mod:`._sessions`; a client that disconnects does not cancel the turn): the turn's signal is set
   first so that a cooperative engine can wind down, pending permission requests are
   cancelled at once (which sends ``$/cancel_request``; the engine gets ``cancelled``), and
   after :data:`CANCEL_GRACE_SECONDS` the engine's current step is cancelled.
5. At the end, tool calls still ``pending`` or ``in_progress`` are ended as ``cancelled``
   when the turn was cancelled (sent as the v1 status ``failed`` with a cancelled marker, see
   :class:`~accord.engines.ToolCallEnded`), else as ``failed`` (whatever ended the turn),
   then ``TurnCompleted`` is published with the stop reason:
   ``cancelled`` if the turn was cancelled, whatever the engine said or raised; else the
   engine's ``TurnCompleted`` reason, or ``end_turn``. An engine exception in a turn that was
   not cancelled fails the prompt: a :class:`~accord.errors.RequestError` as raised, anything
   else as -32603 with the exception's type and message in ``data``.
6. A turn whose request is cancelled from outside (its connection torn down under it, and the
   turn's writer with it) gives back what the writer had not committed and stores its end
   without the writer: open tool calls ended as ``cancelled``, then ``TurnCompleted``
   (``cancelled``), with a debug line; the stored chain stays gap-free and closed.

A turn that started in an older epoch (the session was loaded or resumed meanwhile) stops at
its next output; its events are dropped by the pipeline and its effects are not applied.

Below: :mod:`accord.events`, :mod:`accord.roles` (the connection), the engine protocol. Above:
the runtime, which owns the writer around each turn.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from types import MappingProxyType
from typing import Final, Literal

import anyio

from ..engines import (
    ROOT_AGENT_ID,
    CommandsChanged,
    ConfigChanged,
    Event,
    ModeChanged,
    ModelCallEnded,
    PermissionAnswer,
    PermissionPending,
    StateSnapshot,
    SubAgentEvent,
    TextChunk,
    ThinkingChunk,
    TitleChanged,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    TurnCompleted,
    TurnContext,
    TurnError,
    TurnOutput,
    UserMessageChunk,
    merge_tool_call,
    new_id,
    tool_call_changes,
)
from ..errors import (
    InternalError,
    InvalidParams,
    LocalProtocolError,
    RequestError,
)
from ..events import Envelope
from ..schema import (
    ContentBlock,
    CreateElicitationRequest,
    CreateElicitationResponse,
    PermissionOption,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedRequestPermissionOutcome,
    StopReason,
    ToolCallUpdate,
)
from ..store import SessionStore, StoreError, WriterClosed
from ._attachment import Announce
from ._elicitation import ClientElicitation
from ._links import ClientLink, OpenQuestion
from ._live_session import LiveSession, TurnHandle
from ._permissions import (
    DEFAULT_PERMISSION_OPTIONS,
    decision_for_rule,
    permission_key,
    shown_tool_call,
)
from ._titles import keep_generated_title
from ._tracing import observe_event

__all__ = ("CANCEL_GRACE_SECONDS", "CLEANUP_TIMEOUT_SECONDS", "TurnRunner")

logger = logging.getLogger("accord.agent")

#: How long a cancelled turn's engine may keep going (to end its tool calls and save state)
#: before its current step is cancelled. Long enough for a cooperative engine to yield a few
#: final events; short enough that "stop" feels immediate to a user.
CANCEL_GRACE_SECONDS: Final = 1.0
#: Bound on the shielded clean-up after a turn (ending tool calls, closing the engine's
#: iterator, flushing the store); it never waits on the engine's own work.
CLEANUP_TIMEOUT_SECONDS: Final = 10.0

_RUNTIME_ONLY: Final = frozenset({"user_message_chunk", "permission_pending", "turn_error"})
_ALWAYS: Final = frozenset({"allow_always", "reject_always"})
_CANCELLED: Final = PermissionAnswer(outcome="cancelled")


class TurnRunner:
    """Runs one prompt turn of a live session (see the module docstring).

    Args:
        session: The session.
        turn: The turn's handle (already registered on the session).
        link: The client that sent the prompt.
        store: The session store (remembered permission answers are saved at once).
        grace: Seconds between a cancel request and cancelling the engine's step.
        user_message_id: The ``messageId`` of the prompt's ``user_message_chunk`` events (a
            new one when not given).
        announce: The notice telling the prompting client where its turn starts, sent by
            its attachment just before the turn's first event
            (:meth:`._attachment.Attachment.prompted`).
    """

    def __init__(
        self,
        session: LiveSession,
        turn: TurnHandle,
        *,
        link: ClientLink,
        store: SessionStore,
        grace: float,
        user_message_id: str | None = None,
        announce: Announce | None = None,
    ) -> None:
        """Prepare the runner; see the class docstring for the arguments."""
        self._session = session
        self._turn = turn
        self._link = link
        self._store = store
        self._grace = grace
        self._tracker = session.tracker
        self._engine = session.engine
        #: The agent each tool call of the turn belongs to (its snapshot is the tracker's).
        self._tool_agents: dict[str, str] = {}
        self._message_kinds: dict[str, str] = {}
        self._user_message_id = new_id() if user_message_id is None else user_message_id
        self._announce = announce
        self._stop: StopReason | None = None

    # ------------------------------------------------------------------ the turn

    async def run(self, prompt: Sequence[ContentBlock]) -> StopReason:
        """Run the turn and return its stop reason.

        Raises:
            RequestError: the engine failed (and the turn was not cancelled).
        """
        session, turn = self._session, self._turn
        attachment = session.links.get(self._link)
        if attachment is not None:  # the prompt goes to the other attached clients only
            attachment.prompted(turn.turn_id, announce=self._announce)
        for block in prompt:
            await self._publish(UserMessageChunk(message_id=self._user_message_id, content=block))
        context = TurnContext(
            turn_id=turn.turn_id,
            request_permission=self._request_permission,
            cancel_event=turn.cancel_event,
            mode_id=session.controls.mode_id,
            config_values=MappingProxyType(dict(session.controls.values)),
            elicitation=ClientElicitation(
                self._link.connection, session.session_id, turn, ask=self._ask_elicitation
            ),
        )
        error: Exception | None = None
        torn_down = False
        try:
            async with anyio.create_task_group() as watchers:
                watchers.start_soon(self._watch_cancel)
                try:
                    await self._consume(self._engine.run_turn(prompt, context))
                except Exception as exc:
                    error = exc
                watchers.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            # Not the turn's own cancel (that stops the engine's step, inside): the request
            # itself was cancelled, its connection torn down, and the turn's writer with it.
            torn_down = True
            raise
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT_SECONDS):
                if torn_down:
                    await self._end_after_teardown((), self._tracker.unfinished())
                else:
                    await self._end_unfinished_tools()
        if error is not None:
            await self._publish(TurnError(error_type=type(error).__name__, message=str(error)))
        if turn.cancelled or turn.hard_cancelled:
            stop: StopReason = "cancelled"
        elif error is not None:
            raise _wire_error(error)
        else:
            stop = self._stop or "end_turn"
        await self._publish(TurnCompleted(stop_reason=stop))
        return stop

    async def _consume(self, outputs: AsyncIterator[TurnOutput]) -> None:
        turn = self._turn
        try:
            # One scope for the whole iteration (a scope per step costs more than the rest of
            # an event's way to the store). A hard cancel cancels it only while the engine
            # is stepping; an output being published is published whole, then the loop ends.
            with anyio.CancelScope() as scope:
                turn.enter_step(scope)
                try:
                    while not turn.hard_cancelled:
                        turn.stepping = True
                        try:
                            output = await outputs.__anext__()
                        except StopAsyncIteration:
                            return
                        finally:
                            turn.stepping = False
                        if await self._handle(output):
                            return
                finally:
                    turn.leave_step()
        finally:
            aclose = getattr(outputs, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT_SECONDS):
                    await aclose()

    async def _handle(self, output: TurnOutput) -> bool:
        """Check, publish and apply one output; return whether the turn's output is over."""
        if isinstance(output, SubAgentEvent):
            event, agent_id = output.event, output.agent_id
        else:
            event, agent_id = output, ROOT_AGENT_ID
        if isinstance(event, TurnCompleted):
            self._stop = event.stop_reason
            return True
        self._check(event, agent_id)
        if isinstance(event, TitleChanged) and not await keep_generated_title(
            self._session, self._store, event.title
        ):
            return False  # a client set the title: a generated one does not replace it
        envelope = await self._publish(event, agent_id)
        if envelope is None:
            self._turn.hard_cancel()  # the session was reloaded: this turn is over
            return True
        if isinstance(event, ToolCallStarted | ToolCallProgress | ToolCallEnded):
            self._tracker.apply(event)
            self._tool_agents.setdefault(event.tool_call_id, agent_id)
        elif isinstance(event, ModelCallEnded) and (event.input_tokens or event.output_tokens):
            spent = self._turn.tokens or (0, 0)
            self._turn.tokens = (
                spent[0] + (event.input_tokens or 0),
                spent[1] + (event.output_tokens or 0),
            )
        await self._apply(event, envelope.seq)
        return False

    async def _publish(self, event: Event, agent_id: str = ROOT_AGENT_ID) -> Envelope | None:
        observe_event(event, agent_id)
        return await self._session.publish(
            event, turn_id=self._turn.turn_id, agent_id=agent_id, epoch=self._turn.epoch
        )

    # ------------------------------------------------------------------ rules

    def _check(self, event: Event, agent_id: str) -> None:
        if event.kind in _RUNTIME_ONLY:
            raise LocalProtocolError(
                f"{event.kind} events are published by the runtime; an engine must not yield them"
            )
        match event:
            case TextChunk() | ThinkingChunk():
                self._check_message_id(event.message_id, event.kind)
            case ToolCallStarted() | ToolCallProgress() | ToolCallEnded():
                self._tracker.check(event)  # applied once published
            case ModeChanged():
                try:
                    self._session.controls.check_mode(event.mode_id)
                except InvalidParams as exc:
                    raise LocalProtocolError(f"the engine switched to {exc.message}") from None
            case ConfigChanged():
                for option in event.config_options:
                    try:
                        self._session.controls.check_value(
                            option.id, option.current_value, boolean=True
                        )
                    except InvalidParams as exc:
                        raise LocalProtocolError(f"the engine reported an {exc.message}") from None
            case _:
                pass

    def _check_message_id(self, message_id: str, kind: str) -> None:
        if not message_id or message_id == self._user_message_id:
            raise LocalProtocolError(
                f"{kind} needs a message id of its own (use accord.events.new_id())"
            )
        known = self._message_kinds.setdefault(message_id, kind)
        if known != kind:
            raise LocalProtocolError(
                f"message id {message_id!r} is used by both {known} and {kind} events; "
                "each message needs its own id"
            )

    async def _apply(self, event: Event, seq: int) -> None:
        """Apply ``event``, stamped ``seq``, to the session."""
        session = self._session
        match event:
            case TitleChanged():
                if not session.title_by_client:  # else a client's came while this went out
                    session.title = event.title
            case StateSnapshot():
                pass  # the pipeline kept it when it stamped it
            case CommandsChanged():
                session.commands = event.commands
            case ModeChanged():
                _, config_changed = session.controls.set_mode(event.mode_id)
                if config_changed:
                    await self._publish(
                        ConfigChanged(config_options=tuple(session.controls.options()))
                    )
            case ConfigChanged():
                if session.controls.adopt(event.config_options):
                    assert session.controls.mode_id is not None
                    await self._publish(ModeChanged(mode_id=session.controls.mode_id))
            case _:
                pass

    # ------------------------------------------------------------------ cancellation

    async def _watch_cancel(self) -> None:
        await self._turn.cancel_event.wait()
        await anyio.sleep(self._grace)
        self._turn.hard_cancel()

    async def _end_unfinished_tools(self) -> None:
        # Cut short by session/cancel: cancelled (not failed); otherwise the engine let go of
        # calls it never ended, a failure.
        status: Literal["cancelled", "failed"] = "cancelled" if self._turn.cancelled else "failed"
        unfinished = self._tracker.unfinished()
        published: list[tuple[str, int]] = []
        for index, tool_call_id in enumerate(unfinished):
            ended = ToolCallEnded(tool_call_id=tool_call_id, status=status)
            self._tracker.apply(ended)
            try:
                envelope = await self._publish(
                    ended, self._tool_agents.get(tool_call_id, ROOT_AGENT_ID)
                )
            except WriterClosed as exc:
                if exc.__cause__ is not None:
                    raise  # the store failed: the turn fails with it (the writer says why)
                await self._end_after_teardown(published, unfinished[index:])
                return
            if envelope is not None:
                published.append((tool_call_id, envelope.seq))

    async def _end_after_teardown(
        self, published: Sequence[tuple[str, int]], rest: Sequence[str]
    ) -> None:
        """End the turn in the store itself after its writer was torn down.

        The turn's request was cancelled from outside (its connection was torn down: the
        client went away mid-turn), and the writer's task with it. What the writer had not
        committed is given back; then the end of the turn is stored without the writer: the
        open tool calls (``rest``, and those of ``published``, as ``(id, seq)``, whose end
        was not committed) ended as cancelled, then the completed turn. The stored chain
        closes the turn without a gap and nothing is logged as an error.
        """
        pipeline = self._session.pipeline
        await pipeline.detach_writer()  # the writer's task is cancelled: nothing more commits
        committed = pipeline.committed_seq
        dropped = pipeline.forget_uncommitted()
        again = [tool_call_id for tool_call_id, seq in published if seq > committed]
        logger.debug(
            "session %s: the turn's request was torn down mid-turn (%d uncommitted events"
            " given back); its end is stored without the writer",
            self._session.session_id,
            dropped,
        )
        try:
            for tool_call_id in (*again, *rest):
                ended = ToolCallEnded(tool_call_id=tool_call_id, status="cancelled")
                if tool_call_id in self._tracker.unfinished():
                    self._tracker.apply(ended)
                await self._publish(ended, self._tool_agents.get(tool_call_id, ROOT_AGENT_ID))
            await self._publish(TurnCompleted(stop_reason="cancelled"))
        except StoreError as exc:
            logger.warning(
                "session %s: storing the end of a torn-down turn failed: %s",
                self._session.session_id,
                exc,
            )

    # ------------------------------------------------------------------ permissions

    async def _request_permission(
        self, agent_id: str, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> PermissionAnswer:
        session, turn = self._session, self._turn
        if turn.cancelled:
            return _CANCELLED
        choices = tuple(options) or DEFAULT_PERMISSION_OPTIONS
        # What the turn knows of the call, with the request's fields laid over it.
        known = self._tracker.get(tool_call.tool_call_id)
        merged = merge_tool_call(
            {} if known is None else {"title": known.title, "kind": known.kind, "name": known.name},
            tool_call_changes(tool_call),
        )
        title, kind, name = merged.get("title"), merged.get("kind"), merged.get("name")
        key = permission_key(name=name, kind=kind, title=title)
        rule = session.permissions.lookup(key)
        if rule is not None:
            return decision_for_rule(rule, choices)
        shown = shown_tool_call(tool_call, known)
        pending = await self._publish(
            PermissionPending(tool_call_id=tool_call.tool_call_id, options=choices), agent_id
        )
        await session.pipeline.flush()
        request = RequestPermissionRequest(
            session_id=session.session_id, tool_call=shown, options=list(choices)
        )
        known = {option.option_id for option in choices}

        def valid(answer: RequestPermissionResponse) -> bool:
            outcome = answer.outcome
            if isinstance(outcome, SelectedRequestPermissionOutcome):
                if outcome.option_id in known:
                    return True
                logger.warning(
                    "session %s: a client chose unknown permission option %r; ignored",
                    session.session_id,
                    outcome.option_id,
                )
            return False

        # The clients must know the tool call (and everything before it) before they are
        # asked: each is asked once its attachment has sent up to the pending event.
        question = OpenQuestion[RequestPermissionResponse](
            session,
            after_seq=session.pipeline.committed_seq if pending is None else pending.seq,
            eligible=lambda link: True,
            send=lambda link: link.connection.request_permission(request),
            valid=valid,
            kind="permission request",
        )
        response = None
        with anyio.CancelScope() as scope:
            turn.add_permission_scope(scope)
            try:
                response = await question.ask()
            finally:
                turn.discard_permission_scope(scope)
        if response is None or not isinstance(response.outcome, SelectedRequestPermissionOutcome):
            return _CANCELLED
        chosen = next((o for o in choices if o.option_id == response.outcome.option_id), None)
        if chosen is None or chosen.kind == "unknown":
            # an option of no protocol kind (an engine's mistake) says neither allow nor reject
            return _CANCELLED
        if chosen.kind in _ALWAYS and session.permissions.remember(key, chosen.kind):  # pyright: ignore[reportArgumentType]
            await session.save(self._store)
        return PermissionAnswer(outcome=chosen.kind, option_id=chosen.option_id)

    async def _ask_elicitation(
        self, request: CreateElicitationRequest, mode: str
    ) -> CreateElicitationResponse | None:
        """Put an elicitation to every attached client that advertised ``mode``."""
        session = self._session
        await session.pipeline.flush()

        def eligible(link: ClientLink) -> bool:
            elicitation = link.capabilities.elicitation
            if elicitation is None:
                return False
            return (elicitation.form if mode == "form" else elicitation.url) is not None

        question = OpenQuestion[CreateElicitationResponse](
            session,
            after_seq=session.pipeline.committed_seq,
            eligible=eligible,
            send=lambda link: link.connection.create_elicitation(request),
            valid=lambda answer: True,
            kind="elicitation",
            reraise=True,
        )
        return await question.ask()


def _wire_error(error: Exception) -> RequestError:
    """The error a failed turn answers the prompt with."""
    if isinstance(error, RequestError):
        return error
    if isinstance(error, LocalProtocolError):
        wrapped = InternalError(
            f"the engine broke a rule of the event chain: {error}",
            {"error": type(error).__name__, "message": str(error)},
        )
    else:
        logger.error("prompt turn failed", exc_info=error)
        wrapped = InternalError(
            f"the prompt turn failed: {type(error).__name__}",
            {"error": type(error).__name__, "message": str(error)},
        )
    wrapped.__cause__ = error
    return wrapped
