"""The broker's own clients (controller channel, replica fetchers, transaction markers, controlled shutdown) check
the host name of the broker they reach when ssl.endpoint.identification.algorithm=https (Kafka's default since
2.0), and only then: a certificate for another name is refused, with the check off it is trusted."""

import asyncio

import pytest
import uvloop

from odradek.broker.config import KafkaConfig
from odradek.broker.kafka_apis import KafkaApis
from odradek.broker.network.socket_server import SocketServer
from odradek.tools.local_ca import LocalCA
from odradek.controller.channel_manager import inter_broker_connect


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    ca = LocalCA(tmp_path_factory.mktemp("ca"))
    ca.issue("elsewhere", hosts=["broker.example.com"])  # not 127.0.0.1: the name a client checks
    return ca


def _config(ca: LocalCA, **extra: str) -> KafkaConfig:
    return KafkaConfig({"zookeeper.connect": "localhost:2181", "listeners": "SSL://127.0.0.1:0",
                        "security.inter.broker.protocol": "SSL", "ssl.keystore.type": "PEM",
                        "ssl.keystore.location": str(ca.directory / "elsewhere.pem"), "ssl.truststore.type": "PEM",
                        "ssl.truststore.location": str(ca.cert_path), **extra})


@pytest.mark.parametrize("algorithm, reached", [(None, False), ("", True)])
def test_inter_broker_clients_check_the_host_name_by_default(ca, algorithm, reached):
    extra = {} if algorithm is None else {"ssl.endpoint.identification.algorithm": algorithm}
    config = _config(ca, **extra)

    async def main() -> bool:
        server = SocketServer(_config(ca), KafkaApis())
        await server.start()
        try:
            conn = await inter_broker_connect(config)("127.0.0.1", server.port(), timeout=10)
        except ConnectionError as exc:
            assert "CERTIFICATE_VERIFY_FAILED" in str(exc) or "match" in str(exc), exc
            return False
        finally:
            await server.stop(timeout=1)
        await conn.close()
        return True

    assert uvloop.run(asyncio.wait_for(main(), 30)) is reached
