"""``accord providers``: list, set or disable the model providers an agent routes through.

* ``accord providers [list]``: one line per provider (unstable ``providers/list``): its id,
  ``in use`` / ``required``, where its requests go (or ``disabled``), whether a key is
  configured when the agent says so (accord's ``_meta["accord/keyConfigured"]``);
  ``--json``: one ``ProviderInfo`` per line, as the agent sent it.
* ``accord providers set ID [--base-url URL] [--api-type TYPE] [--key-stdin]``: route the
  provider (``providers/set``) to URL (default: where it goes now) speaking TYPE (default:
  the first protocol it supports); ``--key-stdin`` reads the API key from the first line of
  stdin (never from the command line, where other users and the shell history see it) and
  sends it as the provider's API expects it (``Authorization: Bearer`` for ``openai``-type
  providers, ``x-api-key`` for ``anthropic``).
* ``accord providers disable ID``: ``providers/disable``.

Everything the agent sent is printed neutralised; the key is printed nowhere.
"""

from __future__ import annotations

import argparse
import sys

import orjson

from ..client import ConnectedAgent, connect, neutralise
from ..errors import AcpError, LocalProtocolError
from ..schema import ProviderInfo
from ._agent_spec import AgentChoice, agent_spec, close_builtin_agent, run_with_agent
from ._exit_codes import ExitCode
from ._report import explain_agent_error, report
from ._settings import Settings

__all__ = ("add_providers_arguments", "providers_command")


def add_providers_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``accord providers``."""
    parser.add_argument(
        "action",
        nargs="?",
        choices=("list", "set", "disable"),
        default="list",
        help="list (the default), set ID or disable ID",
    )
    parser.add_argument("id", nargs="?", metavar="ID", help="the provider id (set, disable)")
    parser.add_argument("--agent", help="agent name or command line (default: built-in)")
    parser.add_argument("--base-url", help="set: where its requests go (default: unchanged)")
    parser.add_argument(
        "--api-type", help="set: the protocol, e.g. openai (default: the first it supports)"
    )
    parser.add_argument(
        "--key-stdin",
        action="store_true",
        help="set: read the API key from the first line of stdin",
    )
    parser.add_argument("--json", action="store_true", help="list: print JSON lines")
    parser.add_argument("--model", help="model of the built-in agent (without --agent)")
    parser.add_argument("--store", help="session store of the built-in agent")


def providers_command(args: argparse.Namespace) -> int:
    """Run ``accord providers`` and return its exit code."""
    if args.action == "list" and args.id is not None:
        report("accord providers list takes no provider id (did you mean set or disable?)")
        return ExitCode.USAGE
    if args.action in ("set", "disable") and args.id is None:
        report(f"accord providers {args.action} takes a provider id")
        return ExitCode.USAGE
    if args.action != "set" and (args.key_stdin or args.base_url or args.api_type):
        report("--key-stdin, --base-url and --api-type go with accord providers set")
        return ExitCode.USAGE
    key: str | None = None
    if args.key_stdin:
        key = sys.stdin.readline().strip()
        if not key:
            report("--key-stdin: the first line of stdin is empty (no key was sent)")
            return ExitCode.USAGE
    return run_with_agent(_providers, args, key)


async def _providers(
    args: argparse.Namespace, settings: Settings, choice: AgentChoice, key: str | None
) -> int:
    try:
        spec = agent_spec(choice, args, settings, needs_model=False)
    except ValueError as error:
        report(str(error))
        return ExitCode.ERROR
    try:
        async with connect(spec) as conn:
            if args.action == "set":
                return await _set(conn, args, key)
            if args.action == "disable":
                await conn.disable_provider(args.id)
                print(f"disabled {neutralise(args.id, multiline=False)}")
                return ExitCode.OK
            return await _list(conn, args)
    except LocalProtocolError as error:
        report(f"{choice.name} cannot configure model providers: {error}")
        return ExitCode.ERROR
    except (AcpError, OSError, TimeoutError) as error:
        report(explain_agent_error(error, choice.name, builtin=choice.builtin))
        return ExitCode.AGENT_FAILED
    finally:
        await close_builtin_agent(spec)


def _line(info: ProviderInfo) -> str:
    meta = info.meta or {}
    words: list[str] = []
    if meta.get("accord/inUse") is True:
        words.append("in use")
    elif info.required:
        words.append("required")
    if info.current is None:
        words.append("disabled")
    else:
        api_type = neutralise(info.current.api_type, multiline=False)
        url = neutralise(info.current.base_url, multiline=False)
        words.append(f"{api_type} at {url}")
    key = meta.get("accord/keyConfigured")
    if isinstance(key, bool):
        words.append("key configured" if key else "no key")
    return f"{neutralise(info.provider_id, multiline=False)}  {', '.join(words)}"


async def _list(conn: ConnectedAgent, args: argparse.Namespace) -> int:
    providers = await conn.list_providers()
    for info in providers:
        if args.json:
            sys.stdout.write(orjson.dumps(info.to_wire()).decode() + "\n")
        else:
            sys.stdout.write(_line(info) + "\n")
    if not providers and not args.json:
        print("the agent lists no providers", file=sys.stderr)
    return ExitCode.OK


async def _set(conn: ConnectedAgent, args: argparse.Namespace, key: str | None) -> int:
    known = {p.provider_id: p for p in await conn.list_providers()}
    info = known.get(args.id)
    api_type: str | None = args.api_type
    base_url: str | None = args.base_url
    if info is not None:
        if api_type is None and info.supported:
            api_type = info.supported[0]
        if base_url is None and info.current is not None:
            base_url = info.current.base_url
    if api_type is None or base_url is None:
        missing = " and ".join(
            flag for flag, v in (("--api-type", api_type), ("--base-url", base_url)) if v is None
        )
        report(f"provider {args.id!r} is not listed as enabled by the agent: give {missing}")
        return ExitCode.USAGE
    await conn.set_provider(args.id, api_type=api_type, base_url=base_url, api_key=key)
    shown = f"{neutralise(api_type, multiline=False)} at {neutralise(base_url, multiline=False)}"
    sent = " (key sent)" if key is not None else ""
    print(f"{neutralise(args.id, multiline=False)}: {shown}{sent}")
    return ExitCode.OK
