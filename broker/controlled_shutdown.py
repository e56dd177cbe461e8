"""The broker's side of controlled shutdown (Kafka 2.8's KafkaServer.controlledShutdown).

Before stopping, a broker asks the controller (found in /controller, reached through the
inter-broker listener) to move its leaderships away and take it out of the ISRs. It asks again
after ``controlled.shutdown.retry.backoff.ms`` while the controller cannot be reached, answers with
an error, or still lists partitions the broker leads, at most ``controlled.shutdown.max.retries``
times; then the broker stops anyway (an unclean shutdown for the partitions it still leads).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..clients.connection import BrokerConnection
from ..protocol.messages import ControlledShutdownRequest

if TYPE_CHECKING:
    from .config import KafkaConfig
    from ..controller.zk_client import KafkaZkClient

log = logging.getLogger(__name__)

Connector = Callable[..., Awaitable[BrokerConnection]]


async def _blocking(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


async def _attempt(zk: KafkaZkClient, broker_id: int, broker_epoch: int, listener: str, timeout_s: float,
                   connect: Connector) -> tuple[bool, str]:
    """One request to the current controller: (done, why not)."""
    controller_id = await _blocking(zk.get_controller_id)
    if controller_id is None:
        return False, "no controller"
    info = await _blocking(zk.get_broker, controller_id)
    endpoint = info.endpoint(listener) if info is not None else None
    if endpoint is None:
        return False, f"controller {controller_id} has no {listener} endpoint registered"
    conn = await connect(endpoint[0] or "localhost", endpoint[1], client_id=f"broker-{broker_id}-controlled-shutdown",
                         timeout=timeout_s)
    try:
        response = await conn.send(ControlledShutdownRequest(broker_id=broker_id, broker_epoch=broker_epoch),
                                   timeout=timeout_s)
    finally:
        await conn.close()
    if response.error_code != 0:
        return False, f"controller {controller_id} answered error {response.error_code}"
    remaining = [(p.topic_name, p.partition_index) for p in response.remaining_partitions]
    if remaining:
        return False, f"{len(remaining)} partitions still led by this broker: {sorted(remaining)[:20]}"
    return True, ""


async def controlled_shutdown(config: KafkaConfig, zk: KafkaZkClient, broker_id: int, broker_epoch: Callable[[], int],
                              connect: Connector = BrokerConnection.connect) -> bool:
    """Ask the controller until it has moved everything away; True on success, False when the retries
    ran out (or controlled shutdown is disabled). Never raises for a failed attempt."""
    if not config.get("controlled.shutdown.enable"):
        return False
    retries = config.get("controlled.shutdown.max.retries")
    backoff_s = config.get("controlled.shutdown.retry.backoff.ms") / 1000
    timeout_s = config.get("controller.socket.timeout.ms") / 1000
    listener = config.inter_broker_listener_name
    log.info("Broker %d: starting controlled shutdown", broker_id)
    began = time.monotonic()
    for attempt in range(1, retries + 1):
        try:
            done, why = await _attempt(zk, broker_id, broker_epoch(), listener, timeout_s, connect)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # ZooKeeper or the connection failed: the next attempt may get through
            done, why = False, f"{type(e).__name__}: {e}"
        if done:
            log.info("Broker %d: controlled shutdown succeeded in %d ms", broker_id,
                     (time.monotonic() - began) * 1000)
            return True
        log.warning("Broker %d: controlled shutdown attempt %d of %d failed (%s)", broker_id, attempt, retries, why)
        if attempt < retries:
            await asyncio.sleep(backoff_s)
    log.warning("Broker %d: proceeding with an unclean shutdown after %d controlled shutdown attempts", broker_id,
                retries)
    return False
