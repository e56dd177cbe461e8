"""Connection limits, as Kafka 2.8's ConnectionQuotas (SocketServer.scala).

- ``max.connections.per.ip`` (``max.connections.per.ip.overrides`` per host or IP): a new connection from an
  address that already has that many is closed at once, after it was accepted (Kafka's
  TooManyConnectionsException in the acceptor).
- ``max.connections``: while the broker holds that many, acceptors stop accepting and wait until one
  closes (Kafka's waitForConnectionSlot); the clients beyond it wait in the listen backlog.
- With more than one listener the inter-broker listener is exempt: it always gets a slot, and when its
  connections push the total over the limit, the least recently active connection of another listener
  is closed (Kafka's maxConnectionsExceeded / closeExcessConnections).
``max.connection.creation.rate`` is not implemented (warned about as a setting Odradek does not support).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Callable, Iterable, Mapping


class TooManyConnectionsError(Exception):
    def __init__(self, address: str, limit: int) -> None:
        super().__init__(f"{address} already has the maximum of {limit} connections")
        self.address = address
        self.limit = limit


def normalised(address: str) -> str:
    """One spelling per address (IPv4-mapped IPv6 addresses as IPv4), as InetAddress compares them."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.compressed


def resolve_overrides(overrides: Mapping[str, int], resolve: Callable[[str], str] = socket.gethostbyname
                      ) -> dict[str, int]:
    """Host names become addresses once, at start-up (Kafka's InetAddress.getByName)."""
    return {normalised(resolve(host)): count for host, count in overrides.items()}


class ConnectionQuotas:
    def __init__(self, max_connections: int, max_per_ip: int, overrides: Mapping[str, int],
                 inter_broker_listener: str, listeners: Iterable[str]) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides)
        names = set(listeners)
        # Kafka's protectedListener: only when there is another listener to protect it from.
        self.protected_listener = inter_broker_listener if len(names) > 1 else None
        self.total = 0
        self._per_ip: dict[str, int] = {}
        self._waiters: list[asyncio.Future] = []
        self.on_excess: Callable[[], None] | None = None  # closes one connection of an unprotected listener

    def limit_for(self, address: str) -> int:
        return self.overrides.get(address, self.max_per_ip)

    def count(self, address: str) -> int:
        return self._per_ip.get(normalised(address), 0)

    def slot_available(self, listener: str) -> bool:
        return listener == self.protected_listener or self.total < self.max_connections

    async def wait_for_slot(self, listener: str) -> None:
        while not self.slot_available(listener):
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def inc(self, listener: str, address: str) -> None:
        """Count a new connection; TooManyConnectionsError (after counting it, as Kafka: the caller closes the
        connection, which takes it off again) when its address is over its limit."""
        address = normalised(address)
        count = self._per_ip.get(address, 0)
        self._per_ip[address] = count + 1
        self.total += 1
        if listener == self.protected_listener and self.total > self.max_connections and self.on_excess:
            self.on_excess()
        limit = self.limit_for(address)
        if count >= limit:
            raise TooManyConnectionsError(address, limit)

    def dec(self, listener: str, address: str) -> None:
        address = normalised(address)
        count = self._per_ip.get(address, 0)
        if count <= 1:
            self._per_ip.pop(address, None)
        else:
            self._per_ip[address] = count - 1
        self.total = max(0, self.total - 1)
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    def max_connections_exceeded(self, listener: str) -> bool:
        return self.total > self.max_connections and listener != self.protected_listener
