"""``accord chat``: a terminal UI for ACP agents, built on the client library and Textual.

It sees exactly what an editor sees: the app drives an agent through
:func:`accord.client.connect` (per-turn :meth:`~accord.client.ClientSession.stream` events,
the folded :class:`~accord.client.SessionView`, the permission policy, the file and terminal
host services) and nothing else. Textual is an optional dependency (``accord[tui]``): only
``accord chat`` imports this package.

Modules, one job each: ``_app`` (the application: connection, tabs, keys), ``_pane`` (one
session: controls, conversation, plan), ``_conversation`` (messages, thoughts, streamed
Markdown), ``_tool_card`` (a tool call), ``_diff`` (diffs), ``_plan`` (the checklist),
``_permission`` (the question modal), ``_prompt`` (input, history, completion),
``_mentions`` (``@file`` and image content), ``_picker`` (the session picker), ``_footer``
(status line), ``_safe`` (agent text shown literally).

Above: :mod:`accord.cli`. Below: :mod:`accord.client`, Textual, textual-diff-view.
"""

from ._app import AgentSpecFactory as AgentSpecFactory
from ._app import ChatApp as ChatApp
from ._app import describe_failure as describe_failure

__all__ = ("AgentSpecFactory", "ChatApp", "describe_failure")
