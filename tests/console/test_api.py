"""The console's JSON endpoints against a real two-broker cluster (one cluster and one console per module)."""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.request

import pytest

from odradek.clients import AIOConsumer, AIOProducer, TopicPartition
from odradek.protocol.errors import ClusterAuthorizationFailedError
from odradek.tools.local_schema_registry import LocalSchemaRegistry
from tests.integration.helpers import wait_until

from .console_process import ConsoleThread


def text_of(field):
    return None if field is None else base64.b64decode(field["b64"]).decode()


def wait_search(console, job):
    return wait_until(lambda: (p := console.get(f"/api/searches/{job['id']}"))["state"] != "running" and p,
                      30, "the search to end")


@pytest.fixture(scope="module")
def events(console):
    """A topic with three records (one with a header) on partition 0, two on partition 1."""
    console.post("/api/topics", {"name": "events", "partitions": 2, "replication_factor": 2})
    for key, value, partition, headers in [("k1", '{"n": 1}', 0, [["source", "web"]]), ("k2", "plain two", 0, []),
                                           ("k3", "three", 0, []), ("k4", "four", 1, []), (None, "five", 1, [])]:
        answer = console.post("/api/topics/events/messages",
                              {"key": key, "value": value, "partition": partition, "headers": headers})
        assert answer["partition"] == partition
    return "events"


def test_overview_lists_the_brokers_and_partition_health(console, events):
    # the Overview reads the metadata the console polls (at most two polls old)
    overview = wait_until(lambda: (o := console.get("/api/overview"))["partitions"] >= 2 and o, 30,
                          "the overview to count the new topic's partitions")
    assert [(b["id"], b["alive"]) for b in overview["brokers"]] == [(0, True), (1, True)]
    assert sum(b["controller"] for b in overview["brokers"]) == 1
    assert overview["topics"] >= 1 and overview["partitions"] >= 2
    assert overview["offline"] == 0 and overview["under_replicated"] == 0 and overview["under_min_isr"] == 0
    assert overview["errors"] == {}


def test_metrics_are_sampled_from_every_broker(console, events):
    def sampled():
        brokers = console.get("/api/metrics")["brokers"]
        return len(brokers) == 2 and all(any("bytes_in" in p for _, p in b["points"]) for b in brokers.values())
    wait_until(sampled, 30, "two samples of every broker's metrics")
    assert console.get("/api/overview")["controller_epoch"] >= 1


def test_topics_list_and_detail(console, events):
    def listed_with_every_record():  # the list is a snapshot refreshed in the background
        listed = {t["name"]: t for t in console.get("/api/topics")["topics"]}
        return listed if "events" in listed and listed["events"]["messages"] == 5 else None

    listed = wait_until(listed_with_every_record, 30, "the topic list to count the five records")
    assert listed["events"]["partitions"] == 2 and listed["events"]["replication_factor"] == 2
    assert listed["events"]["messages"] == 5 and listed["events"]["size"] > 0
    assert listed["events"]["cleanup_policy"] == "delete"
    detail = console.get("/api/topics/events")
    assert [(p["partition"], p["start"], p["end"]) for p in detail["partitions"]] == [(0, 0, 3), (1, 0, 2)]
    for p in detail["partitions"]:
        assert sorted(p["isr"]) == [0, 1] and p["leader"] in p["replicas"]
        assert sorted(r["broker"] for r in p["log_dirs"]) == [0, 1]


