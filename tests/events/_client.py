"""Test helpers: what a client ends up showing after a stream of updates, and schema checks."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import orjson

from accord.engines import merge_tool_call

_CACHE = Path(__file__).resolve().parents[2] / ".schema-cache"


#: A new tool call before its first update is laid over it (the model's defaults).
_NEW_TOOL_CALL: dict[str, Any] = {"status": "pending", "kind": "other"}


def reduce_updates(updates: list[dict[str, Any]]) -> dict[str, Any]:
    """Fold ``session/update`` payloads (wire form) the way a client does (ACP merge rules).

    Messages are split by ``messageId``; adjacent plain text blocks of one message are
    concatenated (what a client renders). Tool calls merge by ACP's rule, the one
    the client uses (:func:`accord.engines.merge_tool_call`).
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


@functools.cache
def stable_schema() -> dict[str, Any] | None:
    """The official stable v1 schema from the local cache, or ``None`` if not fetched."""
    found = sorted(_CACHE.glob("*/v1/schema.json"))
    return orjson.loads(found[-1].read_bytes()) if found else None


def stable_validator() -> Any:
    """A jsonschema validator of ``SessionNotification`` against the stable schema, or None."""
    schema = stable_schema()
    if schema is None:
        return None
    import jsonschema

    root = {"$ref": "#/$defs/SessionNotification", "$defs": schema["$defs"]}
    return jsonschema.Draft202012Validator(root)
