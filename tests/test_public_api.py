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
