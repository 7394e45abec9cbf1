"""Replay compaction: a stored event chain made short enough to send on ``session/load``.

A reply streamed as 5,000 deltas is stored as 5,000 events; a client loading the session needs
the message, not the deltas. :func:`compact_for_replay` is a pure function over envelopes:

* observe-layer envelopes are dropped (telemetry is not part of the transcript);
* adjacent plain-text chunks of one message (same kind, agent and ``message_id``, text blocks
  without annotations or ``_meta``) become one chunk with the concatenated text;
* within a run of consecutive tool-call events, a :class:`ToolCallProgress` folds into the
  earlier ``ToolCallStarted`` or ``ToolCallProgress`` of the same call. Updates to different
  calls commute and a later field replaces an earlier one (ACP's merge rule), so the client ends
  in the same state. A :class:`ToolCallEnded` is kept as is and closes its call for folding.

A merged envelope keeps the header (``seq``, ...) of the first envelope it absorbed,
so sequence numbers in the result still increase. Everything else is kept in order.

This module sits on envelopes and events; the agent runtime calls it on ``session/load``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ..engines import (
    Event,
    TextChunk,
    ThinkingChunk,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    UserMessageChunk,
    merge_tool_call,
)
from ..schema import TextContentBlock
from ._envelope import Envelope, restamp

__all__ = ("compact_for_replay",)

_Chunk = UserMessageChunk | TextChunk | ThinkingChunk


def _plain_text(event: Event) -> str | None:
    """The text of a chunk whose content is a bare text block (safe to concatenate)."""
    if not isinstance(event, UserMessageChunk | TextChunk | ThinkingChunk):
        return None
    content = event.content
    if not isinstance(content, TextContentBlock):
        return None
    if content.annotations is not None or content.meta is not None or content.model_extra:
        return None
    return content.text


def _same_message(first: Envelope, other: Envelope) -> bool:
    a, b = first.event, other.event
    return (
        type(a) is type(b)
        and isinstance(a, UserMessageChunk | TextChunk | ThinkingChunk)
        and isinstance(b, UserMessageChunk | TextChunk | ThinkingChunk)
        and a.message_id == b.message_id
        and first.agent_id == other.agent_id
        and first.turn_id == other.turn_id
    )


def _fold(
    earlier: ToolCallStarted | ToolCallProgress, later: ToolCallProgress
) -> ToolCallStarted | ToolCallProgress:
    """``later`` laid over ``earlier`` by ACP's merge rule (:func:`merge_tool_call`)."""
    return merge_tool_call(
        earlier,
        {
            "status": later.status,
            "title": later.title,
            "tool_kind": later.tool_kind,
            "content": later.content,
            "locations": later.locations,
            "raw_input": later.raw_input,
        },
    )


def compact_for_replay(envelopes: Iterable[Envelope]) -> list[Envelope]:
    """Return the envelopes to replay for ``envelopes`` (a stored chain, in ``seq`` order).

    See the module docstring for the rules; the function is pure and keeps the order.
    """
    out: list[Envelope] = []
    # The chunk the current text run merges into (its index in `out`), and the run's texts.
    text_head: tuple[int, _Chunk] | None = None
    pieces: list[str] = []
    # Within a run of tool-call events: tool_call_id -> the entry a progress event folds into.
    foldable: dict[str, tuple[int, ToolCallStarted | ToolCallProgress]] = {}
    # Entries of `out` whose event was merged or folded (re-stamped once, at the end).
    changed: dict[int, Event] = {}

    def flush_text() -> None:
        nonlocal text_head
        if text_head is not None and len(pieces) > 1:
            index, chunk = text_head
            merged = dataclasses.replace(chunk, content=TextContentBlock(text="".join(pieces)))
            changed[index] = merged
        text_head = None
        pieces.clear()

    for envelope in envelopes:
        if envelope.layer == "observe":
            continue
        event = envelope.event
        text = _plain_text(event)
        if (
            text is not None
            and text_head is not None
            and _same_message(out[text_head[0]], envelope)
        ):
            pieces.append(text)
            continue
        flush_text()

        if isinstance(event, ToolCallProgress):
            target = foldable.get(event.tool_call_id)
            if target is not None and out[target[0]].agent_id == envelope.agent_id:
                index, earlier = target
                folded = _fold(earlier, event)
                changed[index] = folded
                foldable[event.tool_call_id] = (index, folded)
                continue
        elif not isinstance(event, ToolCallStarted | ToolCallEnded):
            foldable.clear()

        out.append(envelope)
        if isinstance(event, ToolCallStarted | ToolCallProgress):
            foldable[event.tool_call_id] = (len(out) - 1, event)
        elif isinstance(event, ToolCallEnded):
            foldable.pop(event.tool_call_id, None)
        if text is not None and isinstance(event, UserMessageChunk | TextChunk | ThinkingChunk):
            text_head = (len(out) - 1, event)
            pieces.append(text)
    flush_text()
    for index, event in changed.items():
        out[index] = restamp(out[index], event)
    return out
