"""The coder's tools by name, and its modes: which tools each mode offers and which ask first.

Three modes, one table (:data:`MODES`), enforced on **every model request** by the engine's
tool filter (a filtered tool is neither described to the model nor callable: a call to it is
refused as an unknown tool) and, for permissions, by its approval hook:

==========  =====================  ===========================  ==========================
mode        read-only tools        edits and commands           MCP (external) tools
==========  =====================  ===========================  ==========================
``ask``     offered                not offered                  not offered
``code``    offered                offered, ask permission      offered, ask permission
``auto``    offered                offered, never ask           offered, never ask
==========  =====================  ===========================  ==========================

Read-only tools: :data:`READ_ONLY_TOOLS` (reading, listing, searching, the plan, delegating to
the read-only sub-agent). Tools the coder does not know (those of MCP servers) count as
external: nothing says they are harmless, so ``ask`` hides them and ``code`` asks.
``code`` is the default mode. A session whose mode is unknown is treated as ``code``.

This module imports nothing of pydantic-ai (the runtime reads the modes before any model code
is loaded).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..schema import SelectSessionConfigOption, SessionConfigSelectOption, SessionMode

__all__ = (
    "ASK",
    "ASK_USER",
    "AUTO",
    "CODE",
    "DEFAULT_MODE_ID",
    "DELEGATE",
    "EDIT_FILE",
    "FIND_FILES",
    "GREP",
    "LIST_DIRECTORY",
    "MODES",
    "MODE_CONFIG_ID",
    "MUTATING_TOOLS",
    "READ_FILE",
    "READ_ONLY_TOOLS",
    "RUN_COMMAND",
    "UPDATE_PLAN",
    "WRITE_FILE",
    "ModeSpec",
    "mode_option",
    "mode_spec",
    "needs_approval",
    "session_modes",
    "tool_allowed",
)

READ_FILE: Final = "read_file"
WRITE_FILE: Final = "write_file"
EDIT_FILE: Final = "edit_file"
LIST_DIRECTORY: Final = "list_directory"
FIND_FILES: Final = "find_files"
GREP: Final = "grep"
RUN_COMMAND: Final = "run_command"
UPDATE_PLAN: Final = "update_plan"
DELEGATE: Final = "delegate"
ASK_USER: Final = "ask_user"

READ_ONLY_TOOLS: Final = frozenset(
    {READ_FILE, LIST_DIRECTORY, FIND_FILES, GREP, UPDATE_PLAN, DELEGATE, ASK_USER}
)
"""Tools that change nothing outside the conversation."""

MUTATING_TOOLS: Final = frozenset({WRITE_FILE, EDIT_FILE, RUN_COMMAND})
"""Tools that change files or run commands."""

ToolClass = Literal["read_only", "mutating", "external"]


def _tool_class(name: str) -> ToolClass:
    if name in READ_ONLY_TOOLS:
        return "read_only"
    if name in MUTATING_TOOLS:
        return "mutating"
    return "external"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeSpec:
    """One mode: what it offers the model and what it asks the user about.

    Attributes:
        id: The ACP mode id.
        name: Shown in the editor's mode picker.
        description: Shown with it.
        offers: The tool classes offered to the model.
        asks: The tool classes whose calls need the user's permission.
    """

    id: str
    name: str
    description: str
    offers: frozenset[ToolClass]
    asks: frozenset[ToolClass]

    def offers_tool(self, name: str) -> bool:
        """Whether tool ``name`` is offered to the model in this mode."""
        return _tool_class(name) in self.offers

    def asks_for(self, name: str) -> bool:
        """Whether a call of tool ``name`` needs the user's permission in this mode."""
        return _tool_class(name) in self.asks

    def to_session_mode(self) -> SessionMode:
        """The mode as ACP advertises it."""
        return SessionMode(id=self.id, name=self.name, description=self.description)


ASK: Final = ModeSpec(
    id="ask",
    name="Ask",
    description="Read-only: answers questions about the code; edits and commands are not offered",
    offers=frozenset({"read_only"}),
    asks=frozenset(),
)
CODE: Final = ModeSpec(
    id="code",
    name="Code",
    description="Edits files and runs commands, asking permission first",
    offers=frozenset({"read_only", "mutating", "external"}),
    asks=frozenset({"mutating", "external"}),
)
AUTO: Final = ModeSpec(
    id="auto",
    name="Auto",
    description="Edits files and runs commands without asking",
    offers=frozenset({"read_only", "mutating", "external"}),
    asks=frozenset(),
)

MODES: Final[Mapping[str, ModeSpec]] = {mode.id: mode for mode in (ASK, CODE, AUTO)}
"""Every mode by id, in the order the editor lists them."""

DEFAULT_MODE_ID: Final = CODE.id
"""The mode a new session starts in."""


def mode_spec(mode_id: str | None) -> ModeSpec:
    """The mode ``mode_id``; ``code`` for ``None`` or an id this agent does not know."""
    return MODES.get(mode_id or DEFAULT_MODE_ID, CODE)


def session_modes() -> tuple[SessionMode, ...]:
    """The modes as ACP advertises them."""
    return tuple(mode.to_session_mode() for mode in MODES.values())


MODE_CONFIG_ID: Final = "mode"
"""The id of the config option that offers the modes (category ``mode``)."""


def mode_option() -> SelectSessionConfigOption:
    """The modes as a ``select`` config option of category ``mode``.

    ACP's transition advice: agents send both forms, modes and a ``mode`` option, since
    clients that see config options build their selectors from them (Zed does); the runtime
    keeps the two in sync both ways.
    """
    return SelectSessionConfigOption(
        id=MODE_CONFIG_ID,
        name="Mode",
        description="What the agent may do without asking",
        category="mode",
        current_value=DEFAULT_MODE_ID,
        options=[
            SessionConfigSelectOption(value=mode.id, name=mode.name, description=mode.description)
            for mode in MODES.values()
        ],
    )


def tool_allowed(tool_name: str, mode_id: str | None) -> bool:
    """The engine's tool filter: whether ``tool_name`` is offered in mode ``mode_id``."""
    return mode_spec(mode_id).offers_tool(tool_name)


def needs_approval(tool_name: str, args: Mapping[str, Any], mode_id: str | None) -> bool:
    """The engine's approval hook: whether a call needs the user's permission in this mode.

    Always a definite answer: ``False`` also overrides a tool's own ``requires_approval``
    (the mode decides, not the tool).
    """
    return mode_spec(mode_id).asks_for(tool_name)
