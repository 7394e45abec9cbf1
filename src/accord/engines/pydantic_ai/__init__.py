"""Any ``pydantic_ai.Agent`` as an accord engine, served over ACP by the agent runtime.

::

    from pydantic_ai import Agent
    from accord.agent import AgentRuntime
    from accord.engines.pydantic_ai import ModelChoice, PydanticAIEngine, ToolBehaviour

    agent = Agent(instructions="Be brief.")
    engine = PydanticAIEngine(
        agent,
        models=[ModelChoice(id="gpt-5", model="openai:gpt-5")],
        tool_behaviour={"read_file": ToolBehaviour(kind="read")},
    )
    runtime = AgentRuntime(engine)

What a client sees, per turn (details in :mod:`._stream`, :mod:`._run` and :mod:`._pipe`):

* text and **thinking** stream as ``agent_message_chunk`` / ``agent_thought_chunk``, one
  message id per response part; deltas of one message that arrive within ``chunk_interval``
  (10 ms by default) go out as one chunk;
* tool calls appear while the model streams them, with a kind, title, locations and, for
  edits, a diff from the tool's :class:`ToolBehaviour`; results end them ``completed`` or
  ``failed`` with the result as text (the diff for a completed edit);
* tools declared ``requires_approval=True``, or for which the ``needs_approval`` hook says so
  in the current mode, ask ``session/request_permission`` first, the request's tool call
  carrying its kind, title, locations and content (a behaviour's preview, e.g. the whole-file
  diff an edit will complete with); rejected (or cancelled) calls never run and the model is
  told;
* ``usage_update`` after each model response when the context window is known: the
  configured :attr:`ModelChoice.context_window`, else what its
  :attr:`~ModelChoice.window_lookup` finds (:class:`ServedWindow` asks an OpenAI-compatible
  server: vLLM, llama.cpp, Ollama, ...), else pydantic-ai's; context used and window size,
  plus the session's cost when every response was priced (pydantic-ai prices them with
  ``genai-prices``; :attr:`ModelChoice.priced` says when a model has no price at all);
* the model can be switched with the ``model`` config option (its client is built once per
  session, and again only when the choice changes);
* tool results longer than a bound can be cut for the model (the client still gets them
  whole) by opting in with ``capabilities=[ProcessHistory(bound_tool_results(limit))]``
  (:mod:`._bounds`);
* a long conversation is compacted before it fills the model's window: with
  ``PydanticAIEngine(agent, compaction=Compaction(share=0.85, keep_turns=2))`` the older turns
  are replaced, in what the model sees, by a summary the model writes (one request marked
  ``x-accord-purpose: compact``) before a turn whose request would take more than ``share``
  of the window, and on :meth:`PydanticAISession.compact`; clients see it as compaction
  updates, or an ordinary marker message (:mod:`._compaction`);
* cancelling stops the model stream at once (the HTTP response is closed) and keeps the partial
  history.

The message history is saved at the end of every turn (also a cancelled or failed one) as the
session's state, so ``session/load`` after a restart continues the conversation with the model
seeing every earlier message. Every run carries ``RunContext.metadata["accord"]`` (session,
turn and mode ids), for instructions or tools that depend on the mode.

pydantic-ai runs on asyncio only, so this engine does too. Below: pydantic-ai,
:mod:`accord.agent` (the engine protocol), :mod:`accord.events`, :mod:`accord.schema`.
"""

from ._approval import DENIED_MESSAGE as DENIED_MESSAGE
from ._approval import TURN_CANCELLED_MESSAGE as TURN_CANCELLED_MESSAGE
from ._approval import ApprovalHook as ApprovalHook
from ._approval import ToolFilter as ToolFilter
from ._bounds import TRUNCATION_NOTE as TRUNCATION_NOTE
from ._bounds import bound_tool_results as bound_tool_results
from ._compaction import COMPACT_PURPOSE as COMPACT_PURPOSE
from ._compaction import SUMMARY_PREFIX as SUMMARY_PREFIX
from ._compaction import Compaction as Compaction
from ._compaction import CompactionFailed as CompactionFailed
from ._engine import AgentFactory as AgentFactory
from ._engine import DepsFactory as DepsFactory
from ._engine import PydanticAIEngine as PydanticAIEngine
from ._history import HISTORY_FORMAT as HISTORY_FORMAT
from ._history import HISTORY_VERSION as HISTORY_VERSION
from ._history import HistoryError as HistoryError
from ._history import history_from_json as history_from_json
from ._history import history_to_json as history_to_json
from ._models import MODEL_CONFIG_ID as MODEL_CONFIG_ID
from ._models import ModelChoice as ModelChoice
from ._models import WindowLookup as WindowLookup
from ._prompt import user_content as user_content
from ._served_window import ServedWindow as ServedWindow
from ._served_window import served_context_window as served_context_window
from ._session import DEFAULT_CHUNK_INTERVAL as DEFAULT_CHUNK_INTERVAL
from ._session import RUN_METADATA_KEY as RUN_METADATA_KEY
from ._session import PydanticAISession as PydanticAISession
from ._session import TranslatorFactory as TranslatorFactory
from ._stream import MAX_RESULT_TEXT as MAX_RESULT_TEXT
from ._stream import EventTranslator as EventTranslator
from ._tools import ACP_TOOL_KIND_NAMESPACE as ACP_TOOL_KIND_NAMESPACE
from ._tools import DEFAULT_BEHAVIOUR as DEFAULT_BEHAVIOUR
from ._tools import KIND_METADATA_KEY as KIND_METADATA_KEY
from ._tools import BehaviourLookup as BehaviourLookup
from ._tools import PreviewFunction as PreviewFunction
from ._tools import ToolBehaviour as ToolBehaviour
from ._tools import ToolCallInput as ToolCallInput
from ._tools import ToolPreview as ToolPreview
from ._tools import path_locations as path_locations
from ._tools import path_title as path_title
from ._tools import replace_diff as replace_diff

__all__ = (
    "ACP_TOOL_KIND_NAMESPACE",
    "COMPACT_PURPOSE",
    "DEFAULT_BEHAVIOUR",
    "DEFAULT_CHUNK_INTERVAL",
    "DENIED_MESSAGE",
    "HISTORY_FORMAT",
    "HISTORY_VERSION",
    "KIND_METADATA_KEY",
    "MAX_RESULT_TEXT",
    "MODEL_CONFIG_ID",
    "RUN_METADATA_KEY",
    "SUMMARY_PREFIX",
    "TRUNCATION_NOTE",
    "TURN_CANCELLED_MESSAGE",
    "AgentFactory",
    "ApprovalHook",
    "BehaviourLookup",
    "Compaction",
    "CompactionFailed",
    "DepsFactory",
    "EventTranslator",
    "HistoryError",
    "ModelChoice",
    "PreviewFunction",
    "PydanticAIEngine",
    "PydanticAISession",
    "ServedWindow",
    "ToolBehaviour",
    "ToolCallInput",
    "ToolFilter",
    "ToolPreview",
    "TranslatorFactory",
    "WindowLookup",
    "bound_tool_results",
    "history_from_json",
    "history_to_json",
    "path_locations",
    "path_title",
    "replace_diff",
    "served_context_window",
    "user_content",
)
