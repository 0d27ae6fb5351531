"""A log of the Kinesis ``GetRecords`` calls a moto server answered, for tests that count calls and their order.

Why on the server: a test of how a task paces and interleaves its reads must see what reached the service, in
the order it arrived, whatever the client did (threads, retries).  The moto server (``moto_server.py``) installs
:func:`install` in its own process and serves the log under :data:`LOG_PATH`; a test reads it with
:func:`get_records_calls` and clears it with :func:`clear` (it is per server, so tests filter by stream).

Each entry: ``{"t": <server time.time() when the call arrived>, "stream": ..., "shard": ..., "limit": ...}``.
"""

from __future__ import annotations

import functools
import json
import threading
import time
import urllib.parse
import urllib.request
from typing import Any

__all__ = ["LOG_PATH", "install", "wrap_app", "get_records_calls", "clear"]

LOG_PATH = "/_samza_devkit/get-records-log"
_LOG: list[dict[str, Any]] = []
_LOCK = threading.Lock()


def install() -> None:
    """Log every ``KinesisBackend.get_records`` call of this process (the server's).  Idempotent."""
    from moto.kinesis.models import KinesisBackend
    from moto.kinesis.utils import decompose_shard_iterator

    original = KinesisBackend.get_records
    if getattr(original, "_samza_logged", False):
        return

    @functools.wraps(original)
    def logged(self, stream_arn, shard_iterator, limit):
        try:
            stream, shard, _ = decompose_shard_iterator(shard_iterator)
        except Exception:  # a malformed iterator: moto answers it with its own error
            stream, shard = None, None
        with _LOCK:
            _LOG.append({"t": time.time(), "stream": stream, "shard": shard, "limit": limit})
        return original(self, stream_arn, shard_iterator, limit)

    logged._samza_logged = True
    KinesisBackend.get_records = logged


def wrap_app(app):
    """The WSGI ``app`` plus :data:`LOG_PATH`: GET returns the log as JSON (``?stream=`` filters), DELETE clears."""

    def wrapped(environ, start_response):
        if environ.get("PATH_INFO") != LOG_PATH:
            return app(environ, start_response)
        if environ.get("REQUEST_METHOD") == "DELETE":
            with _LOCK:
                _LOG.clear()
            body = b"[]"
        else:
            stream = urllib.parse.parse_qs(environ.get("QUERY_STRING", "")).get("stream", [None])[0]
            with _LOCK:
                entries = [e for e in _LOG if stream is None or e["stream"] == stream]
            body = json.dumps(entries).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    return wrapped


def _open(endpoint: str, method: str, query: str = ""):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
    request = urllib.request.Request(endpoint.rstrip("/") + LOG_PATH + query, method=method)
    return opener.open(request, timeout=30)


def get_records_calls(endpoint: str, stream: str) -> list[dict[str, Any]]:
    """The ``GetRecords`` calls on ``stream`` the moto server at ``endpoint`` answered, in arrival order."""
    with _open(endpoint, "GET", "?" + urllib.parse.urlencode({"stream": stream})) as resp:
        return json.loads(resp.read())


def clear(endpoint: str) -> None:
    with _open(endpoint, "DELETE"):
        pass
