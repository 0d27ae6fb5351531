"""A cuttable HTTP proxy on loopback, in front of an AWS emulator (moto), for the fault-injection tests.

``CuttableProxy(upstream)`` forwards HTTP/1.1 on ``127.0.0.1:port``. ``cut()`` closes its port and every open
connection (clients see "connection refused"/reset, as with an endpoint that went away), ``restore()`` serves again
on the same port; the emulator behind keeps its state throughout. ``cut_on(target)`` cuts with a request for that
``X-Amz-Target`` in flight. An optional ``transform`` hook rewrites JSON responses (to make GetRecords look trimmed
by retention, say) and ``before`` runs before a request is forwarded.
"""

from __future__ import annotations

import http.client
import http.server
import json
import socket
import socketserver
import threading
import time
from collections import Counter


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class CuttableProxy:
    """HTTP/1.1 forwarder ``127.0.0.1:port`` -> ``upstream``; ``cut()`` / ``restore()`` on the same port."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.split("://", 1)[1].rstrip("/")
        self.transform = None  # (target, request JSON, response JSON) -> response JSON
        self.before = None  # (target) -> None, called before a request is forwarded
        self.requests: Counter = Counter()
        self.cut_happened = False
        self._cut_on: str | None = None
        self._clients: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self.port = 0
        self._serve()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                with proxy._lock:
                    proxy._clients.add(self.connection)

            def finish(self):
                with proxy._lock:
                    proxy._clients.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass

            def log_message(self, *args):
                pass

            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                target = self.headers.get("X-Amz-Target", "")
                proxy.requests[target] += 1
                if proxy._cut_on is not None and proxy._cut_on == target:
                    proxy._cut_on = None
                    proxy.cut()  # the endpoint dies with this request in flight: no answer, connection reset
                    proxy.cut_happened = True
                    self.close_connection = True
                    return
                if proxy.before is not None:
                    proxy.before(target)
                upstream = http.client.HTTPConnection(proxy.upstream, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive")}
                upstream.request(self.command, self.path, body=body, headers=headers)
                resp = upstream.getresponse()
                data = resp.read()
                out_headers = [(k, v) for k, v in resp.getheaders()
                               if k.lower() not in ("content-length", "transfer-encoding", "connection", "x-amz-crc32")]
                upstream.close()
                if proxy.transform is not None and resp.status == 200 and data:
                    changed = proxy.transform(target, json.loads(body or b"{}"), json.loads(data))
                    if changed is not None:
                        data = json.dumps(changed).encode()
                self.send_response(resp.status)
                for k, v in out_headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET = do_PUT = do_DELETE = do_HEAD = _forward  # noqa: N815 - http.server's names

        server = _Server(("127.0.0.1", self.port), Handler)
        self.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self._server = server

    def cut_on(self, target: str) -> None:
        """Cut (as ``cut()``) when the next request for ``target`` (an ``X-Amz-Target``) arrives, unanswered."""
        self.cut_happened = False
        self._cut_on = target

    def cut(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with self._lock:
            clients = list(self._clients)
        for sock in clients:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def restore(self) -> None:
        if self._server is None:
            for _ in range(50):
                try:
                    self._serve()
                    return
                except OSError:  # the port lingers for a moment
                    time.sleep(0.1)
            self._serve()

    def close(self) -> None:
        self.cut()
