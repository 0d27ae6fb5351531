"""Server-side fault injection for the devkit's moto server: AWS errors answered over HTTP, and calls counted.

Why on the server: a fault raised in the client (a botocore ``before-call`` hook) never reaches botocore's retry
handler, so a test written that way cannot tell whether botocore retried underneath our own loops. Here the
moto server itself answers, for example, ``ProvisionedThroughputExceededException`` with HTTP 400, exactly as
Kinesis and DynamoDB do, so the request really went over the wire, botocore parsed a real error response and its
retry policy (if any) ran; and the server counts every request it received, so a test can check how many
attempts were made in total.

The server side is a WSGI middleware (:class:`FaultInjectionMiddleware`) around moto's application, installed by
``moto_server.main``; it only touches requests of the JSON protocol services (``X-Amz-Target`` header: Kinesis,
DynamoDB) and its own control path ``/_samza_faults``. Tests drive it through :class:`AwsFaults` (fixture
``aws_faults``)::

    rule = faults.add("GetRecords", code="ProvisionedThroughputExceededException", times=3)
    ...                                 # the first 3 GetRecords are answered with the error, later ones pass
    faults.counts(rule)                 # {"seen": 5, "failed": 3}: 5 requests reached the server, 3 failed
    watch = faults.watch("PutItem", match=table)   # times=0: only counts
    faults.clear()                      # every rule and count gone (the fixture does this after each test)

A rule matches a request by operation (the part of ``X-Amz-Target`` after the dot, e.g. ``GetRecords``,
``PutItem``; ``""``: every operation), optionally by service prefix (``Kinesis``/``DynamoDB``) and by a text
that must occur in the request body (a stream or table name). ``skip`` lets that many matching requests pass
first; ``times`` is how many are then failed (-1: all). ``status`` is the HTTP status (400 for throttling,
500/503 for an endpoint in trouble); ``applied`` has moto carry the request out before the error is answered
(the answer of a write got lost). ``remote`` limits a rule to requests from one client address (a cluster test's
worker host). ``hold`` fails nothing: moto carries the request out at once and its real answer waits until the
test calls ``release(rule)`` (at most 120 s), so a test can act -- cut the client's link, say -- between a write
and its answer. Rules are checked in the order they were added; the first that fails (or holds) a request
answers it, every matching rule counts it.
"""

from __future__ import annotations

import itertools
import json
import threading
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["FaultInjectionMiddleware", "AwsFaults", "CONTROL_PATH"]

CONTROL_PATH = "/_samza_faults"

_MESSAGES = {
    "ProvisionedThroughputExceededException": "Rate exceeded for shard (injected by the devkit's moto server)",
    "LimitExceededException": "Rate exceeded (injected by the devkit's moto server)",
    "ThrottlingException": "Rate of requests exceeds the allowed throughput (injected by the devkit's moto server)",
}


