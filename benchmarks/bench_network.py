"""Reactor throughput: ApiVersions round trips per second through SocketServer on uvloop.

    python benchmarks/bench_network.py [SECONDS_PER_RUN] [RUNS]

The server runs in this process; the client is a separate process with plain blocking sockets that
writes a window of requests in one send and then reads the answers, so the client costs little.
Scenarios: one connection one request at a time (latency bound), one pipelined connection, and N
connections each pipelining. Prints the median of RUNS runs.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import socket
import statistics
import struct
import sys
import time

import uvloop

from odradek.broker.config import KafkaConfig
from odradek.broker.apis import api_versions
from odradek.broker.kafka_apis import KafkaApis
from odradek.broker.server import build_socket_server
from odradek.protocol.header import encode_request
from odradek.protocol.messages import ApiVersionsRequest

_SIZE = struct.Struct(">i")


def _read_frames(sock: socket.socket, count: int, buf: bytearray) -> bytearray:
    """Read until ``count`` whole response frames have arrived; returns the leftover bytes."""
    while count:
        pos = 0
        while count and len(buf) - pos >= 4:
            size = _SIZE.unpack_from(buf, pos)[0]
            if len(buf) - pos - 4 < size:
                break
            pos += 4 + size
            count -= 1
        del buf[:pos]
        if count:
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("server closed the connection")
            buf += chunk
    return buf


def client(port: int, connections: int, window: int, seconds: float, result: "mp.Queue") -> None:
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(connections)]
    for s in socks:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    request = encode_request(ApiVersionsRequest(client_software_name="bench", client_software_version="1"), 3, 1,
                             "bench")
    batch = request * window
    bufs = [bytearray() for _ in socks]
    done = 0
    deadline = time.perf_counter() + seconds
    t0 = time.perf_counter()
    while time.perf_counter() < deadline:
        for s in socks:
            s.sendall(batch)
        for i, s in enumerate(socks):
            bufs[i] = _read_frames(s, window, bufs[i])
        done += window * connections
    elapsed = time.perf_counter() - t0
    for s in socks:
        s.close()
    result.put(done / elapsed)


async def serve_and_measure(connections: int, window: int, seconds: float, io_threads: int,
                            apis: KafkaApis | None = None) -> float:
    config = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "zookeeper.connect": "localhost:2181",
                          "num.io.threads": str(io_threads)})
    if apis is None:
        apis = KafkaApis()
        api_versions.register(apis)  # the clients ask ApiVersions
    server = build_socket_server(config, apis)
    await server.start()
    result: mp.Queue = mp.Queue()
    proc = mp.get_context("fork").Process(target=client, args=(server.port(), connections, window, seconds, result))
    proc.start()
    loop = asyncio.get_running_loop()
    rate = await loop.run_in_executor(None, result.get)
    await loop.run_in_executor(None, proc.join)
    await server.stop()
    return rate


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    scenarios = [
        ("1 connection, 1 request at a time", 1, 1),
        ("1 connection, pipelined 100", 1, 100),
        ("8 connections, pipelined 100 each", 8, 100),
        ("64 connections, pipelined 10 each", 64, 10),
    ]
    print(f"ApiVersions v3 round trips/s through SocketServer on uvloop (median of {runs} x {seconds:g} s)")
    for name, connections, window in scenarios:
        rates = [uvloop.run(serve_and_measure(connections, window, seconds, 8)) for _ in range(runs)]
        print(f"  {name:<36} {statistics.median(rates):>10,.0f}/s")


if __name__ == "__main__":
    main()
