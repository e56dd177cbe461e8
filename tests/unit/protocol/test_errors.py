"""Kafka's error codes as exceptions."""

import pytest

from odradek.protocol import errors


def test_every_code_from_minus_one_to_120_has_a_class():
    codes = errors.all_errors()
    assert sorted(codes) == [-1] + list(range(1, 121))
    assert len({cls.__name__ for cls in codes.values()}) == len(codes)


@pytest.mark.parametrize("code,name,retriable", [
    (-1, "UnknownServerError", False),
    (3, "UnknownTopicOrPartitionError", True),
    (6, "NotLeaderOrFollowerError", True),
    (17, "InvalidTopicError", False),
    (35, "UnsupportedVersionError", False),
    (41, "NotControllerError", True),
    (90, "ProducerFencedError", False),
])
def test_for_code(code, name, retriable):
    cls = errors.for_code(code)
    assert cls.__name__ == name and cls.code == code and cls.retriable is retriable
    assert getattr(errors, name) is cls
    assert issubclass(cls, errors.KafkaError)
    assert cls.message  # every error carries Kafka's default message


def test_no_error_and_unknown_codes():
    assert errors.for_code(0) is None
    assert errors.for_code(9999) is errors.UnknownServerError
    errors.raise_for_code(0)
    with pytest.raises(errors.NotCoordinatorError, match="try another"):
        errors.raise_for_code(16, "try another")


def test_str_names_code_and_message():
    text = str(errors.for_name("NOT_CONTROLLER")())
    assert text.startswith("[Error 41 NOT_CONTROLLER]") and "controller" in text


def test_protocol_errors_are_invalid_request_on_the_wire():
    assert errors.ProtocolError.code == 42
    assert issubclass(errors.FrameTooLargeError, errors.ProtocolError)
    unsupported = errors.UnsupportedApiVersionError(18, 9, correlation_id=3)
    assert unsupported.code == 35 and isinstance(unsupported, errors.ProtocolError)


def test_detail_is_the_bare_message_a_broker_sends():
    from odradek.protocol.errors import InvalidTopicError
    exc = InvalidTopicError("Topic name is illegal")
    assert str(exc) == "[Error 17 INVALID_TOPIC_EXCEPTION] Topic name is illegal"
    assert exc.detail == "Topic name is illegal"
    assert InvalidTopicError().detail == InvalidTopicError.message
