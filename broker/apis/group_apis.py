"""Group APIs: FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14),
DescribeGroups (15), ListGroups (16), DeleteGroups (42), answered by the group coordinator.

FindCoordinator creates ``__consumer_offsets`` on first use, as Kafka 2.8's KafkaApis does: while the
topic is missing, being created or leaderless the answer is COORDINATOR_NOT_AVAILABLE (retriable), and
so it is while fewer brokers are alive than offsets.topic.replication.factor. Transaction coordinators
(key type 1) are found the same way in ``__transaction_state`` (transaction.state.log.* settings).

Authorization, as Kafka 2.8: FindCoordinator needs Describe on the group or transactional id;
JoinGroup, SyncGroup, Heartbeat and LeaveGroup Read on the group; DescribeGroups Describe on each
group; DeleteGroups Delete on each; ListGroups lists every group with Describe on the cluster, else
the groups the principal may Describe (GROUP_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    InconsistentGroupProtocolError,
    InvalidRequestError,
    KafkaError,
    TopicAlreadyExistsError,
    TransactionalIdAuthorizationFailedError,
    for_code,
)
from ...protocol.messages import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    SyncGroupResponse,
)
from ..coordinator.group.group_metadata import DEAD, STABLE
from ..coordinator.group.metadata_manager import GROUP_METADATA_TOPIC
from ..coordinator.transaction.state_manager import TRANSACTION_STATE_TOPIC
from ..api_errors import generic_error_response
from .authorization import CLUSTER, GROUP, TRANSACTIONAL_ID

if TYPE_CHECKING:
    from ..coordinator.group.coordinator import GroupCoordinator
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE = 0, 1
_Described = DescribeGroupsResponse.DescribedGroup
_DescribedMember = _Described.DescribedGroupMember


def client_host(request: "Request") -> str:
    """Kafka shows the client's address as InetAddress.toString does: '/127.0.0.1'."""
    transport = getattr(request.connection, "transport", None)
    peer = transport.get_extra_info("peername") if transport is not None else None
    return f"/{peer[0]}" if peer else ""


