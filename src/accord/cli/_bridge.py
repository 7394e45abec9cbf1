"""``accord bridge URL``: a remote accord agent as a local stdio agent, for editors.

::

    ACCORD_TOKEN=... accord bridge wss://build-box.example:8765/acp

The editor launches it like any ACP agent; every message goes to the agent at ``URL`` and
back, unchanged (:mod:`._bridge_link`: a dropped connection is reconnected and the editor's
sessions resumed); each drop and reconnect is one line on stderr (the editor's log). The token
comes from ``ACCORD_TOKEN`` or ``--token-file``.

Above: :mod:`._main` (dispatch). Below: :mod:`._bridge_link`, :mod:`accord.remote`,
:mod:`accord.transports` (imported when the command runs).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

from ._exit_codes import ExitCode

__all__ = ("add_bridge_arguments", "bridge_command")


def add_bridge_arguments(parser: argparse.ArgumentParser) -> None:
    """``accord bridge``'s arguments."""
    parser.add_argument("url", help="the remote agent, e.g. wss://host:8765/acp")
    parser.add_argument("--token-file", help="file holding the bearer token (else ACCORD_TOKEN)")
    parser.add_argument(
        "--reconnect-deadline",
        type=_seconds,
        metavar="SECONDS",
        help="how long an outage may last before the bridge gives up and exits 3 "
        "(default: accord.client.RECONNECT_DEADLINE, 120)",
    )


def _seconds(text: str) -> float:
    """A positive number of seconds, for argparse."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def _status(line: str) -> None:
    print(f"accord bridge: {line}", file=sys.stderr, flush=True)


def bridge_command(args: argparse.Namespace) -> int:
    """Forward stdio to the remote agent until the editor closes stdin; returns the exit code."""
    import anyio

    from ..client import RECONNECT_DEADLINE
    from ..errors import ConnectionRefused, LocalProtocolError, TransportError
    from ..remote import RemoteEndpoint, read_token
    from ..transports import stdio_transport
    from ._bridge_link import ReconnectGaveUp, run_bridge

    try:
        RemoteEndpoint.parse(args.url)
        token = read_token(args.token_file, os.environ)
        RemoteEndpoint.parse(args.url, token=token)
    except (ValueError, OSError) as exc:
        _status(str(exc))
        return ExitCode.USAGE if isinstance(exc, ValueError) else ExitCode.ERROR

    async def bridge() -> None:
        await run_bridge(
            stdio_transport(),
            args.url,
            token=token,
            on_status=_status,
            reconnect_deadline=deadline,
        )

    deadline: float = (
        RECONNECT_DEADLINE if args.reconnect_deadline is None else args.reconnect_deadline
    )

    try:
        anyio.run(functools.partial(bridge))
    except KeyboardInterrupt:
        return ExitCode.CANCELLED
    except ReconnectGaveUp:
        return ExitCode.AGENT_FAILED  # the line saying why is out already
    except LocalProtocolError as exc:
        _status(str(exc))
        return ExitCode.USAGE
    except (ConnectionRefused, TransportError) as exc:
        _status(str(exc))
        return ExitCode.AGENT_FAILED
    except OSError as exc:
        _status(f"cannot reach {args.url}: {exc.strerror or exc}")
        return ExitCode.AGENT_FAILED
    return ExitCode.OK
