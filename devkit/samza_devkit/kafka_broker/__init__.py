"""Kafka wire-protocol development broker: TEST AND DEMO INFRASTRUCTURE ONLY, never production.

A single-node Kafka broker (node id 0, leader of every partition at leader epoch 0, fixed cluster id)
that speaks the real Kafka protocol on loopback, so the Kafka integration tests and ``make demo`` run
against confluent-kafka/librdkafka exactly as against a cluster, with no JVM, Docker or download.
Requests are decoded and responses encoded by kafka-python 3.0.12's classes generated from Kafka's own
JSON message schemas (``protocol.py``); record batches are the v2 format, stored as produced.

Usage::

    with KafkaDevBroker() as broker:            # temp data dir, removed on stop()
        Producer({"bootstrap.servers": broker.bootstrap_servers}) ...
        broker.restart()                         # same port, same data
        broker.kill(); broker.start()            # crash (SIGKILL) and recover
        broker.compact("topic")                  # one compaction pass (cleanup.policy compact / compact,delete)
    python -m samza_devkit.kafka_broker --port 0 --data-dir DIR
        # prints "listening on 127.0.0.1:PORT", serves until SIGTERM/SIGINT, exits 0

``KafkaDevBroker`` runs the broker in a child Python process (the CLI above) so that it neither competes
for the test process's GIL nor dies with it (the child also exits when its parent dies: it watches its
stdin).  ``in_process=True`` runs it on an event-loop thread instead (handy under a debugger).
Modules: ``server.py`` (asyncio networking, framing), ``protocol.py`` (glue to kafka-python's schemas),
``handlers.py`` (one handler per API), ``log.py`` (partition log, index, recovery, group offsets),
``compaction.py`` (log compaction), ``transactions.py`` (transaction coordinator, control batches, last stable
offset, aborted transactions), ``client.py`` (a minimal blocking client for the helpers).

Compaction (``compaction.py`` has the rules): topics whose ``cleanup.policy`` includes ``compact`` are compacted
by ``KafkaDevBroker.compact(topic)`` (in process, or a JSON command on a child broker's stdin) and, with
``compaction_interval_s``, in the background.  As Kafka's cleaner: the latest record of each key at its original
offset, rewritten batches keeping base offset and last offset delta (uncompressed, new CRC-32C), tombstones
removed by the first pass after their KIP-534 delete horizon (``delete.retention.ms``), the last batch of the log
never cleaned (Kafka's active segment), an idempotent producer's last batch kept as an empty batch; the log start
and end offsets do not move.

Supported APIs, advertised in ApiVersions (nothing else is advertised or served):

    ApiVersions 0-4      v3+ flexible; a version above 4 gets Kafka's v0 UNSUPPORTED_VERSION answer
                         listing the ApiVersions range, so clients retry lower
    Metadata 0-13        by name or topic id; unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; auto topic
                         creation off unless ``auto_create_topics=True``
    CreateTopics 2-7     configs validated (unknown name / bad value -> INVALID_CONFIG), replication
                         factor 1 only, name rules and '.'/'_' collisions as Kafka, validate_only
    DeleteTopics 1-6     by name or id; group offsets of the topic are dropped
    CreatePartitions 0-3 on live topics; clients see new partitions on their next metadata refresh
    DescribeConfigs 1-4  topic (all Kafka topic configs with defaults) and broker resources
    DescribeCluster 0-1
    Produce 3-13         acks 0/1/all; record batch v2 only (else UNSUPPORTED_FOR_MESSAGE_FORMAT);
                         a record without a key for a compacted topic -> INVALID_RECORD with a record error,
                         as Kafka's LogValidator answers;
                         batches stored byte for byte with base offset and leader epoch rewritten; any
                         codec is accepted and stored compressed; LogAppendTime topics get the batch
                         timestamp type and max timestamp rewritten (CRC recomputed);
                         max.message.bytes -> MESSAGE_TOO_LARGE
    InitProducerId 0-5   idempotent producers: per-partition sequence/epoch checks, duplicates of the
                         last 5 batches answered with their original offset; survives restarts.
                         With a transactional id (``transactions.py``): one producer id per id, the
                         epoch bumped by every call (the previous holder is fenced: PRODUCER_FENCED
                         at the coordinator, INVALID_PRODUCER_EPOCH on Produce), its open transaction
                         aborted; v3+ producer id/epoch checked; timeout above 15 min ->
                         INVALID_TRANSACTION_TIMEOUT
    AddPartitionsToTxn 0-3, AddOffsetsToTxn 0-3, TxnOffsetCommit 0-3, EndTxn 0-3
                         transactions as Kafka's coordinator runs them (before KIP-890 v2): unknown id
                         or producer id -> INVALID_PRODUCER_ID_MAPPING, stale epoch -> PRODUCER_FENCED
                         (TxnOffsetCommit: INVALID_PRODUCER_EPOCH); offsets committed in a transaction
                         reach the group only when it commits; EndTxn writes a COMMIT or ABORT control
                         batch (v2, transactional + control attributes, key (0, type), value (0,
                         coordinator epoch 0)) to every partition of the transaction; a retried EndTxn
                         answers NONE; a transaction idle past its timeout is aborted with a bumped
                         epoch (checked every second; ``abort_timed_out_transactions`` runs it now).
                         A transactional batch to a partition not in the producer's open transaction
                         -> INVALID_TXN_STATE
    Fetch 4-18           long poll woken by new data, min/max bytes, partition max bytes (the first
                         batch is always returned whole, KIP-74), OFFSET_OUT_OF_RANGE below the log
                         start or above the high watermark, last stable offset (the first offset of
                         the earliest open transaction, else the high watermark), log start offset;
                         read_committed: nothing at or past the last stable offset, the aborted
                         transactions (producer id, first offset) of the range listed; by topic id
                         from v13; sessionless (session id 0)
    ListOffsets 1-11     earliest -2 (log start), latest -1 (read_committed: the last stable offset),
                         max timestamp -3 (KIP-734), earliest
                         local -4; by timestamp: the first offset >= log start whose record timestamp
                         is >= the target, else offset -1 and timestamp -1 (as Kafka)
    OffsetForLeaderEpoch 2-4  epoch 0 ends at the high watermark
    DeleteRecords 0-2    moves the log start offset (-1: the high watermark); returns the low watermark
    FindCoordinator 0-6  consumer groups and transactions: this broker; share groups: COORDINATOR_NOT_AVAILABLE
    OffsetCommit 2-10, OffsetFetch 1-10   for simple (assign()-based) consumers: generation -1 and
                         an empty member id; persisted
    ListGroups 0-5, DescribeGroups 0-6   groups that hold committed offsets: state Empty, protocol type
                         "", classic, no members (as Kafka shows a group only ever committed to, e.g. by
                         AdminClient.alter_consumer_group_offsets); states/types filters; an unknown group
                         is Dead (v6: GROUP_ID_NOT_FOUND); a group whose offsets all went with deleted
                         topics no longer exists.  ``occupy_group`` (in-process brokers) stands in for a
                         running consumer: the group is Stable with one member and refuses commits from
                         outside it (UNKNOWN_MEMBER_ID) until ``vacate_group``
    SaslHandshake 1, SaslAuthenticate 0-2   only with ``sasl_plain_users`` / ``sasl_oauthbearer_secret``
                         (a SASL_PLAINTEXT listener, ``sasl.py``): PLAIN users; OAUTHBEARER tokens must be
                         HS256 JWTs signed with the broker's key, with ``sub`` and a future ``exp``
                         (``samza_devkit.oauth.token_provider`` makes them); any other request before
                         authentication, or a failed authentication, closes the connection

An unknown API key, a version outside these ranges, a frame that does not parse or a frame larger
than ``--max-frame-bytes`` (100 MiB) closes that connection (as Kafka does) and is logged; malformed
record batches get a CORRUPT_MESSAGE error.  The broker keeps serving every other connection.

Not supported: consumer-group membership (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, KIP-848: use
``assign()``, not ``subscribe()``), DeleteGroups/OffsetDelete, transaction version 2 (KIP-890:
EndTxn 4+, AddPartitionsToTxn 4+), ListTransactions/DescribeTransactions/DescribeProducers, OffsetFetch's
UNSTABLE_OFFSET_COMMIT for offsets pending in a transaction, fetch sessions (KIP-227; clients fall back to
full fetches), time/size retention and segment rolling (topic configs are stored and described but only
message.timestamp.type, max.message.bytes, cleanup.policy=compact and delete.retention.ms are enforced;
DeleteRecords and compaction are the only ways data goes), AlterConfigs, replication and leader changes,
ACLs, TLS, SCRAM/GSSAPI, quotas, message format v0/v1, compaction of lz4/snappy/zstd batches without their
Python codecs, CRC-32C validation of produced batches unless the ``crc32c`` package is installed (the pure-Python
CRC is ~10 MB/s), timestamp lookups inside lz4/snappy/zstd batches without their Python codecs
(answered at batch granularity).

Differences from Apache Kafka (found running the same tests on Apache Kafka 4.2, ``samza_devkit.apache_kafka``):

- Compaction's key map: a pass here keeps, of each key, the record with the highest offset in the whole log, the
  last batch included. Kafka's cleaner builds its offset map only from the segments it may clean (never the active
  one), so a record superseded only by one in the active segment survives until that segment is closed (by the
  next append, with ``segment.ms``) and a later pass runs: ``compaction_helpers.GAPPED_BATCHES`` compacts to
  offsets 4, 6, 7, 8, 9 here but to 3, 4, 5, 6, 7, 8, 9 on Kafka until one more batch is written
  (``tests/integration/kafka/test_kafka_cleaner.py``); ``GAPPED_BATCHES`` therefore ends with a batch of a key of
  its own, so both keep the same records.
- When compaction runs: here when asked (``compact``) or on a timer, and every pass removes tombstones past their
  delete horizon. Kafka's cleaner picks a log only once its dirty share passes ``min.cleanable.dirty.ratio`` (a new
  closed segment): a tombstone whose horizon has passed stays until new records make the log dirty again.
- Retention: none here (DeleteRecords and compaction are the only ways data goes). Kafka deletes whole segments
  from the log start whose newest record timestamp (CreateTime unless LogAppendTime) is older than
  ``retention.ms``, and rolls segments by record timestamps (``segment.ms``), so records written with old
  timestamps go at once (``tests/integration/kafka/test_kafka_retention.py``).
- New partitions: Kafka answers ListOffsets for a partition CreatePartitions has just added with
  NOT_LEADER_OR_FOLLOWER for a moment (until the broker has applied its leadership from the metadata log); this
  broker serves it at once. confluent-kafka hands that error back per partition without its retriable flag, and
  the source's admin failed the query on it (now retried: ``kafka/driver/admin.py``, ``_RETRIABLE``).
- A new topic: Kafka answers CreateTopics once its controller has the topic, a moment before the broker's metadata
  shows it (a Metadata request for all topics may leave it out, ListOffsets may answer NOT_LEADER_OR_FOLLOWER);
  here it is there at once. The tests' ``kafka_helpers.create_topic`` waits until every partition has a leader.
- DeleteRecords on a ``cleanup.policy=compact`` topic: Kafka refuses it (POLICY_VIOLATION; records go from such a
  log by compaction alone), and so does this broker now; ``compact,delete`` topics take it on both.
- A consumer group with a live member: Kafka keeps it Stable and refuses offsets committed from outside it; this
  broker has no group membership (``occupy_group`` stands in for a member). The mirror test uses a real member on
  Kafka.
- Record timestamps: Kafka 4.x refuses a record timestamped more than an hour ahead of its clock
  (``message.timestamp.after.max.ms``, default 3,600,000 since 4.0: INVALID_TIMESTAMP); this broker describes
  the 3.x default (unbounded) and accepts any timestamp.

Storage and durability (see ``log.py``): per partition one append-only log file of the stored batches
plus an index of fixed-size entries (offset, position, size, max timestamp, CRC-32); the index is
held in memory (with a running max of timestamps for timestamp lookups).  A produced batch is written
to both files before the Produce response, so acknowledged data survives a broker crash or restart;
it is fsynced only with ``fsync=True`` / ``--fsync`` (power loss).  On open a torn or corrupt tail is
detected (index bounds, CRC-32 of the last batches, CRC-32C of unindexed ones) and cut, never served.
Fetch serves whole stored batches straight from the log file with one pread, never decoding records.
Transactions: the coordinator's state is ``transactions.json`` (replaced atomically on every change; a
transaction caught between its Prepare and Complete states is completed on open); each partition's open and
aborted transactions are rebuilt on open from the batch headers of the partitions that ever held a
transactional batch.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..waits import deadline_after
from . import protocol as _protocol  # noqa: F401 - loads kafka-python's schemas with warnings silenced

__all__ = ["KafkaDevBroker"]


class KafkaDevBroker:
    """One development broker. ``start()``/``stop()``/``restart()``, or use it as a context manager."""

    def __init__(self, data_dir: str | os.PathLike | None = None, port: int = 0, host: str = "127.0.0.1",
                 *, fsync: bool = False, auto_create_topics: bool = False, default_partitions: int = 1,
                 in_process: bool = False, log_level: str | None = None, start_timeout: float = 60.0,
                 sasl_plain_users: dict[str, str] | None = None, sasl_oauthbearer_secret: str | None = None,
                 compaction_interval_s: float | None = None):
        self._owns_dir = data_dir is None
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self.port = port
        self.host = host
        self.fsync = fsync
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.in_process = in_process
        # SASL_PLAINTEXT listener when either is given (sasl.py): PLAIN users, and the HS256 key OAUTHBEARER
        # tokens must be signed with
        self.sasl_plain_users = dict(sasl_plain_users or {})
        self.sasl_oauthbearer_secret = sasl_oauthbearer_secret
        self.compaction_interval_s = compaction_interval_s  # background compaction; None: ``compact()`` only
        self.log_level = log_level or os.environ.get("SAMZA_DEVBROKER_LOG_LEVEL", "WARNING")
        self.start_timeout = start_timeout
        self._proc: subprocess.Popen | None = None
        self._log_file = None
        self.log_path: Path | None = None
        self._thread = None
        self._loop = None
        self._server = None
        self._lock = threading.RLock()

    # ------------------------------------------------------------------------------ lifecycle
    @property
    def data_dir(self) -> Path:
        if self._data_dir is None:
            self._data_dir = Path(tempfile.mkdtemp(prefix="samza-devbroker-"))
        return self._data_dir

    @property
    def bootstrap_servers(self) -> str:
        if not self.port:
            raise RuntimeError("broker not started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def running(self) -> bool:
        if self.in_process:
            return self._thread is not None and self._thread.is_alive()
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> KafkaDevBroker:
        with self._lock:
            if self.running:
                return self
            self.data_dir.mkdir(parents=True, exist_ok=True)
            if self.in_process:
                self._start_thread()
            else:
                self._start_process()
            return self

    def _start_thread(self) -> None:
        import logging

        from .server import BrokerServer, run_in_thread

        logging.getLogger("spark_samza_source.kafka_broker").setLevel(self.log_level.upper())
        from .sasl import SaslConfig

        self._server = BrokerServer(self.data_dir, self.host, self.port, fsync=self.fsync,
                                    auto_create_topics=self.auto_create_topics,
                                    default_partitions=self.default_partitions,
                                    sasl=SaslConfig(self.sasl_plain_users, self.sasl_oauthbearer_secret),
                                    compaction_interval_s=self.compaction_interval_s)
        self._thread, self._loop = run_in_thread(self._server)
        self.port = self._server.port

    def _start_process(self) -> None:
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="samza-devbroker-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self._log_file = open(self.log_path, "ab")
        cmd = [sys.executable, "-m", "samza_devkit.kafka_broker", "--host", self.host,
               "--port", str(self.port), "--data-dir", str(self.data_dir), "--log-level", self.log_level,
               "--default-partitions", str(self.default_partitions), "--exit-on-stdin-eof"]
        if self.fsync:
            cmd.append("--fsync")
        if self.auto_create_topics:
            cmd.append("--auto-create-topics")
        for user, password in sorted(self.sasl_plain_users.items()):
            cmd += ["--sasl-plain-user", f"{user}:{password}"]
        if self.sasl_oauthbearer_secret is not None:
            cmd += ["--sasl-oauthbearer-secret", self.sasl_oauthbearer_secret]
        if self.compaction_interval_s:
            cmd += ["--compaction-interval-s", str(self.compaction_interval_s)]
        deadline = deadline_after(self.start_timeout)
        while True:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=self._log_file, close_fds=True)
            line = _readline_with_timeout(proc, max(deadline - time.monotonic(), 1.0))
            if line.startswith("listening on "):
                break
            proc.kill()
            proc.wait()
            # A fixed port may still be held by a previous incarnation for a moment: retry that
            # (only that) until the deadline.
            if "Address already in use" not in self.log_tail(5) or time.monotonic() > deadline:
                raise RuntimeError(f"dev broker did not start: {line!r}; see {self.log_path}:\n"
                                   + self.log_tail())
            time.sleep(0.2)
        self._proc = proc
        self.port = int(line.rsplit(":", 1)[1])

    @property
    def request_counts(self) -> dict[str, int]:
        """Requests served so far by handler name (``in_process=True`` brokers only: a child process keeps its own)."""
        if not self.in_process or self._server is None:
            raise RuntimeError("request_counts needs a running broker started with in_process=True")
        return dict(self._server.request_counts)

    @property
    def authentications(self) -> dict[tuple[str, str], int]:
        """Successful SASL authentications by (mechanism, principal) (``in_process=True`` brokers only)."""
        if not self.in_process or self._server is None:
            raise RuntimeError("authentications needs a running broker started with in_process=True")
        return dict(self._server.authentications)

    @property
    def fetched_records(self) -> dict[str, int]:
        """Records served by Fetch so far, by topic (``in_process=True`` brokers only), whole batches counted as
        served: what a client's reads cost the broker."""
        if not self.in_process or self._server is None or self._server.state is None:
            raise RuntimeError("fetched_records needs a running broker started with in_process=True")
        return dict(self._server.state.fetched_records)

    def occupy_group(self, group: str, member_id: str = "consumer-1-0f1e2d3c") -> None:
        """Mark consumer group ``group`` as having an active member (``in_process=True`` brokers only): it shows as
        Stable with that member, and commits from outside the group (AdminClient's alter_consumer_group_offsets)
        are answered UNKNOWN_MEMBER_ID, as Kafka answers them while another consumer runs in the group."""
        self._groups_of_running_server("occupy_group").members[group] = member_id

    def vacate_group(self, group: str) -> None:
        """The member of ``group`` left (see ``occupy_group``): the group is Empty again and takes commits."""
        self._groups_of_running_server("vacate_group").members.pop(group, None)

    def abort_timed_out_transactions(self, *, ignore_timeout: bool = False) -> list[str] | None:
        """Run the transaction-timeout check now instead of at the next periodic check: every open
        transaction silent for longer than its producer's ``transaction.timeout.ms`` is aborted (its producer
        fenced).  In-process brokers return the transactional ids aborted once done (``ignore_timeout``:
        every open transaction); a child-process broker is signalled (SIGUSR1) and None returned at once:
        wait for the effect (e.g. the last stable offset) instead."""
        if self.in_process:
            if self._server is None or self._loop is None:
                raise RuntimeError("abort_timed_out_transactions needs a running broker")
            import asyncio

            async def check() -> list[str]:
                return self._server.state.txns.abort_timed_out(ignore_timeout=ignore_timeout)

            return asyncio.run_coroutine_threadsafe(check(), self._loop).result(30)
        if ignore_timeout:
            raise RuntimeError("ignore_timeout needs a broker started with in_process=True")
        if self._proc is None:
            raise RuntimeError("abort_timed_out_transactions needs a running broker")
        self._proc.send_signal(signal.SIGUSR1)
        return None

    def _groups_of_running_server(self, what: str):
        if not self.in_process or self._server is None or self._server.state is None:
            raise RuntimeError(f"{what} needs a running broker started with in_process=True")
        return self._server.state.groups

    def compact(self, topic: str, *, now_ms: int | None = None, timeout: float = 60.0) -> dict[int, dict[str, int]]:
        """Run one compaction pass over every partition of ``topic`` (``cleanup.policy`` compact or compact,delete;
        see ``compaction.py`` for what is kept) and return, per partition, its counts (``records_before``,
        ``records_after``, ``tombstones_removed``, ``batches_dropped``, ``batches_rewritten``).  ``now_ms`` stands
        for the broker's clock in the tombstone rule (a test can pass a time past ``delete.retention.ms``).  Works
        for in-process and child-process brokers (a JSON command on the child's stdin)."""
        command = {"op": "compact", "topic": topic, "now_ms": now_ms}
        with self._lock:
            if not self.running:
                raise RuntimeError("compact needs a running broker")
            answer = self._in_process_command(command, timeout) if self.in_process else \
                self._child_command(command, timeout)
        if "error" in answer:
            raise RuntimeError(f"compact {topic}: {answer['error']}")
        return {int(k): v for k, v in answer["partitions"].items()}

    def _in_process_command(self, command: dict, timeout: float) -> dict:
        import asyncio

        return asyncio.run_coroutine_threadsafe(self._server.command(command), self._loop).result(timeout)

    def _child_command(self, command: dict, timeout: float) -> dict:
        import json

        self._proc.stdin.write(json.dumps(command).encode() + b"\n")
        self._proc.stdin.flush()
        line = _readline_with_timeout(self._proc, timeout)
        if not line:
            raise RuntimeError(f"the dev broker did not answer {command} within {timeout:g} s; see {self.log_path}")
        return json.loads(line)

    def log_tail(self, n: int = 40) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def stop(self, *, _keep_data: bool = False) -> None:
        with self._lock:
            if self.in_process:
                if self._loop is not None and self._thread is not None:
                    self._loop.call_soon_threadsafe(self._loop.stop)
                    self._thread.join(30)
                self._thread = self._loop = self._server = None
            elif self._proc is not None:
                proc, self._proc = self._proc, None
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        proc.wait(30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
                for stream in (proc.stdin, proc.stdout):
                    with contextlib.suppress(OSError):
                        stream.close()
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None
            if not _keep_data and self._owns_dir and self._data_dir is not None:
                shutil.rmtree(self._data_dir, ignore_errors=True)
                self._data_dir = None
                if self.log_path is not None:
                    with contextlib.suppress(OSError):
                        self.log_path.unlink()
                    self.log_path = None

    def kill(self) -> None:
        """Crash the broker (SIGKILL, nothing flushed beyond what was acknowledged). Data is kept:
        call ``start()`` to bring it back on the same port."""
        with self._lock:
            if self.in_process:
                raise RuntimeError("kill() needs the broker in a child process")
            if self._proc is not None:
                self._proc.kill()
                self._proc.wait()
                for stream in (self._proc.stdin, self._proc.stdout):
                    with contextlib.suppress(OSError):
                        stream.close()
                self._proc = None

    def restart(self) -> None:
        """Stop and start again on the same port with the same data."""
        with self._lock:
            self.stop(_keep_data=True)
            self.start()

    def __enter__(self) -> KafkaDevBroker:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __del__(self):  # best effort: never leave a child broker behind
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(Exception):
                proc.kill()

    # ------------------------------------------------------------------------------ helpers
    def _client(self):
        from .client import WireClient

        return WireClient(self.host, self.port)

    def create_topic(self, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
        """Create a topic through the protocol (CreateTopics v5); raises on any error."""
        from kafka.protocol.admin import CreateTopicsRequest

        R = CreateTopicsRequest
        T = R.CreatableTopic
        req = R[5](topics=[T(name=name, num_partitions=partitions, replication_factor=1, assignments=[],
                             configs=[T.CreatableTopicConfig(name=k, value=str(v))
                                      for k, v in (config or {}).items()])],
                   timeout_ms=30000, validate_only=False)
        with self._client() as client:
            result = client.request(req).topics[0]
        if result.error_code:
            raise RuntimeError(f"CreateTopics {name}: error {result.error_code} {result.error_message}")

    def delete_topic(self, name: str) -> None:
        from kafka.protocol.admin import DeleteTopicsRequest

        with self._client() as client:
            result = client.request(DeleteTopicsRequest[5](topic_names=[name], timeout_ms=30000)).responses[0]
        if result.error_code:
            raise RuntimeError(f"DeleteTopics {name}: error {result.error_code} {result.error_message}")


def _readline_with_timeout(proc: subprocess.Popen, timeout: float) -> str:
    result: list[bytes] = []
    reader = threading.Thread(target=lambda: result.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not result:
        return ""
    return result[0].decode(errors="replace").strip()
