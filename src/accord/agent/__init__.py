"""The agent runtime: serves an engine to ACP clients (sessions, controls, permissions).

Placeholder: the runtime is not written yet. The engine protocol lives in ``._engine`` and will
be re-exported from here together with the runtime. Below: ``accord.roles``, ``accord.events``,
``accord.store``. Above: ``accord.engines`` (adapters) and ``accord.coder``.
"""