def test_topic_operations(console):
    console.post("/api/topics", {"name": "ops", "partitions": 1, "replication_factor": 1})
    status, answer = console.call("POST", "/api/topics", {"name": "ops", "partitions": 1})
    assert status == 502 and "TopicAlreadyExists" in answer["error"]
    console.post("/api/topics/ops/partitions", {"total": 3})
    wait_until(lambda: len(console.get("/api/topics/ops")["partitions"]) == 3, 30,
               "the brokers to learn of the new partitions")
    console.post("/api/topics/ops/configs", {"set": {"retention.ms": "3600000"}})
    configs = {c["name"]: c for c in console.get("/api/topics/ops/configs")["configs"]}
    assert configs["retention.ms"]["value"] == "3600000"
    assert configs["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG" and not configs["retention.ms"]["is_default"]
    assert configs["segment.bytes"]["is_default"]
    console.post("/api/topics/ops/configs", {"delete": ["retention.ms"]})
    configs = {c["name"]: c for c in console.get("/api/topics/ops/configs")["configs"]}
    assert configs["retention.ms"]["source"] == "DEFAULT_CONFIG"
    assert console.call("DELETE", "/api/topics/ops")[0] == 200
    wait_until(lambda: "ops" not in {t["name"] for t in console.get("/api/topics")["topics"]}, 30, "ops deleted")


def test_browse_from_start_offset_end_and_timestamp(console, events):
    rows = console.get("/api/topics/events/messages?partition=0&from=start")["rows"]
    assert [(r["offset"], text_of(r["key"]), text_of(r["value"])) for r in rows] == [
        (0, "k1", '{"n": 1}'), (1, "k2", "plain two"), (2, "k3", "three")]
    assert [[k, text_of(v)] for k, v in rows[0]["headers"]] == [["source", "web"]]
    assert [r["offset"] for r in console.get("/api/topics/events/messages?partition=0&from=offset&value=1")["rows"]] \
        == [1, 2]
    assert [text_of(r["value"]) for r in console.get("/api/topics/events/messages?from=end&limit=1&partition=1")
            ["rows"]] == ["five"]
    everything = console.get("/api/topics/events/messages?from=start&limit=100")["rows"]
    assert sorted(text_of(r["value"]) for r in everything) == sorted(
        ['{"n": 1}', "plain two", "three", "four", "five"])
    assert text_of(everything[-1]["key"]) is None or len(everything) == 5
    later = console.get(f"/api/topics/events/messages?partition=0&from=timestamp&value={rows[1]['timestamp']}")
    assert [r["offset"] for r in later["rows"]] == [1, 2]
    assert console.call("GET", "/api/topics/events/messages?partition=7")[0] == 400
    assert console.call("GET", "/api/topics/no-such-topic/messages")[0] == 502


def test_transaction_markers_and_aborted_records(console, console_cluster):
    console.post("/api/topics", {"name": "txn", "partitions": 1, "replication_factor": 1})

    async def produce():
        producer = AIOProducer(bootstrap_servers=console_cluster.bootstrap_servers, transactional_id="console-test")
        await producer.start()
        async with producer.transaction():
            await producer.send_and_wait("txn", b"kept", partition=0)
        with pytest.raises(RuntimeError):
            async with producer.transaction():
                await producer.send_and_wait("txn", b"dropped", partition=0)
                raise RuntimeError("abort it")
        await producer.close()

    asyncio.run(produce())
    rows = console.get("/api/topics/txn/messages?partition=0&from=start")["rows"]
    assert [(r["type"], r.get("marker"), r.get("transaction"), text_of(r.get("value"))) for r in rows] == [
        ("record", None, "committed", "kept"), ("marker", "COMMIT", None, None),
        ("record", None, "aborted", "dropped"), ("marker", "ABORT", None, None)]
    rows = console.get("/api/topics/txn/messages?partition=0&from=start&isolation=read_committed")["rows"]
    assert [(r["type"], text_of(r.get("value"))) for r in rows] == [
        ("record", "kept"), ("marker", None), ("marker", None)]


def test_filter_substring_regex_and_headers(console, events):
    job = console.post("/api/topics/events/search", {"pattern": "t", "field": "value"})
    done = wait_search(console, job)
    assert done["state"] == "done" and done["scanned"] == done["total"] == 5
    assert sorted(text_of(m["value"]) for m in done["matches"]) == ["plain two", "three"]
    done = wait_search(console, console.post("/api/topics/events/search",
                                             {"pattern": "^k[34]$", "regex": True, "field": "key"}))
    assert sorted(text_of(m["key"]) for m in done["matches"]) == ["k3", "k4"]
    done = wait_search(console, console.post("/api/topics/events/search", {"pattern": "WEB", "ignore_case": True}))
    assert [(m["partition"], m["offset"]) for m in done["matches"]] == [(0, 0)]
    done = wait_search(console, console.post("/api/topics/events/search",
                                             {"pattern": "e", "partition": 0, "max_records": 2}))
    assert done["total"] == 2 and done["scanned"] == 2
    assert console.call("POST", "/api/topics/events/search", {"pattern": "(", "regex": True})[0] == 400


def test_group_lag_reset_and_delete(console, console_cluster, events):
    async def commit(group, offsets, stay=False):
        consumer = AIOConsumer(bootstrap_servers=console_cluster.bootstrap_servers, group_id=group,
                               enable_auto_commit=False)
        await consumer.start()
        await consumer.commit({TopicPartition("events", p): o for p, o in offsets.items()})
        await consumer.close(autocommit=False)

    asyncio.run(commit("lagging", {0: 1, 1: 0}))
    group = console.get("/api/groups/lagging")
    assert group["state"] == "Empty" and group["lag"]["total"] == 4
    assert {(p["partition"], p["lag"]) for p in group["lag"]["partitions"]} == {(0, 2), (1, 2)}
    assert group["lag_history"][-1][1] == 4
    assert "lagging" in {g["group_id"] for g in console.get("/api/groups")["groups"]}
    reset = console.post("/api/groups/lagging/reset", {"to": "latest"})
    assert sorted((o["partition"], o["offset"]) for o in reset["offsets"]) == [(0, 3), (1, 2)]
    assert console.get("/api/groups/lagging")["lag"]["total"] == 0
    console.post("/api/groups/lagging/reset", {"to": "offset", "value": 1})
    assert console.get("/api/groups/lagging")["lag"]["total"] == 3
    assert console.call("POST", "/api/groups/lagging/reset", {"to": "sideways"})[0] == 400
    assert console.call("DELETE", "/api/groups/lagging")[0] == 200
    assert "lagging" not in {g["group_id"] for g in console.get("/api/groups")["groups"]}


def test_reset_and_delete_are_refused_while_the_group_is_active(console, console_cluster, events):
    async def member_then_ask():
        consumer = AIOConsumer(bootstrap_servers=console_cluster.bootstrap_servers, group_id="active")
        await consumer.subscribe(["events"])
        await consumer.start()
        try:
            while not consumer.assignment():
                await consumer.getmany(timeout_ms=200)
            loop = asyncio.get_running_loop()
            reset = await loop.run_in_executor(None, console.call, "POST", "/api/groups/active/reset", {"to": "earliest"})
            delete = await loop.run_in_executor(None, console.call, "DELETE", "/api/groups/active")
            described = await loop.run_in_executor(None, console.get, "/api/groups/active")
        finally:
            await consumer.close()
        return reset, delete, described

    reset, delete, described = asyncio.run(member_then_ask())
    assert described["state"] == "Stable" and len(described["members"]) == 1
    assert described["members"][0]["assignment"] == [["events", 0], ["events", 1]]
    assert reset[0] == 400 and reset[1]["error"] == ("Assignments can only be reset if the group 'active' is "
                                                     "inactive, but the current state is Stable.")
    assert delete[0] == 502 and "NonEmptyGroup" in delete[1]["error"]


def test_acls_scram_users_and_quotas(console):
    acl = {"resource_type": "Topic", "name": "events", "pattern_type": "Literal", "principal": "User:alice",
           "host": "*", "operation": "Read", "permission": "Allow"}
    console.post("/api/acls", acl)
    assert acl in console.get("/api/acls")["acls"]
    assert console.post("/api/acls/delete", acl)["deleted"] == [acl]
    assert acl not in console.get("/api/acls")["acls"]
    assert console.call("POST", "/api/acls", {**acl, "operation": "Juggle"})[0] == 400
    console.post("/api/scram-users", {"user": "bob", "mechanism": "SCRAM-SHA-512", "password": "secret"})
    users = {u["user"]: u for u in console.get("/api/scram-users")["users"]}
    assert users["bob"]["credentials"] == [{"mechanism": "SCRAM-SHA-512", "iterations": 4096}]
    assert console.call("DELETE", "/api/scram-users/bob?mechanism=SCRAM-SHA-512")[0] == 200
    console.post("/api/quotas", {"entity": {"user": "carol"}, "set": {"producer_byte_rate": 1024}})
    assert {"entity": {"user": "carol"}, "values": {"producer_byte_rate": 1024.0}} in console.get("/api/quotas")["quotas"]
    console.post("/api/quotas", {"entity": {"user": "carol"}, "remove": ["producer_byte_rate"]})
    assert all(q["entity"] != {"user": "carol"} for q in console.get("/api/quotas")["quotas"])


def test_controller_events_reassignments_and_election(console):
    console.post("/api/topics", {"name": "watched", "partitions": 1, "replication_factor": 2})
    wait_until(lambda: any(e["text"] == "topic watched created" for e in console.get("/api/controller")["events"]),
               30, "the console to see the topic created")
    assert console.get("/api/controller")["controller_id"] in (0, 1)
    assert console.get("/api/reassignments") == {"reassignments": []}
    results = console.post("/api/elect-leaders", {"topic": "watched"})["results"]
    assert [(r["topic"], r["partition"]) for r in results] == [("watched", 0)]
    assert "ElectionNotNeeded" in results[0]["error"]


def test_one_failing_admin_call_fails_only_its_endpoint(console, monkeypatch):
    async def refused(*args, **kwargs):
        raise ClusterAuthorizationFailedError("not allowed to describe ACLs")

    monkeypatch.setattr(console.console.admin, "describe_acls", refused)
    status, answer = console.call("GET", "/api/acls")
    assert status == 502 and answer == {"error": "ClusterAuthorizationFailedError: not allowed to describe ACLs",
                                        "kind": "ClusterAuthorizationFailedError"}
    for path in ("/api/scram-users", "/api/quotas", "/api/overview", "/api/topics", "/api/groups"):
        assert console.call("GET", path)[0] == 200, path


def test_changes_need_a_json_content_type(console):
    """What another site's page could send to the console without a CORS preflight is refused."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(console.url + "/api/topics", data=b'{"name": "csrf"}', method="POST",
                                     headers={"Content-Type": "text/plain"})
    try:
        urllib.request.urlopen(request, timeout=30)
        raise AssertionError("a text/plain body was accepted")
    except urllib.error.HTTPError as exc:
        assert exc.code == 400
    assert "csrf" not in {t["name"] for t in console.get("/api/topics")["topics"]}


def test_basic_auth(console_cluster):
    guarded = ConsoleThread(console_cluster.bootstrap_servers, credentials=("admin", "s3cret")).start()
    try:
        assert guarded.call("GET", "/api/overview")[0] == 401
        wrong = base64.b64encode(b"admin:nope").decode()
        assert guarded.call("GET", "/api/overview", headers={"Authorization": f"Basic {wrong}"})[0] == 401
        right = base64.b64encode(b"admin:s3cret").decode()
        assert guarded.call("GET", "/api/overview", headers={"Authorization": f"Basic {right}"})[0] == 200
    finally:
        guarded.stop()


# -- the Schemas page: a schema registry's subjects and versions ------------------------------------------------

@pytest.fixture(scope="module")
def registry_console(console_cluster, tmp_path_factory):
    registry = LocalSchemaRegistry(console_cluster.bootstrap_servers,
                                   tmp_path_factory.mktemp("registry") / "registry.log").start()
    thread = ConsoleThread(console_cluster.bootstrap_servers, schema_registry_url=registry.url).start()
    try:
        yield registry, thread
    finally:
        thread.stop()
        registry.stop()


def _register(registry_url: str, subject: str, schema: dict) -> int:
    request = urllib.request.Request(f"{registry_url.rstrip('/')}/subjects/{subject}/versions", method="POST",
                                     data=json.dumps({"schema": json.dumps(schema)}).encode(),
                                     headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())["id"]


def test_schemas_page_lists_subjects_and_their_versions(registry_console):
    registry, thread = registry_console
    v1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
    v2 = {**v1, "fields": v1["fields"] + [{"name": "note", "type": "string", "default": ""}]}
    ids = [_register(registry.url, "orders-value", schema) for schema in (v1, v2)]
    listed = thread.get("/api/schemas")
    assert [(s["subject"], s["versions"], s["latest"], s["id"], s["type"]) for s in listed["subjects"]] == [
        ("orders-value", 2, 2, ids[1], "AVRO")]
    assert listed["compatibility"] == "BACKWARD"
    versions = thread.get("/api/schemas/orders-value")["versions"]
    assert [(v["version"], v["id"]) for v in versions] == [(1, ids[0]), (2, ids[1])]
    assert json.loads(versions[1]["schema"])["fields"][1]["name"] == "note"
    status, missing = thread.call("GET", "/api/schemas/no-such-subject")
    assert status == 502 and "40401" in missing["error"]  # the registry's own error, in that panel only


def test_schemas_page_without_a_registry_says_how_to_get_one(console):
    status, answer = console.call("GET", "/api/schemas")
    assert status == 400 and "--schema-registry" in answer["error"]
