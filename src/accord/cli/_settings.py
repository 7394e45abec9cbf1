"""The ``accord`` command's defaults: the user config file, and friendly names for agents.

The config file is TOML, at ``$ACCORD_CONFIG`` or else ``config.toml`` in the user config
directory (``platformdirs``: ``~/.config/accord/config.toml`` on Linux)::

    model = "openai:gpt-5"                    # the built-in agent's model (like ACCORD_MODEL)
    base_url = "http://localhost:11434/v1"    # its OpenAI-compatible endpoint (ACCORD_BASE_URL)
    context_window = 32768                    # its context window in tokens (ACCORD_CONTEXT_WINDOW)
    agent = "claude"                          # the agent `accord run` uses without --agent

    [agents]                                  # names for --agent, over the well-known ones
    mine = "python /path/to/my_agent.py --acp"
    claude = "claude-agent-acp"               # e.g. an installed binary instead of npx

What is given on the command line wins, then the environment, then this file. A file that
does not parse, or holds a value of the wrong type, is an error (one line naming the file
and what is wrong), never silently ignored; a missing file is no error.

``--agent`` takes a name (:data:`KNOWN_AGENTS` or the file's ``[agents]``) or a command line.

Above: :mod:`accord.cli._agent_spec`, :mod:`accord.cli._main` (help text). Below: ``tomllib``,
``platformdirs``.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = (
    "CONFIG_ENV",
    "CONTEXT_WINDOW_HELP",
    "KNOWN_AGENTS",
    "Settings",
    "SettingsError",
    "config_path",
    "load",
    "tokens_argument",
)

CONFIG_ENV = "ACCORD_CONFIG"
"""The variable naming the config file (instead of the user config directory's)."""

KNOWN_AGENTS: Mapping[str, str] = {
    # Each checked against its package (npm ``bin``, README, the ACP registry's entry):
    # Claude's adapter was renamed claude-code-acp -> claude-agent-acp and moved to the
    # agentclientprotocol organisation (the old name stopped at 0.16); Codex's adapter is the
    # registry's; Gemini CLI and Qwen Code take ``--acp`` (``--experimental-acp`` is the
    # deprecated spelling); goose and opencode are native binaries with an ``acp`` command.
    "claude": "npx -y @agentclientprotocol/claude-agent-acp",
    "codex": "npx -y @zed-industries/codex-acp",
    "gemini": "npx -y @google/gemini-cli --acp",
    "goose": "goose acp",
    "opencode": "opencode acp",
    "qwen": "npx -y @qwen-code/qwen-code --acp",
}
"""Well-known ACP agents by name, as ``--agent NAME`` runs them (the config file overrides)."""


class SettingsError(ValueError):
    """The config file cannot be read or holds a bad value (the message says which)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What the config file says (all optional).

    Attributes:
        model: the built-in agent's model.
        base_url: the built-in agent's OpenAI-compatible endpoint.
        context_window: the built-in agent's model context window in tokens.
        agent: the agent ``accord run`` and ``accord sessions`` use without ``--agent``.
        agents: agent names over :data:`KNOWN_AGENTS`, name to command line.
        path: the file read (None: there was none).
    """

    model: str | None = None
    base_url: str | None = None
    context_window: int | None = None
    agent: str | None = None
    agents: Mapping[str, str] = field(default_factory=dict[str, str])
    path: Path | None = None

    def agent_names(self) -> dict[str, str]:
        """Every agent name known: the well-known ones, then the file's."""
        return {**KNOWN_AGENTS, **self.agents}


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the config file is (it need not exist)."""
    env = os.environ if environ is None else environ
    given = env.get(CONFIG_ENV)
    if given:
        return Path(given).expanduser()
    from platformdirs import user_config_path

    return user_config_path("accord", appauthor=False) / "config.toml"


def _string(table: Mapping[str, object], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{where}: {key!r} must be a non-empty string")
    return value


CONTEXT_WINDOW_HELP = (
    "the built-in agent's model context window in tokens, for the context meter "
    "(default: ACCORD_CONTEXT_WINDOW, the config file, what the --base-url server reports)"
)
"""The help of ``--context-window`` (``accord serve``, ``run``, ``chat``)."""


def tokens_argument(text: str) -> int:
    """A positive number of tokens (an ``argparse`` type, for ``--context-window``)."""
    value = text.strip().replace("_", "")
    if not value.isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of tokens: {text!r}")
    return int(value)


def _positive_int(table: Mapping[str, object], key: str, where: str) -> int | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SettingsError(f"{where}: {key!r} must be a positive integer (tokens)")
    return value


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """Read the config file.

    Raises:
        SettingsError: it exists but cannot be read, is not TOML, or holds a bad value.
    """
    path = config_path(environ)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Settings()
    except OSError as error:
        raise SettingsError(f"cannot read the config file {path}: {error.strerror}") from None
    try:
        table = tomllib.loads(data.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise SettingsError(f"the config file {path} is not valid TOML: {error}") from None
    where = f"the config file {path}"
    known = {"model", "base_url", "context_window", "agent", "agents"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise SettingsError(
            f"{where}: unknown setting {unknown[0]!r} (known: {', '.join(sorted(known))})"
        )
    agents_table = table.get("agents", {})
    if not isinstance(agents_table, dict):
        raise SettingsError(f'{where}: [agents] must be a table of name = "command line"')
    agents: dict[str, str] = {}
    for name, command in agents_table.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(command, str) or not command.strip():
            raise SettingsError(f"{where}: agents.{name} must be a non-empty command line")
        agents[str(name)] = command  # pyright: ignore[reportUnknownArgumentType]
    return Settings(
        model=_string(table, "model", where),
        base_url=_string(table, "base_url", where),
        context_window=_positive_int(table, "context_window", where),
        agent=_string(table, "agent", where),
        agents=agents,
        path=path,
    )
