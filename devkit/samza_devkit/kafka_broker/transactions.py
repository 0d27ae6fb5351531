"""Transactions: the transaction coordinator and each partition's transactional state.

The coordinator (one per broker: this node coordinates every transactional id) keeps, per transactional
id, the producer id and epoch, the transaction timeout, the state (Empty, Ongoing, PrepareCommit,
PrepareAbort, CompleteCommit, CompleteAbort, as Kafka's TransactionCoordinator names them), the partitions
and consumer groups in the open transaction and the offsets committed in it (TxnOffsetCommit; they reach the
group only when the transaction commits).  It is persisted to ``transactions.json`` (atomically replaced) on
every change, in place of Kafka's ``__transaction_state`` topic.

Ending a transaction writes a control batch (record batch v2 with the transactional and control attribute
bits, producer id and epoch, base sequence -1) holding one control record to every partition of the
transaction: key ``(version 0 int16, type int16: 0 ABORT, 1 COMMIT)``, value ``(version 0 int16,
coordinator epoch int32)``.  The state is written as Prepare* before the markers and Complete* after, so a
broker that dies in between completes the transaction on restart (markers go to the partitions that still
hold it open), as Kafka's coordinator does when it loads its log.

Per partition (``PartitionTxns``): the open transactions (producer id -> offset of its first record here),
whose earliest first offset is the last stable offset (the high watermark when none is open), and the
aborted transactions (producer id, first offset, offset of the ABORT marker), Kafka's aborted-transaction
index, listed in read_committed Fetch responses.  Both are rebuilt on open by scanning the batch headers of
the partitions that ever held a transactional batch (a ``transactional`` flag file in the partition
directory marks them), so nothing but the log is needed to recover them.

A producer that stays silent for longer than its transaction timeout while a transaction is open is fenced
and its transaction aborted (epoch bumped, ABORT markers with the new epoch), as Kafka's
``abortTimedOutTransactions`` does; ``abort_timed_out`` runs from the server every second and on demand.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafka.protocol.producer import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnResponse,
    EndTxnResponse,
    InitProducerIdResponse,
    TxnOffsetCommitResponse,
)

from .log import BATCH_HEADER, PartitionLog, atomic_write_json, parse_batches
from .protocol import ApiError

__all__ = ["PartitionTxns", "TransactionCoordinator", "control_batch", "MAX_TRANSACTION_TIMEOUT_MS"]

log = logging.getLogger("spark_samza_source.kafka_broker")

ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
COORDINATOR_EPOCH = 0  # a single broker that never loses its coordinator role
MAX_TRANSACTION_TIMEOUT_MS = 900_000  # Kafka's transaction.max.timeout.ms default (15 minutes)
_MAX_EPOCH = 32767
_FLAG_FILE = "transactional"


# ------------------------------------------------------------------------------------- control batches
def _zigzag_varint(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def control_batch(producer_id: int, producer_epoch: int, commit: bool, timestamp_ms: int) -> bytes:
    """One control batch (base offset 0: the log assigns it) holding a COMMIT or ABORT marker."""
    from kafka.record.util import calc_crc32c

    key = struct.pack(">hh", 0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = struct.pack(">hi", 0, COORDINATOR_EPOCH)
    body = (b"\x00" + _zigzag_varint(0) + _zigzag_varint(0) + _zigzag_varint(len(key)) + key
            + _zigzag_varint(len(value)) + value + _zigzag_varint(0))
    record = _zigzag_varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", ATTR_TRANSACTIONAL | ATTR_CONTROL, 0, timestamp_ms, timestamp_ms,
                            producer_id, producer_epoch, -1, 1) + record
    header = struct.pack(">qiibI", 0, len(after_crc) + 9, 0, 2, calc_crc32c(after_crc))
    return header + after_crc


def _skip_varint(data: bytes, pos: int) -> int:
    while data[pos] & 0x80:
        pos += 1
    return pos + 1


def _control_type(plog: PartitionLog, i: int) -> int:
    """COMMIT or ABORT, from the key of the one record in control batch ``i`` of ``plog``."""
    data = os.pread(plog._rfd, plog.sizes[i], plog.positions[i])
    pos = _skip_varint(data, BATCH_HEADER.size) + 1  # record length, attributes byte
    pos = _skip_varint(data, _skip_varint(data, pos))  # timestamp delta, offset delta
    pos = _skip_varint(data, pos)  # key length
    return struct.unpack_from(">h", data, pos + 2)[0]  # key: version int16, type int16


# ------------------------------------------------------------------------------------- partition state
@dataclass
class PartitionTxns:
    """Open and aborted transactions of one partition."""

    ongoing: dict[int, int] = field(default_factory=dict)  # producer id -> first offset of its open txn
    aborted: list[tuple[int, int, int]] = field(default_factory=list)  # (producer id, first, marker offset)
    marker_epochs: dict[int, int] = field(default_factory=dict)  # producer id -> epoch of its last marker

    def last_stable_offset(self, high_watermark: int) -> int:
        return min(self.ongoing.values(), default=high_watermark)

    def aborted_between(self, start: int, end: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions with records in [start, end)."""
        return [(pid, first) for pid, first, last in self.aborted if last >= start and first < end]

    def record_data(self, producer_id: int, base_offset: int) -> None:
        self.ongoing.setdefault(producer_id, base_offset)

    def record_marker(self, producer_id: int, epoch: int, commit: bool, marker_offset: int) -> None:
        first = self.ongoing.pop(producer_id, None)
        if not commit and first is not None:
            self.aborted.append((producer_id, first, marker_offset))
        self.marker_epochs[producer_id] = epoch

    @classmethod
    def scan(cls, plog: PartitionLog) -> PartitionTxns:
        """Rebuild from the batch headers of ``plog``."""
        txns = cls()
        for i in range(len(plog.base_offsets)):
            header = os.pread(plog._rfd, BATCH_HEADER.size, plog.positions[i])
            (base, _l, _e, _m, _c, attrs, _d, _f, _t, pid, epoch, _s, _n) = BATCH_HEADER.unpack(header)
            if not attrs & ATTR_TRANSACTIONAL:
                continue
            if attrs & ATTR_CONTROL:
                txns.record_marker(pid, epoch, _control_type(plog, i) == CONTROL_COMMIT, base)
            else:
                txns.record_data(pid, base)
        return txns


