"""``accord serve --listen`` with ``--certfile``/``--keyfile`` speaks TLS 1.2 or later only.

The real command runs as a subprocess with a certificate of a throwaway authority (trustme)
for 127.0.0.1. Clients on real sockets (the standard library's ``ssl``, blocking, bounded by
:data:`TIMEOUT`) offer one protocol version each: TLS 1.0 and 1.1 must fail the handshake
(the server's ``protocol_version`` alert, or its closing the socket), 1.2 and 1.3 must get
through and be served an authenticated ``initialize``. So that a refusal proves something,
the same old-version client is first shown to complete a handshake with a server that
allows it (this machine's OpenSSL can still speak TLS 1.1 when asked at security level 0).
On an address other than loopback the command listens with TLS, or with
``--insecure-no-tls``, and refuses without either (exit 2, one line); a certificate without
its key, or one that cannot be read, is a one-line error too.
"""

from __future__ import annotations

import socket
import ssl
import threading
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from helpers.accord_serve import accord_env, accord_serve_logged, run_accord
from helpers.timeouts import TIMEOUT

from accord.cli import ExitCode

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(240)]

TOKEN = "tls-versions-token-0123456789abcdef"

_INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'


def _old(name: str) -> ssl.TLSVersion:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TLSv1 and TLSv1_1 are
        return getattr(ssl.TLSVersion, name)


def _client(authority: Any, version: ssl.TLSVersion) -> ssl.SSLContext:
    """A client trusting ``authority`` that offers exactly ``version``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    authority.configure_trust(context)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = version
        context.maximum_version = version
    if version < ssl.TLSVersion.TLSv1_2:
        context.set_ciphers("DEFAULT:@SECLEVEL=0")  # else OpenSSL 3 would not offer it at all
    return context


def _initialize(port: int, context: ssl.SSLContext) -> tuple[str | None, bytes]:
    """Handshake, POST an authenticated ``initialize``; the version and the status line."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        request = (
            "POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            f"Content-Length: {len(_INIT)}\r\n\r\n"
        ).encode() + _INIT
        tls.sendall(request)
        answer = b""
        while b"\r\n" not in answer:
            chunk = tls.recv(4096)
            if not chunk:
                break
            answer += chunk
        return tls.version(), answer.split(b"\r\n", 1)[0]


def _permissive_handshake(authority: Any, context: ssl.SSLContext) -> str | None:
    """The version ``context`` gets from a server that allows TLS 1.0 and later."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    authority.issue_cert("127.0.0.1").configure_cert(server)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        server.minimum_version = ssl.TLSVersion.TLSv1
    server.set_ciphers("DEFAULT:@SECLEVEL=0")
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(TIMEOUT)

        def accept() -> None:
            conn, _ = listener.accept()
            conn.settimeout(TIMEOUT)
            try:
                with server.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (ssl.SSLError, OSError):
                conn.close()

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        port = listener.getsockname()[1]
        with (
            socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            version = tls.version()
        thread.join(TIMEOUT)
    return version


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Any, Path, Path]:
    """A throwaway authority and a certificate (chain, key) for 127.0.0.1 issued by it."""
    trustme = pytest.importorskip("trustme")
    authority = trustme.CA()
    issued = authority.issue_cert("127.0.0.1")
    certfile, keyfile = tmp_path / "cert.pem", tmp_path / "key.pem"
    certfile.write_bytes(b"".join(pem.bytes() for pem in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(keyfile))
    return authority, certfile, keyfile


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_tls_below_1_2_is_refused_and_1_2_and_1_3_are_served(
    certificate: tuple[Any, Path, Path], host: str
) -> None:
    authority, certfile, keyfile = certificate
    old = {name: _client(authority, _old(name)) for name in ("TLSv1", "TLSv1_1")}
    # The old clients really offer their version: a server that allows it completes with them.
    assert _permissive_handshake(authority, old["TLSv1_1"]) == "TLSv1.1"
    assert _permissive_handshake(authority, old["TLSv1"]) == "TLSv1"
    tls_args = ("--certfile", str(certfile), "--keyfile", str(keyfile))
    refused: dict[str, ssl.SSLError] = {}
    served: dict[str, tuple[str | None, bytes]] = {}
    env = accord_env(ACCORD_TOKEN=TOKEN)
    with accord_serve_logged(*tls_args, env=env, options=(), host=host) as (url, _):
        port = urlsplit(url).port
        assert port is not None and url.startswith("wss://")
        for name, context in old.items():
            with pytest.raises(ssl.SSLError) as caught:
                _initialize(port, context)
            refused[name] = caught.value
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            served[version.name] = _initialize(port, _client(authority, version))
    for name, error in refused.items():
        # The server's refusal (its alert 70, or its closing the socket on a TLS 1.0 hello),
        # not the client giving up before it asked (NO_PROTOCOLS_AVAILABLE and the like).
        by_server = "TLSV1_ALERT_PROTOCOL_VERSION" in str(error)
        assert by_server or isinstance(error, ssl.SSLEOFError), (name, error)
    assert served == {
        "TLSv1_2": ("TLSv1.2", b"HTTP/1.1 200 "),
        "TLSv1_3": ("TLSv1.3", b"HTTP/1.1 200 "),
    }


def test_insecure_no_tls_waives_tls_on_an_address_other_than_loopback() -> None:
    env = accord_env(ACCORD_TOKEN=TOKEN)
    with accord_serve_logged("--insecure-no-tls", env=env, options=(), host="0.0.0.0") as (
        url,
        _,
    ):
        assert url.startswith("ws://0.0.0.0:")
    refused = run_accord("serve", "--listen", "[::]:0", env=env)
    assert refused.returncode == ExitCode.USAGE
    assert refused.stderr.strip().splitlines() == [
        "accord serve: refusing to listen on :: without TLS: give --certfile and "
        "--keyfile, or --insecure-no-tls if the network is trusted"
    ]


def test_a_certificate_without_its_key_or_unreadable_is_one_line(
    certificate: tuple[Any, Path, Path], tmp_path: Path
) -> None:
    _, certfile, keyfile = certificate
    env = accord_env(ACCORD_TOKEN=TOKEN)
    alone = run_accord("serve", "--listen", "127.0.0.1:0", "--certfile", str(certfile), env=env)
    missing = tmp_path / "missing.pem"
    unreadable = run_accord(
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--certfile",
        str(missing),
        "--keyfile",
        str(keyfile),
        env=env,
    )
    assert alone.returncode == ExitCode.USAGE
    assert alone.stderr.strip() == "accord serve: --certfile and --keyfile go together"
    assert unreadable.returncode == ExitCode.ERROR
    lines = unreadable.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("accord serve: "), unreadable.stderr
    assert "Traceback" not in unreadable.stderr
