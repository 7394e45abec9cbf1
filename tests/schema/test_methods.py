"""The method tables and the public surface of accord.schema agree with the schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.acp_schema import load_schema, schema_available

import accord.schema as s
from accord.schema import _generated_v1
from accord.schema.methods import AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS, MethodSpec

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path("/work/shared/acp-schema/v1")

TABLES = {"agent": AGENT_METHODS, "client": CLIENT_METHODS, "protocol": PROTOCOL_METHODS}
META_KEYS = {"agentMethods": "agent", "clientMethods": "client", "protocolMethods": "protocol"}

# Methods of the shared (older, spec-repo) meta.unstable.json that accord's schema does not have:
# MCP-over-ACP was reworked in @agentclientprotocol/sdk 2.4.0 (mcp/connect and mcp/disconnect
# removed; mcp/message now request + notification). NES and document sync left 2.4.0's JSON
# schema too, and come from 1.4.0's (scripts/schema_sources.py), so they are in the tables.
ABSENT_FROM_SDK_2_4_0 = {"mcp/connect", "mcp/disconnect"}

NES_METHODS = {
    "nes/start": "request",
    "nes/suggest": "request",
    "nes/close": "request",
    "nes/accept": "notification",
    "nes/reject": "notification",
    "document/didOpen": "notification",
    "document/didChange": "notification",
    "document/didClose": "notification",
    "document/didSave": "notification",
    "document/didFocus": "notification",
}


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def all_specs() -> list[MethodSpec]:
    return [spec for table in TABLES.values() for spec in table.values()]


@pytest.fixture(scope="module")
def schema_defs() -> dict[str, Any]:
    if not schema_available():
        pytest.skip("no .schema-cache; run scripts/fetch_schema.sh")
    defs: dict[str, Any] = load_schema()["$defs"]
    return defs


def test_tables_are_keyed_by_wire_name_and_side() -> None:
    for side, table in TABLES.items():
        for method, spec in table.items():
            assert spec.method == method
            assert spec.side == side
            assert (spec.result_type is None) == (spec.kind == "notification")


def test_tables_match_schema_annotations(schema_defs: dict[str, Any]) -> None:
    for spec in all_specs():
        params = schema_defs[spec.params_type.__name__]
        assert (params["x-method"], params["x-side"]) == (spec.method, spec.side)
        if spec.result_type is not None:
            result = schema_defs[spec.result_type.__name__]
            assert (result["x-method"], result["x-side"]) == (spec.method, spec.side)
    annotated = {
        (d["x-method"], d["x-side"], name.endswith("Notification"))
        for name, d in schema_defs.items()
        if "x-method" in d and d["x-side"] != "proxy" and not name.endswith("Response")
    }
    ours = {(x.method, x.side, x.kind == "notification") for x in all_specs()}
    assert ours == annotated


def test_proxy_methods_are_left_out() -> None:
    assert not [x for x in all_specs() if x.method.startswith("proxy/")]


def test_unstable_flag_follows_the_stable_schema() -> None:
    if not schema_available():
        pytest.skip("no .schema-cache; run scripts/fetch_schema.sh")
    stable = load_schema(stable=True)["$defs"]
    for spec in all_specs():
        assert spec.unstable == (spec.params_type.__name__ not in stable), spec.method


@pytest.mark.parametrize(
    ("side", "method", "handler"),
    [
        ("agent", "initialize", "initialize"),
        ("agent", "session/new", "new_session"),
        ("agent", "session/load", "load_session"),
        ("agent", "session/prompt", "prompt"),
        ("agent", "session/cancel", "cancel"),
        ("agent", "session/set_config_option", "set_session_config_option"),
        ("agent", "mcp/message", "mcp_notification"),
        ("client", "session/update", "session_update"),
        ("client", "session/request_permission", "request_permission"),
        ("client", "fs/read_text_file", "read_text_file"),
        ("client", "terminal/create", "create_terminal"),
        ("client", "terminal/wait_for_exit", "wait_for_terminal_exit"),
        ("client", "mcp/message", "mcp_message"),
        ("protocol", "$/cancel_request", "cancel_request"),
    ],
)
def test_handler_names(side: str, method: str, handler: str) -> None:
    assert TABLES[side][method].handler == handler


def test_handler_names_are_unique_per_side() -> None:
    for table in TABLES.values():
        handlers = [spec.handler for spec in table.values()]
        assert len(handlers) == len(set(handlers))
        assert all(h.isidentifier() and h == h.lower() for h in handlers)


@pytest.mark.parametrize(
    ("side", "method", "capability"),
    [
        ("agent", "session/load", ("loadSession",)),
        ("agent", "session/list", ("sessionCapabilities", "list")),
        ("agent", "session/resume", ("sessionCapabilities", "resume")),
        ("agent", "session/close", ("sessionCapabilities", "close")),
        ("agent", "session/delete", ("sessionCapabilities", "delete")),
        ("agent", "session/fork", ("sessionCapabilities", "fork")),
        ("agent", "logout", ("auth", "logout")),
        ("agent", "providers/list", ("providers",)),
        ("agent", "session/new", None),
        ("agent", "session/set_mode", None),
        ("agent", "session/set_config_option", None),
        ("client", "fs/read_text_file", ("fs", "readTextFile")),
        ("client", "fs/write_text_file", ("fs", "writeTextFile")),
        ("client", "terminal/output", ("terminal",)),
        ("client", "elicitation/create", ("elicitation",)),
        ("client", "session/request_permission", None),
    ],
)
def test_capabilities(side: str, method: str, capability: tuple[str, ...] | None) -> None:
    assert TABLES[side][method].capability == capability


def test_capability_paths_exist_in_the_capability_models() -> None:
    roots = {"agent": s.AgentCapabilities, "client": s.ClientCapabilities}
    for side, root in roots.items():
        for spec in TABLES[side].values():
            model: Any = root
            for wire_name in spec.capability or ():
                fields = {
                    f.serialization_alias or name: f for name, f in model.model_fields.items()
                }
                assert wire_name in fields, (spec.method, wire_name)
                annotation = fields[wire_name].annotation
                model = next(
                    (a for a in getattr(annotation, "__args__", (annotation,)) if a is not None),
                    annotation,
                )


@pytest.mark.parametrize("meta_file", ["meta.json", "meta.unstable.json"])
def test_methods_match_the_shared_meta_json(meta_file: str) -> None:
    if not (SHARED / meta_file).exists():
        pytest.skip(f"{SHARED / meta_file} is not there")
    meta = load_json(SHARED / meta_file)
    absent: set[str] = set()
    for key, side in META_KEYS.items():
        for method in meta[key].values():
            if method not in TABLES[side]:
                absent.add(method)
    if meta_file == "meta.json":
        assert absent == set(), "stable methods must all be in the tables, on the same side"
    else:
        assert absent == ABSENT_FROM_SDK_2_4_0


# --- the public surface --------------------------------------------------------------------


def test_every_def_has_a_public_name(schema_defs: dict[str, Any]) -> None:
    missing = [name for name in schema_defs if name not in s.__all__]
    assert missing == []


def test_all_is_sorted_complete_and_public() -> None:
    for module in (s, _generated_v1):
        names = list(module.__all__)
        assert len(names) == len(set(names))
        assert all(not n.startswith("_") for n in names)
        for name in names:
            assert hasattr(module, name), name
    assert list(s.__all__) == sorted(s.__all__, key=lambda n: (not n.isupper(), n))
    assert set(_generated_v1.__all__) <= set(s.__all__)
    generated_public = {
        name
        for name, value in vars(_generated_v1).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == _generated_v1.__name__
    }
    assert generated_public <= set(_generated_v1.__all__)
    assert {"WireModel", "MethodSpec", "AGENT_METHODS", "CLIENT_METHODS"} <= set(s.__all__)


def test_nes_and_document_sync_are_agent_methods_gated_by_nes() -> None:
    for method, kind in NES_METHODS.items():
        spec = AGENT_METHODS[method]
        assert spec.kind == kind
        assert spec.unstable
        assert spec.capability is not None and spec.capability[0] == "nes"
        assert method not in CLIENT_METHODS
    assert AGENT_METHODS["document/didChange"].capability == (
        "nes",
        "events",
        "document",
        "didChange",
    )
    assert AGENT_METHODS["nes/suggest"].result_name == "SuggestNesResponse"


def test_generated_files_are_up_to_date() -> None:
    if not schema_available():
        pytest.skip("no .schema-cache; run scripts/fetch_schema.sh")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_schema.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr + done.stdout
