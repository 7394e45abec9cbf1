"""One-line error messages of the ``accord`` command: what failed, and what to do.

Every failure the command reports is one line on stderr, starting ``accord:``, neutralised
(an agent's error message or stderr may carry terminal control sequences); the traceback is
only logged with ``-v``. :func:`explain_agent_error` turns the error a request got into such a
line, and knows the failures of the built-in agent's model (unreachable server, an HTTP
status) well enough to say what to do about them.

Above: the command modules. Below: :mod:`accord.errors`, :mod:`._neutralise`.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from ..client import neutralise
from ..errors import AgentProcessExited, RequestError

__all__ = ("CODER_EXTRA_MISSING", "coder_extra_missing", "explain_agent_error", "report")

CODER_EXTRA_MISSING = 'the accord coding agent needs the "coder" extra: pip install "accord[coder]"'
"""What to say when pydantic-ai (the ``coder`` extra) is not installed."""

_HINTS = {
    400: "check the model name and its settings",
    401: "check the API key (e.g. OPENAI_API_KEY, ANTHROPIC_API_KEY)",
    403: "check the API key and that it may use this model",
    404: "check the model name and --base-url",
    429: "the provider is rate-limiting or the quota is used up: wait, then try again",
}


def report(message: str) -> None:
    """Print ``accord: MESSAGE`` on stderr, with control sequences neutralised."""
    print(f"accord: {neutralise(message)}", file=sys.stderr, flush=True)


def coder_extra_missing() -> bool:
    """Whether the coding agent's dependencies (pydantic-ai) are missing."""
    from importlib.util import find_spec

    return find_spec("pydantic_ai") is None


def _model_failure(data: dict[str, Any], model: str | None, base_url: str | None) -> str | None:
    name = str(data.get("error", ""))
    message = str(data.get("message", "")).strip()
    what = f"the model {model}" if model else "the model"
    if name in ("ModelConnectionError", "APIConnectionError", "ConnectError", "APITimeoutError"):
        where = base_url or "its provider's API"
        return (
            f"{what} could not be reached at {where} ({message or name}): check --base-url, "
            "that the server is running, and the network"
        )
    if name in ("ModelHTTPError", "APIStatusError") or "status_code:" in message:
        found = re.search(r"status_code: (\d+)", message)
        status = int(found.group(1)) if found else None
        body = message.split("body:", 1)[-1].strip() if "body:" in message else message
        inner = re.search(r"""['"]message['"]: (['"])(.*?)\1(?:,|\})""", body)
        if inner is not None:  # the provider's own message, out of the JSON body
            body = inner.group(2)
        if len(body) > 200:
            body = body[:200] + "..."
        hint = _HINTS.get(status or 0)
        if hint is None:
            hint = (
                "the provider failed: try again later"
                if (status or 0) >= 500
                else ("check the model settings")
            )
        where = f" at {base_url}" if base_url else ""
        return f"{what}{where} answered HTTP {status or '?'}: {body}; {hint}"
    if name == "ModelNotInstalled" or "pip install" in message:
        return message
    return None


def explain_agent_error(
    error: Exception,
    agent: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    builtin: bool = False,
) -> str:
    """One line saying what failed (``agent`` names the agent), for an error from the agent."""
    if isinstance(error, AgentProcessExited):
        tail = error.stderr_tail.strip()
        line = f"{agent} exited with code {error.exit_code}"
        return line + (f"; the end of its stderr:\n{tail}" if tail else " (nothing on stderr)")
    if isinstance(error, RequestError):
        data = error.data
        if builtin and isinstance(data, dict):
            explained = _model_failure(data, model, base_url)  # pyright: ignore[reportUnknownArgumentType]
            if explained is not None:
                return explained
        return f"{agent} failed: {error}"
    if isinstance(error, TimeoutError):
        return f"{agent} did not answer initialize in time ({error or 'timed out'}); see --timeout"
    if isinstance(error, FileNotFoundError):
        return f"{agent} could not be started: {error.strerror}: {error.filename}"
    return f"{agent} failed: {error}"
