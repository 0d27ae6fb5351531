"""Fault-injection harness: queries on any broker, the Spark offset log read back, and a cuttable HTTP proxy.

- ``FaultQueries`` (fixture factory ``fault_queries(bootstrap)``): samza-kafka queries against a given broker (the
  shared dev broker or a test's own), writing Parquet or collecting per batch;
- ``offset_log(checkpoint)`` / ``committed_batches(checkpoint)``: Spark's offset and commit logs, parsed;
- ``cursor_walk(log, batches, topic)``: an oracle independent of the source's offset code (no ``LogOffset``): a
  cursor per partition walked over the rows each batch delivered, moved only by the rebases the raw offset JSON
  records (as ``benchmarks/soak.py``'s checker);
- ``CuttableProxy`` (fixture ``moto_proxy``): an HTTP/1.1 forwarder on loopback in front of the shared moto server.
  ``cut()`` closes its port and every open connection (clients see "connection refused"/reset, as with an
  endpoint that went away), ``restore()`` serves again on the same port; moto keeps its state throughout. An
  optional ``transform`` hook rewrites JSON responses (used to make GetRecords look trimmed by retention).
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import socket
import socketserver
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from samza_devkit.query_harness import QueryHarness, stop_active_queries
from spark_samza_source.core.startpoint_manager import StartpointManager
from spark_samza_source.metadata import open_store


# ---- waiting ------------------------------------------------------------------------------------------------------
def wait_for(condition, timeout: float = 60, interval: float = 0.1, what: str = "condition"):
    """:meth:`QueryHarness.wait_for`, polling faster and giving up sooner by default (fault windows are short)."""
    return QueryHarness.wait_for(condition, timeout, interval, what)


# ---- Spark's checkpoint ---------------------------------------------------------------------------------------------
def _batch_files(directory: Path) -> dict[int, Path]:
    if not directory.is_dir():
        return {}
    return {int(p.name): p for p in directory.iterdir() if p.name.isdigit()}


def offset_log(checkpoint: str | Path, source: int = 0) -> dict[int, dict]:
    """{batch id: the source's end offset JSON} from ``<checkpoint>/offsets/<n>`` (v1, metadata, a line per source)."""
    out = {}
    for batch, path in sorted(_batch_files(Path(checkpoint) / "offsets").items()):
        lines = path.read_text().splitlines()
        if len(lines) < 3 + source:
            continue  # being written
        out[batch] = json.loads(lines[2 + source])
    return out


def committed_batches(checkpoint: str | Path) -> set[int]:
    return set(_batch_files(Path(checkpoint) / "commits"))


def cursor_walk(log: dict[int, dict], batches: list[tuple[int, list]], topic: str, start: int = 0) -> list[str]:
    """Violations of exactly-once delivery, found without the source's own offset code.

    A cursor per partition starts at ``start``; in batch order, a rebase the raw offset JSON records for the
    partition (a startpoint applied in that batch, a new partition) moves it to the recorded position; the rows
    the batch delivered for the partition must then be exactly the next offsets from the cursor, contiguous; the
    cursor moves past them and must then equal the batch's end position in the raw JSON (the lowest over tasks).
    """
    cursor: dict[int, int] = {}
    out = []
    for batch_id, rows in batches:
        raw = log.get(batch_id)
        if raw is None:
            out.append(f"batch {batch_id}: delivered but not in the offset log")
            continue
        ends: dict[int, int] = {}
        for by_ssp in raw["positions"].values():
            for key, end in by_ssp.items():
                stream, partition = key.split(".", 1)[1].rsplit(".", 1)
                if stream == topic:
                    ends[int(partition)] = min(end, ends.get(int(partition), end))
        for by_ssp in raw.get("rebases", {}).values():
            for key, rebase in by_ssp.items():
                stream, partition = key.split(".", 1)[1].rsplit(".", 1)
                if stream == topic:
                    cursor[int(partition)] = rebase["position"]
        got: dict[int, list[int]] = {}
        for r in rows:
            got.setdefault(r.partition, []).append(r.offset)
        for partition in sorted(set(ends) | set(got)):
            here = cursor.get(partition, start)
            offsets = sorted(got.get(partition, []))
            if offsets != list(range(here, here + len(offsets))):
                out.append(f"batch {batch_id} partition {partition}: cursor {here}, delivered "
                           f"{offsets[:3]}..{offsets[-3:]} ({len(offsets)} rows)")
            cursor[partition] = here + len(offsets)
            if partition in ends and ends[partition] != cursor[partition]:
                out.append(f"batch {batch_id} partition {partition}: the offset log ends at {ends[partition]}, "
                           f"the delivered rows at {cursor[partition]}")
    return out


def startpoint_rebases(log: dict[int, dict]) -> list[tuple[int, str, str, int, int]]:
    """Every applied startpoint: (batch, task, SSP key, position, creation timestamp), in batch order."""
    out = []
    for batch, offset in sorted(log.items()):
        for task, by_ssp in offset.get("rebases", {}).items():
            for key, rebase in by_ssp.items():
                if rebase["reason"] == "startpoint":
                    out.append((batch, task, key, rebase["position"], rebase["creationTimestamp"]))
    return out


def startpoints_left(store_dir: str | Path, job: str) -> list[str]:
    """The keys of every startpoint still in a ``file:`` store."""
    return [e.key for e in StartpointManager(open_store(f"file://{store_dir}", job)).list()]


# ---- Kafka queries --------------------------------------------------------------------------------------------------
class FaultQueries(QueryHarness):
    """samza-kafka queries on ``bootstrap``; collected batches keep (partition, offset, task) only."""

    default_trigger = {"processingTime": "300 milliseconds"}

    def __init__(self, spark, bootstrap: str, root: Path) -> None:
        super().__init__(spark, root)
        self.bootstrap = bootstrap

    def options(self, **extra) -> dict[str, str]:
        return self.job_options({"kafka.bootstrap.servers": self.bootstrap, "startingOffsets": "earliest"}, extra)

    def stream(self, **extra):
        return self.spark.readStream.format("samza-kafka").options(**self.options(**extra)).load()

    def start_parquet(self, name: str, trigger: dict | None = None, transform=None, **extra):
        df = self.stream(**extra)
        if transform is not None:
            df = transform(df)
        return self.write_parquet(name, df, trigger)

    def start_collecting(self, name: str, trigger: dict | None = None, **extra):
        return self.collect_batches(name, self.stream(**extra), trigger, columns=("partition", "offset", "task"))

    def sink_offsets(self, name: str) -> Counter:
        """(partition, offset) -> copies in the Parquet sink, read through the sink's own metadata log."""
        path = Path(self.sink_path(name))
        if not (path / "_spark_metadata").exists():
            return Counter()
        return Counter((r.partition, r.offset) for r in self.spark.read.parquet(str(path))
                       .select("partition", "offset").collect())



@pytest.fixture
def fault_queries(spark, tmp_path):
    made = []

    def make(bootstrap: str) -> FaultQueries:
        harness = FaultQueries(spark, bootstrap, tmp_path / f"q{len(made)}")
        made.append(harness)
        return harness

    yield make
    stop_active_queries(spark)


def exactly_once(counts: Counter, wanted) -> list[str]:
    """Problems (empty if none) comparing sink copies with the set of (partition, offset) wanted once each."""
    wanted = set(wanted)
    problems = []
    dupes = sorted(k for k, n in counts.items() if n > 1)
    missing = sorted(wanted - set(counts))
    extra = sorted(set(counts) - wanted)
    if dupes:
        problems.append(f"{len(dupes)} duplicated, e.g. {dupes[:5]}")
    if missing:
        problems.append(f"{len(missing)} missing, e.g. {missing[:5]}")
    if extra:
        problems.append(f"{len(extra)} unexpected, e.g. {extra[:5]}")
    return problems


# ---- a cuttable HTTP proxy in front of moto ----------------------------------------------------------------------
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


@pytest.fixture
def moto_proxy(moto_server):
    proxy = CuttableProxy(moto_server)
    yield proxy
    proxy.close()


class KinesisFaultQueries(QueryHarness):
    """samza-kinesis queries whose AWS endpoint is a :class:`CuttableProxy`; the test talks to moto directly.
    Collected batches keep (shardId, sequenceNumber, subSequenceNumber, data) only."""

    default_trigger = {"processingTime": "300 milliseconds"}

    def __init__(self, spark, moto_endpoint: str, proxy: CuttableProxy, root: Path) -> None:
        from samza_devkit import kinesis_helpers as kh

        super().__init__(spark, root)
        self.proxy = proxy
        self.client = kh.kinesis_client(moto_endpoint)

    def create_stream(self, shards: int, prefix: str = "s") -> str:
        from samza_devkit import kinesis_helpers as kh

        return kh.create_stream(self.client, kh.unique_stream_name(prefix), shards)

    def options(self, stream: str, **extra) -> dict[str, str]:
        return self.job_options({
            "streamName": stream, "endpointUrl": self.proxy.endpoint, "region": "us-east-1",
            "awsAccessKeyId": "testing", "awsSecretKey": "testing", "startingPosition": "TRIM_HORIZON",
            "maxFetchTimePerShard": "2s",
        }, extra)

    def start_collecting(self, name: str, stream: str, trigger: dict | None = None, on_batch=None, **extra):
        df = self.spark.readStream.format("samza-kinesis").options(**self.options(stream, **extra)).load()
        return self.collect_batches(name, df, trigger, on_batch,
                                    columns=("shardId", "sequenceNumber", "subSequenceNumber", "data"))


@pytest.fixture
def ks_proxy(spark, moto_server, moto_proxy, tmp_path):
    harness = KinesisFaultQueries(spark, moto_server, moto_proxy, tmp_path)
    yield harness
    stop_active_queries(spark)


def kill_process_group(proc) -> None:
    """SIGKILL a subprocess started with ``start_new_session=True`` and everything it started (JVM, workers)."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


@pytest.fixture
def fh():
    """The helpers above, for test modules (conftest functions cannot be imported with --import-mode=importlib)."""
    from types import SimpleNamespace

    return SimpleNamespace(wait_for=wait_for, offset_log=offset_log, committed_batches=committed_batches,
                           cursor_walk=cursor_walk,
                           startpoint_rebases=startpoint_rebases, exactly_once=exactly_once,
                           kill_process_group=kill_process_group, startpoints_left=startpoints_left)