class FaultInjectionMiddleware:
    """WSGI middleware: answers matching AWS JSON-protocol requests with an error, counts them, and serves the
    control path (JSON: ``POST`` adds a rule, ``GET`` lists rules and counts, ``DELETE`` clears)."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._rules: list[dict[str, Any]] = []
        self._released: dict[int, threading.Event] = {}  # hold rules: set when the test releases their answers
        self._ids = itertools.count(1)

    # ---- WSGI ---------------------------------------------------------------------------------------------
    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "").startswith(CONTROL_PATH):
            return self._control(environ, start_response)
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target or not self._rules:
            return self.app(environ, start_response)
        body = self._read_body(environ)
        service, _, operation = target.partition(".")
        failing = self._decide(service, operation, body, environ.get("REMOTE_ADDR", ""))
        if failing is None:
            return self.app(environ, start_response)
        if failing["hold"]:
            return self._held(failing, environ, start_response)
        if failing["applied"]:  # the service did the work, but its answer is lost: an error goes back instead
            answer = self.app(environ, lambda *args, **kwargs: None)
            try:
                for _ in answer:
                    pass
            finally:
                close = getattr(answer, "close", None)
                if close is not None:
                    close()
        payload = json.dumps({"__type": failing["code"],
                              "message": failing["message"] or _MESSAGES.get(failing["code"], "injected")}).encode()
        content_type = environ.get("CONTENT_TYPE") or "application/x-amz-json-1.1"
        start_response(f"{failing['status']} Injected", [
            ("Content-Type", content_type), ("Content-Length", str(len(payload))),
            ("x-amzn-RequestId", str(uuid.uuid4())), ("x-amzn-ErrorType", failing["code"]),
        ])
        return [payload]

    def _held(self, rule: dict[str, Any], environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        """Carry the request out now, answer it once the test releases ``rule``."""
        started: list[tuple] = []
        answer = self.app(environ, lambda *args, **kwargs: started.append(args))
        try:
            payload = b"".join(answer)
        finally:
            close = getattr(answer, "close", None)
            if close is not None:
                close()
        self._released[rule["id"]].wait(120)
        status, headers = started[0][:2]
        start_response(status, headers)
        return [payload]

    @staticmethod
    def _read_body(environ: dict[str, Any]) -> bytes:
        """The request body, put back so that moto reads it as if nobody had."""
        import io

        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        body = environ["wsgi.input"].read(length) if length > 0 else b""
        environ["wsgi.input"] = io.BytesIO(body)
        return body

    def _decide(self, service: str, operation: str, body: bytes, remote: str) -> dict[str, Any] | None:
        text = body.decode("utf-8", errors="replace")
        failing = None
        with self._lock:
            for rule in self._rules:
                if rule["operation"] not in ("", operation) or not service.startswith(rule["service"]):
                    continue
                if (rule["match"] and rule["match"] not in text) or (rule["remote"] and rule["remote"] != remote):
                    continue
                rule["seen"] += 1
                if failing is not None or rule["seen"] <= rule["skip"]:
                    continue
                if rule["times"] < 0 or rule["failed"] < rule["times"]:
                    rule["failed"] += 1
                    failing = rule
        return failing

    # ---- control --------------------------------------------------------------------------------------------
    def _control(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        status, answer = "200 OK", {}
        try:
            if method == "POST":
                spec = json.loads(self._read_body(environ) or b"{}")
                rule = {"id": next(self._ids), "operation": str(spec["operation"]),
                        "service": str(spec.get("service") or ""), "match": str(spec.get("match") or ""),
                        "code": str(spec.get("code") or "ProvisionedThroughputExceededException"),
                        "message": str(spec.get("message") or ""), "status": int(spec.get("status", 400)),
                        "times": int(spec.get("times", -1)), "skip": int(spec.get("skip", 0)),
                        "applied": bool(spec.get("applied", False)), "remote": str(spec.get("remote") or ""),
                        "hold": bool(spec.get("hold", False)), "seen": 0, "failed": 0}
                with self._lock:
                    self._rules.append(rule)
                    self._released[rule["id"]] = threading.Event()
                answer = {"id": rule["id"]}
            elif method == "PUT":  # {"release": rule id}: the answers that rule holds go out
                self._released[int(json.loads(self._read_body(environ))["release"])].set()
            elif method == "DELETE":
                with self._lock:
                    self._rules.clear()
                    for released in self._released.values():
                        released.set()
                    self._released.clear()
            else:
                with self._lock:
                    answer = {"rules": [dict(r) for r in self._rules]}
        except (KeyError, ValueError, TypeError) as err:
            status, answer = "400 Bad Request", {"error": f"bad fault rule: {err!r}"}
        payload = json.dumps(answer).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
        return [payload]


class AwsFaults:
    """The test side: add rules to, read counts from and clear the fault injection of the moto server at
    ``endpoint`` (``http://127.0.0.1:PORT``)."""

    def __init__(self, endpoint: str) -> None:
        self.url = endpoint.rstrip("/") + CONTROL_PATH
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy

    def _request(self, method: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(self.url, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with self._opener.open(request, timeout=10) as resp:
            return json.loads(resp.read() or b"{}")

    def add(self, operation: str, *, code: str = "ProvisionedThroughputExceededException", times: int = -1,
            skip: int = 0, status: int = 400, service: str = "", match: str = "", message: str = "",
            applied: bool = False, remote: str = "", hold: bool = False) -> int:
        """Fail ``times`` requests of ``operation`` (after ``skip`` passed) with ``code``; returns the rule id.
        ``applied=True``: moto carries the request out first and only its answer is replaced by the error (a
        write that happened although the caller was told it failed, as after a timeout or a 5xx). ``remote``:
        only requests from that client address. ``hold=True``: carry the request out and hold its real answer
        until :meth:`release` (no error)."""
        return int(self._request("POST", {"operation": operation, "code": code, "times": times, "skip": skip,
                                          "status": status, "service": service, "match": match,
                                          "message": message, "applied": applied, "remote": remote,
                                          "hold": hold})["id"])

    def release(self, rule: int) -> None:
        """Send the answers a ``hold`` rule holds (and let later matches pass at once)."""
        self._request("PUT", {"release": rule})

    def watch(self, operation: str, *, service: str = "", match: str = "") -> int:
        """Only count the requests of ``operation`` (a rule that fails none)."""
        return self.add(operation, times=0, service=service, match=match)

    def counts(self, rule: int) -> dict[str, int]:
        """``{"seen": requests that matched, "failed": of them answered with the error}``."""
        for r in self._request("GET")["rules"]:
            if r["id"] == rule:
                return {"seen": r["seen"], "failed": r["failed"]}
        raise KeyError(f"no fault rule {rule} on {self.url} (cleared?)")

    def clear(self) -> None:
        self._request("DELETE")
