"""``ClientSession``: one ACP session seen from the client, with its view and its turns.

A session folds every ``session/update`` for it into its :class:`~accord.client.SessionView`
(inside a turn or not: before the first prompt, after a prompt's answer, during a
``session/load`` replay), forwards the events of the running turn to its
:class:`~accord.client.TurnStream`, and answers the agent's permission requests through the
connection's policy. :meth:`ClientSession.cancel` sends ``session/cancel``, answers every
pending permission request ``cancelled`` and marks unfinished tool calls ``cancelled``.

Above: :class:`~accord.client.ConnectedAgent`, which creates sessions and routes the agent's
messages to them. Below: the typed calls of :class:`~accord.roles.ClientSideConnection`, the
view, the turn machinery and the permission policies.
"""

from __future__ import annotations

import functools
import itertools
import logging
import secrets
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

import anyio

from ..errors import (
    CURSOR_META_KEY,
    USER_MESSAGE_ID_META_KEY,
    AgentProcessExited,
    ConnectionClosed,
    InvalidParams,
    LocalProtocolError,
    TurnLost,
)
from ..schema import (
    CancelledRequestPermissionOutcome,
    CancelNotification,
    CloseSessionRequest,
    ContentBlock,
    PermissionOption,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedRequestPermissionOutcome,
    SessionConfigOption,
    SessionModeState,
    SessionUpdate,
    SetSessionConfigOptionRequest,
    SetSessionModeRequest,
    StopReason,
    TextContentBlock,
)
from ._events import (
    PermissionRequested,
    PermissionResolved,
    TextDelta,
    ToolCallAdded,
    ToolCallUpdated,
    TurnEvent,
    TurnFinished,
    UserMessageDelta,
)
from ._permissions import Cancel, PermissionContext, PermissionDecision, PermissionPolicy, Select
from ._turn import TURN_EVENT_BUFFER, SessionState, TurnResult, TurnStream, _Turn, transition
from ._view import SessionView, clean_name

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from ..roles import ClientSideConnection
    from ._reconnect import Reconnector
    from ._terminals import TerminalHost

__all__ = ("ANNOUNCEMENT_TIMEOUT", "CANCEL_NOTICE_TIMEOUT", "ClientSession", "PromptContent")

logger = logging.getLogger("accord.client")

#: How long sending ``session/cancel`` for an abandoned ``prompt()`` may take; it is a courtesy
#: sent while the caller is being cancelled, so it must not hold the caller up.
CANCEL_NOTICE_TIMEOUT = 1.0

#: How long opening a session waits for the updates its agent said follow the response
#: (``_meta.accord.announcements``); they are sent right after it, so this is only reached
#: when the agent breaks its word.
ANNOUNCEMENT_TIMEOUT = 5.0

PromptContent: TypeAlias = str | ContentBlock | Sequence[str | ContentBlock]
"""What a prompt may be given as: text, one content block, or a sequence of either."""

# Content types an agent accepts only when it advertises them (text and resource links are
# baseline), and the promptCapabilities flag that says so.
#: How long a withdrawn question's ``PermissionResolved`` may wait for room in a full stream
#: (the handler is being cancelled: it cannot wait for a reader that never reads).
_WITHDRAWN_EMIT: Final = 1.0

_GATED_CONTENT = {"image": "image", "audio": "audio", "resource": "embedded_context"}

#: Where an accord agent advertises that it tells the prompting client where its turn starts.
_TURN_START_CAPABILITY: Final = ("_meta", "accord", "turnStart")

#: Where an accord agent advertises that it tells a client back on a new link how its turn
#: ended (the end notice's ``stopReason`` and ``tag``; ``turn.tag`` and ``endedTurns`` in the
#: answer to ``session/resume``).
_TURN_END_CAPABILITY: Final = ("_meta", "accord", "turnEnd")