# ------------------------------------------------------------------------------------- coordinator state
@dataclass
class TxnMeta:
    """One transactional id, as the coordinator keeps it."""

    transactional_id: str
    producer_id: int
    epoch: int
    timeout_ms: int
    state: str = "Empty"
    partitions: set = field(default_factory=set)  # {(topic, partition)}
    groups: set = field(default_factory=set)
    pending_offsets: dict = field(default_factory=dict)  # group -> {(topic, partition): (offset, epoch, meta)}
    updated_ms: int = 0

    def to_json(self) -> dict:
        return {"id": self.transactional_id, "pid": self.producer_id, "epoch": self.epoch,
                "timeout_ms": self.timeout_ms, "state": self.state, "updated_ms": self.updated_ms,
                "partitions": sorted(self.partitions), "groups": sorted(self.groups),
                "pending_offsets": {g: [[t, p, *v] for (t, p), v in sorted(o.items())]
                                    for g, o in self.pending_offsets.items()}}

    @classmethod
    def from_json(cls, d: dict) -> TxnMeta:
        return cls(d["id"], d["pid"], d["epoch"], d["timeout_ms"], d["state"],
                   {(t, p) for t, p in d["partitions"]}, set(d["groups"]),
                   {g: {(t, p): (o, e, m) for t, p, o, e, m in rows} for g, rows in d["pending_offsets"].items()},
                   d["updated_ms"])


def _now_ms() -> int:
    return int(time.time() * 1000)


