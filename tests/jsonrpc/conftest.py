import pytest


@pytest.fixture(params=["memory", "pipe"])
def kind(request: pytest.FixtureRequest) -> str:
    """The transport under a connection test: the in-memory pair or NDJSON over OS pipes."""
    return request.param
