import pytest


@pytest.fixture
def anyio_backend() -> str:
    """pydantic-ai runs on asyncio only (``asyncio.create_task`` inside ``Agent.iter``)."""
    return "asyncio"
