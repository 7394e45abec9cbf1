"""Permission requests: the default options, and the decisions a session remembers.

A tool confirmation (:meth:`TurnContext.request_permission`) becomes
``session/request_permission``. An engine that passes no options gets
:data:`DEFAULT_PERMISSION_OPTIONS`, one of each ACP kind (``allow_once``, ``allow_always``,
``reject_once``, ``reject_always``).

"Always" answers are remembered for the session (persisted in its state record) and answer
later requests for the *same tool* without asking. What "the same tool" means is decided by
:func:`permission_key`:

* the tool's programmatic ``name`` (``ToolCallStarted.name``, e.g. ``read_file``) when the
  engine gave one: "always allow ``read_file``" covers every file;
* otherwise its ``kind`` and ``title`` together (``edit`` + ``Edit main.py``): without a
  name the title is the only thing that identifies the tool, and kind keeps two different
  tools with the same title apart. This is deliberately narrow: "always allow" then covers
  exactly what the user saw.

The request's ``toolCall`` is what the engine asked with, completed from what the turn knows
of the call (:func:`shown_tool_call`): an editor renders the request on its own, so it carries
the call's title, kind, locations and content even when the engine sent only the id.

Below: :mod:`accord.schema`, the engine protocol, the tool-call model. Above: the runtime's
turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

from ..engines import PermissionAnswer, ToolCallState
from ..schema import PermissionOption, ToolCallUpdate

__all__ = (
    "DEFAULT_PERMISSION_OPTIONS",
    "PermissionMemory",
    "RememberedRule",
    "decision_for_rule",
    "permission_key",
    "shown_tool_call",
)

DEFAULT_PERMISSION_OPTIONS: Final[tuple[PermissionOption, ...]] = (
    PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    PermissionOption(option_id="reject_always", name="Always reject", kind="reject_always"),
)
"""The options sent when an engine asks for permission without giving any."""

RememberedRule: TypeAlias = Literal["allow_always", "reject_always"]
"""A remembered answer."""


def permission_key(*, name: str | None, kind: str | None, title: str | None) -> str:
    """Return the key under which an "always" answer for this tool is remembered."""
    if name:
        return f"name:{name}"
    return f"kind:{kind or 'other'}\x1ftitle:{title or ''}"


def shown_tool_call(tool_call: ToolCallUpdate, known: ToolCallState | None) -> ToolCallUpdate:
    """The ``toolCall`` a permission request carries: ``tool_call`` with the title, kind,
    locations and content it leaves out taken from the call as the turn knows it."""
    if known is None:
        return tool_call
    missing: dict[str, Any] = {}
    if tool_call.title is None and known.title:
        missing["title"] = known.title
    if tool_call.kind is None:
        missing["kind"] = known.kind
    if tool_call.locations is None and known.locations:
        missing["locations"] = list(known.locations)
    if tool_call.content is None and known.content:
        missing["content"] = list(known.content)
    if not missing:
        return tool_call
    return tool_call.model_copy(update=missing)


def decision_for_rule(
    rule: RememberedRule, options: Sequence[PermissionOption]
) -> PermissionAnswer:
    """The decision a remembered rule gives, naming the request's option of that kind if any."""
    option_id = next((o.option_id for o in options if o.kind == rule), None)
    return PermissionAnswer(outcome=rule, option_id=option_id)


class PermissionMemory:
    """The "always" answers of one session, by :func:`permission_key`."""

    __slots__ = ("_rules",)

    def __init__(self, rules: Mapping[str, RememberedRule] | None = None) -> None:
        """Start with ``rules`` (none by default)."""
        self._rules: dict[str, RememberedRule] = dict(rules or {})

    def lookup(self, key: str) -> RememberedRule | None:
        """The remembered answer for ``key``, if any."""
        return self._rules.get(key)

    def remember(self, key: str, rule: RememberedRule) -> bool:
        """Remember ``rule`` for ``key``; return whether that changed anything."""
        if self._rules.get(key) == rule:
            return False
        self._rules[key] = rule
        return True

    def to_json(self) -> dict[str, str]:
        """The rules as stored in the session state record."""
        return dict(self._rules)

    @classmethod
    def restore(cls, data: Any) -> PermissionMemory:
        """Rebuild from a state record's ``permissions`` (malformed entries are dropped)."""
        rules: dict[str, RememberedRule] = {}
        if isinstance(data, dict):
            for key, rule in data.items():  # pyright: ignore[reportUnknownVariableType]
                if isinstance(key, str) and rule in ("allow_always", "reject_always"):
                    rules[key] = rule
        return cls(rules)

    def __len__(self) -> int:
        """How many rules are remembered."""
        return len(self._rules)
