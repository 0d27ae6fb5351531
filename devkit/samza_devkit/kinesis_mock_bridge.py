"""A loopback HTTP proxy in front of kinesis-mock that makes it behave as AWS documents Kinesis (tests only).

kinesis-mock serves enhanced fan-out (``SubscribeToShard``) where moto and kinesalite do not, but departs from
AWS's API reference in ways a fan-out reader must not be allowed to lean on. The bridge passes every request and
response through unchanged except:

- **initial-response**: AWS starts each ``SubscribeToShard`` event stream with an ``initial-response`` event;
  kinesis-mock does not, and botocore then refuses the stream ("First event was not of type initial-response").
  The bridge sends one as soon as kinesis-mock accepts the subscription.
- **end of a closed shard**: AWS ends a subscription on a closed shard with a ``SubscribeToShardEvent`` whose
  ``ContinuationSequenceNumber`` is null and which carries ``ChildShards``; kinesis-mock keeps sending empty
  events until its 5-minute limit. The bridge rewrites the event that delivers (or continues past) the shard's last
  record into that final event, with the children from ``ListShards``, and ends the stream.
- **EndingSequenceNumber**: kinesis-mock reports a closed shard's as 9223372036854775807 in ``ListShards`` and
  ``DescribeStream``. The bridge puts the shard's last record's sequence number there, or, for a shard that never
  had a record, its starting sequence number (``kinesis_shard_catalog``).
- **a second subscription to the same shard and consumer**: AWS answers a call made within 5 seconds of a
  successful one with ``ResourceInUseException`` (HTTP 400), and lets a later call take the subscription over,
  the earlier connection then failing with ``ResourceInUseException``. kinesis-mock refuses any second
  subscription while the first is open, with HTTP 200 and an exception event as the stream's only message. The
  bridge applies AWS's rule itself (``takeover_after_s``, 5 s by default; measured from the earlier call,
  whether or not its subscription is still open, as the reference words it) and turns a refusal kinesis-mock
  still sends as the stream's first message into an HTTP 400 error response.
- **a shard the stream does not have**: AWS answers ``ResourceNotFoundException``; kinesis-mock streams empty
  events (continuation "0"). The bridge answers the error.
- **5-minute subscriptions**: both end a subscription after 5 minutes; ``subscription_limit_s`` shortens it so
  tests can meet a renewal in seconds. The stream then ends cleanly, after a whole event.

Hooks for tests: :meth:`KinesisMockBridge.cut` drops open subscriptions abruptly (the client sees the connection
reset mid-stream, as on a network cut), :meth:`KinesisMockBridge.open_subscriptions` lists them, and
:meth:`KinesisMockBridge.subscription_counts` says how many calls per consumer and shard were admitted, refused by
the 5-second rule, or took an open subscription over (so a test can tell a reader that kept its subscription from
one that subscribed again).

The bridge serves HTTP/1.1 (as kinesis-mock does), in threads of the process that starts it.
"""

from __future__ import annotations

import http.client
import json
import queue
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

from botocore.exceptions import ClientError

from .aws_event_stream import MessageSplitter, RawMessage, event_message, exception_message
from .kinesis_shard_catalog import ShardCatalog, StreamRef

__all__ = ["KinesisMockBridge", "SubscriptionCounts", "AWS_SUBSCRIPTION_LIMIT_S", "AWS_TAKEOVER_AFTER_S"]

AWS_SUBSCRIPTION_LIMIT_S = 300.0
AWS_TAKEOVER_AFTER_S = 5.0
_TARGET_PREFIX = "Kinesis_20131202."
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer", "upgrade"}
_FIRST_MESSAGE_WAIT_S = 0.3  # kinesis-mock refuses at once; its first event comes about a second later
# how long kinesis-mock may take to notice that a subscription the bridge closed is gone (it notices when its next
# event, sent every second, fails to go out: about 2 s were seen)
_UPSTREAM_RELEASE_S = 5.0
_END, _BROKEN = object(), object()


