"""What a prompt carries besides its text: ``@file`` mentions and pasted images.

* :class:`FileIndex` lists the files under the session's directory once (hidden and
  dependency directories skipped, bounded) and ranks them against a partial ``@`` mention
  with Textual's fuzzy matcher.
* :func:`prompt_blocks` turns the typed text into content blocks: the text, then one block
  per mentioned file that exists inside the session's roots: an embedded resource (the file's
  text) when the agent advertises ``embeddedContext`` and the file is small text, otherwise a
  resource link (``file://`` URI); then the attached images, only if the agent advertises
  ``image`` (else :class:`AttachmentRefused`).
* :func:`image_from_paste`: a terminal pastes a dropped file as its path; a path to an image
  file becomes an attachment.

Above: :mod:`accord.tui._prompt` and the app. Below: the content block models.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from textual.fuzzy import Matcher

from ..schema import (
    ContentBlock,
    ImageContentBlock,
    PromptCapabilities,
    ResourceContentBlock,
    ResourceLinkContentBlock,
    TextContentBlock,
    TextResourceContents,
)

__all__ = (
    "EMBED_LIMIT",
    "MAX_INDEXED_FILES",
    "AttachmentRefused",
    "FileIndex",
    "ImageAttachment",
    "image_from_paste",
    "mentioned_paths",
    "prompt_blocks",
)

#: Files larger than this are linked, never embedded.
EMBED_LIMIT = 256 * 1024
#: Images larger than this are refused (most models take a few megabytes at most).
IMAGE_LIMIT = 10 * 1024 * 1024
#: The file index stops after this many files.
MAX_INDEXED_FILES = 20_000

_SKIPPED_DIRS = frozenset(
    {"node_modules", "__pycache__", ".git", ".hg", ".svn", ".venv", "venv", "dist", "build"}
)
_MENTION = re.compile(r"(?<!\S)@(\S+)")
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


class AttachmentRefused(ValueError):
    """The prompt carries something the agent did not say it accepts."""


@dataclass(frozen=True, slots=True)
class ImageAttachment:
    """An image to send with the next prompt."""

    name: str
    mime_type: str
    data: bytes


class FileIndex:
    """The files under a directory, for ``@`` completion (relative paths, ``/``-separated)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._files: list[str] | None = None

    @property
    def loaded(self) -> bool:
        """Whether the directory has been listed."""
        return self._files is not None

    def load(self) -> list[str]:
        """List the directory (blocking: run it in a thread); later calls reuse the list."""
        if self._files is None:
            self._files = _walk(self.root)
        return self._files

    def complete(self, partial: str, limit: int = 8) -> list[str]:
        """The best matches for ``partial`` (fuzzy; an empty one lists the first files)."""
        files = self.load()
        if not partial:
            return files[:limit]
        matcher = Matcher(partial)
        scored = [(matcher.match(path), path) for path in files]
        ranked = sorted((item for item in scored if item[0] > 0), key=lambda item: -item[0])
        return [path for _, path in ranked[:limit]]


def _walk(root: str) -> list[str]:
    found: list[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
        relative = os.path.relpath(directory, root)
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = name if relative == "." else f"{relative}/{name}"
            found.append(path.replace(os.sep, "/"))
            if len(found) >= MAX_INDEXED_FILES:
                return found
    return found


def mentioned_paths(text: str, roots: Sequence[str]) -> list[Path]:
    """The files ``@mentioned`` in ``text`` that exist inside one of ``roots`` (in order)."""
    paths: list[Path] = []
    for match in _MENTION.finditer(text):
        mention = match.group(1).rstrip(".,;:!?)")
        for root in roots:
            candidate = Path(root, mention).resolve()
            if candidate.is_file() and _inside(candidate, roots) and candidate not in paths:
                paths.append(candidate)
                break
    return paths


def _inside(path: Path, roots: Sequence[str]) -> bool:
    return any(path.is_relative_to(Path(root).resolve()) for root in roots)


def _embeddable_text(path: Path) -> str | None:
    try:
        if path.stat().st_size > EMBED_LIMIT:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def prompt_blocks(
    text: str,
    roots: Sequence[str],
    capabilities: PromptCapabilities | None,
    images: Sequence[ImageAttachment] = (),
) -> list[ContentBlock]:
    """The content blocks of a prompt: its text, its mentioned files, its images.

    Raises:
        AttachmentRefused: there are images and the agent does not advertise ``image``.
    """
    if images and not (capabilities and capabilities.image):
        raise AttachmentRefused("the agent does not accept images (promptCapabilities.image)")
    blocks: list[ContentBlock] = [TextContentBlock(text=text)]
    embed = bool(capabilities and capabilities.embedded_context)
    base = Path(roots[0]).resolve() if roots else None
    for path in mentioned_paths(text, roots):
        name = str(path.relative_to(base)) if base and path.is_relative_to(base) else path.name
        mime_type = mimetypes.guess_type(path.name)[0]
        content = _embeddable_text(path) if embed else None
        if content is not None:
            resource = TextResourceContents(uri=path.as_uri(), text=content, mime_type=mime_type)
            blocks.append(ResourceContentBlock(resource=resource))
        else:
            size = path.stat().st_size
            blocks.append(
                ResourceLinkContentBlock(
                    uri=path.as_uri(), name=name, mime_type=mime_type, size=size
                )
            )
    for image in images:
        data = base64.b64encode(image.data).decode()
        blocks.append(ImageContentBlock(data=data, mime_type=image.mime_type))
    return blocks


def image_from_paste(text: str) -> ImageAttachment | None:
    """The image a pasted path (or ``file://`` URI) points to, if it is one.

    Raises:
        AttachmentRefused: the file is an image but too large.
    """
    candidate = text.strip().strip("'\"")
    if candidate.startswith("file://"):
        candidate = candidate.removeprefix("file://")
    if not candidate or "\n" in candidate or len(candidate) > 4096:
        return None
    path = Path(candidate).expanduser()
    mime_type = mimetypes.guess_type(path.name)[0]
    if mime_type is None or mime_type not in _IMAGE_TYPES or not path.is_file():
        return None
    if path.stat().st_size > IMAGE_LIMIT:
        raise AttachmentRefused(f"{path.name} is larger than {IMAGE_LIMIT // (1024 * 1024)} MB")
    return ImageAttachment(name=path.name, mime_type=mime_type, data=path.read_bytes())
