"""End to end in a real headless browser (Debian's chromium, driven by Playwright) against a real cluster:
the pages as a user works them. ``-m "not browser"`` leaves these out. Playwright's sync API keeps an event
loop in the test's thread, so the tests' own client calls run on the console thread's loop."""

from __future__ import annotations

import os
import re

import pytest

from odradek.clients import AIOAdmin, AIOConsumer, NewTopic, TopicPartition
from odradek.protocol.errors import ClusterAuthorizationFailedError
from tests.integration.helpers import wait_until

from .browser import CHROMIUM, launch

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no chromium at {CHROMIUM} (tests/run.sh "
                                                                        "installs Debian's)")]
WAIT_MS = 30_000


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, console):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], "the page raised JavaScript errors"


def open_page(page, console, route):
    page.goto(f"{console.url}/#/{route}")


def submit(form, **values):
    for name, value in values.items():
        field = form.locator(f"[name={name}]")
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        elif field.get_attribute("type") == "checkbox":
            field.set_checked(bool(value))
        else:
            field.fill(value)
    form.locator("button[type=submit]").click()


def test_create_topic_produce_and_find_the_record_with_the_filter(page, console):
    open_page(page, console, "topics")
    submit(page.locator("[data-panel=create-topic] form"), name="e2e-orders", partitions="2")
    page.locator("[data-panel=create-topic] .note.ok").wait_for()
    page.locator("[data-topic=e2e-orders] a").click()
    page.locator("[data-panel=partitions] [data-partition='1']").wait_for()
    page.get_by_text("messages →").click()
    produce = page.locator("[data-form=produce]")
    for key, value in [("o-1", "order 1 packed"), ("o-42", '{"order": 42, "state": "shipped"}'), ("o-7", "order 7")]:
        submit(produce, key=key, value=value, headers="source=e2e")
        page.locator("[data-form=produce] .note.ok").filter(has_text="written to partition").wait_for()
        produce.locator(".note").evaluate("e => { e.textContent = ''; e.className = 'note'; }")
    submit(page.locator("[data-form=browse]"), format="json")
    page.locator("[data-results=browse] tr[data-row=record]").nth(2).wait_for()
    assert page.locator("[data-results=browse] tr[data-row=record]").count() == 3
    assert '"order": 42' in page.locator("[data-results=browse]").inner_text()  # pretty-printed JSON
    submit(page.locator("[data-form=browse]"), format="hex")
    page.locator("[data-results=browse]").filter(has_text="6f 72 64 65 72 20 31").wait_for()  # "order 1"
    submit(page.locator("[data-form=browse]"), format="text")  # the filter's matches are shown the same way
    page.locator("[data-results=browse]").filter(has_text="order 1 packed").wait_for()
    submit(page.locator("[data-form=search]"), pattern="shipped")
    page.locator("[data-search-status][data-state=done]").wait_for()
    status = page.locator("[data-search-status]").inner_text()
    assert re.search(r"scanned 3 of 3 records, 1 matches", status), status
    assert '"shipped"' in page.locator("[data-results=search]").inner_text()


def test_a_groups_lag_appears_falls_and_is_reset(page, console, console_cluster):
    bootstrap = console_cluster.bootstrap_servers
    console.post("/api/topics", {"name": "e2e-lag", "partitions": 1, "replication_factor": 2})

    async def commit(offset):
        consumer = AIOConsumer(bootstrap_servers=bootstrap, group_id="e2e-group", enable_auto_commit=False)
        await consumer.start()
        await consumer.commit({TopicPartition("e2e-lag", 0): offset})
        await consumer.close(autocommit=False)

    console.run(commit(0))
    open_page(page, console, "groups/e2e-group")
    page.locator("[data-total-lag='0']").wait_for()
    for n in range(25):
        console.post("/api/topics/e2e-lag/messages", {"value": f"work {n}", "partition": 0})
    page.locator("[data-total-lag='25']").wait_for()
    console.run(commit(25))
    page.locator("[data-total-lag='0']").wait_for()
    assert page.locator("[data-plot=lag] canvas").count() == 1
    submit(page.locator("[data-form=reset]"), to="earliest")
    page.locator("[data-form=reset] .note.ok").filter(has_text="reset 1 partition(s)").wait_for()
    page.locator("[data-total-lag='25']").wait_for()
    page.locator("#nav a[data-page=groups]").click()
    page.locator("[data-group=e2e-group]").wait_for()


def test_add_an_acl(page, console):
    open_page(page, console, "security")
    submit(page.locator("[data-form=acl]"), resource_type="Topic", name="e2e-orders", principal="User:dave",
           operation="Write")
    page.locator("[data-acl='User:dave Write Topic:e2e-orders']").wait_for()


def test_one_failing_admin_api_leaves_the_page_usable(page, console, monkeypatch):
    async def refused(*args, **kwargs):
        raise ClusterAuthorizationFailedError("the console's principal may not describe ACLs")

    monkeypatch.setattr(console.console.admin, "describe_acls", refused)
    open_page(page, console, "security")
    error = page.locator("[data-panel=acls] .error")
    error.wait_for()
    assert "may not describe ACLs" in error.inner_text()
    page.locator("[data-panel=scram] form").wait_for()
    page.locator("[data-panel=quotas] form").wait_for()
    assert page.locator("[data-panel=scram] .error, [data-panel=quotas] .error").count() == 0
    page.locator("#nav a[data-page=topics]").click()
    page.locator("[data-topic=e2e-orders]").wait_for()


def test_a_killed_broker_shows_offline_partitions_then_recovers(page, console, console_cluster):
    async def create():
        async with AIOAdmin(console_cluster.bootstrap_servers) as admin:
            await admin.create_topics([NewTopic("e2e-single", replica_assignments={0: [1]})])

    console.run(create())
    open_page(page, console, "overview")
    page.locator("[data-stat=offline] .v").filter(has_text=re.compile(r"^0$")).wait_for()
    console_cluster.kill_broker(1)
    page.locator("[data-stat=offline] .v").filter(has_text=re.compile(r"^[1-9]")).wait_for()
    page.locator("[data-broker='1'] .badge.bad").filter(has_text="offline").wait_for()
    open_page(page, console, "controller")
    page.locator("[data-event=offline]").filter(has_text="e2e-single-0 is offline").wait_for()
    console_cluster.start_broker(1)
    open_page(page, console, "overview")
    page.locator("[data-stat=offline] .v").filter(has_text=re.compile(r"^0$")).wait_for(timeout=60_000)
    page.locator("[data-broker='1'] .badge.good").filter(has_text="alive").wait_for()
    wait_until(lambda: console.get("/api/topics/e2e-single")["partitions"][0]["leader"] == 1, 30, "leader back")
