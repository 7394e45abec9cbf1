"""The pieces of a session's state that the client keeps: messages, tool calls, compactions.

A :class:`Message` is the text (and other content) the user, the agent or the agent's
reasoning produced, grouped by ``messageId``; it grows chunk by chunk and joins its text only
when asked (plain text chunks are kept as ``str``, so a long streamed answer costs one small
string per chunk and no quadratic concatenation). A :class:`ToolCallState` (the engine contract's
one model of a tool call, :class:`accord.engines.ToolCallState`) is a frozen snapshot of one
tool call; every update replaces it with a new snapshot, so a snapshot handed out in an event
never changes under its holder. A :class:`CompactionState` is the same for one compaction of
the agent's context (the unstable ``compaction_update`` / ``compaction_summary_chunk``
updates): frozen, replaced by each update.

Above: :mod:`accord.client._view` (folds updates into these) and the per-turn events. Below:
the wire models of :mod:`accord.schema`, the tool-call model of :mod:`accord.engines`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, cast

from ..engines import ToolCallPhase, ToolCallState
from ..schema import ContentBlock, TextContentBlock

__all__ = ("CompactionState", "Message", "MessageRole", "ToolCallState", "ToolCallStatusView")

MessageRole: TypeAlias = Literal["user", "agent", "thought"]
"""Who produced a message: the user, the agent, or the agent's visible reasoning."""

ToolCallStatusView: TypeAlias = ToolCallPhase
"""A tool call's status as the client shows it: the wire statuses plus ``cancelled``, which
the client sets locally on unfinished tool calls when it cancels the turn (ACP v1 has no
``cancelled`` status on the wire). The same type as :data:`accord.engines.ToolCallPhase`."""


class Message:
    """One message of the conversation, assembled from its chunks.

    Attributes:
        role: ``"user"``, ``"agent"`` or ``"thought"``.
        message_id: the agent's ``messageId``, or None when the chunks carried none (or, for a
            prompt sent by this client, always None: clients never mint message ids).
    """

    __slots__ = ("_parts", "_text", "message_id", "role")

    def __init__(self, role: MessageRole, message_id: str | None = None) -> None:
        self.role: MessageRole = role
        self.message_id = message_id
        # Plain text chunks as str (cheap), anything else as the content block itself.
        self._parts: list[str | ContentBlock] = []
        self._text: str | None = ""

    def __repr__(self) -> str:
        preview = self.text[:40]
        return f"Message(role={self.role!r}, message_id={self.message_id!r}, text={preview!r})"

    def _append(self, block: ContentBlock) -> str:
        """Add one chunk; returns its text ("" for a block that is not text)."""
        if isinstance(block, TextContentBlock):
            text = block.text
            if block.annotations is None and block.meta is None and not block.__pydantic_extra__:
                self._parts.append(text)
            else:
                self._parts.append(block)
            self._text = None
            return text
        self._parts.append(block)
        return ""

    @property
    def text(self) -> str:
        """The message's text: every text chunk joined (joined once, then cached)."""
        if self._text is None:
            parts = self._parts
            if all(type(part) is str for part in parts):
                joined = "".join(cast("list[str]", parts))
                self._parts = [joined] if joined else []
            else:
                joined = "".join(
                    part if isinstance(part, str) else part.text
                    for part in parts
                    if isinstance(part, str | TextContentBlock)
                )
            self._text = joined
        return self._text

    @property
    def content(self) -> tuple[ContentBlock, ...]:
        """The message as content blocks; consecutive plain text chunks merged into one."""
        blocks: list[ContentBlock] = []
        run: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                run.append(part)
                continue
            if run:
                blocks.append(TextContentBlock(text="".join(run)))
                run = []
            blocks.append(part)
        if run:
            blocks.append(TextContentBlock(text="".join(run)))
        return tuple(blocks)

    @property
    def chunk_count(self) -> int:
        """How many parts the message holds (plain text runs are merged once read)."""
        return len(self._parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionState:
    """One compaction of the agent's context, as the client last heard of it (a snapshot).

    The agent summarised earlier turns for its model (the transcript stays whole); each
    ``compaction_update`` or ``compaction_summary_chunk`` for its id replaces the snapshot.

    Attributes:
        compaction_id: the agent's id for it.
        status: ``in_progress``, ``completed``, ``failed`` or ``cancelled`` (ACP's enum is
            open: another agent may send another value, kept as sent).
        summary: the summary the agent keeps, block by block as received.
        error: why it failed, when the agent says.
    """

    compaction_id: str
    status: str = "in_progress"
    summary: tuple[ContentBlock, ...] = ()
    error: str | None = None

    @property
    def summary_text(self) -> str:
        """The summary's text (its text blocks joined)."""
        return "".join(b.text for b in self.summary if isinstance(b, TextContentBlock))

    @property
    def finished(self) -> bool:
        """Whether the compaction ended (any status but ``in_progress``)."""
        return self.status != "in_progress"
