"""What a client ends up showing after a stream of ``session/update`` payloads (wire form).

:func:`fold` applies ACP's merge rules independently of the client library's own view, so
tests can compare what two paths (live and replayed, memory and stdio) would show a user.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from accord.engines import merge_tool_call

#: A new tool call before its first update is laid over it (the model's defaults).
_NEW_TOOL_CALL: dict[str, Any] = {"status": "pending", "kind": "other"}


def fold(updates: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Fold ``session/update`` payloads the way a client shows them (ACP merge rules).

    Messages are keyed by kind and ``messageId``; adjacent plain text blocks of one message
    are concatenated. Tool calls merge by ACP's rule, the one
    the client uses (:func:`accord.engines.merge_tool_call`). Other updates: last wins.
    """
    messages: list[dict[str, Any]] = []
    tools: dict[str, dict[str, Any]] = {}
    other: dict[str, Any] = {}
    for update in updates:
        tag = update["sessionUpdate"]
        if tag in ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk"):
            key = (tag, update.get("messageId"))
            if not messages or messages[-1]["key"] != key:
                messages.append({"key": key, "blocks": []})
            blocks: list[dict[str, Any]] = messages[-1]["blocks"]
            block = update["content"]
            if (
                block.keys() == {"type", "text"}
                and blocks
                and blocks[-1].keys() == {"type", "text"}
            ):
                blocks[-1] = {"type": "text", "text": blocks[-1]["text"] + block["text"]}
            else:
                blocks.append(block)
        elif tag == "tool_call":
            fields = {k: v for k, v in update.items() if k != "sessionUpdate"}
            tools[update["toolCallId"]] = merge_tool_call(_NEW_TOOL_CALL, fields)
        elif tag == "tool_call_update":
            fields = {k: v for k, v in update.items() if k != "sessionUpdate"}
            tools[update["toolCallId"]] = merge_tool_call(
                tools.get(update["toolCallId"], {}), fields
            )
        else:
            other[tag] = update
    return {"messages": messages, "tools": tools, "other": other}
