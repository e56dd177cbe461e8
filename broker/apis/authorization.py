"""AuthHelper: the API handlers' view of the authorizer (Kafka 2.8's AuthHelper).

Every check names an operation and a literal resource and takes the principal and the client's
address from the request. With no authorizer configured (``authorizer.class.name`` empty) every
check passes; handlers on the hot path test ``auth.enabled`` first so that they pay nothing then.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import TYPE_CHECKING, Callable, Iterable, Sequence, TypeVar

from ...protocol.acl import (
    CLUSTER_NAME, AclOperation, ResourceType, operations_bitfield, supported_operations,
)
from ...protocol.api_keys import ApiKey
from ...protocol.config_resource import ConfigResourceType
from ...protocol.errors import (  # type: ignore[attr-defined]
    ClusterAuthorizationFailedError, KafkaError, TopicAuthorizationFailedError,
)

if TYPE_CHECKING:
    from ..network.request_channel import Request
    from ..security.acl_authorizer import AclAuthorizer

CLUSTER = ResourceType.CLUSTER
TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID
AUTHORIZED_OPERATIONS_OMITTED = -(1 << 31)  # an *_authorized_operations field the client did not ask for
T = TypeVar("T")
CONFIG_BROKERS = (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER)  # authorized on the cluster


@functools.lru_cache(maxsize=4096)  # per request otherwise: a client address is parsed once
def host_address(ip: str) -> str:
    """An address as Java's InetAddress.getHostAddress writes it, which is what Kafka's ACL hosts
    are compared with: IPv4 dotted; IPv6 in eight groups without leading zeros and without '::'
    ('0:0:0:0:0:0:0:1'); an IPv4-mapped IPv6 address as its IPv4 form."""
    address, _, scope = ip.partition("%")
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return ip
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        text = ":".join(f"{int(group, 16):x}" for group in parsed.exploded.split(":"))
        return f"{text}%{scope}" if scope else text
    return str(parsed)


def client_address(request: "Request") -> str:
    transport = getattr(request.connection, "transport", None)
    peer = transport.get_extra_info("peername") if transport is not None else None
    return host_address(peer[0]) if peer else ""


# The APIs as Kafka's audit log names them (ApiKeys.name: 'LeaderAndIsr').
_API_NAMES = {int(key): "".join(part.capitalize() for part in key.name.split("_")) for key in ApiKey}


def _api_name(request: "Request") -> str:
    return _API_NAMES.get(request.api_key) or str(request.api_key)


class AuthHelper:
    __slots__ = ("authorizer",)

    def __init__(self, authorizer: "AclAuthorizer | None" = None) -> None:
        self.authorizer = authorizer

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def authorize(self, request: "Request", operation: AclOperation, resource_type: ResourceType,
                  name: str = CLUSTER_NAME, *, log_denied: bool = True) -> bool:
        authorizer = self.authorizer
        if authorizer is None:
            return True
        return authorizer.authorize(str(request.principal), client_address(request), operation, resource_type, name,
                                    log_denied=log_denied, request=_api_name(request))

    def authorize_cluster(self, request: "Request", operation: AclOperation) -> None:
        """AuthHelper.authorizeClusterOperation: CLUSTER_AUTHORIZATION_FAILED unless allowed on the cluster."""
        if not self.authorize(request, operation, CLUSTER):
            raise ClusterAuthorizationFailedError(f"Request {request!r} is not authorized.")

    def filter_authorized(self, request: "Request", operation: AclOperation, resource_type: ResourceType,
                          names: Iterable[str], *, log_denied: bool = True) -> set[str]:
        """The names (each checked once) the request may ``operation``; all of them when authorization is off."""
        unique = set(names)
        authorizer = self.authorizer
        if authorizer is None:
            return unique
        principal, host, api = str(request.principal), client_address(request), _api_name(request)
        return {n for n in unique
                if authorizer.authorize(principal, host, operation, resource_type, n, log_denied=log_denied,
                                        request=api)}

    def config_refusal(self, request: "Request", operation: AclOperation, resource_type: int, name: str
                       ) -> type[KafkaError] | None:
        """The config APIs' check: a broker resource needs ``operation`` on the cluster, a topic on the
        topic; the error class when refused (other resource types are the handler's business)."""
        if resource_type in CONFIG_BROKERS and not self.authorize(request, operation, CLUSTER):
            return ClusterAuthorizationFailedError
        if resource_type == ConfigResourceType.TOPIC and not self.authorize(request, operation, TOPIC, name):
            return TopicAuthorizationFailedError
        return None

    def partition_authorized(self, request: "Request", operation: AclOperation, resource_type: ResourceType,
                             items: Sequence[T], name_of: Callable[[T], str], *, log_denied: bool = True
                             ) -> tuple[list[T], list[T]]:
        """(allowed, refused) items, in their order (partitionSeqByAuthorized)."""
        if self.authorizer is None:
            return list(items), []
        names = self.filter_authorized(request, operation, resource_type, map(name_of, items), log_denied=log_denied)
        return [i for i in items if name_of(i) in names], [i for i in items if name_of(i) not in names]

    def authorized_operations(self, request: "Request", resource_type: ResourceType, name: str) -> int:
        """The 32-bit field of the operations allowed on the resource; every supported one when
        authorization is off (AuthHelper.authorizedOperations)."""
        authorizer = self.authorizer
        if authorizer is None:
            return operations_bitfield(supported_operations(resource_type))
        return operations_bitfield(authorizer.authorized_operations(str(request.principal), client_address(request),
                                                                    resource_type, name))

    def cluster_authorized_operations(self, request: "Request") -> int:
        """What include_cluster_authorized_operations asks for: the cluster's field, 0 without Describe on it."""
        if not self.authorize(request, AclOperation.DESCRIBE, CLUSTER):
            return 0
        return self.authorized_operations(request, CLUSTER, CLUSTER_NAME)

    def authorize_by_resource_type(self, request: "Request", operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        authorizer = self.authorizer
        return authorizer is None or authorizer.authorize_by_resource_type(
            str(request.principal), client_address(request), operation, resource_type)