class GroupApis:
    def __init__(self, services: "BrokerServices", coordinator: "GroupCoordinator") -> None:
        self.services = services
        self.coordinator = coordinator
        self.auth = services.auth
        self._creating: set[str] = set()

    def _require_read(self, request: "Request") -> None:
        """The membership APIs' check: Read on the group."""
        if not self.auth.authorize(request, AclOperation.READ, GROUP, request.body.group_id):
            raise GroupAuthorizationFailedError()

    # -- FindCoordinator --------------------------------------------------------------------------

    async def find_coordinator(self, request: "Request") -> Any:
        body = request.body
        if body.key_type == GROUP_KEY_TYPE and not self.auth.authorize(request, AclOperation.DESCRIBE, GROUP,
                                                                        body.key):
            raise GroupAuthorizationFailedError()
        if body.key_type == TRANSACTION_KEY_TYPE and not self.auth.authorize(
                request, AclOperation.DESCRIBE, TRANSACTIONAL_ID, body.key):
            raise TransactionalIdAuthorizationFailedError()
        if body.key_type == TRANSACTION_KEY_TYPE:
            topic, index = TRANSACTION_STATE_TOPIC, self.services.transaction_coordinator.partition_for(body.key)
        elif body.key_type == GROUP_KEY_TYPE:
            topic, index = GROUP_METADATA_TOPIC, self.coordinator.manager.partition_for(body.key)
        else:
            raise InvalidRequestError(f"Unknown coordinator type {body.key_type} in FindCoordinator request")
        cache = self.services.metadata_cache
        if not cache.contains_topic(topic):
            await self._create_internal_topic(topic)
            raise CoordinatorNotAvailableError(f"{topic} is being created")
        partition = cache.partition(topic, index)
        endpoint = cache.endpoint(partition.leader, request.listener) if partition is not None else None
        if endpoint is None:
            raise CoordinatorNotAvailableError(f"the coordinator of {body.key} has no live leader")
        # Kafka puts Errors.message() in: "NONE" on success, the error's default message otherwise
        return FindCoordinatorResponse(throttle_time_ms=0, error_code=0, error_message="NONE",
                                       node_id=partition.leader, host=endpoint.host, port=endpoint.port)

    async def _create_internal_topic(self, topic: str) -> None:
        services = self.services
        config = services.config
        if topic == GROUP_METADATA_TOPIC:
            factor_key, what = "offsets.topic.replication.factor", "the offsets topic"
            partitions = config.get("offsets.topic.num.partitions")
            overrides = {"cleanup.policy": "compact", "compression.type": "producer",
                         "segment.bytes": str(config.get("offsets.topic.segment.bytes"))}
        else:
            factor_key, what = "transaction.state.log.replication.factor", "the transactions state topic"
            partitions = config.get("transaction.state.log.num.partitions")
            overrides = services.transaction_coordinator.topic_configs()
        factor = int(config.get(factor_key))
        alive = len(services.metadata_cache.alive_broker_ids())
        if alive < factor:
            # Kafka 2.8 refuses rather than creating an under-replicated internal topic.
            raise CoordinatorNotAvailableError(
                f"Number of alive brokers '{alive}' does not meet the required replication factor '{factor}' "
                f"for {what} (configured via '{factor_key}')")
        if topic in self._creating:
            return
        self._creating.add(topic)
        try:
            await services.in_executor(services.admin.create_topic, topic, partitions, factor, overrides)
        except TopicAlreadyExistsError:
            pass
        except KafkaError as exc:  # Kafka answers any creation failure with COORDINATOR_NOT_AVAILABLE
            raise CoordinatorNotAvailableError(f"cannot create {topic}: {exc}") from None
        finally:
            self._creating.discard(topic)

    def find_coordinator_error(self, request: "Request", error_code: int) -> Any:
        return FindCoordinatorResponse(throttle_time_ms=0, error_code=error_code,
                                       error_message=(for_code(error_code) or KafkaError).message, node_id=-1, host="", port=-1)

    # -- membership -------------------------------------------------------------------------------

    async def join_group(self, request: "Request") -> Any:
        body, version = request.body, request.api_version
        if not self.auth.authorize(request, AclOperation.READ, GROUP, body.group_id):
            # Kafka answers JoinGroupResult(UNKNOWN_MEMBER_ID, GROUP_AUTHORIZATION_FAILED): no member id.
            return JoinGroupResponse(throttle_time_ms=0, error_code=GroupAuthorizationFailedError.code,
                                     generation_id=-1, protocol_name="" if version < 7 else None, leader="",
                                     member_id="", members=[])
        rebalance_timeout = body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms
        result = await self.coordinator.join_group(
            body.group_id, body.member_id, body.group_instance_id, version >= 4, request.header.client_id or "",
            client_host(request), rebalance_timeout, body.session_timeout_ms, body.protocol_type,
            [(p.name, bytes(p.metadata)) for p in body.protocols])
        members = [JoinGroupResponse.JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=md)
                   for m, i, md in result.members]
        protocol_name = result.protocol_name
        if protocol_name is None and version < 7:
            protocol_name = ""
        return JoinGroupResponse(throttle_time_ms=0, error_code=result.error_code, generation_id=result.generation_id,
                                 protocol_type=result.protocol_type, protocol_name=protocol_name,
                                 leader=result.leader, member_id=result.member_id, members=members)

    def join_group_error(self, request: "Request", error_code: int) -> Any:
        return JoinGroupResponse(throttle_time_ms=0, error_code=error_code, generation_id=-1,
                                 protocol_name="", leader="", member_id=request.body.member_id, members=[])

    async def sync_group(self, request: "Request") -> Any:
        body = request.body
        if request.api_version >= 5 and (body.protocol_type is None or body.protocol_name is None):
            # Kafka 2.8's handleSyncGroupRequest: mandatory from v5, checked before the authorization
            return SyncGroupResponse(throttle_time_ms=0, error_code=InconsistentGroupProtocolError.code,
                                     protocol_type=None, protocol_name=None, assignment=b"")
        self._require_read(request)
        result = await self.coordinator.sync_group(
            body.group_id, body.generation_id, body.member_id, body.group_instance_id, body.protocol_type,
            body.protocol_name, {a.member_id: bytes(a.assignment) for a in body.assignments})
        # Always an assignment, empty bytes if none (franz-go fails to parse a missing one).
        return SyncGroupResponse(throttle_time_ms=0, error_code=result.error_code,
                                 protocol_type=result.protocol_type, protocol_name=result.protocol_name,
                                 assignment=result.assignment or b"")

    def heartbeat(self, request: "Request") -> Any:
        self._require_read(request)
        body = request.body
        code = self.coordinator.heartbeat(body.group_id, body.member_id, body.group_instance_id, body.generation_id)
        return HeartbeatResponse(throttle_time_ms=0, error_code=code)

    def leave_group(self, request: "Request") -> Any:
        self._require_read(request)
        body, version = request.body, request.api_version
        leaving = [(m.member_id, m.group_instance_id) for m in body.members] if version >= 3 \
            else [(body.member_id, None)]
        code, codes = self.coordinator.leave_group(body.group_id, leaving)
        if version < 3:
            # v0-2 have no members[]: the one member's error is the answer (Kafka's LeaveGroupResponse).
            return LeaveGroupResponse(throttle_time_ms=0, error_code=code or codes[0])
        members = [LeaveGroupResponse.MemberResponse(member_id=m, group_instance_id=i, error_code=c)
                   for (m, i), c in zip(leaving, codes)] if code == 0 else []
        return LeaveGroupResponse(throttle_time_ms=0, error_code=code, members=members)

    # -- administration ---------------------------------------------------------------------------

    def describe_groups(self, request: "Request") -> Any:
        body = request.body
        with_operations = request.api_version >= 3 and body.include_authorized_operations
        groups = []
        # A group named twice is described once (Kafka describes it again for every copy: 50,000 copies
        # of a large group's name in a 600 KB request made a response of hundreds of MiB).
        for group_id in dict.fromkeys(body.groups):
            if not self.auth.authorize(request, AclOperation.DESCRIBE, GROUP, group_id):
                groups.append(_Described(error_code=GroupAuthorizationFailedError.code, group_id=group_id,
                                         group_state="", protocol_type="", protocol_data="", members=[]))
                continue
            described = self._describe(group_id)
            if with_operations and described.error_code == 0:
                described.authorized_operations = self.auth.authorized_operations(request, GROUP, group_id)
            groups.append(described)
        return DescribeGroupsResponse(throttle_time_ms=0, groups=groups)

    def _describe(self, group_id: str) -> Any:
        try:
            group = self.coordinator.describe_group(group_id)
        except KafkaError as exc:
            return _Described(error_code=exc.code, group_id=group_id, group_state="", protocol_type="",
                              protocol_data="", members=[])
        if group is None or group.is_in(DEAD):
            return _Described(error_code=0, group_id=group_id, group_state=DEAD, protocol_type="",
                              protocol_data="", members=[])
        stable = group.is_in(STABLE)
        protocol = group.protocol_name or ""
        members = [_DescribedMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                    client_id=m.client_id, client_host=m.client_host,
                                    member_metadata=_metadata_or_empty(m, protocol) if stable else b"",
                                    member_assignment=m.assignment if stable else b"")
                   for m in group.members.values()]
        # Kafka shows the protocol only for a Stable group.
        return _Described(error_code=0, group_id=group_id, group_state=group.state,
                          protocol_type=group.protocol_type or "", protocol_data=protocol if stable else "",
                          members=members)

    def list_groups(self, request: "Request") -> Any:
        body, version = request.body, request.api_version
        states = set(body.states_filter or []) if version >= 4 else set()
        manager = self.coordinator.manager
        error = 14 if manager.loading else 0  # COORDINATOR_LOAD_IN_PROGRESS while a partition loads
        listed = [g for g in self.coordinator.list_groups() if not g.is_in(DEAD) and (not states or g.state in states)]
        if not self.auth.authorize(request, AclOperation.DESCRIBE, CLUSTER):  # Kafka: else the describable ones
            listed = [g for g in listed if self.auth.authorize(request, AclOperation.DESCRIBE, GROUP, g.group_id)]
        groups = [ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "",
                                                 group_state=g.state) for g in listed]
        return ListGroupsResponse(throttle_time_ms=0, error_code=error, groups=groups)

    async def delete_groups(self, request: "Request") -> Any:
        names = list(dict.fromkeys(request.body.groups_names))
        deletable = self.auth.filter_authorized(request, AclOperation.DELETE, GROUP, names)
        results = await self.coordinator.delete_groups([g for g in names if g in deletable]) if deletable else {}
        results.update({g: GroupAuthorizationFailedError.code for g in names if g not in deletable})
        return DeleteGroupsResponse(throttle_time_ms=0, results=[
            DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=c) for g, c in results.items()])

    def delete_groups_error(self, request: "Request", error_code: int) -> Any:
        return DeleteGroupsResponse(throttle_time_ms=0, results=[
            DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=error_code)
            for g in request.body.groups_names])

    def describe_groups_error(self, request: "Request", error_code: int) -> Any:
        return DescribeGroupsResponse(throttle_time_ms=0, groups=[
            _Described(error_code=error_code, group_id=g, group_state="", protocol_type="", protocol_data="",
                       members=[]) for g in request.body.groups])


def _metadata_or_empty(member: Any, protocol: str) -> bytes:
    try:
        return member.metadata_for(protocol)
    except KeyError:
        return b""


def register(apis: "KafkaApis", services: "BrokerServices") -> GroupApis:
    api = GroupApis(services, services.group_coordinator)
    apis.register(ApiKey.FIND_COORDINATOR, api.find_coordinator, api.find_coordinator_error)
    apis.register(ApiKey.JOIN_GROUP, api.join_group, api.join_group_error)
    apis.register(ApiKey.SYNC_GROUP, api.sync_group, generic_error_response)
    apis.register(ApiKey.HEARTBEAT, api.heartbeat, generic_error_response)
    apis.register(ApiKey.LEAVE_GROUP, api.leave_group, generic_error_response)
    apis.register(ApiKey.DESCRIBE_GROUPS, api.describe_groups, api.describe_groups_error)
    apis.register(ApiKey.LIST_GROUPS, api.list_groups, generic_error_response)
    apis.register(ApiKey.DELETE_GROUPS, api.delete_groups, api.delete_groups_error)
    return api
