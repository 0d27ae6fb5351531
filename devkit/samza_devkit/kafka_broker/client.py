"""A tiny blocking Kafka client over kafka-python's generated classes, for the broker's own helpers
(``KafkaDevBroker.create_topic`` ...) and for protocol-level tests. Tests of the product use
confluent-kafka; this exists so the broker package needs no client library of its own."""

from __future__ import annotations

import itertools
import socket
import struct

from .protocol import RESPONSE_CLASSES

__all__ = ["WireClient"]


class WireClient:
    def __init__(self, host: str, port: int, timeout: float = 30.0, client_id: str = "devbroker-helper"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self._ids = itertools.count(1)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exact(4))[0]
        return self._read_exact(size)

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def request(self, request):
        """Send a versioned request instance (e.g. ``CreateTopicsRequest[5](...)``), return the response."""
        correlation_id = next(self._ids)
        request.with_header(correlation_id=correlation_id, client_id=self.client_id)
        self.sock.sendall(request.encode(header=True, framed=True))
        frame = self.read_frame()
        response_cls = RESPONSE_CLASSES[request.API_KEY]
        response = response_cls.decode(frame, version=request.API_VERSION, header=True)
        if response.header.correlation_id != correlation_id:
            raise ConnectionError("correlation id mismatch")
        return response
