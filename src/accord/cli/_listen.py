"""``accord serve --listen HOST:PORT``: the coding agent for remote clients.

::

    accord serve --listen 127.0.0.1:8765                       # loopback, token printed once
    ACCORD_TOKEN=... accord serve --listen 0.0.0.0:8765 --certfile c.pem --keyfile k.pem

ACP at ``/acp`` over WebSocket and Streamable HTTP (:mod:`accord.remote`), with the same
runtime, engine and session store as over stdio. The bearer token comes from ``--token-file``
or ``ACCORD_TOKEN`` (then removed from the environment, so no command the model runs inherits
it); with neither, one is generated and printed once on stderr. Listening on
an address other than loopback needs TLS (``--certfile``/``--keyfile``) or, knowingly,
``--insecure-no-tls``; otherwise a one-line error and exit code 2 (usage).

Above: :mod:`._serve` (dispatch). Below: :mod:`accord.remote`, :mod:`accord.coder`.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import ssl
import sys
from typing import TYPE_CHECKING

from ._exit_codes import ExitCode

if TYPE_CHECKING:
    from ..transports import Transport

__all__ = ("add_listen_arguments", "listen_command", "parse_listen")

_log = logging.getLogger("accord.cli")


def add_listen_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--listen`` family of ``accord serve``'s options."""
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="serve ACP at ws://HOST:PORT/acp (and http://) instead of stdio",
    )
    parser.add_argument("--token-file", help="file holding the bearer token (else ACCORD_TOKEN)")
    parser.add_argument("--certfile", help="TLS certificate chain (PEM) for --listen")
    parser.add_argument("--keyfile", help="TLS private key (PEM) for --listen")
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed to connect, e.g. https://ide.example.com (repeat)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name clients may reach this server by, besides loopback names (repeat); "
        "other Host headers get 403 (DNS rebinding)",
    )
    parser.add_argument(
        "--insecure-no-tls",
        action="store_true",
        help="allow --listen on a non-loopback address without TLS (the token travels in clear)",
    )
    parser.add_argument(
        "--max-connections", type=int, default=64, help="live connections per token (64)"
    )
    parser.add_argument(
        "--idle-timeout", type=float, default=600.0, help="seconds before a quiet connection closes"
    )


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as host and port.

    Raises:
        ValueError: not ``HOST:PORT`` with a port from 0 to 65535.
    """
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"--listen wants HOST:PORT (e.g. 127.0.0.1:8765), not {value!r}")
    return host, int(port)


def listen_command(args: argparse.Namespace) -> int:
    """Run the agent on ``--listen`` until interrupted; returns the exit code."""
    from ..remote import (
        TOKEN_ENV,
        AccessPolicy,
        ServerLimits,
        generate_token,
        is_loopback_host,
        read_token,
    )

    try:
        host, port = parse_listen(args.listen)
    except ValueError as exc:
        print(f"accord serve: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    tls = bool(args.certfile or args.keyfile)
    if not is_loopback_host(host) and not tls and not args.insecure_no_tls:
        print(
            f"accord serve: refusing to listen on {host} without TLS: give --certfile and "
            "--keyfile, or --insecure-no-tls if the network is trusted",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    if bool(args.certfile) != bool(args.keyfile):
        print("accord serve: --certfile and --keyfile go together", file=sys.stderr)
        return ExitCode.USAGE
    try:
        token = read_token(args.token_file, os.environ)
        context = _tls_context(args.certfile, args.keyfile) if tls else None
    except (OSError, ValueError, ssl.SSLError) as exc:
        print(f"accord serve: {exc}", file=sys.stderr)
        return ExitCode.ERROR
    # Read once, then gone from the environment: the commands the model runs, MCP servers
    # and every other child inherit it, and the model is not trusted with the token.
    os.environ.pop(TOKEN_ENV, None)
    if token is None:
        token = generate_token()
        print(
            f"accord serve: token (shown once; give it as ACCORD_TOKEN): {token}", file=sys.stderr
        )
    try:
        policy = AccessPolicy.build(
            token,
            origins=args.allow_origin,
            loopback=is_loopback_host(host),
            hosts=args.allow_host,
        )
    except ValueError as exc:
        print(f"accord serve: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    limits = ServerLimits(
        max_connections_per_token=args.max_connections, idle_timeout=args.idle_timeout
    )
    import anyio

    try:
        anyio.run(functools.partial(_serve, args, host, port, policy, limits, context))
    except KeyboardInterrupt:
        return ExitCode.CANCELLED
    except OSError as exc:
        print(
            f"accord serve: cannot listen on {args.listen}: {exc.strerror or exc}", file=sys.stderr
        )
        return ExitCode.ERROR
    return ExitCode.OK


def _tls_context(certfile: str, keyfile: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile, keyfile)
    return context


async def _serve(
    args: argparse.Namespace,
    host: str,
    port: int,
    policy: object,
    limits: object,
    context: ssl.SSLContext | None,
) -> None:
    import anyio

    from ..agent import DEFAULT_REMOTE_GRACE_SECONDS
    from ..remote import AccessPolicy, ServerLimits, serve_remote
    from ._agent_spec import builtin_environ
    from ._build_agent import build_agent
    from ._settings import load

    assert isinstance(policy, AccessPolicy) and isinstance(limits, ServerLimits)
    environ = builtin_environ(load())
    # One runtime serves every connection: the sessions are shared, several clients may
    # attach to one, and a session outlives its connections for the grace period.
    grace = getattr(args, "grace", None)
    runtime = build_agent(
        model=args.model,
        base_url=args.base_url,
        context_window=getattr(args, "context_window", None),
        store=args.store,
        environ=environ,
        warn=False,
        activity=getattr(args, "activity", None),
        grace=DEFAULT_REMOTE_GRACE_SECONDS if grace is None else grace,
    )

    async def serve_connection(transport: Transport) -> None:
        await runtime.serve(transport)

    scheme = "wss" if context is not None else "ws"
    shown = f"[{host}]" if ":" in host else host
    try:
        async with anyio.create_task_group() as tg:
            bound = await tg.start(
                functools.partial(
                    serve_remote,
                    serve_connection,
                    host=host,
                    port=port,
                    policy=policy,
                    limits=limits,
                    ssl_context=context,
                )
            )
            print(f"accord serve: listening on {scheme}://{shown}:{bound}/acp", file=sys.stderr)
            sys.stderr.flush()
    finally:
        with anyio.CancelScope(shield=True):
            await runtime.aclose()
