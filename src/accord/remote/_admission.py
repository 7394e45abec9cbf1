"""Sockets that have not shown the token yet: bounded per address and in all, oldest out first.

Anyone who can reach the port can open sockets and send nothing, or trickle a request head a
byte at a time. Each such socket costs the server a task, an h11 parser and a file descriptor
until the request timeout ends it. :class:`Admission` bounds how many there are: per client
address (an IPv6 client counts by its /64, the block one host usually gets) and in all. A new
socket over a bound is not refused; the *oldest* unauthenticated socket of that address (or of
the whole server) is closed instead. A flood therefore only ever evicts itself: a real client
shows its token in its first request, one round trip after connecting, and leaves the pool
before the flood's newer sockets could push it out; refusing new sockets instead would let a
flood that came first lock every real client out.

Above: :mod:`._server`. Below: anyio.
"""

from __future__ import annotations

import ipaddress
import logging
from collections import OrderedDict
from typing import cast

import anyio

__all__ = ("Admission", "Ticket", "address_key")

_log = logging.getLogger("accord.remote")


def address_key(address: object) -> str:
    """The bucket a client address counts in: the IPv4 address, or the IPv6 /64."""
    host: object = address
    if isinstance(address, tuple):
        parts = cast("tuple[object, ...]", address)
        host = parts[0] if parts else ""
    text = str(host)
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return text
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class Ticket:
    """One unauthenticated socket's place in the pool; its scope is cancelled on eviction."""

    __slots__ = ("_admission", "address", "pooled", "scope")

    def __init__(self, admission: Admission, address: str) -> None:
        """A ticket for a socket from ``address`` (see :func:`address_key`)."""
        self._admission = admission
        self.address = address
        self.scope = anyio.CancelScope()
        self.pooled = True

    def authenticated(self) -> None:
        """The socket showed the token: it leaves the pool and can no longer be evicted."""
        self._admission.remove(self)

    def release(self) -> None:
        """The socket is closed."""
        self._admission.remove(self)


class Admission:
    """The pool of unauthenticated sockets, bounded per address and in all."""

    def __init__(self, *, per_address: int, total: int) -> None:
        """At most ``per_address`` sockets per address, ``total`` in all (both at least 1).

        Raises:
            ValueError: a bound is below 1.
        """
        if per_address < 1 or total < 1:
            raise ValueError("the unauthenticated socket bounds must be at least 1")
        self._per_address = per_address
        self._total = total
        self._all: OrderedDict[Ticket, None] = OrderedDict()
        self._by_address: dict[str, OrderedDict[Ticket, None]] = {}
        self.evicted = 0

    def __len__(self) -> int:
        """How many unauthenticated sockets are held."""
        return len(self._all)

    def admit(self, address: str) -> Ticket:
        """A ticket for a new socket from ``address``, evicting the oldest over a bound."""
        same = self._by_address.setdefault(address, OrderedDict())
        if len(same) >= self._per_address:
            self._evict(next(iter(same)))
        if len(self._all) >= self._total:
            self._evict(next(iter(self._all)))
        ticket = Ticket(self, address)
        same[ticket] = None
        self._all[ticket] = None
        return ticket

    def remove(self, ticket: Ticket) -> None:
        """Take ``ticket`` out of the pool (idempotent)."""
        if not ticket.pooled:
            return
        ticket.pooled = False
        self._all.pop(ticket, None)
        same = self._by_address.get(ticket.address)
        if same is not None:
            same.pop(ticket, None)
            if not same:
                del self._by_address[ticket.address]

    def _evict(self, ticket: Ticket) -> None:
        self.remove(ticket)
        ticket.scope.cancel()
        self.evicted += 1
        _log.debug("closed the oldest unauthenticated socket from %s", ticket.address)