class TransactionCoordinator:
    """Transaction coordinator plus the partitions' transactional state, for one ``BrokerState``.

    ``broker`` is the owning BrokerState: its topics, idempotent producer states, group offsets and the
    wake-up of long-polling fetches are what ending a transaction touches.
    """

    def __init__(self, broker, data_dir: Path, new_producer_id: Callable[[], int]):
        self.broker = broker
        self._path = Path(data_dir) / "transactions.json"
        self._new_producer_id = new_producer_id
        self.txns: dict[str, TxnMeta] = {}
        self.partitions: dict[tuple[str, int], PartitionTxns] = {}
        if self._path.exists():
            self.txns = {d["id"]: TxnMeta.from_json(d) for d in json.loads(self._path.read_text())}
        for topic in broker.topics.values():
            for i, plog in enumerate(topic.partitions):
                if (plog.dir / _FLAG_FILE).exists():
                    self.partitions[(topic.name, i)] = txns = PartitionTxns.scan(plog)
                    self._restore_epochs(topic.name, i, txns)
        for meta in self.txns.values():  # the broker died between Prepare* and Complete*: finish
            if meta.state in ("PrepareCommit", "PrepareAbort"):
                self._complete(meta, meta.state == "PrepareCommit", meta.epoch)

    def _restore_epochs(self, topic: str, partition: int, txns: PartitionTxns) -> None:
        """A marker's epoch fences older epochs of its producer in the partition, across restarts too."""
        for pid, epoch in txns.marker_epochs.items():
            state = self.broker.producers.get((topic, partition, pid))
            if state is None or state.epoch < epoch:
                self.broker.set_producer_epoch(topic, partition, pid, epoch)

    def _save(self) -> None:
        atomic_write_json(self._path, [m.to_json() for m in self.txns.values()], fsync=self.broker.fsync)

    # --------------------------------------------------------------------------------- partition view
    def partition(self, topic: str, partition: int) -> PartitionTxns | None:
        return self.partitions.get((topic, partition))

    def last_stable_offset(self, topic: str, partition: int, high_watermark: int) -> int:
        txns = self.partitions.get((topic, partition))
        return high_watermark if txns is None else txns.last_stable_offset(high_watermark)

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self.partitions if k[0] == topic]:
            del self.partitions[key]

    # --------------------------------------------------------------------------------- produce hooks
    def check_produce(self, topic: str, partition: int, records: bytes, start: int) -> int:
        """Kafka's checks of a transactional batch: its producer's epoch is current and the partition
        is in that producer's open transaction (else INVALID_TXN_STATE, as a leader verifying the
        transaction answers)."""
        (_b, _l, _e, _m, _c, attrs, _d, _f, _t, pid, epoch, _s, _n) = BATCH_HEADER.unpack_from(records, start)
        if not attrs & ATTR_TRANSACTIONAL:
            return ApiError.NONE
        if attrs & ATTR_CONTROL:
            return ApiError.INVALID_RECORD  # only the coordinator writes markers
        meta = next((m for m in self.txns.values() if m.producer_id == pid), None)
        if meta is None:
            return ApiError.INVALID_PRODUCER_ID_MAPPING
        if epoch < meta.epoch:
            return ApiError.INVALID_PRODUCER_EPOCH
        if meta.state != "Ongoing" or epoch != meta.epoch or (topic, partition) not in meta.partitions:
            return ApiError.INVALID_TXN_STATE
        return ApiError.NONE

    def on_append(self, topic: str, partition: int, plog: PartitionLog, records: bytes, start: int,
                  base_offset: int) -> None:
        (_b, _l, _e, _m, _c, attrs, _d, _f, _t, pid, _ep, _s, _n) = BATCH_HEADER.unpack_from(records, start)
        if attrs & ATTR_TRANSACTIONAL:
            self._txns_of(topic, partition, plog).record_data(pid, base_offset)
            meta = next((m for m in self.txns.values() if m.producer_id == pid), None)
            if meta is not None:
                meta.updated_ms = _now_ms()

    def _txns_of(self, topic: str, partition: int, plog: PartitionLog) -> PartitionTxns:
        txns = self.partitions.get((topic, partition))
        if txns is None:
            (plog.dir / _FLAG_FILE).touch()
            txns = self.partitions[(topic, partition)] = PartitionTxns()
        return txns

    # --------------------------------------------------------------------------------- ending
    def _write_markers(self, meta: TxnMeta, commit: bool, epoch: int) -> None:
        now = _now_ms()
        for topic_name, idx in sorted(meta.partitions):
            topic = self.broker.topics.get(topic_name)
            if topic is None or idx >= len(topic.partitions):
                continue  # deleted under the transaction: nothing to mark
            plog = topic.partitions[idx]
            batch = control_batch(meta.producer_id, epoch, commit, now)
            offset, _t = plog.append(batch, parse_batches(batch, verify_crc=False),
                                     now if topic.log_append_time else None)
            self._txns_of(topic_name, idx, plog).record_marker(meta.producer_id, epoch, commit, offset)
            self.broker.set_producer_epoch(topic_name, idx, meta.producer_id, epoch)
            self.broker._wake(plog)

    def _complete(self, meta: TxnMeta, commit: bool, epoch: int) -> None:
        """Prepare, write the markers, apply committed offsets, complete: each step persisted."""
        meta.state = "PrepareCommit" if commit else "PrepareAbort"
        meta.epoch = epoch
        self._save()
        self._write_markers(meta, commit, epoch)
        if commit:
            for group, offsets in meta.pending_offsets.items():
                if offsets:
                    self.broker.groups.commit(group, dict(offsets))
        meta.state = "CompleteCommit" if commit else "CompleteAbort"
        meta.partitions, meta.groups, meta.pending_offsets = set(), set(), {}
        meta.updated_ms = _now_ms()
        self._save()
        log.info("transaction %s (producer %d epoch %d) %s", meta.transactional_id, meta.producer_id,
                 epoch, "committed" if commit else "aborted")

    def _fence_and_abort(self, meta: TxnMeta) -> None:
        """Bump the epoch (fencing the producer that holds the current one) and abort with it."""
        if meta.epoch + 1 > _MAX_EPOCH:
            self._complete(meta, False, meta.epoch)  # Kafka too aborts with the last epoch here
        else:
            self._complete(meta, False, meta.epoch + 1)

    def abort_timed_out(self, now_ms: int | None = None, *, ignore_timeout: bool = False) -> list[str]:
        """Abort every open transaction silent for longer than its timeout (every open one with
        ``ignore_timeout``). Returns the transactional ids aborted."""
        now_ms = _now_ms() if now_ms is None else now_ms
        aborted = []
        for meta in list(self.txns.values()):
            if meta.state == "Ongoing" and (ignore_timeout or now_ms - meta.updated_ms > meta.timeout_ms):
                self._fence_and_abort(meta)
                aborted.append(meta.transactional_id)
        return aborted

    # --------------------------------------------------------------------------------- validation
    def _check_producer(self, transactional_id: str, producer_id: int, epoch: int) -> tuple[int, TxnMeta | None]:
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return ApiError.INVALID_PRODUCER_ID_MAPPING, None
        if meta.epoch != epoch:
            return ApiError.PRODUCER_FENCED, None
        if meta.state in ("PrepareCommit", "PrepareAbort"):
            return ApiError.CONCURRENT_TRANSACTIONS, None
        return ApiError.NONE, meta

    def _begin(self, meta: TxnMeta) -> None:
        if meta.state != "Ongoing":
            meta.state = "Ongoing"
            meta.partitions, meta.groups, meta.pending_offsets = set(), set(), {}
        meta.updated_ms = _now_ms()

    # --------------------------------------------------------------------------------- APIs
    def init_producer_id(self, header, request):
        """InitProducerId with a transactional id: a producer id per transactional id, the epoch bumped
        on every call (fencing the previous holder), an open transaction of the old epoch aborted."""
        version = header.api_version
        R = InitProducerIdResponse

        def answer(code, pid=-1, epoch=-1):
            return R(version=version, throttle_time_ms=0, error_code=code, producer_id=pid, producer_epoch=epoch)

        tid, timeout = request.transactional_id, request.transaction_timeout_ms
        if not tid:
            return answer(ApiError.INVALID_REQUEST)
        if not 0 < timeout <= MAX_TRANSACTION_TIMEOUT_MS:
            return answer(ApiError.INVALID_TRANSACTION_TIMEOUT)
        meta = self.txns.get(tid)
        given_pid = request.producer_id if version >= 3 else -1
        given_epoch = request.producer_epoch if version >= 3 else -1
        if meta is None:
            meta = self.txns[tid] = TxnMeta(tid, self._new_producer_id(), 0, timeout, updated_ms=_now_ms())
            self._save()
            return answer(ApiError.NONE, meta.producer_id, meta.epoch)
        if given_pid >= 0 and (given_pid, given_epoch) != (meta.producer_id, meta.epoch):
            return answer(ApiError.PRODUCER_FENCED)
        if meta.state == "Ongoing":
            self._fence_and_abort(meta)
        if meta.epoch + 1 > _MAX_EPOCH:
            meta.producer_id, meta.epoch = self._new_producer_id(), 0
        else:
            meta.epoch += 1
        meta.timeout_ms, meta.state, meta.updated_ms = timeout, "Empty", _now_ms()
        self._save()
        return answer(ApiError.NONE, meta.producer_id, meta.epoch)

    def add_partitions_to_txn(self, header, request):
        R = AddPartitionsToTxnResponse
        T = R.AddPartitionsToTxnTopicResult
        P = T.AddPartitionsToTxnPartitionResult
        code, meta = self._check_producer(request.v3_and_below_transactional_id,
                                          request.v3_and_below_producer_id, request.v3_and_below_producer_epoch)
        wanted = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
        unknown = {(t, p) for t, p in wanted if self.broker._partition(t, p) is None}
        if not code and not unknown:
            self._begin(meta)
            meta.partitions.update(wanted)
            self._save()

        def error_of(tp):
            if code:
                return code
            if unknown:
                return ApiError.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ApiError.OPERATION_NOT_ATTEMPTED
            return ApiError.NONE

        results = [T(name=t.name, results_by_partition=[P(partition_index=p, partition_error_code=error_of((t.name, p)))
                                                        for p in t.partitions])
                   for t in request.v3_and_below_topics]
        return R(version=header.api_version, throttle_time_ms=0, results_by_topic_v3_and_below=results)

    def add_offsets_to_txn(self, header, request):
        code, meta = self._check_producer(request.transactional_id, request.producer_id, request.producer_epoch)
        if not code:
            self._begin(meta)
            meta.groups.add(request.group_id)
            self._save()
        return AddOffsetsToTxnResponse(version=header.api_version, throttle_time_ms=0, error_code=code)

    def txn_offset_commit(self, header, request):
        """Offsets committed in a transaction: held back until it commits (dropped if it aborts)."""
        R = TxnOffsetCommitResponse
        T = R.TxnOffsetCommitResponseTopic
        P = T.TxnOffsetCommitResponsePartition
        code, meta = self._check_producer(request.transactional_id, request.producer_id, request.producer_epoch)
        if code == ApiError.PRODUCER_FENCED:
            code = ApiError.INVALID_PRODUCER_EPOCH  # the group coordinator's word for a stale epoch
        if not code and (meta.state != "Ongoing" or request.group_id not in meta.groups):
            code = ApiError.INVALID_TXN_STATE  # AddOffsetsToTxn first
        topics = []
        pending = meta.pending_offsets.setdefault(request.group_id, {}) if not code else {}
        for t in request.topics:
            parts = []
            for p in t.partitions:
                err = code or (ApiError.UNKNOWN_TOPIC_OR_PARTITION
                               if self.broker._partition(t.name, p.partition_index) is None else 0)
                if not err:
                    pending[(t.name, p.partition_index)] = (
                        p.committed_offset, getattr(p, "committed_leader_epoch", -1), p.committed_metadata)
                parts.append(P(partition_index=p.partition_index, error_code=err))
            topics.append(T(name=t.name, partitions=parts))
        if not code:
            meta.updated_ms = _now_ms()
            self._save()
        return R(version=header.api_version, throttle_time_ms=0, topics=topics)

    def end_txn(self, header, request):
        commit = bool(request.committed)
        code, meta = self._check_producer(request.transactional_id, request.producer_id, request.producer_epoch)
        if not code:
            if meta.state == "Ongoing":
                self._complete(meta, commit, meta.epoch)
            elif meta.state != ("CompleteCommit" if commit else "CompleteAbort"):  # else: a retry, done already
                code = ApiError.INVALID_TXN_STATE
        return EndTxnResponse(version=header.api_version, throttle_time_ms=0, error_code=code)
