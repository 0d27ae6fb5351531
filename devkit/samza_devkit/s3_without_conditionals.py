"""An S3-compatible endpoint WITHOUT conditional writes, for tests: a forwarding proxy in front of moto's server.

Why: moto (like AWS S3) honours ``If-None-Match: *`` on PutObject and ``If-Match`` on DeleteObject, but older or
simpler S3-compatible stores do not: some answer ``501 NotImplemented``, some silently ignore the header and
write anyway. The ``s3://`` metadata store must notice either and fall back to best effort (saying so once). This
proxy produces both behaviours on purpose in front of a real S3 emulator:

- ``mode="ignore"``: the conditional headers are dropped before forwarding (the write always happens);
- ``mode="refuse"``: a request carrying one of them is answered ``501 NotImplemented`` (S3's XML error body);
- ``mode="lose-first-reply"``: conditions are honoured (forwarded), but the reply to the first conditional PUT of
  each object is replaced by ``500 InternalError`` after the write happened, so botocore retries a write that
  already succeeded and the retry meets 412 PreconditionFailed: the store must still know it won.

Everything else is forwarded byte for byte (moto does not check signatures, so dropping a signed header is
harmless there). Runs in a daemon thread of the calling process::

    with S3WithoutConditionals(moto_endpoint, mode="ignore") as endpoint:
        ...  # "http://127.0.0.1:PORT"
"""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["S3WithoutConditionals", "CONDITIONAL_HEADERS"]

CONDITIONAL_HEADERS = ("if-none-match", "if-match")
_NOT_IMPLEMENTED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NotImplemented</Code><Message>A header '
                    b"you provided implies functionality that is not implemented</Message></Error>")
_INTERNAL_ERROR = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code><Message>We '
                   b"encountered an internal error. Please try again.</Message></Error>")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class S3WithoutConditionals:
    """A proxy to ``upstream`` (an ``http://host:port`` S3 endpoint) that ignores or refuses conditional writes."""

    def __init__(self, upstream: str, mode: str = "ignore") -> None:
        if mode not in ("ignore", "refuse", "lose-first-reply"):
            raise ValueError(f"mode must be 'ignore', 'refuse' or 'lose-first-reply', not {mode!r}")
        self.upstream = urllib.parse.urlsplit(upstream)
        self.mode = mode
        #: conditional requests seen (method, path): tests check that the store did send them
        self.conditional_requests: list[tuple[str, str]] = []
        self._lost: set[str] = set()  # paths whose first conditional PUT reply was lost
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.endpoint: str | None = None

    def start(self) -> str:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                conditional = [h for h in self.headers if h.lower() in CONDITIONAL_HEADERS]
                if conditional and self.command in ("PUT", "DELETE"):
                    proxy.conditional_requests.append((self.command, self.path))
                    if proxy.mode == "refuse":
                        self._answer(501, {"Content-Type": "application/xml"}, _NOT_IMPLEMENTED)
                        return
                strip = proxy.mode == "ignore" and self.command in ("PUT", "DELETE")
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP
                           and not (strip and k.lower() in CONDITIONAL_HEADERS)}
                conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    if proxy.mode == "lose-first-reply" and conditional and self.command == "PUT":
                        with proxy._lock:
                            lose = resp.status == 200 and self.path not in proxy._lost
                            proxy._lost.add(self.path)
                        if lose:  # written upstream; the client never hears so
                            self._answer(500, {"Content-Type": "application/xml"}, _INTERNAL_ERROR)
                            return
                    self._answer(resp.status, {k: v for k, v in resp.getheaders()
                                               if k.lower() not in _HOP_BY_HOP and k.lower() != "content-length"},
                                 data)
                finally:
                    conn.close()

            def _answer(self, status: int, headers: dict[str, str], data: bytes) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="s3-without-conditionals", daemon=True).start()
        host, port = self._server.server_address[:2]
        self.endpoint = f"http://{host}:{port}"
        return self.endpoint

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
