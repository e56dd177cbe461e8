"""The request log: ``kafka.request.logger`` at DEBUG, one line per answered request, as Kafka 2.8 writes it
(RequestChannel.updateRequestMetrics and RequestConvertToJson, KIP-673):

    Completed request:{"isForwarded":false,"requestHeader":{...},"request":{...},"response":{...},
    "connection":"...","totalTimeMs":1.2,...,"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS",
    "listener":"PLAINTEXT","clientInformation":{"softwareName":"...","softwareVersion":"..."}}

Bodies are in Kafka's JSON form (protocol/json_form.py: records as their size only). The request's form is
taken when a handler takes the request, before handling (Kafka takes it on arrival, as handling may
consume the body); the response's when it is built; an unanswered request (acks=0) logs ``"response":""``.
Values that may be secrets are ``[hidden]``: config values in AlterConfigs and IncrementalAlterConfigs
(Kafka's loggableRequest) and, where Kafka 2.8 would print them, SCRAM salts and salted passwords and SASL
tokens.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Iterable

from ...protocol.api_keys import ApiKey, request_header_version
from ...protocol.json_form import message_json
from ..security.sensitive_configs import HIDDEN, loggable_value

if TYPE_CHECKING:
    from ..network.request_channel import Request

request_logger = logging.getLogger("kafka.request.logger")

_ALTER_CONFIGS = (int(ApiKey.ALTER_CONFIGS), int(ApiKey.INCREMENTAL_ALTER_CONFIGS))
_ALTER_SCRAM = int(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
_SASL_AUTHENTICATE = int(ApiKey.SASL_AUTHENTICATE)


def enabled() -> bool:
    return request_logger.isEnabledFor(logging.DEBUG)


def describe_request(request: "Request") -> dict[str, Any]:
    """The start of the request's log entry: its header and body (called before it is handled)."""
    header = request.header
    header_json: dict[str, Any] = {"requestApiKey": header.api_key, "requestApiVersion": header.api_version,
                                   "correlationId": header.correlation_id}
    if request_header_version(header.api_key, header.api_version) >= 1:
        header_json["clientId"] = header.client_id
    header_json["requestApiKeyName"] = _api_name(header.api_key)
    body = request.body
    return {"isForwarded": False, "requestHeader": header_json,
            "request": "" if body is None else _body_json(header.api_key, body, header.api_version),
            "response": ""}


def describe_response(request: "Request", body: Any) -> None:
    """Add the response body to the request's entry (when it has one: the log was on when it came)."""
    entry = request.log_entry
    if entry is not None:
        version = 0 if request.unsupported_version else request.header.api_version
        entry["response"] = _body_json(request.header.api_key, body, version)


def _body_json(api_key: int, body: Any, version: int) -> Any:
    """The body's loggable JSON form; a body that cannot be put in that form is logged as a note, never
    fails the request it belongs to."""
    try:
        return _loggable(api_key, message_json(body, version))
    except Exception as exc:  # a bug guard: the log must not cost anyone an answer
        return f"<not loggable: {type(exc).__name__}>"


def log_completed(request: "Request", times_ms: Iterable[tuple[str, float]]) -> None:
    """Write the entry with the request's latency breakdown (TotalTimeMs, ... as request_metrics keeps them)."""
    entry = request.log_entry
    if entry is None:
        return
    times = dict(times_ms)
    connection = request.connection
    security, software = connection.security, connection.client_software
    entry.update({
        "connection": request.connection_id,
        "totalTimeMs": times["TotalTimeMs"], "requestQueueTimeMs": times["RequestQueueTimeMs"],
        "localTimeMs": times["LocalTimeMs"], "remoteTimeMs": times["RemoteTimeMs"],
        "throttleTimeMs": int(times["ThrottleTimeMs"]), "responseQueueTimeMs": times["ResponseQueueTimeMs"],
        "sendTimeMs": times["ResponseSendTimeMs"],
        "securityProtocol": security.protocol if security is not None else "PLAINTEXT",
        "principal": str(request.principal), "listener": request.listener,
        "clientInformation": {"softwareName": software[0], "softwareVersion": software[1]},
    })
    request_logger.debug("Completed request:%s", json.dumps(entry, separators=(",", ":"), default=str))


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)


def _loggable(api_key: int, node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with the values that may be secrets replaced by ``[hidden]`` (in place)."""
    if api_key in _ALTER_CONFIGS:
        for resource in node.get("resources") or ():
            for config in resource.get("configs") or ():
                config["value"] = loggable_value(resource["resourceType"], config["name"], config.get("value"))
    elif api_key == _ALTER_SCRAM:
        for upsertion in node.get("upsertions") or ():
            upsertion["salt"] = upsertion["saltedPassword"] = HIDDEN
    elif api_key == _SASL_AUTHENTICATE and "authBytes" in node:
        node["authBytes"] = HIDDEN
    return node
