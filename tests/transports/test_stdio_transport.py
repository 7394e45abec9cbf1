"""``stdio_transport`` in this process, over pipes standing in for stdin and stdout.

The real thing (fds 0 and 1 of a child, a stray ``print()``) is in ``test_subprocess.py``.
"""

from __future__ import annotations

import os

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.transports import stdio_transport

pytestmark = pytest.mark.anyio


async def test_stdio_transport_over_pipes_round_trips_and_keeps_the_descriptors() -> None:
    in_read, in_write = os.pipe()  # what the client writes, the agent's stdin
    out_read, out_write = os.pipe()  # the agent's stdout, what the client reads
    try:
        transport = stdio_transport(stdin_fd=in_read, stdout_fd=out_write, protect_stdout=False)
        with anyio.fail_after(TIMEOUT):
            os.write(in_write, b'{"jsonrpc": "2.0", "id": 0, "method": "m"}\n')
            assert await transport.receive() == {"jsonrpc": "2.0", "id": 0, "method": "m"}
            await transport.send({"jsonrpc": "2.0", "id": 0, "result": {}})
            assert os.read(out_read, 1000) == b'{"jsonrpc":"2.0","id":0,"result":{}}\n'
            os.close(in_write)
            in_write = -1
            with pytest.raises(anyio.EndOfStream):
                await transport.receive()
            await transport.aclose()
        # The transport wrote through a duplicate and closed only that: the process's own
        # descriptors stay open (and blocking, as they were).
        os.fstat(out_write)
        os.fstat(in_read)
        assert os.get_blocking(in_read)
        assert os.get_blocking(out_write)
    finally:
        for fd in (in_read, in_write, out_read, out_write):
            if fd >= 0:
                os.close(fd)
