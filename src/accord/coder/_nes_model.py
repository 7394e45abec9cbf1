"""The coder's suggestion request: one small model request, its answer turned into edits.

:func:`suggest_with_model` sends what :func:`~._nes.nes_prompt` writes to the configured
default model (the one new sessions start with) in one request without tools or history,
marked ``x-accord-purpose: nes`` (:data:`~accord.engines.MODEL_PURPOSE_HEADER`), bounded in
tokens and time, at temperature 0; the answer becomes edits (:func:`~._nes.edits_from_answer`).
Cancelling the caller (``$/cancel_request``, ``nes/close``) cancels the HTTP request.

Errors are the client's to read: a model that cannot be built is -32000 (as for a session),
the model's failure (an HTTP error, a timeout, no connection) and an answer that is no rewrite
of the region are -32603 with ``data.reason`` (``model_error``, ``unusable_answer``).

This module imports pydantic-ai; it is reached through :mod:`._open`.
"""

from __future__ import annotations

import logging
from typing import Final

from pydantic_ai.direct import model_request
from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior, UserError
from pydantic_ai.messages import ModelRequest, SystemPromptPart, TextPart, UserPromptPart
from pydantic_ai.settings import ModelSettings

from ..engines import MODEL_PURPOSE_HEADER, EditRequest, SuggestedEdit
from ..errors import AuthRequired, InternalError
from ._agent import model_choices
from ._config import CoderConfig
from ._nes import NES_INSTRUCTIONS, NES_PURPOSE, UnusableAnswer, edits_from_answer, nes_prompt
from ._providers import ProviderRoutes

__all__ = ("NES_MAX_TOKENS", "NES_TIMEOUT_SECONDS", "suggest_with_model")

_log = logging.getLogger("accord.coder")

NES_TIMEOUT_SECONDS: Final = 20.0
"""How long the model may take to answer a suggestion request."""

NES_MAX_TOKENS: Final = 1024
"""The most tokens the answer may take (the editable region is a few lines)."""

_ANSWER_SHOWN: Final = 200
"""How much of an unusable answer the error's data carries."""


async def suggest_with_model(
    config: CoderConfig,
    request: EditRequest,
    verdicts: list[str],
    routes: ProviderRoutes | None = None,
) -> list[SuggestedEdit]:
    """The model's suggestion for ``request`` (module docstring).

    ``verdicts``: the NES session's earlier verdicts, as lines of the request; ``routes``: the
    provider routes of ``providers/set`` the default model is built along.

    Raises:
        AuthRequired: no model configured, or the default one cannot be built (no key, ...).
        InternalError: the request failed or the answer is unusable (``data.reason``).
    """
    choices = model_choices(config, routes)
    if not choices:
        raise AuthRequired(config.problem() or "no model is configured")
    try:
        model = choices[0].build()
    except (UserError, ImportError) as exc:
        raise AuthRequired(
            f"the model {config.default_model!r} cannot be used for suggestions: {exc}",
            {"model": config.default_model},
        ) from exc
    text, region = nes_prompt(request, verdicts)
    settings = ModelSettings(
        max_tokens=NES_MAX_TOKENS,
        temperature=0.0,
        timeout=NES_TIMEOUT_SECONDS,
        extra_headers={MODEL_PURPOSE_HEADER: NES_PURPOSE},
    )
    asked = ModelRequest(parts=[SystemPromptPart(NES_INSTRUCTIONS), UserPromptPart(text)])
    try:
        response = await model_request(model, [asked], model_settings=settings)
    except ModelHTTPError as exc:
        raise InternalError(
            f"the model's suggestion request failed: HTTP {exc.status_code}",
            {"reason": "model_error", "status": exc.status_code, "model": config.default_model},
        ) from exc
    except (UnexpectedModelBehavior, OSError, TimeoutError) as exc:
        raise InternalError(
            f"the model's suggestion request failed: {type(exc).__name__}: {exc}",
            {"reason": "model_error", "model": config.default_model},
        ) from exc
    except Exception as exc:  # the HTTP client's own errors (openai.APIConnectionError, ...)
        if type(exc).__module__.split(".")[0] not in {"openai", "httpx", "anthropic", "google"}:
            raise
        raise InternalError(
            f"the model's suggestion request failed: {type(exc).__name__}: {exc}",
            {"reason": "model_error", "model": config.default_model},
        ) from exc
    answer = "".join(part.content for part in response.parts if isinstance(part, TextPart))
    try:
        return edits_from_answer(answer, region)
    except UnusableAnswer as exc:
        _log.info("unusable suggestion answer from %s: %s", config.default_model, exc)
        raise InternalError(
            f"the model's answer is not a suggestion: {exc}",
            {
                "reason": "unusable_answer",
                "model": config.default_model,
                "answer": answer[:_ANSWER_SHOWN],
            },
        ) from None
