"""The public surface of ``accord.store``: complete, sorted, documented."""

from __future__ import annotations

import inspect

import accord.store


def test_all_is_sorted_complete_and_public() -> None:
    exported = accord.store.__all__
    assert list(exported) == sorted(exported, key=lambda name: (not name.isupper(), name))
    assert all(not name.startswith("_") for name in exported)
    for name in exported:
        assert hasattr(accord.store, name), name
    public = {
        name
        for name, value in vars(accord.store).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public == set(exported)


def test_every_public_name_is_documented() -> None:
    for name in accord.store.__all__:
        value = getattr(accord.store, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), name
            for attribute, member in vars(value).items():
                if inspect.isfunction(member) and not attribute.startswith("_"):
                    assert inspect.getdoc(member), f"{name}.{attribute}"
