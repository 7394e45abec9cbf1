"""The pieces of a session's state that the client keeps: messages and tool calls.

A :class:`Message` is the text (and other content) the user, the agent or the agent's
reasoning produced, grouped by ``messageId``; it grows chunk by chunk and joins its text only
when asked (plain text chunks are kept as ``str``, so a long streamed answer costs one small
string per chunk and no quadratic concatenation). A :class:`ToolCallState` is a frozen snapshot
of one tool call; every update replaces it with a new snapshot, so a snapshot handed out in an
event never changes under its holder.

Above: :mod:`accord.client._view` (folds updates into these) and the per-turn events. Below:
the wire models of :mod:`accord.schema`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast

from ..schema import (
    ContentBlock,
    ContentToolCallContent,
    DiffToolCallContent,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallContent,
    ToolCallLocation,
    ToolCallStatus,
    ToolKind,
)

__all__ = ("Message", "MessageRole", "ToolCallState", "ToolCallStatusView")

MessageRole: TypeAlias = Literal["user", "agent", "thought"]
"""Who produced a message: the user, the agent, or the agent's visible reasoning."""

ToolCallStatusView: TypeAlias = ToolCallStatus | Literal["cancelled"]
"""A tool call's status as the client shows it: the wire statuses plus ``cancelled``, which
the client sets locally on unfinished tool calls when it cancels the turn (ACP v1 has no
``cancelled`` status on the wire)."""


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
class ToolCallState:
    """A snapshot of one tool call, as the agent has reported it so far.

    Attributes:
        tool_call_id: the agent's id for it, unique within the session.
        title: what the tool is doing, for people.
        kind: the category (``read``, ``edit``, ``execute``, ...; unknown kinds read ``other``).
        status: ``pending``, ``in_progress``, ``completed``, ``failed``, or ``cancelled`` (set
            by this client when it cancelled the turn while the call was unfinished).
        content: what the tool produced: content blocks, diffs and terminals, in order.
        locations: the files (and lines) it touches.
        raw_input: the tool's input as the agent reported it.
        raw_output: the tool's output as the agent reported it.
        name: the tool's programmatic name, when the agent sends one (unstable ACP).
    """

    tool_call_id: str
    title: str = ""
    kind: ToolKind = "other"
    status: ToolCallStatusView = "pending"
    content: tuple[ToolCallContent, ...] = ()
    locations: tuple[ToolCallLocation, ...] = ()
    raw_input: Any = None
    raw_output: Any = None
    name: str | None = None

    @property
    def finished(self) -> bool:
        """Whether the call has ended (completed, failed or cancelled)."""
        return self.status in ("completed", "failed", "cancelled")

    @property
    def text(self) -> str:
        """The text of its ``content`` blocks, one block per line."""
        return "\n".join(
            item.content.text
            for item in self.content
            if isinstance(item, ContentToolCallContent)
            and isinstance(item.content, TextContentBlock)
        )

    @property
    def diffs(self) -> tuple[DiffToolCallContent, ...]:
        """The file changes it reported."""
        return tuple(item for item in self.content if isinstance(item, DiffToolCallContent))

    @property
    def terminal_ids(self) -> tuple[str, ...]:
        """The ids of the terminals it embeds (created with ``terminal/create``)."""
        return tuple(
            item.terminal_id for item in self.content if isinstance(item, TerminalToolCallContent)
        )
