"""A raw TCP server in threads, the transport of the fake brokers that a real client (librdkafka) talks to."""

from __future__ import annotations

import socket
import threading
from typing import Callable

from odradek.protocol.framing import FrameSplitter


class FrameServer:
    """Listens on 127.0.0.1 (a free port, ``port``) and hands each request frame of each connection (without
    its size prefix) to ``answer``, which returns the bytes to write back (a whole response, size prefix
    included) or None for a request without a response (an acks=0 Produce). An exception in ``answer`` ends
    that connection and is kept in ``errors`` for the test to report. ``close`` stops accepting, shuts every
    connection and joins the threads."""

    def __init__(self, answer: Callable[[bytes], bytes | None]) -> None:
        self.answer = answer
        self.errors: list[str] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.stopping = threading.Event()
        self.conns: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def close(self) -> None:
        self.stopping.set()
        self.server.close()
        for conn in list(self.conns):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        for thread in self.threads:
            thread.join(5)

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.conns.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        splitter = FrameSplitter()
        with conn:
            while not self.stopping.is_set():
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                for frame in splitter.feed(chunk):
                    try:
                        response = self.answer(bytes(frame))
                    except Exception as exc:  # noqa: BLE001 - reported by the test
                        self.errors.append(f"{type(exc).__name__}: {exc}")
                        return
                    if response is None:
                        continue
                    try:
                        conn.sendall(response)
                    except OSError:
                        return
