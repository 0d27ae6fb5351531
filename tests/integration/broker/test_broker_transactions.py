"""Transactions in the development broker, driven by confluent-kafka's transactional producer and read at both
isolation levels, plus the protocol-level rules a client library does not exercise on its own (a transactional
batch to a partition outside the transaction, the raw Fetch fields, the control record format)."""

from __future__ import annotations

import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.producer import AddPartitionsToTxnRequest, InitProducerIdRequest, ProduceRequest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from samza_devkit.kafka_broker import KafkaDevBroker
from samza_devkit.kafka_broker.client import WireClient
from samza_devkit.kafka_helpers import (
    TIMEOUT_S,
    create_topic,
    produce_in_transaction,
    stable_offsets,
    transactional_producer,
    unique_topic,
)
from samza_devkit.waits import deadline_after

INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, PRODUCER_FENCED = 47, 48, 90


@pytest.fixture(scope="module")
def broker():
    with KafkaDevBroker(in_process=True) as b:
        yield b


def read_all(bootstrap: str, topic: str, partition: int, isolation: str, *, group: str = "reader") -> list[tuple]:
    """(offset, value) of every record a consumer at ``isolation`` returns, up to the end it sees."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": isolation,
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        rows = []
        deadline = deadline_after(TIMEOUT_S)
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF: everything visible was returned
                    return rows
                raise KafkaException(msg.error())
            rows.append((msg.offset(), msg.value()))
        raise AssertionError(f"no end of partition in {TIMEOUT_S}s; read {rows}")
    finally:
        consumer.close()


def test_commit_abort_and_open_transactions_at_both_isolation_levels(broker):
    bs = broker.bootstrap_servers
    topic = create_topic(bs, unique_topic("txn"), 2)
    producer = transactional_producer(bs)
    committed = produce_in_transaction(producer, topic, [(None, b"c%d" % i, 0) for i in range(3)])
    aborted = produce_in_transaction(producer, topic, [(None, b"a%d" % i, 0) for i in range(2)], end="abort")
    open_ = produce_in_transaction(producer, topic, [(None, b"o0", 0), (None, b"o1", 1)], end="open")
    # every transaction ends with one marker per partition: 0-2 data, 3 COMMIT, 4-5 data, 6 ABORT, 7 open
    assert committed == [0, 1, 2] and aborted == [4, 5] and open_[0] == 7
    assert stable_offsets(bs, topic, 2) == [(8, 7), (1, 0)]  # (high watermark, last stable offset)
    assert read_all(bs, topic, 0, "read_uncommitted") == [(0, b"c0"), (1, b"c1"), (2, b"c2"), (4, b"a0"),
                                                           (5, b"a1"), (7, b"o0")]
    assert read_all(bs, topic, 0, "read_committed") == [(0, b"c0"), (1, b"c1"), (2, b"c2")]

    producer.commit_transaction(TIMEOUT_S)
    assert stable_offsets(bs, topic, 2) == [(9, 9), (2, 2)]
    assert read_all(bs, topic, 0, "read_committed")[-1] == (7, b"o0")
    assert read_all(bs, topic, 1, "read_committed") == [(0, b"o1")]


def test_raw_fetch_lists_aborted_transactions_and_stops_at_the_last_stable_offset(broker):
    bs = broker.bootstrap_servers
    topic = create_topic(bs, unique_topic("raw"), 1)
    producer = transactional_producer(bs)
    produce_in_transaction(producer, topic, [(None, b"a", 0)], end="abort")  # 0 data, 1 ABORT
    produce_in_transaction(producer, topic, [(None, b"c", 0)])  # 2 data, 3 COMMIT
    produce_in_transaction(producer, topic, [(None, b"o", 0)], end="open")  # 4 open
    with WireClient(broker.host, broker.port) as client:
        def fetch(isolation):
            req = FetchRequest[11](replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                                   isolation_level=isolation, session_id=0, session_epoch=-1, rack_id="",
                                   topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                                       FetchRequest.FetchTopic.FetchPartition(
                                           partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                           partition_max_bytes=1 << 20)])],
                                   forgotten_topics_data=[])
            return client.request(req).responses[0].partitions[0]

        committed, uncommitted = fetch(1), fetch(0)
    pid = committed.aborted_transactions[0].producer_id
    assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] == [(pid, 0)]
    assert uncommitted.aborted_transactions is None
    assert committed.last_stable_offset == uncommitted.last_stable_offset == 4
    assert committed.high_watermark == 5
    batches = _batches(committed.records)
    assert [(b.base_offset, b.is_control_batch) for b in batches] == [(0, False), (1, True), (2, False), (3, True)]
    assert [b.base_offset for b in _batches(uncommitted.records)] == [0, 1, 2, 3, 4]
    # a control record: key (version, type 0 ABORT / 1 COMMIT), value (version, coordinator epoch)
    for batch, kind in ((batches[1], 0), (batches[3], 1)):
        assert batch.is_transactional and batch.producer_id == pid and batch.base_sequence == -1
        record = next(iter(DefaultRecordBatch(batch._buffer)))
        assert struct.unpack(">hh", record.key) == (0, kind) and struct.unpack(">hi", record.value) == (0, 0)
    producer.abort_transaction(TIMEOUT_S)


def _batches(records: bytes) -> list[DefaultRecordBatch]:
    out, pos = [], 0
    while pos < len(records):
        length = struct.unpack_from(">i", records, pos + 8)[0] + 12
        out.append(DefaultRecordBatch(bytes(records[pos:pos + length])))
        pos += length
    return out


def test_a_new_producer_fences_the_zombie_and_aborts_its_transaction(broker):
    bs = broker.bootstrap_servers
    topic = create_topic(bs, unique_topic("zombie"), 1)
    tid = unique_topic("tid")
    zombie = transactional_producer(bs, tid)
    produce_in_transaction(zombie, topic, [(None, b"z0", 0), (None, b"z1", 0)], end="open")
    assert stable_offsets(bs, topic, 1) == [(2, 0)]
    successor = transactional_producer(bs, tid)  # init_transactions of the same id: epoch bump, abort
    assert stable_offsets(bs, topic, 1) == [(3, 3)]  # the zombie's records and an ABORT marker
    with pytest.raises(KafkaException) as err:
        zombie.commit_transaction(TIMEOUT_S)
    assert err.value.args[0].fatal() or "fenced" in str(err.value).lower()
    produce_in_transaction(successor, topic, [(None, b"s0", 0)])
    assert read_all(bs, topic, 0, "read_committed") == [(3, b"s0")]


def test_consumed_offsets_reach_the_group_only_when_the_transaction_commits(broker):
    bs = broker.bootstrap_servers
    topic = create_topic(bs, unique_topic("ctp"), 1)
    group = unique_topic("group")
    consumer = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    producer = transactional_producer(bs)

    def committed_offset():
        return consumer.committed([TopicPartition(topic, 0)], timeout=TIMEOUT_S)[0].offset

    for end, expected in (("abort", -1001), ("commit", 42)):
        producer.begin_transaction()
        producer.produce(topic, value=b"out", partition=0)
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 42)],
                                             consumer.consumer_group_metadata(), TIMEOUT_S)
        assert committed_offset() == -1001  # pending in the transaction: not in the group yet
        (producer.commit_transaction if end == "commit" else producer.abort_transaction)(TIMEOUT_S)
        assert committed_offset() == expected
    consumer.close()


def test_a_producer_silent_past_its_transaction_timeout_is_aborted(broker):
    bs = broker.bootstrap_servers
    topic = create_topic(bs, unique_topic("timeout"), 1)
    gone_id = unique_topic("gone")
    gone = transactional_producer(bs, gone_id, transaction_timeout_ms=1000)
    produce_in_transaction(gone, topic, [(None, b"lost", 0)], end="open")
    held = transactional_producer(bs, transaction_timeout_ms=600_000)
    produce_in_transaction(held, topic, [(None, b"held", 0)], end="open")
    time.sleep(1.1)
    # the hook runs the check now (the background check may have been first: either aborted it)
    assert set(broker.abort_timed_out_transactions()) <= {gone_id}
    assert stable_offsets(bs, topic, 1) == [(3, 1)]  # 0 lost, 1 held (still open), 2 ABORT of the silent one
    with pytest.raises(KafkaException):
        gone.commit_transaction(TIMEOUT_S)  # fenced by the abort's epoch bump
    held.commit_transaction(TIMEOUT_S)
    assert read_all(bs, topic, 0, "read_committed") == [(1, b"held")]


def test_background_check_aborts_without_the_hook(broker):
    bs = broker.bootstrap_servers
    topic = create_topic(bs, unique_topic("bg"), 1)
    gone = transactional_producer(bs, transaction_timeout_ms=1000)
    produce_in_transaction(gone, topic, [(None, b"lost", 0)], end="open")
    deadline = deadline_after(30)
    while stable_offsets(bs, topic, 1) != [(2, 2)]:
        assert time.monotonic() < deadline, "the broker never aborted the timed-out transaction"
        time.sleep(0.2)
    assert read_all(bs, topic, 0, "read_committed") == []


def test_transactional_produce_to_a_partition_outside_the_transaction_is_refused(broker):
    topic = create_topic(broker.bootstrap_servers, unique_topic("outside"), 2)
    tid = unique_topic("raw-tid")
    with WireClient(broker.host, broker.port) as client:
        init = client.request(InitProducerIdRequest[3](transactional_id=tid, transaction_timeout_ms=60000,
                                                        producer_id=-1, producer_epoch=-1))
        assert init.error_code == 0
        pid, epoch = init.producer_id, init.producer_epoch

        def produce(partition, sequence, produce_epoch=epoch):
            builder = DefaultRecordBatchBuilder(2, 0, True, pid, produce_epoch, sequence, 1 << 16)
            builder.append(0, int(time.time() * 1000), None, b"v", [])
            records = bytes(builder.build())
            req = ProduceRequest[8](transactional_id=tid, acks=-1, timeout_ms=10000, topic_data=[
                ProduceRequest.TopicProduceData(name=topic, partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=records)])])
            return client.request(req).responses[0].partition_responses[0].error_code

        assert produce(0, 0) == INVALID_TXN_STATE  # no AddPartitionsToTxn yet
        add = client.request(AddPartitionsToTxnRequest[3](
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])]))
        assert add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        assert produce(0, 0) == 0
        assert produce(1, 0) == INVALID_TXN_STATE  # partition 1 is not in the transaction
        stale = client.request(AddPartitionsToTxnRequest[3](
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch - 1,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[1])]))
        assert stale.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == PRODUCER_FENCED
        reinit = client.request(InitProducerIdRequest[3](transactional_id=tid, transaction_timeout_ms=60000,
                                                          producer_id=pid, producer_epoch=epoch))
        assert (reinit.error_code, reinit.producer_id) == (0, pid) and reinit.producer_epoch > epoch
        assert produce(0, 1) == INVALID_PRODUCER_EPOCH  # the old epoch is fenced in the partition too


def test_transactions_survive_a_restart_and_a_crash():
    with KafkaDevBroker() as broker:
        bs = broker.bootstrap_servers
        topic = create_topic(bs, unique_topic("durable"), 1)
        tid = unique_topic("tid")
        producer = transactional_producer(bs, tid)
        produce_in_transaction(producer, topic, [(None, b"a", 0)], end="abort")  # 0, ABORT 1
        produce_in_transaction(producer, topic, [(None, b"o", 0)], end="open")  # 2 open
        before = stable_offsets(bs, topic, 1)
        assert before == [(3, 2)]
        broker.restart()
        assert stable_offsets(bs, topic, 1) == before  # the open transaction still holds the LSO
        assert read_all(bs, topic, 0, "read_committed") == []  # the aborted index was rebuilt
        producer.commit_transaction(TIMEOUT_S)  # the coordinator remembers the transaction
        assert stable_offsets(bs, topic, 1) == [(4, 4)]
        broker.kill()
        broker.start()
        assert read_all(bs, topic, 0, "read_committed") == [(2, b"o")]
        successor = transactional_producer(bs, tid)  # same id after a crash: the old producer is fenced
        produce_in_transaction(successor, topic, [(None, b"s", 0)])
        assert read_all(bs, topic, 0, "read_committed") == [(2, b"o"), (4, b"s")]
        with pytest.raises(KafkaException):
            produce_in_transaction(producer, topic, [(None, b"zombie", 0)])
