import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every async test here on asyncio and on trio."""
    return request.param


@pytest.fixture(params=["memory", "pipe"])
def kind(request: pytest.FixtureRequest) -> str:
    """The transport under a connection test: the in-memory pair or NDJSON over OS pipes."""
    return request.param
