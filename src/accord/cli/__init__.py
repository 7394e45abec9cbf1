"""The ``accord`` command line: ``serve``, ``run`` and ``sessions``.

Each subcommand lives in its own module and imports what it needs only when it runs, so
``accord serve`` answers ``initialize`` quickly and ``accord --help`` is instant. This package
sits at the top: it uses the client library (``accord.client``), the agent runtime
(``accord.agent``) and the coding agent (``accord.coder``).
"""

from ._exit_codes import ExitCode as ExitCode
from ._main import main as main

__all__ = ("ExitCode", "main")
