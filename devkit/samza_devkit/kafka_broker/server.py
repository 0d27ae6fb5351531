"""Networking: an asyncio TCP server speaking Kafka's size-prefixed request/response framing.

Each connection is served by one task that reads a frame, handles it and writes the response before
reading the next one, so responses are in request order (Kafka's per-connection ordering) and a
long-polling Fetch holds back only its own connection.  Any number of connections are served
concurrently.  A frame that cannot be parsed, an unknown API or an unsupported version closes that
connection (as Kafka does); an oversized frame (> ``max_frame_bytes``) is refused the same way before
its body is read.  A bug in a handler is logged and closes the connection; the broker goes on.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import socket
import threading
from pathlib import Path

from kafka.protocol.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

from .handlers import HANDLER_NAMES, SUPPORTED_APIS, BrokerState
from .protocol import ApiError, MalformedRequest, decode_request, encode_response, parse_request_header
from .sasl import SaslConfig, SaslSession
from .sasl import authenticate as sasl_authenticate

__all__ = ["BrokerServer", "DEFAULT_MAX_FRAME_BYTES", "run_in_thread"]

log = logging.getLogger("spark_samza_source.kafka_broker")

DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024
# how often open transactions are checked against their timeout (Kafka:
# transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s; shorter here so tests wait less)
TXN_TIMEOUT_CHECK_S = 1.0


class BrokerServer:
    def __init__(self, data_dir: str | Path, host: str = "127.0.0.1", port: int = 0, *, fsync: bool = False,
                 auto_create_topics: bool = False, default_partitions: int = 1,
                 max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, sasl: SaslConfig | None = None,
                 compaction_interval_s: float | None = None):
        self.data_dir = Path(data_dir)
        # background compaction of every compacted topic this often (None: only when asked, see ``command``)
        self.compaction_interval_s = compaction_interval_s
        self._compactor: asyncio.Task | None = None
        self.host = host
        self.requested_port = port
        self.port: int | None = None
        self.fsync = fsync
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.max_frame_bytes = max_frame_bytes
        self.sasl = sasl or SaslConfig()
        # successful authentications by (mechanism, principal): tests see who connected, without timing anything
        self.authentications: collections.Counter[tuple[str, str]] = collections.Counter()
        self.state: BrokerState | None = None
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task] = set()
        # requests served, by handler name: lets tests check that a client batches (e.g. one ListOffsets for
        # a thousand partitions) without timing anything
        self.request_counts: collections.Counter[str] = collections.Counter()

    async def start(self) -> None:
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.requested_port))
        self.port = sock.getsockname()[1]
        self.state = BrokerState(self.data_dir, self.host, self.port, fsync=self.fsync,
                                 auto_create_topics=self.auto_create_topics,
                                 default_partitions=self.default_partitions)
        self._server = await asyncio.start_server(self._serve, sock=sock, backlog=256,
                                                  limit=1 << 20)
        self._txn_timeouts = asyncio.create_task(self._abort_timed_out_transactions())
        if self.compaction_interval_s:
            self._compactor = asyncio.create_task(self._compact_periodically())

    async def _compact_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.compaction_interval_s)
            try:
                self.state.compact_all()
            except Exception:  # a broken log must not stop the broker; it is logged and retried next time
                log.exception("background compaction failed")

    async def command(self, command: dict) -> dict:
        """A devkit control command, run on the event loop (the only thread touching the state):
        ``{"op": "compact", "topic": NAME, "now_ms": optional}`` -> ``{"partitions": {partition: counts}}``, or
        ``{"error": message}``.  ``KafkaDevBroker`` sends these in process, or as JSON lines on a child's stdin."""
        try:
            if command.get("op") != "compact":
                raise ValueError(f"unknown command {command.get('op')!r}")
            result = self.state.compact(command["topic"], command.get("now_ms"))
            return {"partitions": {str(k): v for k, v in result.items()}}
        except Exception as exc:  # reported to the caller, who raises it
            return {"error": f"{type(exc).__name__}: {exc}"}

    async def _abort_timed_out_transactions(self) -> None:
        """Background: a producer that went away mid-transaction is fenced and its transaction aborted."""
        while True:
            await asyncio.sleep(TXN_TIMEOUT_CHECK_S)
            try:
                self.state.txns.abort_timed_out()
            except Exception:  # a bug here must not stop the checks or the broker
                log.exception("aborting timed-out transactions failed")

    async def stop(self) -> None:
        if getattr(self, "_txn_timeouts", None) is not None:
            self._txn_timeouts.cancel()
        if self._compactor is not None:
            self._compactor.cancel()
            self._compactor = None
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        if self.state is not None:
            self.state.close()
            self.state = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._connections.add(task)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = writer.get_extra_info("peername")
        session = SaslSession()
        try:
            while True:
                size_bytes = await reader.readexactly(4)
                size = int.from_bytes(size_bytes, "big", signed=True)
                if size < 0 or size > self.max_frame_bytes:
                    log.warning("closing %s: frame of %d bytes (limit %d)", peer, size, self.max_frame_bytes)
                    return
                frame = await reader.readexactly(size)
                response = await self.handle_frame(frame, session)
                if response is not None:
                    writer.write(response)
                    if writer.transport.get_write_buffer_size() > 1 << 20:
                        await writer.drain()
                if session.failed:  # Kafka closes the connection after a failed authentication
                    await writer.drain()
                    log.info("closing %s: SASL authentication failed", peer)
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except MalformedRequest as exc:
            log.warning("closing %s: %s", peer, exc)
        except asyncio.CancelledError:
            pass
        except Exception:  # a handler bug: never take the broker down, never leave a client hanging
            log.exception("closing %s after an internal error", peer)
        finally:
            self._connections.discard(task)
            writer.close()

    async def handle_frame(self, frame: bytes, session: SaslSession | None = None) -> bytes | None:
        view = memoryview(frame)
        header = parse_request_header(view)
        key, version = header.api_key, header.api_version
        state = self.state
        supported = SUPPORTED_APIS.get(key)
        if supported is None:
            raise MalformedRequest(f"unsupported API key {key}")
        if not supported[0] <= version <= supported[1]:
            if key == 18:
                return encode_response(state.api_versions_unsupported(), header.correlation_id)
            raise MalformedRequest(f"unsupported version {version} of API key {key}")
        request = decode_request(view, header)
        self.request_counts[HANDLER_NAMES[key]] += 1
        if key in (17, 36):
            return encode_response(self._sasl_response(header, request, session or SaslSession()),
                                   header.correlation_id)
        if self.sasl.enabled and key != 18 and not (session is not None and session.authenticated):
            raise MalformedRequest(f"{HANDLER_NAMES[key]} before SASL authentication")
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s v%d from %s", HANDLER_NAMES[key], version, header.client_id)
        result = getattr(state, HANDLER_NAMES[key])(header, request)
        if asyncio.iscoroutine(result):
            result = await result
        if result is None:
            return None
        return encode_response(result, header.correlation_id)

    def _sasl_response(self, header, request, session: SaslSession):
        """SaslHandshake v1 and SaslAuthenticate (sasl.py has the rules)."""
        if header.api_key == 17:
            mechanisms = self.sasl.mechanisms
            if not mechanisms or session.mechanism is not None:
                error = ApiError.ILLEGAL_SASL_STATE
            elif request.mechanism not in mechanisms:
                error = ApiError.UNSUPPORTED_SASL_MECHANISM
            else:
                error, session.mechanism = ApiError.NONE, request.mechanism
            return SaslHandshakeResponse(version=header.api_version, error_code=error, mechanisms=mechanisms)
        problem = sasl_authenticate(self.sasl, session, bytes(request.auth_bytes))
        if problem is None:
            self.authentications[(session.mechanism, session.principal)] += 1
        else:
            log.info("SASL %s authentication failed: %s", session.mechanism, problem)
        return SaslAuthenticateResponse(version=header.api_version,
                                        error_code=ApiError.SASL_AUTHENTICATION_FAILED if problem else 0,
                                        error_message=problem, auth_bytes=b"", session_lifetime_ms=0)


def run_in_thread(server: BrokerServer) -> tuple[threading.Thread, asyncio.AbstractEventLoop]:
    """Start ``server`` on a new event loop in a daemon thread; returns once it is listening."""
    loop = asyncio.new_event_loop()
    started = threading.Event()
    failure: list[BaseException] = []

    def main() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(server.start())
        except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
            failure.append(exc)
            started.set()
            return
        started.set()
        loop.run_forever()
        loop.run_until_complete(server.stop())
        loop.close()

    thread = threading.Thread(target=main, name="kafka-dev-broker", daemon=True)
    thread.start()
    started.wait()
    if failure:
        raise failure[0]
    return thread, loop
