"""Prompt content: one mapping between ACP content blocks and the runtime's own parts.

ACP carries binary payloads as base64 text; inside the runtime and engines they are bytes.
This module is the only place that converts between the two, in both directions:

========================  ==============================  ===============================
wire block (``type``)     part                            payload inside
========================  ==============================  ===============================
``text``                  :class:`TextPart`               the text, literally
``image``                 :class:`ImagePart`              ``bytes`` + MIME type (+ uri)
``audio``                 :class:`AudioPart`              ``bytes`` + MIME type
``resource_link``         :class:`ResourceLinkPart`       the link's fields, literally
``resource`` (text)       :class:`TextResourcePart`       the text, literally
``resource`` (blob)       :class:`BlobResourcePart`       ``bytes`` (+ MIME type)
========================  ==============================  ===============================

Annotations and ``_meta`` travel through unchanged, so ``part_to_block(part_from_block(b))``
equals ``b`` for every valid block.

Which blocks a prompt may carry is decided by the engine (:class:`EngineCapabilities`): text
and resource links always, images, audio and embedded resources only when the engine accepts
them. :func:`check_prompt` enforces that (and decodes every binary payload, so bad base64 is
refused too) before the runtime records anything of a prompt.

This module sits on :mod:`accord.schema`, :mod:`accord.errors` and the engine protocol; the
runtime and engines above it use it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, assert_never, final

from ..errors import InvalidParams
from ..schema import (
    Annotations,
    AudioContentBlock,
    BlobResourceContents,
    ContentBlock,
    ImageContentBlock,
    PromptCapabilities,
    ResourceContentBlock,
    ResourceLinkContentBlock,
    TextContentBlock,
    TextResourceContents,
)
from ._protocol import EngineCapabilities

__all__ = (
    "BASELINE_BLOCK_TYPES",
    "AudioPart",
    "BlobResourcePart",
    "BlockType",
    "ContentPart",
    "ImagePart",
    "ResourceLinkPart",
    "TextPart",
    "TextResourcePart",
    "accepted_block_types",
    "check_prompt",
    "part_from_block",
    "part_to_block",
    "prompt_capabilities",
    "prompt_parts",
)

BlockType: TypeAlias = Literal["text", "image", "audio", "resource_link", "resource"]
"""The ``type`` tag of an ACP content block."""

BASELINE_BLOCK_TYPES: Final[frozenset[BlockType]] = frozenset({"text", "resource_link"})
"""Block types every agent must accept in prompts (ACP baseline)."""

_Meta: TypeAlias = dict[str, Any] | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TextPart:
    """Plain text (``text`` block)."""

    text: str
    annotations: Annotations | None = None
    meta: _Meta = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ImagePart:
    """An image: raw bytes and their MIME type (``image`` block, base64 on the wire)."""

    data: bytes
    mime_type: str
    uri: str | None = None
    annotations: Annotations | None = None
    meta: _Meta = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AudioPart:
    """Audio: raw bytes and their MIME type (``audio`` block, base64 on the wire)."""

    data: bytes
    mime_type: str
    annotations: Annotations | None = None
    meta: _Meta = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceLinkPart:
    """A reference to a resource the engine may fetch itself (``resource_link`` block)."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    meta: _Meta = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TextResourcePart:
    """An embedded text resource, e.g. an @-mentioned file (``resource`` block with ``text``).

    ``resource_meta`` is the ``_meta`` of the inner resource object, ``meta`` the block's.
    """

    uri: str
    text: str
    mime_type: str | None = None
    annotations: Annotations | None = None
    meta: _Meta = None
    resource_meta: _Meta = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class BlobResourcePart:
    """An embedded binary resource (``resource`` block with ``blob``, base64 on the wire)."""

    uri: str
    data: bytes
    mime_type: str | None = None
    annotations: Annotations | None = None
    meta: _Meta = None
    resource_meta: _Meta = None


ContentPart: TypeAlias = (
    TextPart | ImagePart | AudioPart | ResourceLinkPart | TextResourcePart | BlobResourcePart
)
"""Every kind of prompt content, payloads decoded."""


