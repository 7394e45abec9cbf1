"""``accord serve --configure``: choose the coder's model provider, model and API key.

An interactive setup on the terminal, and the command an editor runs for the coder's terminal
auth method (ACP ``type: "terminal"``: the editor starts the agent's own command with
``--configure`` in a terminal, waits for it to exit 0, then starts the agent again)::

    Providers:
      1. OpenAI
      2. Anthropic
      ...
    Provider [1]: 2
    Model [anthropic:claude-sonnet-4-5]:
    API key for ANTHROPIC_API_KEY (typing is hidden):

The key is read without echo (``getpass``) and saved in the user's keyring when a backend is
available, else in a ``0600`` file in the user config directory
(:func:`accord.coder.save_model`); it is never printed or logged. The provider, model and server
URL are saved beside it, and a later ``accord serve`` without ``--model`` uses them.

Prompts go to stderr. Exit codes: 0 saved, 1 not a terminal, end of input or not writable, 130
interrupted.
"""

from __future__ import annotations

import getpass
import os
import sys
from typing import TextIO

from ..coder import MODEL_PROVIDERS, ModelProvider, accord_config_dir, save_model
from ._exit_codes import ExitCode

__all__ = ("configure_command",)


class _EndOfInput(Exception):
    """The terminal closed (Ctrl-D) before the setup was done."""


def _line(prompt: str, out: TextIO) -> str:
    out.write(prompt)
    out.flush()
    line = sys.stdin.readline()
    if not line:
        raise _EndOfInput
    return line.strip()


def _choose_provider(out: TextIO) -> ModelProvider:
    out.write("Providers:\n")
    for number, provider in enumerate(MODEL_PROVIDERS, 1):
        out.write(f"  {number}. {provider.name}\n")
    while True:
        answer = _line("Provider [1]: ", out) or "1"
        if answer.isdigit() and 1 <= int(answer) <= len(MODEL_PROVIDERS):
            return MODEL_PROVIDERS[int(answer) - 1]
        out.write(f"  choose a number from 1 to {len(MODEL_PROVIDERS)}\n")


def _base_url(out: TextIO) -> str:
    while True:
        url = _line("Server URL [http://localhost:11434/v1]: ", out) or "http://localhost:11434/v1"
        if url.startswith(("http://", "https://")):
            return url
        out.write("  the URL starts with http:// or https://\n")


def _model_name(provider: ModelProvider, out: TextIO) -> str:
    default = provider.prefix + provider.example_model
    name = _line(f"Model [{default}]: ", out) or default
    if provider.needs_base_url or ":" not in name or not name.split(":", 1)[0].isalpha():
        return name if name.startswith(provider.prefix) else provider.prefix + name
    return name


def _key(provider: ModelProvider, out: TextIO) -> str | None:
    present = bool(os.environ.get(provider.key_variable))
    if provider.needs_base_url:
        hint = "Enter if the server needs none"
    elif present:
        hint = f"Enter to keep using ${provider.key_variable} from the environment"
    else:
        hint = "typing is hidden"
    while True:
        try:
            key = getpass.getpass(f"API key for {provider.key_variable} ({hint}): ", stream=out)
        except EOFError:
            raise _EndOfInput from None
        key = key.strip()
        if key or provider.needs_base_url or present:
            return key or None
        out.write("  an API key is needed for this provider\n")


def configure_command(out: TextIO | None = None) -> int:
    """Run the interactive setup; returns the exit code (module docstring)."""
    stream = out if out is not None else sys.stderr
    if not sys.stdin.isatty():
        stream.write("accord serve --configure: needs a terminal to ask on (stdin is not one)\n")
        return ExitCode.ERROR
    stream.write("Configure the model of the accord coding agent.\n")
    try:
        provider = _choose_provider(stream)
        base_url = _base_url(stream) if provider.needs_base_url else None
        model = _model_name(provider, stream)
        key = _key(provider, stream)
    except _EndOfInput:
        stream.write("\naccord serve --configure: nothing saved (end of input)\n")
        return ExitCode.ERROR
    except KeyboardInterrupt:
        stream.write("\naccord serve --configure: nothing saved (interrupted)\n")
        return ExitCode.CANCELLED
    directory = accord_config_dir()
    try:
        saved = save_model(provider, model, base_url=base_url, key=key, directory=directory)
    except OSError as exc:
        stream.write(f"accord serve --configure: cannot save in {directory}: {exc}\n")
        return ExitCode.ERROR
    where = {
        "keyring": "in your keyring",
        "file": f"in {directory / 'credentials.json'} (readable by you only)",
        "none": "nowhere (none was given)",
    }[saved.key_store]
    stream.write(f"Saved: model {saved.model}")
    if saved.base_url:
        stream.write(f" at {saved.base_url}")
    stream.write(f"; the key {where}.\n")
    stream.flush()
    return ExitCode.OK
