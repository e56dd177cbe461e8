"""DescribeConfigs never answers a password-type key in clear: null value, is_sensitive true (Kafka 2.8)."""

import pytest

from odradek.broker.apis.describe_configs import _Synonym, _entry, is_sensitive
from odradek.broker.config_keys import BROKER_KEYS


@pytest.mark.parametrize("name", ["ssl.key.password", "ssl.keystore.password", "ssl.truststore.password",
                                  "listener.name.internal.scram-sha-512.sasl.jaas.config",
                                  "listener.name.external.ssl.key.password", "ssl.keystore.key"])
def test_password_keys_are_sensitive(name):
    assert is_sensitive(name)


@pytest.mark.parametrize("name", ["ssl.keystore.location", "log.retention.ms", "sasl.enabled.mechanisms"])
def test_other_keys_are_not(name):
    assert not is_sensitive(name)


@pytest.mark.parametrize("version", [0, 1, 3])
def test_a_password_is_described_as_null_with_null_synonyms(version):
    synonyms = [_Synonym(name="ssl.key.password", value="hunter2", source=4)]
    entry = _entry(version, "ssl.key.password", "hunter2", 9, BROKER_KEYS["ssl.key.password"].doc, True,
                   is_sensitive("ssl.key.password"), synonyms, include_synonyms=True, include_docs=False)
    assert entry.value is None and entry.is_sensitive
    assert all(s.value is None for s in (entry.synonyms or []))
    assert "hunter2" not in repr(entry.to_dict())
