"""The model configuration saved by ``accord serve --configure``, and the key that goes with it.

Two things are kept, apart:

* the choice (provider, model name, base URL) in ``<user config dir>/accord/model.json``
  (:data:`SETTINGS_FILE`), readable, created ``0600``;
* the API key, never beside it in plain sight: in the user's keyring (service
  :data:`KEYRING_SERVICE`, the provider's variable name as user name) when a real keyring
  backend is available, otherwise in ``<user config dir>/accord/credentials.json``, a file
  created ``0600`` in a ``0700`` directory (:data:`CREDENTIALS_FILE`).

The same store keeps other secrets by name (:func:`store_secret`, :func:`read_secret`,
:func:`delete_secret`): the headers ``providers/set`` gives (:mod:`._providers`).
:func:`forget_saved_key` is ``logout``'s: the saved key removed from both places.

``accord serve`` reads them when neither ``--model`` nor :data:`~._config.MODEL_ENV` says
otherwise (:func:`load_saved_model`); the key is put in the provider's own environment variable
(``OPENAI_API_KEY``, ...) for this process only, unless that variable is already set. Nothing
here logs, prints or returns a key to anything but the provider's variable.

``keyring`` is imported only here, and only when a key is saved or looked up (it is part of
the ``coder`` extra; without it the file is used).

This module imports nothing of pydantic-ai.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import platformdirs

__all__ = (
    "CREDENTIALS_FILE",
    "KEYRING_SERVICE",
    "MODEL_PROVIDERS",
    "SETTINGS_FILE",
    "ModelProvider",
    "SavedModel",
    "accord_config_dir",
    "delete_secret",
    "forget_saved_key",
    "load_saved_model",
    "read_json",
    "read_secret",
    "save_model",
    "store_secret",
    "write_private",
)

_log = logging.getLogger("accord.coder")

KEYRING_SERVICE: Final = "accord"
"""The keyring service name the keys are stored under."""

SETTINGS_FILE: Final = "model.json"
"""The file (in :func:`accord_config_dir`) with the saved provider, model and base URL."""

CREDENTIALS_FILE: Final = "credentials.json"
"""The ``0600`` file (in :func:`accord_config_dir`) with keys when no keyring backend is there."""


@dataclass(frozen=True, slots=True)
class ModelProvider:
    """A model provider ``--configure`` offers.

    Attributes:
        id: Stored in the settings (``openai``, ``anthropic``, ``google``, ``compatible``).
        name: Shown in the menu.
        prefix: The pydantic-ai model name prefix (``openai:``, ...).
        key_variable: The environment variable the provider reads its key from.
        example_model: Offered as the default model name.
        needs_base_url: Whether a server URL is asked (OpenAI-compatible servers).
    """

    id: str
    name: str
    prefix: str
    key_variable: str
    example_model: str
    needs_base_url: bool = False


MODEL_PROVIDERS: Final = (
    ModelProvider("openai", "OpenAI", "openai:", "OPENAI_API_KEY", "gpt-5"),
    ModelProvider("anthropic", "Anthropic", "anthropic:", "ANTHROPIC_API_KEY", "claude-sonnet-4-5"),
    ModelProvider(
        "google", "Google (Gemini API)", "google-gla:", "GOOGLE_API_KEY", "gemini-2.5-pro"
    ),
    ModelProvider(
        "compatible",
        "An OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio, a proxy)",
        "openai:",
        "OPENAI_API_KEY",
        "qwen2.5-coder:7b",
        needs_base_url=True,
    ),
)
"""The providers, in menu order."""


@dataclass(frozen=True, slots=True)
class SavedModel:
    """What ``--configure`` saved.

    Attributes:
        provider: The provider's id.
        model: The pydantic-ai model name (with its prefix).
        base_url: The server, for OpenAI-compatible servers.
        key_store: Where the key is: ``keyring``, ``file``, or ``none`` (no key given).
    """

    provider: str
    model: str
    base_url: str | None = None
    key_store: Literal["keyring", "file", "none"] = "none"

    @property
    def key_variable(self) -> str:
        """The environment variable the provider reads its key from."""
        return next(
            (p.key_variable for p in MODEL_PROVIDERS if p.id == self.provider), "OPENAI_API_KEY"
        )


def accord_config_dir() -> Path:
    """``<user config dir>/accord`` (``$XDG_CONFIG_HOME/accord`` on Linux)."""
    return Path(platformdirs.user_config_dir("accord", appauthor=False))


def _keyring() -> Any | None:
    """The keyring module when a real backend is available (not the fail or null one)."""
    if os.environ.get("ACCORD_NO_KEYRING"):
        return None
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # a broken keyring configuration: use the file
        return None
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
        return None
    return keyring


def write_private(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to ``path``, readable by the user only, replaced atomically."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, or ``None`` (absent, unreadable or not an object: logged)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        _log.warning("ignoring %s: %s", path, exc)
        return None
    return data if isinstance(data, dict) else None  # pyright: ignore[reportUnknownVariableType]


def store_secret(directory: Path, name: str, value: str) -> Literal["keyring", "file"]:
    """Keep ``value`` under ``name``: in the keyring when it takes it, else in the ``0600`` file.

    Raises:
        OSError: the file is needed and cannot be written.
    """
    keyring = _keyring()
    if keyring is not None:
        try:
            keyring.set_password(KEYRING_SERVICE, name, value)
        except Exception as exc:  # a locked or refusing keyring: fall back to the file
            _log.warning("the keyring refused the key (%s); using a private file", exc)
        else:
            return "keyring"
    path = directory / CREDENTIALS_FILE
    keys = read_json(path) or {}
    keys[name] = value
    write_private(path, keys)
    return "file"


def read_secret(directory: Path, name: str) -> str | None:
    """The value kept under ``name`` (keyring first, then the file), or ``None``."""
    keyring = _keyring()
    if keyring is not None:
        try:
            value = keyring.get_password(KEYRING_SERVICE, name)
        except Exception as exc:
            _log.warning("the keyring could not be read: %s", exc)
        else:
            if value:
                return value
    value = (read_json(directory / CREDENTIALS_FILE) or {}).get(name)
    return value if isinstance(value, str) and value else None


def delete_secret(directory: Path, name: str) -> bool:
    """Remove what is kept under ``name`` from the keyring and the file; whether there was any.

    Raises:
        OSError: the file holds it and cannot be rewritten.
    """
    removed = False
    keyring = _keyring()
    if keyring is not None:
        try:
            if keyring.get_password(KEYRING_SERVICE, name) is not None:
                keyring.delete_password(KEYRING_SERVICE, name)
                removed = True
        except Exception as exc:
            _log.warning("the keyring could not remove the key: %s", exc)
    path = directory / CREDENTIALS_FILE
    keys = read_json(path)
    if keys is not None and name in keys:
        del keys[name]
        write_private(path, keys)
        removed = True
    return removed


def save_model(
    provider: ModelProvider, model: str, *, base_url: str | None, key: str | None, directory: Path
) -> SavedModel:
    """Save the choice and the key; return what was saved (where the key went).

    Raises:
        OSError: the configuration directory cannot be written.
    """
    store: Literal["keyring", "file", "none"] = "none"
    if key:
        store = store_secret(directory, provider.key_variable, key)
    saved = SavedModel(provider.id, model, base_url, store)
    write_private(
        directory / SETTINGS_FILE,
        {"provider": provider.id, "model": model, "baseUrl": base_url, "keyStore": store},
    )
    return saved


def forget_saved_key(directory: Path, variable: str) -> bool:
    """Forget the key saved for ``variable`` (``logout``): removed from the keyring and the
    file, and the saved choice no longer says a key is kept. Whether a key was there.

    Raises:
        OSError: the configuration directory cannot be written.
    """
    removed = delete_secret(directory, variable)
    settings = read_json(directory / SETTINGS_FILE)
    if settings is not None and settings.get("keyStore") in ("keyring", "file"):
        provider = next((p for p in MODEL_PROVIDERS if p.id == settings.get("provider")), None)
        if provider is None or provider.key_variable == variable:
            settings["keyStore"] = "none"
            write_private(directory / SETTINGS_FILE, settings)
    return removed


def load_saved_model(directory: Path, environ: MutableMapping[str, str]) -> SavedModel | None:
    """The saved choice, with its key put in ``environ`` (unless already set); else ``None``."""
    data = read_json(directory / SETTINGS_FILE)
    if data is None or not isinstance(data.get("model"), str) or not data["model"]:
        return None
    base_url = data.get("baseUrl")
    store = data.get("keyStore")
    saved = SavedModel(
        str(data.get("provider", "")),
        data["model"],
        base_url if isinstance(base_url, str) and base_url else None,
        store if store in ("keyring", "file") else "none",
    )
    variable = saved.key_variable
    if environ.get(variable):
        return saved
    key = read_secret(directory, variable) if saved.key_store != "none" else None
    if key:
        environ[variable] = key
    elif saved.key_store != "none":
        _log.warning("the saved key for %s was not found; run `accord serve --configure`", variable)
    return saved