@dataclass(slots=True, kw_only=True)
class _SessionShared:
    """What sessions share with their connection."""

    calls: ClientSideConnection
    task_group: TaskGroup
    policy: PermissionPolicy
    terminals: TerminalHost | None
    forget: Callable[[str], None]
    permission_ids: itertools.count[int]
    event_buffer: int = TURN_EVENT_BUFFER
    #: The link keeper of a served agent (``connect(url)``), None for any other agent.
    relinks: Reconnector | None = None


class ClientSession:
    """A session with an agent: prompt it, stream its turns, read its folded state.

    Created by :meth:`ConnectedAgent.new_session` (or ``load_session``, ``resume_session``,
    ``fork_session``); not constructed directly.
    """

    def __init__(
        self,
        shared: _SessionShared,
        session_id: str,
        cwd: str,
        additional_directories: Sequence[str] = (),
    ) -> None:
        self._shared = shared
        #: The agent's id for this session.
        self.session_id = session_id
        #: The session's working directory (absolute).
        self.cwd = cwd
        #: Further workspace roots the session was opened with.
        self.additional_directories: tuple[str, ...] = tuple(additional_directories)
        self._view = SessionView(session_id)
        self._state: SessionState = "idle"
        self._turn: _Turn | None = None
        self._pending_permissions: dict[int, anyio.CancelScope] = {}
        self._idle = anyio.Event()
        self._idle.set()
        # Activation announcements received (updates marked ``_meta.accord.announcement``).
        self._announced = 0
        self._announced_waiter: tuple[int, anyio.Event] | None = None
        # Tags for this session's prompts (``_meta.accord.prompt``) to an agent that tells the
        # prompting client where its turn starts: a random prefix, so that no other client's
        # tag is the same (an agent tells every client how tagged turns ended), and a number.
        self._tag_prefix = secrets.token_hex(6)
        self._prompt_tags = itertools.count(1)

    def __repr__(self) -> str:
        return f"ClientSession(session_id={self.session_id!r}, state={self._state!r})"

    @property
    def view(self) -> SessionView:
        """The session's state, folded from everything the agent reported."""
        return self._view

    @property
    def state(self) -> SessionState:
        """``idle``, ``running``, ``cancelling`` or ``closed``."""
        return self._state

    @property
    def cursor(self) -> str | None:
        """The delivery cursor of the last update received (opaque): pass it to
        :meth:`AgentConnection.resume_session` on a new connection to get exactly what came
        after it. ``None`` until the agent sends one."""
        return self._view.cursor

    @property
    def observer(self) -> bool:
        """Whether this client joined a session other clients have open and has not prompted
        in it yet (the view's :attr:`SessionView.observer`)."""
        return self._view.observer

    @property
    def turn_client(self) -> str | None:
        """Who runs the turn in progress this client joined: the name the prompting client
        gave (``"another client"`` if it gave none); ``None`` when no other client's turn was
        running as this client joined, or once this client has prompted (the view's
        :attr:`SessionView.joined_turn` and :attr:`SessionView.turn_client`)."""
        if not self._view.joined_turn:
            return None
        return self._view.turn_client or "another client"

    def _note_turn(self, params: dict[str, Any]) -> None:
        """An accord agent says another client's turn started or ended, or this client's own
        turn starts here (``_accord/turn``; with ``prompt``, the tag of this client's prompt:
        what follows is that turn's, what came before it is not)."""
        turn = self._turn
        if "prompt" in params:
            if turn is not None and turn.phase == "waiting" and params["prompt"] == turn.tag:
                turn.advance("start")
            return
        running = params.get("running")
        if not isinstance(running, bool):
            return
        if (
            not running
            and turn is not None
            and turn.tag is not None
            and params.get("tag") == turn.tag
            and "stopReason" in params
        ):
            # This client's own turn, whose link dropped: it ended here, after its updates.
            self._close_to_updates(turn)
            turn.tell(_told_stop(self.session_id, params["stopReason"]))
            return
        client = params.get("client")
        self._view.joined_turn = running
        self._view.turn_client = clean_name(client) if running and isinstance(client, str) else None

    def _note_cursor(self, meta: dict[str, Any]) -> None:
        cursor = meta.get(CURSOR_META_KEY)
        if isinstance(cursor, str):
            self._view.cursor = cursor

    @property
    def roots(self) -> tuple[str, ...]:
        """The directories the agent's file and terminal requests are confined to."""
        return (self.cwd, *self.additional_directories)

    # ------------------------------------------------------------------ turns

    async def prompt(self, content: PromptContent) -> TurnResult:
        """Send a prompt and wait for the turn to end; its updates fold into :attr:`view`.

        If the caller is cancelled, ``session/cancel`` is sent to the agent. If the link to
        a served agent (``connect(url)``) drops meanwhile, and the agent tells how turns end
        (an accord agent), the turn is followed through the reconnect to its real stop
        reason (see :meth:`_ask`).

        Raises:
            SessionBusy: a turn is already running.
            LocalProtocolError: the session is closed, or the content uses a type the agent
                did not advertise (image, audio, embedded resource).
            RequestError: the agent answered the prompt with an error.
            TurnLost: the link dropped and how the turn ended could not be learned (the link
                was not restored, the session not resumed, or the agent no longer knew the
                turn); it names the session to resume.
            ConnectionClosed: the connection ended first (``AgentProcessExited`` with the exit
                code and stderr tail if the agent process died).
        """
        request, tag = self._begin(content)
        turn = _Turn(None, tag=tag)
        self._turn = turn
        try:
            response = await self._ask(turn, request)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_NOTICE_TIMEOUT):
                await self._send_cancel()
            self._end(turn)
            raise
        except Exception as exc:
            self._end(turn, error=exc)
            raise
        result = self._end(turn, response=response)
        assert result is not None
        return result

    def stream(self, content: PromptContent) -> TurnStream:
        """Send a prompt now and return the stream of the turn's events.

        Iterate the stream to the end (or close it): it holds at most
        :data:`~accord.client.TURN_EVENT_BUFFER` events, and while it is full the agent's
        updates wait.

        Raises:
            SessionBusy: a turn is already running.
            LocalProtocolError: the session is closed, or the content uses a type the agent
                did not advertise.
        """
        request, tag = self._begin(content)
        send, receive = anyio.create_memory_object_stream[TurnEvent](self._shared.event_buffer)
        turn = _Turn(send, tag=tag)
        self._turn = turn
        self._shared.task_group.start_soon(
            self._run_streamed_turn, turn, request, name=f"turn of session {self.session_id}"
        )
        return TurnStream(turn, receive)

    async def _run_streamed_turn(self, turn: _Turn, request: PromptRequest) -> None:
        try:
            response = await self._ask(turn, request)
        except Exception as exc:
            self._end(turn, error=exc)
        else:
            result = self._end(turn, response=response, close_stream=False)
            assert result is not None
            await turn.emit(TurnFinished(stop_reason=result.stop_reason, usage=result.usage))
        finally:
            if turn.phase != "finished":  # cancelled: the connection is closing
                self._end(turn, error=ConnectionClosed("the connection closed during the turn"))
            turn.close_stream()

    async def _ask(self, turn: _Turn, request: PromptRequest) -> PromptResponse:
        """Send the prompt and return its answer.

        If the link to a served agent drops meanwhile and the agent tells how turns end
        (``_meta.accord.turnEnd``), the turn is followed through the reconnect: the session
        is resumed, the turn's updates go on folding into it, and the answer is rebuilt from
        the stop reason the agent tells (``_accord/turn`` at the turn's end, or the resume's
        answer if it ended before).

        Raises:
            TurnLost: the link dropped, and how the turn ended could not be learned.
        """
        relinks = self._shared.relinks
        follows = (
            relinks is not None
            and turn.tag is not None
            and _advertised(self._shared.calls, _TURN_END_CAPABILITY)
        )
        try:
            return await self._shared.calls.prompt(
                request, on_answer=functools.partial(self._close_to_updates, turn)
            )
        except ConnectionClosed as exc:
            if not follows or isinstance(exc, AgentProcessExited):
                raise
            logger.info(
                "session %s: link lost during a turn (%s); following it", self.session_id, exc
            )
        assert relinks is not None
        if relinks.gave_up:
            turn.tell(TurnLost(self.session_id, relinks.why))
        await turn.told.wait()
        outcome = turn.outcome
        if isinstance(outcome, TurnLost):
            raise outcome
        assert outcome is not None
        return PromptResponse(stop_reason=outcome)

    def _before_resume(self) -> None:
        """The session is about to be resumed on a new link: a turn that had not started
        yet will not be told so (the notice went with the old link), so it starts now; the
        updates after the cursor are its until another prompt than its own comes (a turn
        that ended meanwhile is followed by the next one's prompt)."""
        turn = self._turn
        if turn is not None:
            turn.relinked = True
            if turn.phase == "waiting":
                turn.advance("start")

    def _resumed(self, meta: dict[str, Any] | None) -> None:
        """The agent's answer to the resume on a new link: whether the running turn is still
        running (``turn.tag``), ended meanwhile (``endedTurns``), or unknown to it."""
        turn = self._turn
        if turn is None or turn.tag is None or not turn.relinked or turn.phase == "finished":
            return
        accord: object = (meta or {}).get("accord")
        fields = cast("dict[str, Any]", accord) if isinstance(accord, dict) else {}
        running: object = fields.get("turn")
        if isinstance(running, dict) and cast("dict[str, Any]", running).get("tag") == turn.tag:
            return  # still running: its end notice follows its updates
        ended: object = fields.get("endedTurns")
        for entry in cast("list[object]", ended) if isinstance(ended, list) else []:
            if not isinstance(entry, dict):
                continue
            outcome = cast("dict[str, Any]", entry)
            if outcome.get("tag") == turn.tag and "stopReason" in outcome:
                self._close_to_updates(turn)
                turn.tell(_told_stop(self.session_id, outcome["stopReason"]))
                return
        turn.tell(TurnLost(self.session_id, "the agent no longer knows that turn"))

    def _lose_turn(self, why: str) -> None:
        """The session will not be resumed (``why``): a turn waiting for that never ends."""
        turn = self._turn
        if turn is not None:
            turn.tell(TurnLost(self.session_id, why))

    def _begin(self, content: PromptContent) -> tuple[PromptRequest, str | None]:
        """The prompt request, and its tag when the agent tells where the turn starts.

        An accord agent (``agentCapabilities._meta.accord.turnStart``) sends the prompting
        client ``_accord/turn`` with the tag put in the prompt's ``_meta.accord.prompt``, in
        order with the updates, just before the turn's first one: updates that arrive before
        it (the tail of an earlier turn, caught up late or after a resume, or of another
        client's turn) fold into the view but are not this turn's. With any other agent the
        turn's updates are all those that arrive until the answer.
        """
        blocks = self._blocks(content)
        self._state = transition(self.session_id, self._state, "prompt")
        self._view.observer = False
        self._view.joined_turn = False
        self._view.turn_client = None
        self._idle = anyio.Event()
        self._view._add_prompt(blocks)
        request = PromptRequest(session_id=self.session_id, prompt=blocks)
        tag: str | None = None
        if _advertised(self._shared.calls, _TURN_START_CAPABILITY):
            tag = f"{self._tag_prefix}.{next(self._prompt_tags)}"
            request.meta = {"accord": {"prompt": tag}}
        return request, tag

    def _end(
        self,
        turn: _Turn,
        *,
        response: PromptResponse | None = None,
        error: BaseException | None = None,
        close_stream: bool = True,
    ) -> TurnResult | None:
        self._close_to_updates(turn)
        self._view._forget_echo()
        result: TurnResult | None = None
        if response is not None:
            view = self._view
            message_id = (response.meta or {}).get(USER_MESSAGE_ID_META_KEY)
            if isinstance(message_id, str) and message_id:
                view._name_prompt(message_id)
            view.last_stop_reason = response.stop_reason
            view.last_turn_usage = response.usage
            result = TurnResult(
                stop_reason=response.stop_reason,
                text=turn.text,
                tool_calls=turn.tool_calls,
                usage=response.usage,
                response=response,
            )
        turn.result = result
        turn.error = error
        turn.advance("finish")
        if close_stream:
            turn.close_stream()
        if self._turn is turn:
            self._turn = None
            self._state = transition(self.session_id, self._state, "finish")
            self._idle.set()
        return result

    def _close_to_updates(self, turn: _Turn) -> None:
        """The turn is answered: take its text and tool calls; later updates are not its.

        Runs as the prompt's ``on_answer`` hook, in notification order: after the updates
        the agent sent before its answer, before any it sent after it.
        """
        if not turn.advance("answer"):
            return
        turn.text = "".join(turn.text_parts)
        turn.text_parts = []
        calls = self._view.tool_calls
        turn.tool_calls = tuple(calls[i] for i in turn.tool_call_ids if i in calls)

    async def wait_idle(self) -> None:
        """Wait until no turn is running."""
        await self._idle.wait()

    async def cancel(self) -> None:
        """Cancel the running turn.

        Sends ``session/cancel``, answers every pending permission request ``cancelled``
        (and any that arrives until the turn ends), and marks the turn's unfinished tool calls
        ``cancelled`` in the view. The agent then ends the turn with stop reason
        ``cancelled``; the turn's stream and ``prompt()`` report that as usual. Cancelling an
        idle session sends ``session/cancel`` all the same (harmless, and allowed any time).

        Raises:
            LocalProtocolError: the session is closed.
        """
        self._state = transition(self.session_id, self._state, "cancel")
        self._answer_pending_cancelled()
        if self._state == "cancelling":
            self._view._cancel_unfinished()
        await self._send_cancel()

    async def _send_cancel(self) -> None:
        await self._shared.calls.cancel(CancelNotification(session_id=self.session_id))

    def _answer_pending_cancelled(self) -> None:
        for scope in self._pending_permissions.values():
            scope.cancel()

    # ------------------------------------------------------------------ session controls

    async def set_mode(self, mode_id: str) -> None:
        """Switch the session's mode (``session/set_mode``).

        Raises:
            RequestError: the agent refused (e.g. an unknown mode).
        """
        request = SetSessionModeRequest(session_id=self.session_id, mode_id=mode_id)
        await self._shared.calls.set_session_mode(request)
        self._view.current_mode_id = mode_id

    async def set_config_option(
        self, config_id: str, value: str | bool
    ) -> tuple[SessionConfigOption, ...]:
        """Set a configuration option; returns (and stores in the view) all options.

        ``value`` is a value id for a select option, a bool for a boolean option.

        Raises:
            RequestError: the agent refused the value.
        """
        if isinstance(value, bool):
            request = SetSessionConfigOptionRequest(
                session_id=self.session_id, config_id=config_id, type="boolean", value=value
            )
        else:
            request = SetSessionConfigOptionRequest(
                session_id=self.session_id, config_id=config_id, value=value
            )
        response = await self._shared.calls.set_session_config_option(request)
        self._view._set_config_options(response.config_options)
        return self._view.config_options

    async def close(self) -> None:
        """Close the session: ``session/close`` when the agent offers it, then local cleanup.

        Pending permission requests are answered ``cancelled`` and the session's terminals
        are released (their processes killed). Closing twice is harmless.

        Raises:
            RequestError: the agent refused ``session/close``.
        """
        if self._state == "closed":
            return
        self._state = transition(self.session_id, self._state, "close")
        self._answer_pending_cancelled()
        try:
            calls = self._shared.calls
            if _advertised(calls, ("sessionCapabilities", "close")):
                await calls.close_session(CloseSessionRequest(session_id=self.session_id))
        finally:
            self._shared.forget(self.session_id)
            self._idle.set()
            if self._shared.terminals is not None:
                await self._shared.terminals.release_session(self.session_id)

    # ------------------------------------------------------------------ from the agent

    async def _on_update(self, update: SessionUpdate) -> None:
        event = self._fold(update)
        if update.meta:
            self._note_announcement(update)
        if event is not None:
            await self._emit(event)

    def _note_announcement(self, update: SessionUpdate) -> None:
        """Count an update the agent marked as an activation announcement."""
        if _accord_meta(update.meta).get("announcement") is True:
            self._announced += 1
            waiter = self._announced_waiter
            if waiter is not None and self._announced >= waiter[0]:
                waiter[1].set()

    async def _await_announcements(self, meta: dict[str, Any] | None) -> None:
        """Wait for the updates the agent announced to follow an activating response.

        An accord agent says how many in ``_meta.accord.announcements`` (its command list
        and title, sent right after the response and marked ``_meta.accord.announcement``,
        see :mod:`accord.agent._session_table`); other agents say nothing and nothing is awaited.
        Bounded by :data:`ANNOUNCEMENT_TIMEOUT`.
        """
        count = _accord_meta(meta).get("announcements")
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            return
        if self._announced >= count:
            return
        arrived = anyio.Event()
        self._announced_waiter = (count, arrived)
        try:
            with anyio.move_on_after(ANNOUNCEMENT_TIMEOUT) as scope:
                await arrived.wait()
            if scope.cancelled_caught:
                logger.warning(
                    "session %s: the agent announced %d updates after opening it; "
                    "they did not arrive within %.0f s",
                    self.session_id,
                    count,
                    ANNOUNCEMENT_TIMEOUT,
                )
        finally:
            self._announced_waiter = None

    def _fold(self, update: SessionUpdate) -> TurnEvent | None:
        """Fold an update into the view and the running turn, without waiting.

        Returns the event when the turn's stream has no room for it now: the caller then
        hands it over with :meth:`_emit` (which waits) before the next update.
        """
        turn = self._turn
        view = self._view
        echoes = view._echoes
        event = view.apply(update)
        if turn is None or turn.phase != "open":
            return None
        if turn.relinked and type(event) is UserMessageDelta and view._echoes == echoes:
            self._close_to_updates(turn)  # another prompt: the turn whose link dropped ended
            return None
        if type(event) is TextDelta:
            turn.text_parts.append(event.text)
        elif isinstance(event, ToolCallAdded | ToolCallUpdated):
            turn.tool_call_ids[event.tool_call.tool_call_id] = None
        if turn.send is None or turn.emit_nowait(event):
            return None
        return event

    async def _emit(self, event: TurnEvent) -> None:
        turn = self._turn
        if turn is not None:
            await turn.emit(event)

    async def _on_permission(self, request: RequestPermissionRequest) -> RequestPermissionResponse:
        _check_options(request)
        shared = self._shared
        context = PermissionContext(
            session_id=self.session_id,
            request=request,
            tool_call=self._view._tool_call_with(request.tool_call),
        )
        request_id = next(shared.permission_ids)
        turn = self._turn
        if turn is not None:
            await turn.emit(
                PermissionRequested(
                    request_id=request_id,
                    tool_call=context.tool_call,
                    options=tuple(request.options),
                )
            )
        decision: PermissionDecision = Cancel()
        if self._state not in ("cancelling", "closed"):
            scope = anyio.CancelScope()
            self._pending_permissions[request_id] = scope
            try:
                with scope:
                    decision = await shared.policy.decide(context)
            except anyio.get_cancelled_exc_class():
                # The agent withdrew the question (``$/cancel_request``: another client
                # answered it first, or the turn ended): the stream hears it ended, cancelled.
                if turn is not None:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(_WITHDRAWN_EMIT):
                        await turn.emit(
                            PermissionResolved(
                                request_id=request_id, decision=Cancel(), option=None
                            )
                        )
                raise
            finally:
                del self._pending_permissions[request_id]
            if scope.cancelled_caught:
                decision = Cancel()
        decision, option = _checked(decision, context)
        if turn is not None:
            await turn.emit(
                PermissionResolved(request_id=request_id, decision=decision, option=option)
            )
        if isinstance(decision, Select):
            return RequestPermissionResponse(
                outcome=SelectedRequestPermissionOutcome(option_id=decision.option_id)
            )
        return RequestPermissionResponse(outcome=CancelledRequestPermissionOutcome())

    def _apply_setup(
        self, modes: SessionModeState | None, config_options: Sequence[SessionConfigOption] | None
    ) -> None:
        self._view._set_modes(modes)
        self._view._set_config_options(config_options)

    def _blocks(self, content: PromptContent) -> list[ContentBlock]:
        items: Sequence[str | ContentBlock]
        if isinstance(content, str):
            items = [content]
        elif isinstance(content, Sequence):
            items = content
        else:
            items = [content]
        blocks = [TextContentBlock(text=item) if isinstance(item, str) else item for item in items]
        response = self._shared.calls.initialize_response
        prompt_caps = response.agent_capabilities.prompt_capabilities if response else None
        for block in blocks:
            flag = _GATED_CONTENT.get(block.type)
            if flag is not None and not (prompt_caps and getattr(prompt_caps, flag)):
                raise LocalProtocolError(
                    f"the agent did not advertise promptCapabilities for {block.type!r} content"
                )
        return blocks


