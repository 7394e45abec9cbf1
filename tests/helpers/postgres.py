"""The real PostgreSQL server of the tests: where it is, and a fresh empty schema per test.

``make test`` runs pytest under ``scripts/with_postgres.sh``, which starts a throwaway server
and sets ``ACCORD_TEST_POSTGRES_URL``. Without it the PostgreSQL tests skip, saying why; in CI
(``CI=true``) a missing server fails them instead, so a broken start cannot pass as green.
Each test gets its own schema (a ``search_path`` in the connection string), dropped afterwards,
so tests never see each other's sessions and need no new database each.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from helpers.timeouts import SCENARIO_TIMEOUT

URL_VARIABLE = "ACCORD_TEST_POSTGRES_URL"


def postgres_url() -> str:
    """The test server's URL; skips the test (fails it in CI) when there is none."""
    url = os.environ.get(URL_VARIABLE)
    if url:
        return url
    reason = f"no PostgreSQL server: {URL_VARIABLE} is not set (make test starts one)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must run the PostgreSQL tests")
    pytest.skip(reason)


def with_search_path(url: str, schema: str) -> str:
    """``url`` with its connections' ``search_path`` set to ``schema``."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options=-csearch_path%3D{schema}"


@contextmanager
def fresh_schema() -> Iterator[str]:
    """Create an empty schema and yield a URL whose connections use it; drop it afterwards."""
    import psycopg

    url = postgres_url()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}".encode())
    try:
        yield with_search_path(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())


def restart_server(mode: str = "fast") -> None:
    """Stop and start the test server (``mode``: ``fast`` or ``immediate``, a crash)."""
    _control("restart", "-m", mode)


def _control(action: str, *extra: str) -> None:
    """``pg_ctl ACTION`` on the test server with ``extra`` options, waiting for it."""
    ctl = os.environ.get("ACCORD_TEST_POSTGRES_CTL")
    data = os.environ.get("ACCORD_TEST_POSTGRES_DATA")
    if not ctl or not data:
        pytest.skip("the PostgreSQL server was not started by scripts/with_postgres.sh")
    run_as = shlex.split(os.environ.get("ACCORD_TEST_POSTGRES_RUN_AS", ""))
    log = os.path.join(os.path.dirname(data), "server.log")
    subprocess.run(
        [*run_as, ctl, "-D", data, "-l", log, "-w", *extra, action],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=SCENARIO_TIMEOUT,  # a stop or a start, with recovery after a crash
    )


@contextmanager
def server_down(mode: str = "immediate") -> Iterator[None]:
    """Stop the test server for the body (``immediate``: as a crash), then start it again
    with the options it ran with."""
    data = os.environ.get("ACCORD_TEST_POSTGRES_DATA", "")
    try:
        with open(os.path.join(data, "postmaster.opts"), encoding="utf-8") as opts:
            words = shlex.split(opts.read())
    except OSError:
        pytest.skip("the PostgreSQL server was not started by scripts/with_postgres.sh")
    # postmaster.opts: the postgres binary, then its arguments; -D is given to pg_ctl.
    arguments = words[1:]
    if "-D" in arguments:
        at = arguments.index("-D")
        del arguments[at : at + 2]
    _control("stop", "-m", mode)
    try:
        yield
    finally:
        _control("start", "-o", shlex.join(arguments))
