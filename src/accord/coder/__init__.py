"""accord's reference coding agent: tools, modes, prompts, commands, served over ACP.

::

    from accord.coder import CoderConfig, CoderRuntime
    from accord.transports import stdio_transport

    runtime = CoderRuntime(CoderConfig(models=("openai:gpt-5",)))
    await runtime.serve(stdio_transport())        # what `accord serve --model openai:gpt-5` does

What it offers (details in the private modules named):

* **tools** (:mod:`._tools`, :mod:`._subagent`): read, write and edit files (through the
  editor's ``fs/*`` when offered; edits reported as diffs), list and search (``glob``,
  ``grep``), run commands (in the editor's terminal when offered, embedded in the tool call;
  else a local subprocess with a timeout and bounded output), a plan, and delegation to a
  read-only sub-agent that reports under its own ``agent_id``. Local file access is confined
  to the session's roots (:mod:`._paths`);
* **modes** (:mod:`._modes`): ``ask`` (read-only tools only), ``code`` (edits, commands and MCP
  tools ask permission), ``auto`` (never asks); the mode's tool filter runs before every
  model request;
* **MCP servers** from ``session/new`` / ``load`` (stdio and HTTP), their tools offered under
  the server's name (:mod:`._mcp`);
* **slash commands** ``/help``, ``/mode``, ``/clear`` (:mod:`._commands`);
* **next edit suggestions** (:mod:`._nes`, :mod:`._nes_model`; unstable ACP ``nes/*``, with a
  model configured): one small request to the default model per ``nes/suggest``, marked
  ``x-accord-purpose: nes``, with the lines around the cursor, the recent edits and the
  verdicts on the NES session's earlier suggestions;
* **the system prompt**, built once at ``session/new`` and stored with the session
  (:mod:`._prompt`);
* **models**: any pydantic-ai model name, or any model of an OpenAI-compatible server
  (``base_url``); keys from the environment; with no model configured the agent still starts
  and explains how to configure one (:mod:`._config`);
* **the saved model choice** of ``accord serve --configure`` (:mod:`._credentials`): the
  providers offered (:data:`MODEL_PROVIDERS`), :func:`save_model` (the key goes to the user's
  keyring or a ``0600`` file, never beside the choice) and :func:`load_saved_model` (the key
  put in the provider's variable for this process), under :func:`accord_config_dir`.

Importing this package loads no model code: pydantic-ai is imported when the first session
needs it (:mod:`._engine`). Below: :mod:`accord.engines` (the contract and the pydantic-ai
adapter), :mod:`accord.agent` (the runtime).
Above: the ``accord serve`` and ``accord run`` commands.
"""

from ._commands import COMMANDS as COMMANDS
from ._config import BASE_URL_ENV as BASE_URL_ENV
from ._config import CONTEXT_WINDOW_ENV as CONTEXT_WINDOW_ENV
from ._config import MODEL_ENV as MODEL_ENV
from ._config import CoderConfig as CoderConfig
from ._credentials import MODEL_PROVIDERS as MODEL_PROVIDERS
from ._credentials import ModelProvider as ModelProvider
from ._credentials import SavedModel as SavedModel
from ._credentials import accord_config_dir as accord_config_dir
from ._credentials import load_saved_model as load_saved_model
from ._credentials import save_model as save_model
from ._engine import CoderEngine as CoderEngine
from ._modes import ASK as ASK
from ._modes import AUTO as AUTO
from ._modes import CODE as CODE
from ._modes import DEFAULT_MODE_ID as DEFAULT_MODE_ID
from ._modes import MODES as MODES
from ._modes import ModeSpec as ModeSpec
from ._modes import needs_approval as needs_approval
from ._modes import tool_allowed as tool_allowed
from ._prompt import CoderState as CoderState
from ._prompt import build_system_prompt as build_system_prompt
from ._runtime import CoderRuntime as CoderRuntime

__all__ = (
    "ASK",
    "AUTO",
    "BASE_URL_ENV",
    "CODE",
    "COMMANDS",
    "CONTEXT_WINDOW_ENV",
    "DEFAULT_MODE_ID",
    "MODEL_ENV",
    "MODEL_PROVIDERS",
    "MODES",
    "CoderConfig",
    "CoderEngine",
    "CoderRuntime",
    "CoderState",
    "ModeSpec",
    "ModelProvider",
    "SavedModel",
    "accord_config_dir",
    "build_system_prompt",
    "load_saved_model",
    "needs_approval",
    "save_model",
    "tool_allowed",
)