def _accord_meta(meta: dict[str, Any] | None) -> dict[str, Any]:
    """The ``accord`` namespace of a ``_meta`` object (empty when absent or malformed)."""
    accord: object = (meta or {}).get("accord")
    return cast("dict[str, Any]", accord) if isinstance(accord, dict) else {}


def _checked(
    decision: PermissionDecision, context: PermissionContext
) -> tuple[PermissionDecision, PermissionOption | None]:
    """The decision and its option; a selection of an option not offered becomes a cancel."""
    if isinstance(decision, Cancel):
        return decision, None
    for option in context.options:
        if option.option_id == decision.option_id:
            return decision, option
    logger.warning(
        "permission policy selected %r, which the agent did not offer (%s); answering cancelled",
        decision.option_id,
        ", ".join(option.option_id for option in context.options),
    )
    return Cancel(), None


def _told_stop(session_id: str, value: object) -> StopReason | TurnLost:
    """The stop reason an agent told for a turn whose link dropped, if it is one."""
    if isinstance(value, str) and value in typing.get_args(StopReason):
        return cast("StopReason", value)
    return TurnLost(session_id, f"the agent told an unknown stop reason ({str(value)[:40]!r})")


def _advertised(calls: ClientSideConnection, path: tuple[str, ...]) -> bool:
    from ..roles import is_advertised

    return is_advertised(calls.agent_capabilities, path)


def _check_options(request: RequestPermissionRequest) -> None:
    """Refuse a question whose answer would be ambiguous: two options with the same id.

    The user picks an option, the agent receives its id; with a repeated id an agent could
    show "Deny" and "Allow always" under one id and read the answer as it pleases.
    """
    seen: set[str] = set()
    repeated: list[str] = []
    for option in request.options:
        if option.option_id in seen and option.option_id not in repeated:
            repeated.append(option.option_id)
        seen.add(option.option_id)
    if repeated:
        raise InvalidParams(
            "permission options must have distinct ids; repeated: "
            + ", ".join(repr(option_id) for option_id in repeated),
            {"optionIds": repeated},
        )
