"""The wire models are defined on first use: a process pays only for the models it touches."""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest
from helpers.timeouts import TIMEOUT

import accord.schema
from accord.schema import _generated_v1
from accord.schema.methods import AGENT_METHODS, CLIENT_METHODS

SOURCE = Path(_generated_v1.__file__)


def _fresh_models() -> types.ModuleType:
    """A private copy of the generated module, with nothing defined yet."""
    module = types.ModuleType("accord.schema._generated_v1_copy")
    module.__file__ = str(SOURCE)
    module.__package__ = "accord.schema"
    exec(_CODE, module.__dict__)
    return module


_CODE = compile(SOURCE.read_text(encoding="utf-8"), str(SOURCE), "exec")


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=TIMEOUT
    )
    return result.stdout.strip()


def test_importing_the_schema_or_the_roles_defines_only_what_they_use() -> None:
    out = _run(
        "import accord.schema as s, accord.schema._generated_v1 as g\n"
        "defined = lambda: sorted(n for n in g.__all__ if n in vars(g))\n"
        "print(len(defined()))\n"
        "import accord.roles\n"
        "print(len(defined()), 'InitializeRequest' in defined(), 'ToolCall' in defined(),"
        " 'SuggestNesRequest' in defined())\n"
        "s.SessionNotification\n"
        "print('ToolCall' in defined(), 'CreateElicitationRequest' in defined())\n"
    )
    nothing, roles, update = out.splitlines()
    assert nothing == "0"
    count, has_initialize, has_tool_call, has_suggest = roles.split()
    assert (has_initialize, has_tool_call, has_suggest) == ("True", "False", "False")
    # initialize's models: the capability trees (NES's twenty capability markers among them).
    assert 0 < int(count) < len(_generated_v1.__all__) // 3
    # session/update needs its whole union (tool calls among it), not the unrelated methods.
    assert update == "True False"


def test_every_name_can_be_defined_alone() -> None:
    # Each in a module where nothing else is defined yet: a definer that forgot to define
    # something it uses would raise NameError here.
    for name in _generated_v1.__all__:
        module = _fresh_models()
        value = getattr(module, name)
        assert value is not None, name
        if isinstance(value, type) and value.__module__ == module.__name__:
            assert value.__name__ in module.__all__  # itself, or the class it aliases


def test_the_names_are_the_same_objects_through_the_package() -> None:
    assert accord.schema.TextContentBlock is _generated_v1.TextContentBlock
    assert "SessionNotification" in dir(accord.schema)
    assert set(_generated_v1.__all__) <= set(dir(_generated_v1))


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    with pytest.raises(AttributeError, match=r"accord\.schema.*NoSuchModel"):
        accord.schema.NoSuchModel  # noqa: B018


def test_two_threads_asking_for_one_model_get_the_same_class() -> None:
    module = _fresh_models()
    barrier = threading.Barrier(8)
    seen: list[type] = []

    def ask() -> None:
        barrier.wait()
        seen.append(module.SessionNotification)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8 and len({id(cls) for cls in seen}) == 1


def test_models_pickle_by_their_module_name() -> None:
    block = accord.schema.TextContentBlock(text="hi")
    assert pickle.loads(pickle.dumps(block)) == block
    assert type(block).__qualname__ == "TextContentBlock"


def test_method_tables_name_their_models_and_resolve_them_on_use() -> None:
    out = _run(
        "import accord.schema._generated_v1 as g\n"
        "from accord.schema.methods import AGENT_METHODS\n"
        "spec = AGENT_METHODS['session/prompt']\n"
        "print(spec.params_name, 'PromptRequest' in vars(g))\n"
        "print(spec.params_type.__name__, spec.result_type.__name__, 'PromptRequest' in vars(g))\n"
    )
    assert out.splitlines() == ["PromptRequest False", "PromptRequest PromptResponse True"]
    for spec in [*AGENT_METHODS.values(), *CLIENT_METHODS.values()]:
        assert spec.params_type.__name__ == spec.params_name
        result = spec.result_type
        assert (result.__name__ if result else None) == spec.result_name
