"""Unauthenticated sockets count by address: an IPv4 address, an IPv6 client by its /64.

SECURITY.md: at most 32 sockets that have not shown the token are kept per client address,
"an IPv6 client counts by its /64", and over the bound the oldest of that address is closed.
Loopback gives a test one IPv6 address (``::1``), so the bucket is checked on the pool itself
(``accord.remote._admission``, the one the server admits every socket through; a ticket's
cancel scope needs an event loop): a flood
from 33 addresses of one /64 evicts its own oldest socket, 33 addresses in 33 different /64s
evict nothing; scope ids and IPv4-mapped addresses land in the bucket they name.
"""

from __future__ import annotations

import pytest

from accord.remote import ServerLimits
from accord.remote._admission import Admission, address_key


def test_an_ipv6_client_counts_by_its_64() -> None:
    same = {address_key((f"2001:db8:1:2:{n:x}::{n:x}", 443, 0, 0)) for n in range(1, 200)}
    assert same == {"2001:db8:1:2::/64"}
    assert address_key(("2001:db8:1:3::1", 443, 0, 0)) == "2001:db8:1:3::/64"
    assert address_key(("fe80::1%eth0", 443, 0, 2)) == address_key(("fe80::2%lo", 443, 0, 1))
    assert address_key(("::ffff:192.0.2.7", 443, 0, 0)) == address_key(("192.0.2.7", 443))
    assert address_key(("192.0.2.7", 443)) != address_key(("192.0.2.8", 443))


@pytest.mark.anyio
async def test_a_flood_from_one_64_evicts_its_own_oldest_and_nobody_else() -> None:
    limits = ServerLimits()
    per_address = limits.max_unauthenticated_per_address
    assert per_address == 32
    pool = Admission(per_address=per_address, total=limits.max_unauthenticated)
    bystander = pool.admit(address_key(("2001:db8:9::1", 443, 0, 0)))
    flood = [
        pool.admit(address_key((f"2001:db8:1:2::{n:x}", 443, 0, 0)))
        for n in range(1, per_address + 2)
    ]
    assert [t.scope.cancel_called for t in flood] == [True] + [False] * per_address
    assert not bystander.scope.cancel_called
    assert pool.evicted == 1 and len(pool) == per_address + 1


@pytest.mark.anyio
async def test_clients_in_different_64s_do_not_evict_each_other() -> None:
    limits = ServerLimits()
    pool = Admission(
        per_address=limits.max_unauthenticated_per_address, total=limits.max_unauthenticated
    )
    tickets = [
        pool.admit(address_key((f"2001:db8:{n:x}::1", 443, 0, 0)))
        for n in range(limits.max_unauthenticated_per_address + 1)
    ]
    assert not any(t.scope.cancel_called for t in tickets)
    assert pool.evicted == 0
