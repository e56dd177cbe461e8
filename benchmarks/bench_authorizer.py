"""What authorization costs: AclAuthorizer.authorize() per decision, and the Produce handler's time per
request without an authorizer, with one (the topic's ACL matched), and for a super user.

    python benchmarks/bench_authorizer.py [ITERATIONS]

In-process, no sockets or logs: the replica manager is a stand-in that answers at once, so the figures
are the handler's own work (decode not included). Figures only, nothing asserted. For the end-to-end
picture run ``bench_vs_tansu.py --only odradek --workloads produce`` with and without
``--broker-override authorizer.class.name=kafka.security.authorizer.AclAuthorizer``.
"""

from __future__ import annotations

import sys
import time
from types import SimpleNamespace

from odradek.broker.apis.authorization import AuthHelper
from odradek.broker.apis.produce import ProduceApi
from odradek.broker.network.request_channel import Request
from odradek.broker.replica_manager import ProducePartitionResult
from odradek.broker.security.acl_authorizer import AclAuthorizer
from odradek.broker.security.principal import KafkaPrincipal
from odradek.clients.simple_client import build_batch
from odradek.protocol.acl import (
    AccessControlEntry, AclBinding, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType,
)
from odradek.protocol.header import RequestHeader
from odradek.protocol.messages import ProduceRequest

TOPIC = ResourceType.TOPIC


class InstantReplicaManager:
    def online_partition(self, topic, partition):
        return None  # no topic-level max.message.bytes override

    def append_records(self, acks, timeout_ms, entries):
        return {key: ProducePartitionResult(getattr(value, "code", 0), 0) for key, value in entries.items()}


class MemoryStore:
    """Just enough of ZkAclStore for create_acls."""
    def read(self, pattern):
        from odradek.broker.security.zk_acl_store import NO_ACLS
        return NO_ACLS

    def write(self, pattern, entries, current):
        return 0

    def notify_change(self, pattern):
        pass


def acl_set(topics: int) -> list[AclBinding]:
    """``topics`` literal topics with a Read and a Write ACL each, a few prefixed ones, a wildcard Describe."""
    bindings = []
    for i in range(topics):
        for op in (AclOperation.READ, AclOperation.WRITE):
            bindings.append(AclBinding(ResourcePattern(TOPIC, f"topic-{i}"),
                                       AccessControlEntry(f"User:app-{i % 10}", "*", op, AclPermissionType.ALLOW)))
    for prefix in ("topic-1", "team-", "t"):
        bindings.append(AclBinding(ResourcePattern(TOPIC, prefix, PatternType.PREFIXED),
                                   AccessControlEntry("User:ops", "10.0.0.1", AclOperation.ALL,
                                                      AclPermissionType.DENY)))
    bindings.append(AclBinding(ResourcePattern(TOPIC, "*"),
                               AccessControlEntry("User:*", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)))
    return bindings


def authorizer_with(bindings: list[AclBinding], super_users: frozenset[str] = frozenset()) -> AclAuthorizer:
    authorizer = AclAuthorizer(MemoryStore(), super_users)  # type: ignore[arg-type]
    authorizer.create_acls(bindings)
    return authorizer


def per_call_us(fn, iterations: int, repeats: int = 5) -> float:
    """The best of ``repeats`` timings (shared, loaded machines add noise, never speed)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iterations):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / iterations * 1e6


def bench_authorize(iterations: int) -> None:
    print("AclAuthorizer.authorize(), µs per decision (User:app-3 writing topic-3)")
    for topics in (10, 1000):
        auth = authorizer_with(acl_set(topics))
        allowed = per_call_us(lambda: auth.authorize("User:app-3", "10.0.0.2", AclOperation.WRITE, TOPIC,
                                                     "topic-3", log_denied=False), iterations)
        denied = per_call_us(lambda: auth.authorize("User:app-4", "10.0.0.2", AclOperation.WRITE, TOPIC,
                                                    "topic-3", log_denied=False), iterations)
        print(f"  {len(acl_set(topics)):>5} ACLs: allowed {allowed:6.2f}   denied (User:app-4) {denied:6.2f}")
    auth = authorizer_with(acl_set(1000), frozenset({"User:admin"}))
    print(f"  super user:       {per_call_us(lambda: auth.authorize('User:admin', 'h', AclOperation.WRITE, TOPIC, 't'), iterations):6.2f}")


class Transport:
    def get_extra_info(self, name):
        return ("10.0.0.2", 50000)


def produce_request(principal: str) -> Request:
    batch = build_batch([(None, b"x" * 100)] * 100)
    body = ProduceRequest.decode(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name="topic-3", partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)])]).encode(8), 8)
    principal_type, name = principal.split(":", 1)
    connection = SimpleNamespace(id="c", listener="PLAINTEXT", transport=Transport(),
                                 principal=KafkaPrincipal(principal_type, name))
    return Request(RequestHeader(0, 8, 1, "bench"), body, connection)


def bench_produce(iterations: int) -> None:
    print("Produce handler, µs per request (one partition, a 100-record batch)")
    request, admin = produce_request("User:app-3"), produce_request("User:admin")
    for label, auth, req in (
            ("no authorizer", AuthHelper(), request),
            ("authorizer, topic ACL matched (1,000 topics' ACLs)", AuthHelper(authorizer_with(acl_set(1000))), request),
            ("authorizer, super user", AuthHelper(authorizer_with(acl_set(1000), frozenset({"User:admin"}))), admin)):
        api = ProduceApi(SimpleNamespace(replica_manager=InstantReplicaManager(), auth=auth))
        assert api.handle(req).responses[0].partition_responses[0].error_code == 0
        print(f"  {label:<52} {per_call_us(lambda: api.handle(req), iterations):6.2f}")


def main() -> None:
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    bench_authorize(iterations)
    bench_produce(iterations)


if __name__ == "__main__":
    main()
