"""The plain install (without the ``coder`` extra) in a fresh virtual environment.

The wheel is built from this checkout (``pip wheel --no-deps --no-build-isolation``, so no
network) and installed with ``--no-index`` into a new venv that has none of the shared venv's
packages: only accord's core dependencies are made visible to it (a ``.pth`` file naming a
directory of links to exactly those distributions), so pydantic-ai is truly absent. Then the
installed ``accord`` is run as a user would, and ``accord serve`` is driven over ACP.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

import pytest
from _cli_support import ROOT
from helpers.timeouts import SCENARIO_TIMEOUT, TIMEOUT

from accord.cli import ExitCode
from accord.client import connect
from accord.errors import RequestError

pytestmark = [
    pytest.mark.asyncio_only("the command line runs on asyncio"),
    pytest.mark.subprocess,
    pytest.mark.timeout(300),
]

CORE = ("anyio", "pydantic", "orjson", "uuid-utils", "platformdirs")
EXTRA_MISSING = 'the accord coding agent needs the "coder" extra: pip install "accord[coder]"'


def _closure(names: tuple[str, ...]) -> dict[str, Distribution]:
    """The installed distributions ``names`` need, with their own requirements (no extras)."""
    found: dict[str, Distribution] = {}
    todo = list(names)
    while todo:
        name = re.split(r"[ ;<>=!~\[]", todo.pop(), maxsplit=1)[0].lower().replace("_", "-")
        if name in found:
            continue
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue  # an optional or platform-specific requirement
        found[name] = dist
        todo += [req for req in dist.requires or () if "extra ==" not in req]
    return found


def _link_core(target: Path) -> None:
    """Links in ``target`` to the core distributions' top-level files and metadata."""
    target.mkdir()
    for dist in _closure(CORE).values():
        tops = {Path(str(f)).parts[0] for f in dist.files or () if not str(f).startswith("..")}
        for top in tops:
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (target / top).exists() and top != "__pycache__":
                (target / top).symlink_to(source)


@pytest.fixture(scope="module")
def plain_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the accord wheel installed, without the coder extra."""
    root = tmp_path_factory.mktemp("install")
    wheels = root / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*build, "-q", "-w", str(wheels), str(ROOT)], check=True, timeout=SCENARIO_TIMEOUT
    )  # a build
    (wheel,) = wheels.glob("accord-*.whl")
    venv = root / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=TIMEOUT)
    (site,) = venv.glob("lib/python*/site-packages")
    _link_core(root / "core")
    (site / "core.pth").write_text(str(root / "core") + "\n")
    install = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install"]
    subprocess.run(
        [*install, "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=SCENARIO_TIMEOUT,
    )  # a build
    return venv


def _run(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "ACCORD_", "VIRTUAL_ENV"))
    }
    env.update(OPENAI_API_KEY="test-key", ACCORD_CONFIG=os.devnull + ".missing")
    return subprocess.run(
        [str(venv / "bin" / "accord"), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=venv,
        timeout=TIMEOUT,
        check=False,
    )


def test_the_wheel_says_what_it_needs_and_reads_as_a_package_page(plain_venv: Path) -> None:
    (wheel,) = plain_venv.parent.glob("wheels/accord-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = archive.read(name).decode()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    core = [line for line in requires if "extra ==" not in line]
    assert sorted(line.split()[1].split(">")[0] for line in core) == sorted(CORE)
    assert any("pydantic-ai" in line and "coder" in line for line in requires)
    description = metadata.split("\n\n", 1)[1]
    assert description.startswith("# accord\n")
    assert "## Install" in description and "make demo" not in description


def test_the_plain_install_runs_and_has_no_pydantic_ai(plain_venv: Path) -> None:
    python = plain_venv / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import pydantic_ai"], capture_output=True)
    assert probe.returncode != 0
    done = _run(plain_venv, "--version")
    assert done.returncode == ExitCode.OK
    assert done.stdout.startswith("accord 0.")


def test_run_with_a_model_says_in_one_line_to_install_the_extra(plain_venv: Path) -> None:
    done = _run(plain_venv, "run", "--model", "openai:gpt-5", "hi")
    assert done.returncode == ExitCode.ERROR
    assert done.stderr == f"accord: {EXTRA_MISSING} (or use another agent: --agent)\n"
    assert done.stdout == ""


@pytest.mark.anyio
async def test_serve_answers_session_new_with_the_extra_to_install(
    plain_venv: Path, tmp_path: Path
) -> None:
    command = [str(plain_venv / "bin" / "accord"), "serve", "--model", "openai:gpt-5"]
    command += ["--store", str(tmp_path / "s.db")]
    env = {"OPENAI_API_KEY": "test-key", "PYTHONPATH": "", "ACCORD_CONFIG": str(tmp_path / "x")}
    async with connect(command, env=env) as conn:
        with pytest.raises(RequestError) as raised:
            await conn.new_session(tmp_path)
    assert EXTRA_MISSING in raised.value.message
    assert "ModuleNotFoundError" not in str(raised.value)
