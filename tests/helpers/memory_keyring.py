"""A keyring backend in memory, so tests never touch the user's real keyring.

:func:`memory_keyring` installs one as the process's keyring (``keyring.set_keyring``) for the
length of a test and puts the previous backend back after; ``ACCORD_NO_KEYRING`` is removed for
that time, so the coder uses the keyring instead of its private file. The backend's
:attr:`MemoryKeyring.entries` is what a test inspects.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class MemoryKeyring(KeyringBackend):
    """Passwords kept in a dict, by ``(service, user name)``."""

    priority = 1  # pyright: ignore[reportAssignmentType]  # a class property in the base

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        """The password kept, or ``None``."""
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        """Keep ``password``."""
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        """Forget the password.

        Raises:
            PasswordDeleteError: there is none.
        """
        if self.entries.pop((service, username), None) is None:
            raise PasswordDeleteError(f"no password for {username!r} in {service!r}")


@contextmanager
def memory_keyring(monkeypatch: pytest.MonkeyPatch) -> Generator[MemoryKeyring]:
    """Use a fresh :class:`MemoryKeyring` as the process's keyring within the block."""
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    monkeypatch.delenv("ACCORD_NO_KEYRING", raising=False)
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)
