"""The event translator: one turn's pydantic-ai events as canonical accord events.

:class:`EventTranslator` takes every event of the run (``agent.iter`` + ``node.stream``) and
returns the accord events it means. :meth:`EventTranslator.translate` dispatches with
``match`` to one overridable hook per kind of event (``on_text_start``, ``on_text_delta``,
``on_thinking_start``, ``on_thinking_delta``, ``on_tool_call_start``, ``on_tool_call``,
``on_tool_result``, ``on_native_tool_call``, ``on_native_tool_result``, ``on_other``); a
subclass changes one mapping without touching the rest. Hooks return a sequence of events
rather than being async generators: a text delta is the hot path (thousands per reply) and a
tuple costs a fraction of an async generator.

Mapping decisions:

* **Message ids**: one message per response *part*. Each text part (and each thinking part)
  gets its own :func:`~accord.events.new_id` at its ``PartStartEvent``; its deltas carry it.
  A model response that interleaves thinking and text, or that text and a tool call split,
  thus shows as separate messages, as it was produced; nothing is ever glued together.
* **Tool calls**: a function tool call appears as soon as the model starts streaming it
  (``ToolCallStarted``, ``pending``, titled by its behaviour); when pydantic-ai is about to
  handle it (``FunctionToolCallEvent``) a ``ToolCallProgress`` adds the title from the
  arguments, locations, raw input, the diff for edits, and ``in_progress`` unless the call
  will wait for approval (it stays ``pending`` while the user decides; the approval hook then
  moves it on). Before the user is asked, :meth:`EventTranslator.preview` adds the
  behaviour's preview (``tool_call_update``), and :meth:`EventTranslator.permission_request`
  is the call as the request shows it: kind, title, locations and the same content.
  The result (``FunctionToolResultEvent``) ends it: ``completed`` for
  pydantic-ai's ``success`` outcome, ``failed`` for ``failed``, ``denied``, ``retried`` and
  ``interrupted``. The content is the result as text (capped at :data:`MAX_RESULT_TEXT`), or
  for a completed edit the diff. Output tools (structured output) are not shown.
* **Tool call ids**: accord's own (:func:`~accord.events.new_id`), not the provider's, which
  some OpenAI-compatible servers repeat across responses while ACP needs them unique in the
  session. pydantic-ai ids are mapped per turn.
* **Native tools** (run by the provider, e.g. web search): started ``in_progress`` when the
  call part is complete, ended ``completed`` with the provider's result as text.

This module sits on pydantic-ai, :mod:`accord.events` and :mod:`accord.schema`; the session
drives one translator per turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import pydantic_core
from pydantic_ai.messages import (
    AgentStreamEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    NativeToolCallPart,
    NativeToolReturnPart,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
)
from pydantic_ai.tools import DeferredToolRequests, RunContext, ToolDefinition

from ...schema import (
    ContentToolCallContent,
    DiffToolCallContent,
    TextContentBlock,
    ToolCallContent,
    ToolCallLocation,
    ToolCallUpdate,
)
from .. import (
    Event,
    TextChunk,
    ThinkingChunk,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    new_id,
)
from ._tools import BehaviourLookup, ToolBehaviour, ToolCallInput, resolve_behaviour

__all__ = ("MAX_RESULT_TEXT", "ApprovalPredictor", "EventTranslator")

MAX_RESULT_TEXT: Final = 64 * 1024
"""Characters of a tool result shown as the call's content; the rest is cut with a note.

