"""The models' prompt capabilities (image, audio), remembered so ``initialize`` stays fast.

What prompts may hold is read from the configured models' pydantic-ai profiles
(:func:`._agent.prompt_support`), which needs pydantic-ai and the provider SDKs imported: one
to two CPU-seconds, much longer on a loaded machine. ``accord serve`` answers ``initialize``
before that import (the model code loads in a worker thread after it), so the answer is kept in
``<user data dir>/accord/prompt-support.json`` (``platformdirs``) under a key of everything it
depends on:

* the configured model ids and the ``base_url`` (a served model gets a text-only profile);
* the installed pydantic-ai version, read from its package metadata (no import): profiles
  change with pydantic-ai releases;
* accord's own version (the profile it gives served models is accord's code);
* the file's format, bumped when accord's reading of a profile changes (format 2: images only
  for model families known to read them, so ``gpt-3.5-turbo`` is no longer remembered with
  images).

Decision: a cache rather than a table of every model's capabilities kept in accord (that would
drift from pydantic-ai; accord keeps only the short list of families known to read images,
which the profiles cannot say, see :func:`._agent.known_to_read_images`) or a background check
after ``initialize`` (capabilities
cannot change after the answer). Only the first start with a new configuration, or after an
upgrade, waits for the import in ``initialize``; later starts read a small JSON file.

An answer is cached only when every model could be built: a model that cannot (no API key yet)
counts as taking neither images nor audio, and that is not remembered, so the next start with
the key set reads the real profile. The file is written atomically (a temporary file renamed
over it); a missing, unreadable or corrupt file is a miss and is rewritten, never an error, and
a file that cannot be written is only logged. At most :data:`MAX_ENTRIES` configurations are
kept. No API key or other secret is part of the key or the file.

This module imports nothing of pydantic-ai; :mod:`._engine` uses it.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Final, cast

import platformdirs

from ._config import CoderConfig

__all__ = ("CACHE_FILE", "MAX_ENTRIES", "cache_path", "cached_support", "remember_support")

_log = logging.getLogger("accord.coder")

CACHE_FILE: Final = "prompt-support.json"
"""The cache's file name in the user data directory."""

MAX_ENTRIES: Final = 32
"""How many configurations the cache keeps (the most recently written)."""

_FORMAT: Final = 2


def cache_path() -> Path:
    """``<user data dir>/accord/prompt-support.json`` (``$XDG_DATA_HOME/accord`` on Linux)."""
    return Path(platformdirs.user_data_dir("accord", appauthor=False)) / CACHE_FILE


def _version(*distributions: str) -> str | None:
    for name in distributions:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(name)
    return None


def _key(config: CoderConfig) -> str | None:
    """The cache key of ``config``; ``None`` when pydantic-ai is not installed."""
    pydantic_ai = _version("pydantic-ai-slim", "pydantic-ai")
    if pydantic_ai is None:
        return None
    key = {
        "accord": _version("accord") or "",
        "pydantic_ai": pydantic_ai,
        "models": list(config.models),
        "base_url": config.base_url,
    }
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


def _read(path: Path) -> dict[str, object]:
    """The entries of the file at ``path``; empty when it is missing, unreadable or corrupt."""
    try:
        data: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    fields = cast("dict[str, object]", data)
    entries = fields.get("entries")
    if fields.get("format") != _FORMAT or not isinstance(entries, dict):
        return {}
    return cast("dict[str, object]", entries)


def cached_support(config: CoderConfig) -> tuple[bool, bool] | None:
    """The remembered ``(image, audio)`` of ``config``, or ``None`` (not known: read profiles)."""
    key = _key(config)
    if key is None:
        return None
    entry = _read(cache_path()).get(key)
    if not isinstance(entry, list):
        return None
    flags = cast("list[object]", entry)
    if len(flags) == 2 and isinstance(flags[0], bool) and isinstance(flags[1], bool):
        return flags[0], flags[1]
    return None


def remember_support(config: CoderConfig, support: tuple[bool, bool]) -> None:
    """Remember ``support`` for ``config`` (atomically; a failure to write is only logged)."""
    key = _key(config)
    if key is None:
        return
    path = cache_path()
    entries = _read(path)
    entries.pop(key, None)
    entries[key] = [support[0], support[1]]
    kept = dict(list(entries.items())[-MAX_ENTRIES:])
    text = json.dumps({"format": _FORMAT, "entries": kept}, indent=1)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".prompt-support.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as error:
        _log.warning("the prompt capabilities could not be cached in %s: %s", path, error)
