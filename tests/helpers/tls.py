"""TLS contexts for tests of the listening server: a throwaway authority (trustme) on 127.0.0.1.

Used by the remote tests that serve wss/https on loopback; skips the test when trustme is
not installed.
"""

from __future__ import annotations

import ssl

import pytest


def loopback_tls_contexts() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for 127.0.0.1 and a client context trusting it."""
    trustme = pytest.importorskip("trustme")
    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    authority.configure_trust(client_context)
    return server_context, client_context