def _decode(data: str, where: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidParams(
            f"{where} is not valid base64: {exc}",
            {"errors": [{"field": where, "problem": "not valid base64"}]},
        ) from None


def _encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def part_from_block(block: ContentBlock, *, where: str = "content") -> ContentPart:
    """Return the part for a wire content block, base64 payloads decoded to bytes.

    Args:
        block: The wire block.
        where: How to name the block in an error message (e.g. ``prompt[2]``).

    Raises:
        InvalidParams: a base64 payload does not decode.
    """
    match block:
        case TextContentBlock():
            return TextPart(text=block.text, annotations=block.annotations, meta=block.meta)
        case ImageContentBlock():
            return ImagePart(
                data=_decode(block.data, f"{where}.data"),
                mime_type=block.mime_type,
                uri=block.uri,
                annotations=block.annotations,
                meta=block.meta,
            )
        case AudioContentBlock():
            return AudioPart(
                data=_decode(block.data, f"{where}.data"),
                mime_type=block.mime_type,
                annotations=block.annotations,
                meta=block.meta,
            )
        case ResourceLinkContentBlock():
            return ResourceLinkPart(
                uri=block.uri,
                name=block.name,
                title=block.title,
                description=block.description,
                mime_type=block.mime_type,
                size=block.size,
                annotations=block.annotations,
                meta=block.meta,
            )
        case ResourceContentBlock():
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                return TextResourcePart(
                    uri=resource.uri,
                    text=resource.text,
                    mime_type=resource.mime_type,
                    annotations=block.annotations,
                    meta=block.meta,
                    resource_meta=resource.meta,
                )
            return BlobResourcePart(
                uri=resource.uri,
                data=_decode(resource.blob, f"{where}.resource.blob"),
                mime_type=resource.mime_type,
                annotations=block.annotations,
                meta=block.meta,
                resource_meta=resource.meta,
            )
        case _:
            assert_never(block)


def _optional(**fields: Any) -> dict[str, Any]:
    """Keyword arguments without the ``None`` ones (so ``to_wire`` leaves them out)."""
    return {name: value for name, value in fields.items() if value is not None}


def part_to_block(part: ContentPart) -> ContentBlock:
    """Return the wire content block for a part, bytes encoded as base64."""
    match part:
        case TextPart():
            return TextContentBlock(
                text=part.text, **_optional(annotations=part.annotations, meta=part.meta)
            )
        case ImagePart():
            return ImageContentBlock(
                data=_encode(part.data),
                mime_type=part.mime_type,
                **_optional(uri=part.uri, annotations=part.annotations, meta=part.meta),
            )
        case AudioPart():
            return AudioContentBlock(
                data=_encode(part.data),
                mime_type=part.mime_type,
                **_optional(annotations=part.annotations, meta=part.meta),
            )
        case ResourceLinkPart():
            return ResourceLinkContentBlock(
                uri=part.uri,
                name=part.name,
                **_optional(
                    title=part.title,
                    description=part.description,
                    mime_type=part.mime_type,
                    size=part.size,
                    annotations=part.annotations,
                    meta=part.meta,
                ),
            )
        case TextResourcePart():
            text_resource = TextResourceContents(
                uri=part.uri,
                text=part.text,
                **_optional(mime_type=part.mime_type, meta=part.resource_meta),
            )
            return ResourceContentBlock(
                resource=text_resource,
                **_optional(annotations=part.annotations, meta=part.meta),
            )
        case BlobResourcePart():
            blob = BlobResourceContents(
                uri=part.uri,
                blob=_encode(part.data),
                **_optional(mime_type=part.mime_type, meta=part.resource_meta),
            )
            return ResourceContentBlock(
                resource=blob, **_optional(annotations=part.annotations, meta=part.meta)
            )
        case _:
            assert_never(part)


def accepted_block_types(capabilities: EngineCapabilities) -> frozenset[BlockType]:
    """Return the block types a prompt may carry for an engine with ``capabilities``."""
    accepted: set[BlockType] = set(BASELINE_BLOCK_TYPES)
    if capabilities.image:
        accepted.add("image")
    if capabilities.audio:
        accepted.add("audio")
    if capabilities.embedded_context:
        accepted.add("resource")
    return frozenset(accepted)


def prompt_capabilities(capabilities: EngineCapabilities) -> PromptCapabilities | None:
    """The ``promptCapabilities`` to advertise: exactly what the engine accepts.

    ``None`` when the engine accepts only the baseline (nothing beyond it is advertised).
    """
    if not (capabilities.image or capabilities.audio or capabilities.embedded_context):
        return None
    return PromptCapabilities(
        image=capabilities.image,
        audio=capabilities.audio,
        embedded_context=capabilities.embedded_context,
    )


_CAPABILITY_NAMES: Final[dict[str, str]] = {
    "image": "promptCapabilities.image",
    "audio": "promptCapabilities.audio",
    "resource": "promptCapabilities.embeddedContext",
}


def check_prompt(blocks: Sequence[ContentBlock], capabilities: EngineCapabilities) -> None:
    """Refuse a prompt that carries a block type the engine does not accept, or bad base64.

    Every block is checked (and every binary payload decoded) before anything is recorded,
    so a refused prompt leaves no trace.

    Raises:
        InvalidParams: some block's type was not advertised (the message names each offending
            block and what the agent accepts), or a base64 payload does not decode.
    """
    accepted = accepted_block_types(capabilities)
    errors: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        if block.type not in accepted:
            errors.append(
                {
                    "field": f"prompt[{index}]",
                    "type": block.type,
                    "problem": f"'{block.type}' content needs {_CAPABILITY_NAMES[block.type]}, "
                    "which this agent does not advertise",
                }
            )
    if errors:
        kinds = sorted({error["type"] for error in errors})
        raise InvalidParams(
            f"the prompt contains {', '.join(repr(k) for k in kinds)} content, which this agent "
            f"does not accept (it accepts: {', '.join(sorted(accepted))})",
            {"errors": errors, "accepted": sorted(accepted)},
        )
    for index, block in enumerate(blocks):
        if block.type in ("image", "audio", "resource"):
            part_from_block(block, where=f"prompt[{index}]")


def prompt_parts(blocks: Sequence[ContentBlock]) -> tuple[ContentPart, ...]:
    """Return a prompt's blocks as parts (payloads decoded).

    Raises:
        InvalidParams: a base64 payload does not decode.
    """
    return tuple(part_from_block(block, where=f"prompt[{i}]") for i, block in enumerate(blocks))
