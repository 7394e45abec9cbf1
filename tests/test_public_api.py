"""The public surface is deliberate: every public module declares what it exports."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import accord

PUBLIC_MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(accord.__path__, "accord.")
    if not any(part.startswith("_") for part in info.name.split("."))
    and info.name not in {"accord.testing.fake_openai"}
)


def test_the_public_packages_are_all_found() -> None:
    for name in (
        "accord.schema",
        "accord.jsonrpc",
        "accord.transports",
        "accord.roles",
        "accord.events",
        "accord.store",
        "accord.agent",
        "accord.client",
        "accord.engines",
        "accord.testing",
        "accord.cli",
        "accord.errors",
    ):
        assert name in PUBLIC_MODULES


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_all_is_complete_and_importable(module_name: str) -> None:
    module = importlib.import_module(module_name)
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, tuple), f"{module_name} has no __all__ tuple"
    assert len(set(exported)) == len(exported), f"{module_name}.__all__ repeats a name"
    for name in exported:
        assert not name.startswith("_"), f"{module_name} exports private {name}"
        assert hasattr(module, name), f"{module_name}.__all__ names missing {name}"


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_public_module_is_documented(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert module.__doc__ and len(module.__doc__.strip()) > 40, f"{module_name} has no docstring"
    for name in module.__all__:
        value = getattr(module, name)
        if callable(value) and getattr(value, "__module__", "").startswith("accord"):
            assert value.__doc__, f"{module_name}.{name} has no docstring"


def _exports() -> dict[str, list[tuple[str, object]]]:
    """Every exported name -> the (module, object) pairs that export it."""
    found: dict[str, list[tuple[str, object]]] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            found.setdefault(name, []).append((module_name, getattr(module, name)))
    return found


def _clashes(exports: dict[str, list[tuple[str, object]]]) -> dict[str, list[str]]:
    """Names exported by several modules as different objects: name -> those modules.

    A re-export is the same object; a type alias may be an equal one (``RequestId`` is
    ``int | str | None`` in the schema and in JSON-RPC).
    """
    return {
        name: [module for module, _ in exporters]
        for name, exporters in exports.items()
        if any(other is not exporters[0][1] and other != exporters[0][1] for _, other in exporters)
    }


#: Names that mean one thing in every module that exports one, with a different object each:
#: ``main``, a command's entry point (``accord.cli``, ``accord.testing.hostile_agent``).
_ENTRY_POINTS = frozenset({"main"})


def test_one_public_name_means_one_thing_across_packages() -> None:
    clashes = _clashes(_exports())
    assert {name: modules for name, modules in clashes.items() if name not in _ENTRY_POINTS} == {}


def test_the_collision_check_sees_a_clash() -> None:
    engines = importlib.import_module("accord.engines")
    client = importlib.import_module("accord.client")
    # Before the renames, both exported ``ToolCallStarted`` (an engine event, a client view).
    exports = {
        "ToolCallStarted": [
            ("accord.engines", engines.ToolCallStarted),
            ("accord.client", client.ToolCallAdded),
        ],
        "TextChunk": [("accord.engines", engines.TextChunk), ("accord.events", engines.TextChunk)],
        "RequestId": [("accord.schema", int | str | None), ("accord.jsonrpc", int | str | None)],
    }
    assert _clashes(exports) == {"ToolCallStarted": ["accord.engines", "accord.client"]}


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchName"):
        _ = importlib.import_module("accord.agent").NoSuchName


def _second_homes(exports: dict[str, list[tuple[str, object]]]) -> dict[str, list[str]]:
    """Names exported as the same object from packages that are not one inside the other.

    A package may export what its own public submodule defines (``accord.schema`` and
    ``accord.schema.methods``); exporting another package's name again is a second home.
    """
    found: dict[str, list[str]] = {}
    for name, exporters in exports.items():
        first = exporters[0][1]
        modules = sorted({module for module, value in exporters if value is first})
        tops = {m for m in modules if not any(m.startswith(f"{o}.") for o in modules if o != m)}
        if len(tops) > 1:
            found[name] = sorted(tops)
    return found


#: Names with two homes on purpose: ``ToolCallState`` is the one model of a tool call, defined
#: with the engine contract and handed to client code as its view of a call; the client side
#: (``accord.cli``, ``accord.tui``, users of ``accord.client``) may not import ``accord.engines``.
_SHARED_WITH_THE_CLIENT = {"ToolCallState": ["accord.client", "accord.engines"]}


def test_every_public_name_has_one_home() -> None:
    homes = _second_homes(_exports())
    homes = {name: modules for name, modules in homes.items() if name not in _ENTRY_POINTS}
    assert homes == _SHARED_WITH_THE_CLIENT


def test_the_home_check_sees_a_re_export() -> None:
    engines = importlib.import_module("accord.engines")
    exports = {
        "TextChunk": [("accord.engines", engines.TextChunk), ("accord.events", engines.TextChunk)],
        "MethodSpec": [("accord.schema", object), ("accord.schema.methods", object)],
        "RequestId": [("accord.schema", int | str | None), ("accord.jsonrpc", int | str | None)],
    }
    assert _second_homes(exports) == {"TextChunk": ["accord.engines", "accord.events"]}
