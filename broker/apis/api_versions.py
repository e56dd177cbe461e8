"""ApiVersions (18): advertise exactly the APIs this broker serves, with Apache Kafka 2.8's ranges.

The response header is always v0, whatever the request version (the codec does that). An ApiVersions request at a version
we do not speak arrives flagged ``unsupported_version`` from the processor and is answered with a v0
body carrying UNSUPPORTED_VERSION (35) and the ApiVersions range only, as Kafka does (KIP-511): the
client retries at min(its version - 1, our max). A v3 request with a malformed client software name or
version gets INVALID_REQUEST (42), as in Kafka's KafkaApis.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping

from ...protocol.api_keys import ApiKey, advertised_versions
from ...protocol.errors import InvalidRequestError, UnsupportedVersionError
from ...protocol.messages import ApiVersionsResponse

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_ApiVersion = ApiVersionsResponse.ApiVersion
KEY = int(ApiKey.API_VERSIONS)
# Kafka's ApiVersionsRequest.isValid pattern for client_software_name / client_software_version.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _entries(ranges: dict[int, tuple[int, int]]) -> list[Any]:
    return [_ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(ranges.items())]


class ApiVersionsApi:
    def __init__(self, handlers: Mapping[int, Any]) -> None:
        self._handlers = handlers  # the switchboard's live table of handled api keys (KafkaApis.handlers)
        self._served: frozenset[int] = frozenset()
        self._entries: list[Any] = []
        self._own_range = _entries({KEY: advertised_versions({KEY})[KEY]})

    def entries(self) -> list[Any]:
        """Our advertised table; recomputed only when the set of registered handlers changes."""
        served = self._handlers.keys()
        if len(served) != len(self._served) or served != self._served:
            self._served = frozenset(served)
            self._entries = _entries(advertised_versions(set(self._served)))
        return self._entries

    def handle(self, request: "Request") -> Any:
        if request.unsupported_version:
            raise UnsupportedVersionError(f"ApiVersions v{request.api_version} is not supported")
        body = request.body
        if request.api_version >= 3 and not (_SOFTWARE.fullmatch(body.client_software_name or "")
                                             and _SOFTWARE.fullmatch(body.client_software_version or "")):
            raise InvalidRequestError(f"invalid client software name/version {body.client_software_name!r} "
                                      f"{body.client_software_version!r}")
        # Kafka registers a valid request's client software on the channel ("unknown" when empty: before v3)
        request.connection.client_software = (body.client_software_name or "unknown",
                                              body.client_software_version or "unknown")
        return ApiVersionsResponse(error_code=0, api_keys=self.entries(), throttle_time_ms=0)

    def error_response(self, request: "Request", error_code: int) -> Any:
        keys = self._own_range if error_code == UnsupportedVersionError.code else []
        return ApiVersionsResponse(error_code=error_code, api_keys=keys, throttle_time_ms=0)


def register(apis: "KafkaApis", services: "BrokerServices | None" = None) -> ApiVersionsApi:
    """Answer ApiVersions with the keys ``apis`` serves (read at each request: later registrations count).
    ``services`` is not needed; it is taken as every API module's ``register`` takes it."""
    api = ApiVersionsApi(apis.handlers)
    apis.register(KEY, api.handle, api.error_response)
    return api
