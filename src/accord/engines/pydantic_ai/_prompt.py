"""ACP prompt content to pydantic-ai user content.

=============================  ==================================================
ACP block                      pydantic-ai user content
=============================  ==================================================
``text``                       the text (``str``)
``image``                      ``BinaryContent`` (decoded bytes, MIME type)
``audio``                      ``BinaryContent`` (decoded bytes, MIME type)
``resource_link``              a Markdown link ``[name](uri)`` as text
``resource`` with text         the text inside ``<resource uri="...">`` ... ``</resource>``
``resource`` with a blob       ``BinaryContent`` (decoded bytes, MIME type if given)
=============================  ==================================================

A prompt that is a single text block becomes a plain string.

Which blocks reach an engine is decided by its capabilities (the runtime refuses the others
and has already checked the base64 payloads). A link stays a link: the model sees the URI and
name and can read it with a tool; the agent does not fetch it.

This module sits on :mod:`accord.schema`; the session uses it for every prompt.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import assert_never

from pydantic_ai.messages import BinaryContent, UserContent

from ...schema import (
    AudioContentBlock,
    BlobResourceContents,
    ContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    ResourceLinkContentBlock,
    TextContentBlock,
    TextResourceContents,
)

__all__ = ("user_content",)

_BLOB_MEDIA_TYPE = "application/octet-stream"


def user_content(prompt: Sequence[ContentBlock]) -> str | list[UserContent]:
    """Return ``prompt`` as a pydantic-ai user prompt: one item per block, in order.

    A prompt of one text block is that text, as a plain string (what providers expect for a
    typed message, and what the model would have seen without ACP in between).
    """
    content = [_convert(block) for block in prompt]
    if len(content) == 1 and isinstance(content[0], str):
        return content[0]
    return content


def _convert(block: ContentBlock) -> UserContent:
    match block:
        case TextContentBlock():
            return block.text
        case ImageContentBlock() | AudioContentBlock():
            return BinaryContent(data=base64.b64decode(block.data), media_type=block.mime_type)
        case ResourceLinkContentBlock():
            return f"[{block.title or block.name}]({block.uri})"
        case ResourceContentBlock():
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                return f'<resource uri="{resource.uri}">\n{resource.text}\n</resource>'
            return _blob(resource)
        case _:
            assert_never(block)


def _blob(resource: BlobResourceContents) -> UserContent:
    data = base64.b64decode(resource.blob)
    return BinaryContent(data=data, media_type=resource.mime_type or _BLOB_MEDIA_TYPE)
