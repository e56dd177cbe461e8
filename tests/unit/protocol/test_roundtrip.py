"""Every (api_key, version) of every request and response survives encode -> decode -> encode."""

import pytest

from odradek.protocol.messages import ALL_MESSAGES

from .samples import all_versions, sample

CASES = all_versions(ALL_MESSAGES)


@pytest.mark.parametrize("message,version", CASES, ids=[f"{m.name}-v{v}" for m, v in CASES])
def test_round_trip(message, version):
    for seed in range(4):
        original = sample(message, version, seed)
        encoded = message.encode(original, version)
        decoded = message.decode(encoded, version)
        assert decoded == original
        assert message.encode(decoded, version) == encoded


def test_every_message_has_both_directions():
    keys = {}
    for m in ALL_MESSAGES:
        keys.setdefault(m.api_key, set()).add(m.kind)
    assert all(kinds == {"request", "response"} for kinds in keys.values())
    assert len(keys) == 42