@dataclass(eq=False)
class Subscription:
    """One open ``SubscribeToShard`` through the bridge."""

    consumer_arn: str
    shard_id: str
    started: float = field(default_factory=time.monotonic)
    client: tuple[str, int] | None = None  # the subscriber's (address, port): which host holds the subscription
    cut_requested: threading.Event = field(default_factory=threading.Event)
    taken_over: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    @property
    def key(self) -> tuple[str, str]:
        return self.consumer_arn, self.shard_id


@dataclass
class SubscriptionCounts:
    """What became of the ``SubscribeToShard`` calls of one (consumer, shard), or of several summed."""

    admitted: int = 0  # calls let through (a subscription opened, unless kinesis-mock then failed the call)
    refused: int = 0  # calls answered ResourceInUseException by AWS's 5-second rule
    taken_over: int = 0  # open subscriptions ended because a later call took the shard over

    def __add__(self, other: SubscriptionCounts) -> SubscriptionCounts:
        return SubscriptionCounts(self.admitted + other.admitted, self.refused + other.refused,
                                  self.taken_over + other.taken_over)


class _Registry:
    """Open subscriptions and the time of each (consumer, shard)'s last successful call, for AWS's 5-second rule;
    what became of each (consumer, shard)'s calls, for tests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[str, str], Subscription] = {}
        self._last_call: dict[tuple[str, str], float] = {}
        self._counts: dict[tuple[str, str], SubscriptionCounts] = {}

    def admit(self, consumer_arn: str, shard_id: str, takeover_after_s: float,
              client: tuple[str, int] | None = None) -> Subscription | None:
        """A new subscription, the earlier one told to give way; None if AWS would refuse the call."""
        now, key = time.monotonic(), (consumer_arn, shard_id)
        with self._lock:
            counts = self._counts.setdefault(key, SubscriptionCounts())
            last = self._last_call.get(key)
            if last is not None and now - last < takeover_after_s:
                counts.refused += 1
                return None
            counts.admitted += 1
            earlier = self._open.get(key)
            if earlier is not None:
                earlier.taken_over.set()
                counts.taken_over += 1
            subscription = Subscription(consumer_arn, shard_id, started=now, client=client)
            self._open[key] = subscription
        if earlier is not None:
            earlier.released.wait(_UPSTREAM_RELEASE_S)
        return subscription

    def succeeded(self, subscription: Subscription) -> None:
        with self._lock:
            self._last_call[subscription.key] = subscription.started

    def release(self, subscription: Subscription) -> None:
        with self._lock:
            if self._open.get(subscription.key) is subscription:
                del self._open[subscription.key]
        subscription.released.set()

    def matching(self, consumer_arn: str | None, shard_id: str | None) -> list[Subscription]:
        with self._lock:
            return [s for s in self._open.values()
                    if consumer_arn in (None, s.consumer_arn) and shard_id in (None, s.shard_id)]

    def counts(self, consumer_arn: str | None, shard_id: str | None) -> SubscriptionCounts:
        with self._lock:
            return sum((c for (consumer, shard), c in self._counts.items()
                        if consumer_arn in (None, consumer) and shard_id in (None, shard)), SubscriptionCounts())

    def forget_calls(self) -> None:
        with self._lock:
            self._last_call.clear()


class _UpstreamStream:
    """A ``SubscribeToShard`` call on kinesis-mock; a thread reads its messages into a queue."""

    def __init__(self, host: str, port: int, headers: dict[str, str], body: bytes) -> None:
        self.conn = http.client.HTTPConnection(host, port, timeout=None)
        self.conn.request("POST", "/", body=body, headers=headers)
        self.response = self.conn.getresponse()
        self.messages: queue.Queue[Any] = queue.Queue()
        self._sock = self.conn.sock
        if self.is_event_stream:
            threading.Thread(target=self._pump, name="kinesis-mock-bridge-upstream", daemon=True).start()

    @property
    def is_event_stream(self) -> bool:
        content_type = self.response.getheader("Content-Type", "")
        return self.response.status == 200 and content_type.startswith("application/vnd.amazon.eventstream")

    def _pump(self) -> None:
        splitter = MessageSplitter()
        try:
            while chunk := self.response.read1(65536):
                splitter.add(chunk)
                for message in splitter:
                    self.messages.put(message)
            self.messages.put(_END)
        except Exception:  # noqa: BLE001 - any failure of the read (also a close racing it) breaks the stream
            self.messages.put(_BROKEN)

    def next_message(self, wait_s: float) -> Any:
        try:
            return self.messages.get(timeout=wait_s)
        except queue.Empty:
            return None

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.conn.close()


class _ShardEndRewriter:
    """Turns the event that reaches a closed shard's end into AWS's final event (null continuation, ChildShards).

    The end is reached when the event's records or continuation reach the shard's last record (kinesis-mock's
    continuation is the tip's sequence number even for a LATEST or AT_TIMESTAMP subscription starting after it),
    or at once for a shard that never had a record. Never by "caught up and empty" alone: an event produced just
    before a split can be caught up and still miss records put right before the split."""

    def __init__(self, catalog: ShardCatalog, consumer_arn: str, shard_id: str) -> None:
        self.catalog = catalog
        self.stream = StreamRef.from_arn(consumer_arn)
        self.shard_id = shard_id

    def rewrite(self, message: RawMessage) -> tuple[bytes, bool]:
        """The bytes to send for ``message`` and whether the stream ends with it."""
        if message.message_type != "event":
            return message.raw, message.message_type == "exception"  # an error ends the stream
        if message.event_type != "SubscribeToShardEvent":
            return message.raw, False
        try:
            end = self.catalog.shard_end(self.stream, self.shard_id)
        except ClientError:
            return message.raw, False  # e.g. the stream is being deleted: kinesis-mock's event as it is
        event = json.loads(message.payload)
        if end is None or not (end.last_sequence is None or _position(event) >= int(end.last_sequence)):
            return message.raw, False
        event["ContinuationSequenceNumber"] = None
        event["ChildShards"] = end.child_shards
        return event_message("SubscribeToShardEvent", event), True


def _position(event: dict[str, Any]) -> int:
    """The furthest sequence number an event has delivered or skipped to."""
    numbers = [int(r["SequenceNumber"]) for r in event.get("Records") or []]
    if event.get("ContinuationSequenceNumber"):
        numbers.append(int(event["ContinuationSequenceNumber"]))
    return max(numbers, default=-1)


class _BridgeServer(ThreadingHTTPServer):
    request_queue_size = 128  # Spark tasks open many connections at once; the default backlog is 5


class KinesisMockBridge:
    """The bridge in front of kinesis-mock at ``upstream``; ``start()`` returns its endpoint.

    ``subscription_limit_s`` and ``takeover_after_s`` may be changed while it runs (tests: restore them after;
    :meth:`reset` does)."""

    def __init__(self, upstream: str, host: str = "127.0.0.1") -> None:
        parsed = urlparse(upstream)
        self.upstream = upstream
        self.upstream_address = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self.host = host
        self.catalog = ShardCatalog(upstream)
        self.registry = _Registry()
        self.subscription_limit_s = AWS_SUBSCRIPTION_LIMIT_S
        self.takeover_after_s = AWS_TAKEOVER_AFTER_S
        self.endpoint: str | None = None
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> str:
        handler = type("BoundBridgeHandler", (_BridgeHandler,), {"bridge": self})
        self._server = _BridgeServer((self.host, 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="kinesis-mock-bridge", daemon=True).start()
        self.endpoint = f"http://{self.host}:{self._server.server_address[1]}"
        return self.endpoint

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            self.cut()
            server.shutdown()
            server.server_close()

    def reset(self) -> None:
        """AWS's limits again, no subscription remembered for the 5-second rule."""
        self.subscription_limit_s = AWS_SUBSCRIPTION_LIMIT_S
        self.takeover_after_s = AWS_TAKEOVER_AFTER_S
        self.registry.forget_calls()

    def open_subscriptions(self, consumer_arn: str | None = None, shard_id: str | None = None) -> list[Subscription]:
        return self.registry.matching(consumer_arn, shard_id)

    def subscription_counts(self, consumer_arn: str | None = None, shard_id: str | None = None) -> SubscriptionCounts:
        """How many ``SubscribeToShard`` calls matching the filters (None: any) were admitted, refused by the
        5-second rule, or took an open subscription over, since the bridge started (``reset`` keeps them)."""
        return self.registry.counts(consumer_arn, shard_id)

    def cut(self, consumer_arn: str | None = None, shard_id: str | None = None) -> int:
        """Drop the open subscriptions matching the filters (None: any) without ending their streams; how many."""
        matching = self.registry.matching(consumer_arn, shard_id)
        for subscription in matching:
            subscription.cut_requested.set()
        return len(matching)

    def __enter__(self) -> KinesisMockBridge:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _BridgeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in separate writes: without TCP_NODELAY, Nagle and the client's delayed ACK held
    # each response back ~40 ms
    disable_nagle_algorithm = True
    bridge: KinesisMockBridge

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        operation = (self.headers.get("X-Amz-Target") or "").removeprefix(_TARGET_PREFIX)
        if operation == "SubscribeToShard":
            _SubscriptionSession(self, body).serve()
        else:
            self._forward(operation, body)

    do_GET = do_PUT = do_DELETE = do_POST

    def upstream_headers(self) -> dict[str, str]:
        return {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}

    def _forward(self, operation: str, body: bytes) -> None:
        status, headers, payload = self._exchange(body)
        if status == 200 and operation in ("ListShards", "DescribeStream"):
            payload = self._fix_ending_sequences(operation, body, payload)
        self.send_whole(status, headers, payload)

    def _exchange(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        """One request on this client connection's own kept-alive connection to kinesis-mock (a new TCP
        connection per request made each call ~40 ms slower), opened again once if kinesis-mock had closed it."""
        for attempt in (1, 2):
            if self._upstream is None:
                self._upstream = http.client.HTTPConnection(*self.bridge.upstream_address, timeout=120)
            try:
                self._upstream.request(self.command, self.path, body=body or None, headers=self.upstream_headers())
                response = self._upstream.getresponse()
                return response.status, response.getheaders(), response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._close_upstream()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _close_upstream(self) -> None:
        if self._upstream is not None:
            self._upstream.close()
            self._upstream = None

    def setup(self) -> None:
        super().setup()
        self._upstream: http.client.HTTPConnection | None = None

    def finish(self) -> None:
        self._close_upstream()
        super().finish()

    def _fix_ending_sequences(self, operation: str, body: bytes, payload: bytes) -> bytes:
        request, answer = json.loads(body or b"{}"), json.loads(payload)
        if operation == "DescribeStream":
            description = answer["StreamDescription"]
            stream, shards = StreamRef.from_arn(description["StreamARN"]), description["Shards"]
        else:
            stream, shards = StreamRef.from_request(request, self.headers.get("Authorization", "")), answer["Shards"]
        if stream is None or not self.bridge.catalog.fix_ending_sequences(stream, shards):
            return payload
        return json.dumps(answer).encode("utf-8")

    def send_whole(self, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
        self.send_response_only(status)
        for name, value in headers:
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def send_error_json(self, status: int, error_type: str, message: str) -> None:
        payload = json.dumps({"__type": error_type, "message": message}).encode("utf-8")
        self.send_whole(status, [("Content-Type", "application/x-amz-json-1.1"), ("x-amzn-ErrorType", error_type)],
                        payload)

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def abort(self) -> None:
        """Drop the connection mid-response, as a network cut would."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _SubscriptionSession:
    """One ``SubscribeToShard`` through the bridge, from admission to the stream's end."""

    def __init__(self, handler: _BridgeHandler, body: bytes) -> None:
        self.handler, self.body, self.bridge = handler, body, handler.bridge
        request = json.loads(body or b"{}")
        self.consumer_arn, self.shard_id = request.get("ConsumerARN", ""), request.get("ShardId", "")

    def serve(self) -> None:
        if self._refused_as_missing_shard():
            return
        subscription = self.bridge.registry.admit(self.consumer_arn, self.shard_id, self.bridge.takeover_after_s,
                                                  tuple(self.handler.client_address[:2]))
        if subscription is None:
            self.handler.send_error_json(400, "ResourceInUseException", self._in_use_message())
            return
        upstream = None
        try:
            upstream, first = self._open_upstream()
            if upstream is not None:
                subscription.started = time.monotonic()  # limits count from here, not from waiting for kinesis-mock
                self.bridge.registry.succeeded(subscription)
                self._relay(subscription, upstream, first)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the subscriber left
        finally:
            if upstream is not None:
                upstream.close()
            self.bridge.registry.release(subscription)

    def _refused_as_missing_shard(self) -> bool:
        """AWS refuses a subscription to a shard the stream does not have; kinesis-mock streams empty events."""
        try:
            stream = StreamRef.from_arn(self.consumer_arn)
        except ValueError:
            return False  # kinesis-mock answers a malformed ARN itself
        if self.bridge.catalog.has_shard(stream, self.shard_id) is not False:
            return False
        self.handler.send_error_json(400, "ResourceNotFoundException",
                                     f"Shard {self.shard_id} in stream {stream.name} under account {stream.account} "
                                     "does not exist")
        return True

    def _in_use_message(self) -> str:
        return (f"Another active subscription exists for consumer {self.consumer_arn} on shard {self.shard_id}, or "
                f"one was made less than {self.bridge.takeover_after_s:g}s ago")

    def _open_upstream(self) -> tuple[_UpstreamStream | None, Any]:
        """kinesis-mock's stream and its first message if one came at once; (None, None) when the call failed
        (the error is already answered). Retries while kinesis-mock has not yet noticed that a subscription the
        bridge closed is gone."""
        deadline = time.monotonic() + _UPSTREAM_RELEASE_S
        while True:
            upstream = _UpstreamStream(*self.bridge.upstream_address, self.handler.upstream_headers(), self.body)
            if not upstream.is_event_stream:
                self.handler.send_whole(upstream.response.status, upstream.response.getheaders(),
                                        upstream.response.read())
                upstream.close()
                return None, None
            first = upstream.next_message(_FIRST_MESSAGE_WAIT_S)
            if not (isinstance(first, RawMessage) and first.message_type == "exception"):
                return upstream, first
            upstream.close()
            error_type = str(first.headers.get(":exception-type", "InternalFailureException"))
            if error_type != "ResourceInUseException" or time.monotonic() >= deadline:
                message = json.loads(first.payload or b"{}").get("message", error_type)
                self.handler.send_error_json(400, error_type, message)
                return None, None
            time.sleep(0.1)

    def _start_stream(self, upstream: _UpstreamStream) -> None:
        handler = self.handler
        handler.send_response_only(200)
        for name, value in upstream.response.getheaders():
            if name.lower() not in _HOP_BY_HOP:
                handler.send_header(name, value)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        handler.write_chunk(event_message("initial-response", {}))

    def _relay(self, subscription: Subscription, upstream: _UpstreamStream, first: Any) -> None:
        self._start_stream(upstream)
        rewriter = _ShardEndRewriter(self.bridge.catalog, self.consumer_arn, self.shard_id)
        pending = [first] if first is not None else []
        while True:
            if subscription.cut_requested.is_set():
                self.handler.abort()
                return
            if subscription.taken_over.is_set():
                self.handler.write_chunk(exception_message("ResourceInUseException", self._taken_over_message()))
                self.handler.end_chunked()
                return
            if time.monotonic() - subscription.started >= self.bridge.subscription_limit_s:
                self.handler.end_chunked()
                return
            item = pending.pop() if pending else upstream.next_message(0.05)
            if item is None:
                continue
            if item is _BROKEN:
                self.handler.abort()
                return
            if item is _END:
                self.handler.end_chunked()
                return
            data, last = rewriter.rewrite(item)
            self.handler.write_chunk(data)
            if last:
                self.handler.end_chunked()
                return

    def _taken_over_message(self) -> str:
        return f"A newer subscription of consumer {self.consumer_arn} to shard {self.shard_id} took this one over"
