"""Helpers shared by several test directories, imported as ``helpers.<module>``.

``tests/`` is on ``sys.path`` during a run (the root ``conftest.py`` puts it there), so a test
anywhere under ``tests/`` writes ``from helpers.timeouts import TIMEOUT``. This is a regular
package (it has this file) so that no installed distribution called ``helpers`` can shadow it.
Scripts that tests run as child processes (``python tests/helpers/echo_agent.py``) live here
too. The naming convention for test helpers is in ``tests/README.md``.
"""
