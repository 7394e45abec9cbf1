"""Validate whole JSON-RPC messages against the official ACP v1 JSON Schema (a test helper).

`WireValidator` loads the schema once (`helpers.acp_schema.load_schema()`: the pinned SDK
release's `schema.unstable.json` with its supplements, next edit suggestions and document sync
from an older release, see `scripts/schema_sources.py`) and checks, per message:

* the JSON-RPC envelope (`jsonrpc: "2.0"`, id type, exactly one of result/error);
* requests and notifications: `params` against the def of the method's params type, found
  through accord's method tables (`params_type.__name__` is the def name);
* responses: `result` against the result def of the request with that id, remembered per
  direction by `note_request` (`validate` notes requests itself); errors against `Error`.

Methods starting with `_` (extensions) and methods the tables do not know are not checked
(the schema allows any method name: `ExtRequest` / `ExtNotification` are `{}`), unless the
validator is built with `strict_methods=True`.

A direction is the side of the observing connection: `"sent"` or `"received"`. A response
sent answers a request received, and the other way round. With both peers in one process
every message is seen twice (once sent, once received), which is consistent.

Failures raise `AssertionError` with a readable message. Not a test module: imported by
`tests/conftest.py` and the schema tests.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from typing import Any, Literal, cast

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.exceptions import best_match as _best_match  # pyright: ignore[reportUnknownVariableType]
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

try:
    import jsonschema_rs as _jsonschema_rs
except ImportError:  # pragma: no cover - the pure-Python validator still works
    _jsonschema_rs = None

from accord.schema.methods import AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS, MethodSpec
from helpers.acp_schema import load_schema

__all__ = ("Direction", "WireValidator")

SCHEMA_URI = "urn:acp:schema:v1"

Direction = Literal["sent", "received"]
_OPPOSITE: dict[Direction, Direction] = {"sent": "received", "received": "sent"}

# How many unanswered requests to remember per (direction, id): ids are reused across the
# connections of one process, so an id may be pending more than once.
_MAX_PENDING_PER_ID = 64


def _specs_by_method() -> dict[tuple[str, str], MethodSpec]:
    specs: dict[tuple[str, str], MethodSpec] = {}
    for table in (AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS):
        for spec in table.values():
            specs[spec.method, spec.kind] = spec
    return specs


def _short(value: Any, limit: int = 600) -> str:
    text = json.dumps(value, sort_keys=True, default=repr)
    return text if len(text) <= limit else text[:limit] + "..."


class WireValidator:
    """Checks JSON-RPC messages against the ACP v1 (unstable) schema; see the module doc."""

    def __init__(
        self, schema: Mapping[str, Any] | None = None, *, strict_methods: bool = False
    ) -> None:
        self.schema: Mapping[str, Any] = load_schema() if schema is None else schema
        self.defs: Mapping[str, Any] = self.schema["$defs"]
        resource: Resource[Any] = DRAFT202012.create_resource(self.schema)
        empty: Registry[Any] = Registry()
        self._registry: Registry[Any] = empty.with_resource(SCHEMA_URI, resource)
        self._validators: dict[str, Draft202012Validator] = {}
        self._fast: dict[str, Any] = {}
        self._specs = _specs_by_method()
        self._pending: dict[tuple[Direction, Any], deque[str]] = defaultdict(deque)
        self.strict_methods = strict_methods

    # ------------------------------------------------------------------ defs

    def validator_for(self, def_name: str) -> Draft202012Validator:
        """The compiled validator of one `$defs` entry (cached)."""
        validator = self._validators.get(def_name)
        if validator is None:
            if def_name not in self.defs:
                raise KeyError(f"the schema has no $defs/{def_name}")
            validator = Draft202012Validator(
                {"$ref": f"{SCHEMA_URI}#/$defs/{def_name}"}, registry=self._registry
            )
            self._validators[def_name] = validator
        return validator

    def _fast_is_valid(self, def_name: str, value: Any) -> bool:
        """Check with jsonschema-rs (compiled, ~100x faster) when it is installed."""
        if _jsonschema_rs is None:
            return False
        fast = self._fast.get(def_name)
        if fast is None:
            if def_name not in self.defs:
                raise KeyError(f"the schema has no $defs/{def_name}")
            fast = _jsonschema_rs.validator_for(
                {
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "$ref": f"#/$defs/{def_name}",
                    "$defs": self.defs,
                }
            )
            self._fast[def_name] = fast
        return bool(fast.is_valid(value))

    def check_def(self, def_name: str, value: Any, *, context: str = "") -> None:
        """Raise AssertionError unless `value` is valid against `$defs/<def_name>`."""
        if self._fast_is_valid(def_name, value):
            return
        validator = self.validator_for(def_name)
        errors: list[ValidationError] = list(
            validator.iter_errors(value)  # pyright: ignore[reportUnknownMemberType]
        )
        if errors:
            raise AssertionError(self._describe(def_name, value, errors, context))

    @staticmethod
    def _describe(def_name: str, value: Any, errors: list[ValidationError], context: str) -> str:
        error = cast("ValidationError", _best_match(errors))
        where: list[Any] = list(cast("Iterable[Any]", error.absolute_path))
        schema_path: list[Any] = list(cast("Iterable[Any]", error.schema_path))
        message = error.message
        path = "".join(f"[{p!r}]" for p in where) or "(top level)"
        head = f"{context}: " if context else ""
        return (
            f"{head}not a valid {def_name} at {path}: {message}\n"
            f"  ({len(errors)} error(s); schema path {'/'.join(map(str, schema_path))})\n"
            f"  value: {_short(value)}"
        )

    # -------------------------------------------------------------- messages

    def note_request(self, message: Mapping[str, Any], direction: Direction) -> None:
        """Remember `id -> method` of a request seen in `direction` (for its response)."""
        pending = self._pending[direction, self._id_key(message.get("id"))]
        pending.append(message["method"])
        if len(pending) > _MAX_PENDING_PER_ID:
            pending.popleft()

    def validate(self, message: Any, direction: Direction) -> None:
        """Validate one JSON-RPC message seen in `direction`; raise AssertionError if bad."""
        if not isinstance(message, Mapping):
            raise AssertionError(f"{direction}: a JSON-RPC message must be an object: {message!r}")
        msg: Mapping[str, Any] = message  # pyright: ignore[reportUnknownVariableType]
        context = f"{direction} {_short(msg, 200)}"
        if msg.get("jsonrpc") != "2.0":
            raise AssertionError(f"{context}: jsonrpc must be '2.0'")
        if "method" in msg:
            self._validate_call(msg, direction)
        elif "result" in msg or "error" in msg:
            self._validate_response(msg, direction)
        else:
            raise AssertionError(f"{context}: neither a request, a notification nor a response")

    def _validate_call(self, msg: Mapping[str, Any], direction: Direction) -> None:
        method = msg["method"]
        if not isinstance(method, str):
            raise AssertionError(f"{direction}: method must be a string: {_short(msg)}")
        is_request = "id" in msg
        if is_request:
            self.check_def("RequestId", msg["id"], context=f"{direction} {method} id")
            self.note_request(msg, direction)
        if "result" in msg or "error" in msg:
            raise AssertionError(f"{direction} {method}: a call carries no result/error")
        kind = "request" if is_request else "notification"
        spec = self._specs.get((method, kind))
        if spec is None:
            other = "notification" if is_request else "request"
            if method.startswith("_") or not self.strict_methods:
                if (method, other) in self._specs:
                    raise AssertionError(f"{direction}: {method} is a {other}, sent as a {kind}")
                return
            raise AssertionError(f"{direction}: unknown method {method!r} ({kind})")
        params = msg.get("params")
        self.check_def(
            spec.params_type.__name__,
            {} if params is None else params,
            context=f"{direction} {method} {kind} params",
        )

    def _validate_response(self, msg: Mapping[str, Any], direction: Direction) -> None:
        if "id" not in msg:
            raise AssertionError(f"{direction}: a response needs an id: {_short(msg)}")
        if "result" in msg and "error" in msg:
            raise AssertionError(f"{direction}: a response has result or error, not both")
        request_id = msg["id"]
        self.check_def("RequestId", request_id, context=f"{direction} response id")
        pending = self._pending.get((_OPPOSITE[direction], self._id_key(request_id)))
        if "error" in msg:
            self.check_def("Error", msg["error"], context=f"{direction} error response")
            if pending:
                pending.popleft()
            return
        if not pending:
            # A response to a request this validator never saw (e.g. validated in isolation).
            return
        result = msg["result"]
        failures: list[str] = []
        for index, method in enumerate(pending):
            spec = self._specs.get((method, "request"))
            if spec is None or spec.result_type is None:  # extension or unknown method
                del pending[index]
                return
            try:
                self.check_def(
                    spec.result_type.__name__, result, context=f"{direction} {method} result"
                )
            except AssertionError as error:
                failures.append(str(error))
            else:
                del pending[index]
                return
        raise AssertionError("\n".join(failures))

    @staticmethod
    def _id_key(request_id: Any) -> Any:
        # JSON distinguishes 1 and "1"; Python dicts would not distinguish 1 and 1.0 / True.
        return (type(request_id).__name__, request_id)