The model gets the whole result; this only bounds what each client is sent and stores, so a
tool that returns a large file cannot push a multi-megabyte ``session/update`` (the NDJSON line
limit is a few MiB)."""

ApprovalPredictor = Callable[[str, Mapping[str, Any], ToolDefinition | None], bool]
"""``(tool name, arguments, definition) -> whether the call will wait for approval``."""

_NONE: Final[tuple[Event, ...]] = ()


@dataclass(slots=True)
class _Part:
    kind: Literal["text", "thinking", "tool"]
    message_id: str = ""
    call: _Call | None = None


@dataclass(slots=True, kw_only=True)
class _Call:
    """What the translator knows of one tool call of the turn."""

    acp_id: str
    name: str
    behaviour: ToolBehaviour
    status: Literal["pending", "in_progress"] = "pending"
    title: str = ""
    diff: DiffToolCallContent | None = None
    args: Mapping[str, Any] = field(default_factory=dict[str, Any])
    locations: tuple[ToolCallLocation, ...] = ()
    shown: tuple[ToolCallContent, ...] | None = None
    """The content of its preview, once one was made (else the diff is what it shows)."""


def _text(text: str) -> tuple[ToolCallContent, ...]:
    if len(text) > MAX_RESULT_TEXT:
        cut = len(text) - MAX_RESULT_TEXT
        text = f"{text[:MAX_RESULT_TEXT]}\n… ({cut:,} more characters)"
    return (ContentToolCallContent(content=TextContentBlock(text=text)),)


class EventTranslator:
    """Maps one turn's pydantic-ai events to accord events; override a hook to change one mapping.

    Args:
        cwd: The session's working directory (for tool paths).
        behaviours: The engine's tool behaviour registry.
        expects_approval: Predicts whether a function tool call will wait for approval.
    """

    def __init__(
        self,
        *,
        cwd: str,
        behaviours: BehaviourLookup | None = None,
        expects_approval: ApprovalPredictor | None = None,
    ) -> None:
        """Start a turn with no parts and no tool calls."""
        self.cwd = cwd
        self.behaviours = behaviours
        self.expects_approval = expects_approval
        self.tool_defs: dict[str, ToolDefinition] = {}
        """Function tools of the latest step, by name (filled by the turn's capability)."""
        self.output_tools: set[str] = set()
        """Names of output tools seen so far (their calls are not shown)."""
        self._parts: dict[int, _Part] = {}
        self._calls: dict[str, _Call] = {}
        # Whether a text delta becomes one plain chunk as mapped here (no hook overridden):
        # then :meth:`plain_text_delta` may name it without the chunk being built.
        cls = type(self)
        self._plain_deltas = (
            cls.translate is EventTranslator.translate
            and cls.on_text_delta is EventTranslator.on_text_delta
        )

    def acp_tool_call_id(self, tool_call_id: str) -> str | None:
        """The ACP id of the call pydantic-ai names ``tool_call_id``, while the call is open."""
        call = self._calls.get(tool_call_id)
        return None if call is None else call.acp_id

    # -- driving -----------------------------------------------------------------------------

    def begin_response(self) -> None:
        """A new model response starts: part indexes start again from 0."""
        for part in self._parts.values():
            if part.call is not None:  # streamed but never completed: keep it to end it
                self._calls[f"unbound:{part.call.acp_id}"] = part.call
        self._parts.clear()

    def translate(self, event: AgentStreamEvent) -> Sequence[Event]:
        """Return the accord events ``event`` means (often none)."""
        match event:
            case PartDeltaEvent(index=index, delta=TextPartDelta() as delta):
                return self.on_text_delta(index, delta)
            case PartDeltaEvent(index=index, delta=ThinkingPartDelta() as delta):
                return self.on_thinking_delta(index, delta)
            case PartStartEvent(index=index, part=TextPart() as part):
                return self.on_text_start(index, part)
            case PartStartEvent(index=index, part=ThinkingPart() as part):
                return self.on_thinking_start(index, part)
            case PartStartEvent(index=index, part=ToolCallPart() as part):
                return self.on_tool_call_start(index, part)
            case PartStartEvent(part=NativeToolReturnPart() as part):
                return self.on_native_tool_result(part)
            case PartEndEvent(index=index, part=ToolCallPart() as part):
                self._bind_call(index, part)
                return _NONE
            case PartEndEvent(part=NativeToolCallPart() as part):
                return self.on_native_tool_call(part)
            case FunctionToolCallEvent():
                return self.on_tool_call(event)
            case FunctionToolResultEvent():
                return self.on_tool_result(event)
            case _:
                return self.on_other(event)

    def plain_text_delta(self, event: AgentStreamEvent) -> tuple[str, str] | None:
        """``(message id, text)`` when :meth:`translate` would turn ``event`` into exactly one
        plain text chunk of a message already started (the hot path: most events of a reply);
        else ``None``. A subclass that overrides ``translate`` or ``on_text_delta`` always
        gets ``None``, so its mapping is used for every event."""
        if not self._plain_deltas or type(event) is not PartDeltaEvent:
            return None
        delta = event.delta
        if type(delta) is not TextPartDelta or not delta.content_delta:
            return None
        part = self._parts.get(event.index)
        if part is None or part.kind != "text":
            return None
        return part.message_id, delta.content_delta

    # -- text and thinking -------------------------------------------------------------------

    def on_text_start(self, index: int, part: TextPart) -> Sequence[Event]:
        """A text part started: a new message, with the part's first text if any."""
        message_id = new_id()
        self._parts[index] = _Part("text", message_id)
        if not part.content:
            return _NONE
        return (TextChunk(message_id=message_id, content=TextContentBlock(text=part.content)),)

    def on_text_delta(self, index: int, delta: TextPartDelta) -> Sequence[Event]:
        """More text for the message of part ``index``."""
        text = delta.content_delta
        if not text:
            return _NONE
        part = self._parts.get(index)
        if part is None or part.kind != "text":  # a delta without a start: treat it as one
            part = self._parts[index] = _Part("text", new_id())
        return (TextChunk(message_id=part.message_id, content=TextContentBlock(text=text)),)

    def on_thinking_start(self, index: int, part: ThinkingPart) -> Sequence[Event]:
        """A thinking part started: a new thought message."""
        message_id = new_id()
        self._parts[index] = _Part("thinking", message_id)
        if not part.content:
            return _NONE
        return (ThinkingChunk(message_id=message_id, content=TextContentBlock(text=part.content)),)

    def on_thinking_delta(self, index: int, delta: ThinkingPartDelta) -> Sequence[Event]:
        """More thinking for part ``index`` (signature-only deltas carry no text)."""
        text = delta.content_delta
        if not text:
            return _NONE
        part = self._parts.get(index)
        if part is None or part.kind != "thinking":
            part = self._parts[index] = _Part("thinking", new_id())
        return (ThinkingChunk(message_id=part.message_id, content=TextContentBlock(text=text)),)

    # -- function tools ----------------------------------------------------------------------

    def on_tool_call_start(self, index: int, part: ToolCallPart) -> Sequence[Event]:
        """The model started a tool call: show it (``pending``) unless it is an output tool."""
        if part.tool_name in self.output_tools:
            return _NONE
        previous = self._parts.get(index)
        if previous is not None and previous.call is not None:  # the part was replaced
            return _NONE
        call = self._new_call(part.tool_name, part.tool_kind)
        self._parts[index] = _Part("tool", call=call)
        call.title = call.behaviour.title(ToolCallInput(name=call.name, args={}, cwd=self.cwd))
        return (
            ToolCallStarted(
                tool_call_id=call.acp_id,
                title=call.title,
                tool_kind=call.behaviour.kind,
                name=call.name,
            ),
        )

    def on_tool_call(self, event: FunctionToolCallEvent) -> Sequence[Event]:
        """pydantic-ai handles a function tool call: its arguments are complete."""
        part = event.part
        args = part.args_as_dict()
        call = self._calls.get(part.tool_call_id)
        fresh = call is None
        if call is None:
            call = self._calls[part.tool_call_id] = self._new_call(part.tool_name, part.tool_kind)
        call.args = args
        tool_input = ToolCallInput(name=call.name, args=args, cwd=self.cwd)
        call.title = call.behaviour.title(tool_input)
        call.diff = call.behaviour.diff(tool_input)
        call.locations = locations = call.behaviour.locations(tool_input)
        content: tuple[ToolCallContent, ...] = () if call.diff is None else (call.diff,)
        runs = event.args_valid is True and not self._waits_for_approval(call.name, args)
        if fresh:
            call.status = "in_progress" if runs else "pending"
            return (
                ToolCallStarted(
                    tool_call_id=call.acp_id,
                    title=call.title,
                    tool_kind=call.behaviour.kind,
                    status=call.status,
                    content=content,
                    locations=locations,
                    raw_input=args,
                    name=call.name,
                ),
            )
        start_running = runs and call.status == "pending"
        if start_running:
            call.status = "in_progress"
        return (
            ToolCallProgress(
                tool_call_id=call.acp_id,
                status="in_progress" if start_running else None,
                title=call.title,
                content=content or None,
                locations=locations or None,
                raw_input=args,
            ),
        )

    def on_tool_result(self, event: FunctionToolResultEvent) -> Sequence[Event]:
        """A function tool call ended: ``completed`` on success, else ``failed``."""
        part = event.part
        call = self._calls.pop(part.tool_call_id, None)
        started: tuple[Event, ...] = ()
        if call is None:  # a result for a call never shown: show it now
            call = self._new_call(part.tool_name)
            started = (ToolCallStarted(tool_call_id=call.acp_id, title=call.title, name=call.name),)
        ok = part.outcome == "success"
        if ok and call.diff is not None:
            content = (call.diff,)
        else:
            content = _text(part.model_response_str(wrap_if_error=False))
        status: Literal["completed", "failed"] = "completed" if ok else "failed"
        return (*started, ToolCallEnded(tool_call_id=call.acp_id, status=status, content=content))

    # -- native tools ------------------------------------------------------------------------

    def on_native_tool_call(self, part: NativeToolCallPart) -> Sequence[Event]:
        """The provider runs a tool of its own (e.g. web search): show it running."""
        call = self._calls[part.tool_call_id] = self._new_call(part.tool_name)
        call.status = "in_progress"
        return (
            ToolCallStarted(
                tool_call_id=call.acp_id,
                title=call.title,
                tool_kind=call.behaviour.kind,
                status="in_progress",
                raw_input=part.args_as_dict(),
                name=call.name,
            ),
        )

    def on_native_tool_result(self, part: NativeToolReturnPart) -> Sequence[Event]:
        """The provider's tool returned."""
        call = self._calls.pop(part.tool_call_id, None)
        if call is None:
            return _NONE
        text = part.model_response_str(wrap_if_error=False)
        status: Literal["completed", "failed"] = (
            "completed" if part.outcome == "success" else "failed"
        )
        return (ToolCallEnded(tool_call_id=call.acp_id, status=status, content=_text(text)),)

    def on_output(self, output: object) -> Sequence[Event]:
        """The run's output: text was streamed already; other output is shown as JSON text."""
        if output is None or isinstance(output, str | DeferredToolRequests):
            return _NONE
        text = pydantic_core.to_json(output, fallback=str).decode()
        return (TextChunk(message_id=new_id(), content=TextContentBlock(text=text)),)

    def on_other(self, event: AgentStreamEvent) -> Sequence[Event]:
        """Any other event (final result, part ends, deferred requests, custom events): none."""
        return _NONE

    # -- for the approval bridge and the end of the turn -------------------------------------

    async def preview(self, part: ToolCallPart, ctx: RunContext[Any]) -> Sequence[Event]:
        """Before the user is asked about ``part``: its behaviour's preview, as an update.

        The preview's content (a diff in it also becomes the call's diff, the content a
        completed call falls back to), locations and title are kept for
        :meth:`permission_request`; nothing when the behaviour has no preview.
        """
        call = self._calls.get(part.tool_call_id)
        if call is None:
            return _NONE
        args = call.args or part.args_as_dict()
        preview = await call.behaviour.preview(
            ToolCallInput(name=call.name, args=args, cwd=self.cwd), ctx
        )
        if preview is None:
            return _NONE
        call.shown = preview.content
        call.diff = next(
            (item for item in preview.content if isinstance(item, DiffToolCallContent)), call.diff
        )
        if preview.locations:
            call.locations = preview.locations
        if preview.title:
            call.title = preview.title
        return (
            ToolCallProgress(
                tool_call_id=call.acp_id,
                title=call.title,
                content=preview.content or None,
                locations=preview.locations or None,
            ),
        )

    def permission_request(self, part: ToolCallPart) -> ToolCallUpdate:
        """The tool call to show in ``session/request_permission`` for ``part``: its kind,
        title, status, locations, content (the preview's, else the diff) and raw input."""
        call = self._calls.get(part.tool_call_id)
        if call is None:
            call = self._calls[part.tool_call_id] = self._new_call(part.tool_name)
        shown = call.shown if call.shown is not None else () if call.diff is None else (call.diff,)
        return ToolCallUpdate(
            tool_call_id=call.acp_id,
            title=call.title,
            kind=call.behaviour.kind,
            status=call.status,
            content=list(shown) or None,
            locations=list(call.locations) or None,
            raw_input=dict(call.args) or part.args_as_dict(),
        )

    def approved(self, part: ToolCallPart) -> Sequence[Event]:
        """The user allowed the call: it runs now."""
        call = self._calls.get(part.tool_call_id)
        if call is None or call.status != "pending":
            return _NONE
        call.status = "in_progress"
        return (ToolCallProgress(tool_call_id=call.acp_id, status="in_progress"),)

    def end_unfinished(self, reason: str | None) -> Sequence[Event]:
        """End every call still open: ``failed`` with ``reason`` (an error, a limit), or
        ``cancelled`` when ``reason`` is ``None`` (the turn was cancelled)."""
        self.begin_response()
        calls = list(self._calls.values())
        self._calls.clear()
        if reason is None:
            return tuple(
                ToolCallEnded(tool_call_id=call.acp_id, status="cancelled") for call in calls
            )
        return tuple(
            ToolCallEnded(tool_call_id=call.acp_id, status="failed", content=_text(reason))
            for call in calls
        )

    def unfinished(self) -> Iterable[str]:
        """The accord ids of calls that are still open."""
        return (call.acp_id for call in self._calls.values())

    # -- helpers -----------------------------------------------------------------------------

    def _new_call(self, name: str, tool_kind: str | None = None) -> _Call:
        definition = self.tool_defs.get(name)
        metadata = definition.metadata if definition is not None else None
        behaviour = resolve_behaviour(self.behaviours, name, tool_kind=tool_kind, metadata=metadata)
        return _Call(acp_id=new_id(), name=name, behaviour=behaviour, title=name)

    def _bind_call(self, index: int, part: ToolCallPart) -> None:
        """The streamed call part is complete: from now on its pydantic-ai id finds it."""
        streamed = self._parts.get(index)
        if streamed is not None and streamed.call is not None:
            self._calls[part.tool_call_id] = streamed.call
            streamed.call = None

    def _waits_for_approval(self, name: str, args: Mapping[str, Any]) -> bool:
        if self.expects_approval is None:
            return False
        return self.expects_approval(name, args, self.tool_defs.get(name))
