"""The activity projection: a compact, privacy-safe record of each envelope for dashboards and logs.

:func:`to_activity` turns an envelope into an :class:`ActivityRecord` and is exhaustive over the
event kinds (``match`` + ``assert_never``). The rules, each pinned by a test:

* No message text, prompt, reasoning, tool input or output, plan text, title, path, URL or
  error text ever enters a record; only kinds, counts, sizes in bytes, token counts and
  whitelisted literals do.
* Ids become correlation ids: the first 12 bytes of SHA-256 over a namespace and the value, in
  hex (:func:`correlation_id`), so records of one session, turn, message or tool call can be
  joined without revealing the ids.
* The few free-text labels (tool name, model name, mode id, exception type, sub-agent name)
  are kept only if they look like identifiers (letters, digits, ``._:@+-``, at most one inner
  ``/`` as in ``org/model``) and are cut to 128 bytes; anything else (a path, a URL, a
  sentence) is replaced by ``"#"`` plus its correlation id.
* Literal fields (status, tool kind, content type, currency) are checked against their
  whitelist at run time, because dataclasses do not validate; unknown values become
  ``"other"``.

``schema_version`` (:data:`ACTIVITY_SCHEMA_VERSION`) changes whenever a field changes meaning.

This module sits on envelopes and events; the agent runtime's activity log
(``AgentRuntime(activity=...)``, ``accord serve --activity FILE``) writes it as NDJSON.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, fields, replace
from typing import Final, assert_never, final

import orjson

from ..engines import (
    BudgetWarning,
    CommandsChanged,
    CompactionChanged,
    CompactionSummaryAdded,
    ConfigChanged,
    Event,
    EventKind,
    Layer,
    MessagesCompacted,
    ModeChanged,
    ModelCallEnded,
    ModelCallStarted,
    PermissionPending,
    PlanChanged,
    StateSnapshot,
    SubAgentStarted,
    SubAgentStopped,
    TextChunk,
    ThinkingChunk,
    TitleChanged,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    TurnCompleted,
    TurnError,
    UsageReported,
    UserMessageChunk,
)
from ..schema import ContentBlock, ToolCallContent
from ._envelope import Envelope

__all__ = (
    "ACTIVITY_SCHEMA_VERSION",
    "LABEL_LIMIT_BYTES",
    "ActivityRecord",
    "activity_to_json",
    "correlation_id",
    "to_activity",
)

ACTIVITY_SCHEMA_VERSION: Final = 1
"""Version of :class:`ActivityRecord`; bump it when a field is added or changes meaning."""

LABEL_LIMIT_BYTES: Final = 128
"""Longest free-text label kept, in UTF-8 bytes: room for any model or tool name, too short
for a paragraph of leaked text."""

_LABEL = re.compile(r"[A-Za-z0-9_.:@+\-]+(?:/[A-Za-z0-9_.:@+\-]+)?")
_STATUSES: Final = frozenset(
    {
        "pending",
        "in_progress",
        "completed",
        "failed",
        "end_turn",
        "max_tokens",
        "max_turn_requests",
        "refusal",
        "cancelled",
        "ok",
        "error",
    }
)
_TOOL_KINDS: Final = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode"}
)
_CONTENT_TYPES: Final = frozenset({"text", "image", "audio", "resource_link", "resource"})
_TOOL_CONTENT_TYPES: Final = frozenset({"content", "diff", "terminal"})
_RESOURCES: Final = frozenset({"tokens", "cost", "model_requests", "time"})
_CURRENCY = re.compile(r"[A-Z]{3}")


def correlation_id(namespace: str, value: str) -> str:
    """Return the first 12 bytes of SHA-256 over ``namespace``, NUL and ``value``, as hex."""
    digest = hashlib.sha256(f"{namespace}\0{value}".encode())
    return digest.digest()[:12].hex()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ActivityRecord:
    """One envelope, as dashboards and logs may see it (see the module rules).

    Every field but the header is ``None`` unless the event kind has it.

    Attributes:
        schema_version: :data:`ACTIVITY_SCHEMA_VERSION`.
        session: Correlation id of the session.
        seq: The envelope's ``seq``.
        epoch: The envelope's ``epoch``.
        turn: Correlation id of the turn (``None`` outside a turn).
        agent: Correlation id of the producing agent.
        layer: ``render``, ``state`` or ``observe``.
        kind: The event kind.
        message: Correlation id of the message (chunks).
        tool_call: Correlation id of the tool call (tool events, permission).
        model_call: Correlation id of the model call (model call events).
        sub_agent: Correlation id of the sub-agent (sub-agent events).
        status: Tool-call status, stop reason, or call / sub-agent outcome.
        tool_kind: The tool's kind.
        content_type: The content block type (chunks) or the first tool content type.
        resource: The budget a warning is about.
        tool: The tool's programmatic name (label).
        model: The model name (label).
        mode: The mode id (label).
        name: The sub-agent's name (label).
        error_type: The exception type of a turn error (label).
        size: UTF-8 bytes of the text or JSON the event carries (never the text itself).
        count: Items carried: content blocks, locations, plan entries, options, commands.
        before: Messages before a compaction.
        after: Messages after a compaction.
        input_tokens: Tokens sent to the model (or in context, before compaction).
        output_tokens: Tokens the model produced (or in context, after compaction).
        used: Budget or context used.
        limit: Budget limit or context size.
        cost: Cumulative cost.
        currency: ISO 4217 code of ``cost`` (``"other"`` for anything else).
    """

    schema_version: int = ACTIVITY_SCHEMA_VERSION
    session: str
    seq: int
    epoch: int
    turn: str | None
    agent: str
    layer: Layer
    kind: EventKind
    message: str | None = None
    tool_call: str | None = None
    model_call: str | None = None
    sub_agent: str | None = None
    status: str | None = None
    tool_kind: str | None = None
    content_type: str | None = None
    resource: str | None = None
    tool: str | None = None
    model: str | None = None
    mode: str | None = None
    name: str | None = None
    error_type: str | None = None
    size: int | None = None
    count: int | None = None
    before: int | None = None
    after: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    used: float | None = None
    limit: float | None = None
    cost: float | None = None
    currency: str | None = None


def activity_to_json(record: ActivityRecord) -> bytes:
    """Serialize a record to one line of JSON, leaving out fields that are ``None``."""
    data = {f.name: getattr(record, f.name) for f in fields(record)}
    return orjson.dumps({k: v for k, v in data.items() if v is not None})


def _label(value: str | None) -> str | None:
    if value is None:
        return None
    if _LABEL.fullmatch(value) is None:
        return "#" + correlation_id("accord/label", value)
    cut = value.encode()[:LABEL_LIMIT_BYTES]
    return cut.decode(errors="ignore")


def _pick(value: str | None, allowed: frozenset[str]) -> str | None:
    if value is None:
        return None
    return value if value in allowed else "other"


def _ref(namespace: str, value: str | None) -> str | None:
    return None if value is None else correlation_id(f"accord/{namespace}", value)


def _block_facts(block: ContentBlock) -> tuple[str | None, int | None]:
    """Content type and, for text, its size in bytes."""
    text = getattr(block, "text", None)
    size = len(text.encode()) if isinstance(text, str) else None
    return _pick(block.type, _CONTENT_TYPES), size


def _first_tool_content(content: tuple[ToolCallContent, ...] | None) -> str | None:
    if not content:
        return None
    return _pick(content[0].type, _TOOL_CONTENT_TYPES)


def _count(items: tuple[object, ...] | None) -> int | None:
    return None if items is None else len(items)


def to_activity(envelope: Envelope) -> ActivityRecord:
    """Project ``envelope`` onto an :class:`ActivityRecord` (exhaustive over event kinds)."""
    event = envelope.event
    header = ActivityRecord(
        session=correlation_id("accord/session", envelope.session_id),
        seq=envelope.seq,
        epoch=envelope.epoch,
        turn=_ref("turn", envelope.turn_id),
        agent=correlation_id("accord/agent", envelope.agent_id),
        layer=event.layer,
        kind=event.kind,
    )
    return _facts(header, event)


def _facts(header: ActivityRecord, event: Event) -> ActivityRecord:
    match event:
        case UserMessageChunk() | TextChunk() | ThinkingChunk():
            content_type, size = _block_facts(event.content)
            return replace(
                header,
                message=_ref("message", event.message_id),
                content_type=content_type,
                size=size,
            )
        case ToolCallStarted():
            return replace(
                header,
                tool_call=_ref("tool_call", event.tool_call_id),
                status=_pick(event.status, _STATUSES),
                tool_kind=_pick(event.tool_kind, _TOOL_KINDS),
                tool=_label(event.name),
                content_type=_first_tool_content(event.content),
                count=len(event.content),
            )
        case ToolCallProgress():
            return replace(
                header,
                tool_call=_ref("tool_call", event.tool_call_id),
                status=_pick(event.status, _STATUSES),
                tool_kind=_pick(event.tool_kind, _TOOL_KINDS),
                content_type=_first_tool_content(event.content),
                count=_count(event.content),
            )
        case ToolCallEnded():
            return replace(
                header,
                tool_call=_ref("tool_call", event.tool_call_id),
                status=_pick(event.status, _STATUSES),
                content_type=_first_tool_content(event.content),
                count=_count(event.content),
            )
        case PlanChanged():
            return replace(header, count=len(event.entries))
        case PermissionPending():
            return replace(
                header, tool_call=_ref("tool_call", event.tool_call_id), count=len(event.options)
            )
        case BudgetWarning():
            return replace(
                header,
                resource=_pick(event.resource, _RESOURCES),
                used=event.used,
                limit=event.limit,
            )
        case ModeChanged():
            return replace(header, mode=_label(event.mode_id))
        case ConfigChanged():
            return replace(header, count=len(event.config_options))
        case CommandsChanged():
            return replace(header, count=len(event.commands))
        case TitleChanged():
            return replace(header, size=None if event.title is None else len(event.title.encode()))
        case UsageReported():
            cost = event.cost
            return replace(
                header,
                used=float(event.used),
                limit=float(event.size),
                cost=None if cost is None else cost.amount,
                currency=None
                if cost is None
                else (cost.currency if _CURRENCY.fullmatch(cost.currency) else "other"),
            )
        case CompactionChanged():
            return replace(
                header,
                message=_ref("message", event.message_id),
                status=_pick(event.status, _STATUSES),
                before=event.messages_before,
                after=event.messages_after,
            )
        case CompactionSummaryAdded():
            content_type, size = _block_facts(event.content)
            return replace(header, content_type=content_type, size=size)
        case TurnCompleted():
            return replace(header, status=_pick(event.stop_reason, _STATUSES))
        case StateSnapshot():
            # An appended snapshot's size is that of the items it appends.
            held = event.state if event.items is None else list(event.items)
            return replace(header, size=len(orjson.dumps(held)))
        case ModelCallStarted():
            return replace(
                header, model_call=_ref("model_call", event.call_id), model=_label(event.model)
            )
        case ModelCallEnded():
            return replace(
                header,
                model_call=_ref("model_call", event.call_id),
                status=_pick(event.outcome, _STATUSES),
                input_tokens=event.input_tokens,
                output_tokens=event.output_tokens,
            )
        case MessagesCompacted():
            return replace(
                header,
                before=event.messages_before,
                after=event.messages_after,
                input_tokens=event.tokens_before,
                output_tokens=event.tokens_after,
            )
        case TurnError():
            return replace(header, error_type=_label(event.error_type))
        case SubAgentStarted():
            return replace(
                header,
                sub_agent=_ref("agent", event.sub_agent_id),
                name=_label(event.name),
                tool_call=_ref("tool_call", event.parent_tool_call_id),
            )
        case SubAgentStopped():
            return replace(
                header,
                sub_agent=_ref("agent", event.sub_agent_id),
                status=_pick(event.outcome, _STATUSES),
            )
        case _:
            assert_never(event)
