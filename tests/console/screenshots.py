"""A screenshot of every console page against a three-broker cluster under load:

    python -m tests.console.screenshots OUT_DIR

The cluster (its own ZooKeeper, free ports) gets a producer writing JSON orders with headers, a consumer
group reading them more slowly than they come (so it lags), transactions committed and aborted, a broker
killed and restarted (the Controller page's events), ACLs, a SCRAM user and a quota. After a minute of
metrics the pages are taken in Debian's headless chromium: OUT_DIR/<page>.png.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

from odradek.clients import AIOAdmin, AIOConsumer, AIOProducer, NewTopic
from odradek.clients.admin.quotas import ClientQuotaAlteration, ClientQuotaEntity
from odradek.clients.admin.scram import UserScramCredentialUpsertion
from odradek.protocol.acl import (
    AccessControlEntry, AclBinding, AclOperation, AclPermissionType, ResourcePattern, ResourceType,
)
from odradek.tools.local_cluster import LocalCluster

from .browser import launch
from .console_process import CONSOLE_BROKER_OVERRIDES, ConsoleThread

LOAD_SECONDS = 60
PAGES = [("overview", "overview"), ("topics", "topics"), ("topic-orders", "topics/orders"),
         ("messages-orders", "messages/orders"), ("groups", "groups"), ("group-billing", "groups/billing"),
         ("security", "security"), ("controller", "controller")]


class Load:
    """Producers and a slow consumer group on a loop of their own, until ``stop``."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.loop = asyncio.new_event_loop()
        self.stopping = False
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._run(),), daemon=True)

    async def _setup(self) -> None:
        async with AIOAdmin(self.bootstrap) as admin:
            await admin.create_topics([NewTopic("orders", 6, 3), NewTopic("payments", 3, 2),
                                       NewTopic("audit-log", 1, 3, topic_configs={"cleanup.policy": "compact"})])
            await admin.create_acls([AclBinding(ResourcePattern(ResourceType.TOPIC, "orders"), AccessControlEntry(
                f"User:{user}", "*", op, AclPermissionType.ALLOW)) for user, op in
                [("billing", AclOperation.READ), ("shop", AclOperation.WRITE), ("auditor", AclOperation.DESCRIBE)]])
            await admin.alter_user_scram_credentials([UserScramCredentialUpsertion("shop", "SCRAM-SHA-256", "pw")])
            await admin.alter_client_quotas([ClientQuotaAlteration(ClientQuotaEntity({"user": "shop"}), [
                ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0)])])

    async def _produce(self) -> None:
        producer = AIOProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
        await producer.start()
        n = 0
        while not self.stopping:
            for _ in range(50):
                order = {"order": n, "customer": f"c-{n % 97}", "total": round(n * 1.37 % 500, 2),
                         "state": "shipped" if n % 5 == 0 else "packed"}
                await producer.send("orders", json.dumps(order).encode(), key=f"c-{n % 97}".encode(),
                                    headers=[("source", b"web" if n % 3 else b"app")])
                n += 1
            await asyncio.sleep(0.1)
        await producer.close()

    async def _transactions(self) -> None:
        producer = AIOProducer(bootstrap_servers=self.bootstrap, transactional_id="payments-writer")
        await producer.start()
        n = 0
        while not self.stopping:
            try:
                async with producer.transaction():
                    await producer.send_and_wait("payments", json.dumps({"payment": n}).encode(), partition=n % 3)
                    if n % 4 == 3:
                        raise ValueError("declined")
            except ValueError:
                pass
            n += 1
            await asyncio.sleep(0.5)
        await producer.close()

    async def _consume(self) -> None:
        consumer = AIOConsumer(bootstrap_servers=self.bootstrap, group_id="billing", auto_offset_reset="earliest",
                               max_poll_records=100)
        await consumer.subscribe(["orders"])
        await consumer.start()
        while not self.stopping:
            await consumer.getmany(timeout_ms=200, max_records=100)
            await asyncio.sleep(0.5)
        await consumer.close()

    async def _run(self) -> None:
        await self._setup()
        await asyncio.gather(self._produce(), self._transactions(), self._consume())

    def stop(self) -> None:
        self.stopping = True
        self.thread.join(30)


def take(out_dir: Path) -> None:
    from playwright.sync_api import sync_playwright

    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="console-screenshots-") as data_dir:
        cluster = LocalCluster(data_dir, 3, broker_overrides={**CONSOLE_BROKER_OVERRIDES,
                                                              "zookeeper.session.timeout.ms": "6000"},
                               metrics_base_port=0)
        with cluster:
            endpoints = [u.removeprefix("http://").removesuffix("/metrics") for u in cluster.metrics_urls]
            console = ConsoleThread(cluster.bootstrap_servers, metrics=endpoints).start()
            console.console.sampler.interval_s = 1.0
            load = Load(cluster.bootstrap_servers)
            load.thread.start()
            try:
                time.sleep(LOAD_SECONDS / 2)  # load for the plots: there is no condition to wait for
                cluster.kill_broker(2)
                cluster.start_broker(2)
                time.sleep(LOAD_SECONDS / 2)
                with sync_playwright() as playwright:
                    browser = launch(playwright)
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    for name, route in PAGES:
                        page.goto(f"{console.url}/#/{route}")
                        page.wait_for_load_state("networkidle")
                        if name == "messages-orders":
                            form = page.locator("[data-form=search]")
                            form.locator("[name=pattern]").fill("shipped")
                            form.locator("button[type=submit]").click()
                            page.locator("[data-search-status][data-state]").first.wait_for()
                            page.wait_for_function("document.querySelector('[data-search-status]')"
                                                   ".dataset.state !== 'running'")
                        page.wait_for_timeout(1500)  # the plots draw on the next animation frame
                        page.screenshot(path=str(out_dir / f"{name}.png"), full_page=True)
                        print(out_dir / f"{name}.png", flush=True)
                    browser.close()
            finally:
                load.stop()
                console.stop()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.console.screenshots OUT_DIR")
    take(Path(sys.argv[1]))
