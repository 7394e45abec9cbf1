"""Tool behaviours: what a tool does, as ACP shows it (kind, title, locations, diff, preview).

pydantic-ai knows a tool by its name, description and JSON schema; ACP clients also want to
know *what kind* of thing it does (``read``, ``edit``, ``execute``, ...), which files it
touches (``locations``, for follow-along), and, for edits, the change as a diff. A
:class:`ToolBehaviour` declares that for one tool; the engine looks it up by tool name:

1. in the ``tool_behaviour`` registry given to the engine (a mapping, or a function of the name);
2. else in the tool's pydantic-ai kind: a tool declared with
   ``tool_kind=ToolKind("acp", "edit")`` (``pydantic_ai.messages.ToolKind``, namespace
   :data:`ACP_TOOL_KIND_NAMESPACE`) has the ACP kind ``edit``;
3. else in the tool's pydantic-ai metadata: ``metadata={"acp_kind": "read"}`` gives the kind
   (JSON, so it survives anywhere pydantic-ai records tool definitions);
4. else :data:`DEFAULT_BEHAVIOUR`: kind ``other``, titled with the tool name.

The functions of a behaviour get a :class:`ToolCallInput` (the call's name, its arguments and
the session's working directory) and must not raise: a function that raises is treated as
having nothing to say (the call still runs), so a tool can never fail because of how it is
displayed. :func:`path_locations`, :func:`path_title` and :func:`replace_diff` build the common
cases.

A behaviour may also declare a :data:`PreviewFunction`: asked (asynchronously, with the run's
context, so it can read the files the call would change) right before the user is asked to
allow a call, it returns a :class:`ToolPreview`: what the call will do, in the form its
completion will show it (an edit's whole-file diff and first changed line, a command's line
and directory). The preview is sent as a ``tool_call_update`` and carried by the
``session/request_permission`` itself; an editor renders the request before anything else.

This module sits on :mod:`accord.schema` and pydantic-ai's run context; the event translator
uses it.
"""

from __future__ import annotations

import logging
import os.path
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, TypeVar, cast, get_args

from pydantic_ai import RunContext

from ...schema import DiffToolCallContent, ToolCallContent, ToolCallLocation, ToolKind

__all__ = (
    "ACP_TOOL_KIND_NAMESPACE",
    "DEFAULT_BEHAVIOUR",
    "KIND_METADATA_KEY",
    "BehaviourLookup",
    "PreviewFunction",
    "ToolBehaviour",
    "ToolCallInput",
    "ToolPreview",
    "path_locations",
    "path_title",
    "replace_diff",
)

_log = logging.getLogger("accord.engines.pydantic_ai")

ACP_TOOL_KIND_NAMESPACE: Final = "acp"
"""The namespace of pydantic-ai tool kinds that name an ACP kind (``ToolKind("acp", "read")``)."""

KIND_METADATA_KEY: Final = "acp_kind"
"""The key of pydantic-ai tool metadata that declares the tool's ACP kind."""

_KINDS: Final[frozenset[str]] = frozenset(get_args(get_args(ToolKind)[0]))

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallInput:
    """One tool call as a behaviour sees it.

    Attributes:
        name: The tool's name.
        args: The call's arguments (empty when the model sent arguments that are not an object).
        cwd: The session's absolute working directory.
    """

    name: str
    args: Mapping[str, Any]
    cwd: str

    def path(self, key: str) -> str | None:
        """Return argument ``key`` as an absolute path (relative ones are taken from ``cwd``).

        ``None`` when the argument is missing or not a non-empty string.
        """
        value = self.args.get(key)
        if not isinstance(value, str) or not value:
            return None
        return os.path.normpath(os.path.join(self.cwd, os.path.expanduser(value)))


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolPreview:
    """What a call will do, shown while the user decides whether to allow it.

    Attributes:
        content: The call's content while it waits (an edit's whole-file diff, a command's
            line and directory); replaces what the call showed before.
        locations: The files (and first changed lines) it will touch; empty keeps the call's.
        title: A better title, if the preview knows one (``None`` keeps the call's).
    """

    content: tuple[ToolCallContent, ...] = ()
    locations: tuple[ToolCallLocation, ...] = ()
    title: str | None = None


TitleFunction: TypeAlias = Callable[[ToolCallInput], str]
LocationsFunction: TypeAlias = Callable[[ToolCallInput], Sequence[ToolCallLocation]]
DiffFunction: TypeAlias = Callable[[ToolCallInput], DiffToolCallContent | None]
PreviewFunction: TypeAlias = Callable[
    [ToolCallInput, RunContext[Any]], Awaitable[ToolPreview | None]
]
"""``preview(call, ctx)``: the call's :class:`ToolPreview` before the user is asked, or ``None``
(nothing better than what the arguments show, e.g. the call is bound to fail)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolBehaviour:
    """How one tool is shown to ACP clients.

    Attributes:
        kind: The ACP tool kind (``read``, ``edit``, ``delete``, ``move``, ``search``,
            ``execute``, ``think``, ``fetch``, ``switch_mode``, ``other``).
        title_from_args: The call's title from its arguments (default: the tool name).
        locations_from_args: The files the call touches, absolute paths (follow-along).
        diff_from_args: For edits, the change as a diff; shown while the call waits for
            permission or runs, and kept as the call's content when it completes.
        preview_before_asking: What the call will do, worked out (it may read files) right
            before the user is asked to allow it; see :class:`ToolPreview`.
    """

    kind: ToolKind = "other"
    title_from_args: TitleFunction | None = field(default=None, repr=False)
    locations_from_args: LocationsFunction | None = field(default=None, repr=False)
    diff_from_args: DiffFunction | None = field(default=None, repr=False)
    preview_before_asking: PreviewFunction | None = field(default=None, repr=False)

    def title(self, call: ToolCallInput) -> str:
        """The call's title; the tool name if there is no title function or it fails."""
        title = _guarded(self.title_from_args, call, None)
        return title if isinstance(title, str) and title else call.name

    def locations(self, call: ToolCallInput) -> tuple[ToolCallLocation, ...]:
        """The call's locations (empty without a function, or when it fails)."""
        return tuple(_guarded(self.locations_from_args, call, ()) or ())

    def diff(self, call: ToolCallInput) -> DiffToolCallContent | None:
        """The call's diff, if the tool declares one and it can be built from the arguments."""
        return _guarded(self.diff_from_args, call, None)

    async def preview(self, call: ToolCallInput, ctx: RunContext[Any]) -> ToolPreview | None:
        """The call's preview before asking; ``None`` without a function or when it fails."""
        function = self.preview_before_asking
        if function is None:
            return None
        try:
            return await function(call, ctx)
        except Exception:
            _log.warning("tool preview of %r failed; ignored", call.name, exc_info=True)
            return None


DEFAULT_BEHAVIOUR: Final = ToolBehaviour()
"""The behaviour of a tool nobody declared: kind ``other``, titled with its name."""

BehaviourLookup: TypeAlias = Mapping[str, ToolBehaviour] | Callable[[str], ToolBehaviour | None]
"""The engine's ``tool_behaviour`` registry: by tool name, or a function of the name."""


def _guarded(
    function: Callable[[ToolCallInput], _T] | None, call: ToolCallInput, default: _T
) -> _T:
    if function is None:
        return default
    try:
        return function(call)
    except Exception:
        _log.warning("tool behaviour of %r failed; ignored", call.name, exc_info=True)
        return default


def resolve_behaviour(
    lookup: BehaviourLookup | None,
    name: str,
    *,
    tool_kind: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> ToolBehaviour:
    """Return the behaviour of tool ``name``: registry, tool kind, metadata, then the default."""
    if lookup is not None:
        found = lookup(name) if callable(lookup) else lookup.get(name)
        if found is not None:
            return found
    prefix = ACP_TOOL_KIND_NAMESPACE + "."
    if tool_kind is not None and tool_kind.startswith(prefix):
        kind = tool_kind.removeprefix(prefix)
        if kind in _KINDS:
            return ToolBehaviour(kind=cast(ToolKind, kind))
    if metadata is not None:
        kind = metadata.get(KIND_METADATA_KEY)
        if isinstance(kind, str) and kind in _KINDS:
            return ToolBehaviour(kind=cast(ToolKind, kind))
    return DEFAULT_BEHAVIOUR


def path_locations(path_arg: str = "path", *, line_arg: str | None = None) -> LocationsFunction:
    """A ``locations_from_args`` that reports the file named by argument ``path_arg``.

    Args:
        path_arg: The argument holding the path (relative paths are taken from the cwd).
        line_arg: The argument holding a 1-based line number, if the tool has one.
    """

    def locations(call: ToolCallInput) -> Sequence[ToolCallLocation]:
        path = call.path(path_arg)
        if path is None:
            return ()
        line = call.args.get(line_arg) if line_arg is not None else None
        if isinstance(line, int) and not isinstance(line, bool) and line >= 0:
            return (ToolCallLocation(path=path, line=line),)
        return (ToolCallLocation(path=path),)

    return locations


def path_title(verb: str, path_arg: str = "path") -> TitleFunction:
    """A ``title_from_args`` like ``"Read src/main.py"``: ``verb`` and the path as given."""

    def title(call: ToolCallInput) -> str:
        value = call.args.get(path_arg)
        return f"{verb} {value}" if isinstance(value, str) and value else verb

    return title


def replace_diff(
    path_arg: str = "path", old_arg: str | None = "old_text", new_arg: str = "new_text"
) -> DiffFunction:
    """A ``diff_from_args`` for tools that replace ``old_arg`` by ``new_arg`` in a file.

    With ``old_arg=None`` (a tool that writes a whole file) the diff has no old text, which
    clients show as a new file; a tool that knows the old content can declare its own function.
    """

    def diff(call: ToolCallInput) -> DiffToolCallContent | None:
        path = call.path(path_arg)
        new_text = call.args.get(new_arg)
        old_text = call.args.get(old_arg) if old_arg is not None else None
        if path is None or not isinstance(new_text, str):
            return None
        if old_text is not None and not isinstance(old_text, str):
            return None
        return DiffToolCallContent(path=path, old_text=old_text, new_text=new_text)

    return diff
