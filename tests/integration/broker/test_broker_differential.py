"""Differential test: one deterministic client script, run against librdkafka's mock cluster and against the
Kafka development broker, must observe exactly the same things.

The script only uses what both support (the mock cluster has no timestamp index, cannot add partitions and
has no CreateTopics): producing keyed/unkeyed records with headers, null values and explicit (non-monotonic)
timestamps to several partitions in several batches, delivery reports, watermarks, reading everything back
from the beginning, from the middle and from the end, out-of-range fetches under each
``auto.offset.reset`` policy, and committing/fetching group offsets.  Every observation is a plain tuple,
so a difference shows up as a readable diff.

librdkafka's mock cluster is created through the librdkafka bundled in the confluent-kafka wheel (see
``samza_devkit.rdkafka_mock_cluster``).
"""

from __future__ import annotations

import random
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from samza_devkit.rdkafka_mock_cluster import RdkafkaMockCluster
from samza_devkit.waits import deadline_after

TIMEOUT = 30.0
PARTITIONS = 3
TOPIC = "differential"


def _script_rounds() -> list[list[dict]]:
    """Three rounds (one flush each) of deterministic messages; round 2 goes back in time."""
    rng = random.Random(1234)
    rounds = []
    for r, (base, step) in enumerate([(1_700_000_000_000, 7), (1_600_000_000_000, -3), (1_700_000_500_000, 1)]):
        msgs = []
        for i in range(60 + 20 * r):
            key = None if i % 6 == 0 else b"r%d-key-%d" % (r, i % 9)
            value = None if i % 8 == 0 else rng.randbytes(rng.randrange(0, 64))
            headers = None
            if i % 3 == 1:
                headers = [("round", b"%d" % r), ("dup", b"a"), ("dup", b"b")]
            elif i % 3 == 2:
                headers = [("null", None), ("empty", b"")]
            msg = {"topic": TOPIC, "key": key, "value": value, "headers": headers, "timestamp": base + step * i}
            if i % 5 != 0 or key is None:  # keyed ones go through the default partitioner (by key hash)
                msg["partition"] = (i + r) % PARTITIONS
            msgs.append(msg)
        rounds.append(msgs)
    return rounds


def _record(m) -> tuple:
    return (m.partition(), m.offset(), m.key(), m.value(), m.headers(), m.timestamp())


def _consumer(bootstrap: str, group: str, **extra) -> Consumer:
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "auto.offset.reset": "error",
        "fetch.wait.max.ms": 50,
    }
    conf.update(extra)
    return Consumer(conf)


def _read(consumer: Consumer, count: int) -> list[tuple]:
    out = []
    deadline = deadline_after(TIMEOUT)
    while len(out) < count and time.monotonic() < deadline:
        for m in consumer.consume(num_messages=count - len(out), timeout=0.3):
            out.append(("error", m.error().code()) if m.error() is not None else _record(m))
    out += [("extra", _record(m)) for m in consumer.consume(num_messages=5, timeout=0.3) if m.error() is None]
    # Records by (partition, offset), then anything unexpected (errors, extras) after them.
    return sorted(out, key=lambda r: (isinstance(r[0], str), repr(r) if isinstance(r[0], str) else r[:2]))


def _first_event(consumer: Consumer) -> tuple:
    deadline = deadline_after(TIMEOUT)
    while time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is not None:
            return ("error", m.error().code()) if m.error() is not None else ("record", _record(m))
    return ("nothing",)


def _watermarks(consumer: Consumer) -> list[tuple[int, int]]:
    return [
        consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=TIMEOUT, cached=False)
        for p in range(PARTITIONS)
    ]


def run_script(bootstrap: str) -> dict:
    """The client script. Returns every observation it made, keyed by step."""
    seen: dict = {}
    probe = _consumer(bootstrap, "probe")
    seen["watermarks before"] = _watermarks(probe)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    for r, msgs in enumerate(_script_rounds()):
        reports: list = [None] * len(msgs)
        for i, msg in enumerate(msgs):

            def report(err, m, i=i, reports=reports):
                reports[i] = (err.code() if err else None, m.partition(), m.offset())

            producer.produce(on_delivery=report, **msg)
        assert producer.flush(TIMEOUT) == 0
        seen[f"round {r} delivery reports"] = reports
        seen[f"round {r} watermarks"] = _watermarks(probe)
    total = sum(high - low for low, high in seen["round 2 watermarks"])

    everything = _consumer(bootstrap, "reader")
    everything.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    seen["read from the beginning"] = _read(everything, total)
    everything.close()

    middle = _consumer(bootstrap, "reader")
    middle.assign([TopicPartition(TOPIC, p, 17) for p in range(PARTITIONS)])
    seen["read from offset 17"] = _read(middle, total - 17 * PARTITIONS)
    middle.close()

    # From the end: only what is produced afterwards.
    tail = _consumer(bootstrap, "reader")
    tail.assign([TopicPartition(TOPIC, p, OFFSET_END) for p in range(PARTITIONS)])
    # librdkafka resolves OFFSET_END with a ListOffsets of its own; give it time before producing.
    deadline = deadline_after(1.5)
    while time.monotonic() < deadline:
        assert tail.poll(0.1) is None
    for p in range(PARTITIONS):
        producer.produce(TOPIC, value=b"late-%d" % p, key=b"late", partition=p, timestamp=1_800_000_000_000 + p)
    assert producer.flush(TIMEOUT) == 0
    seen["read from the end"] = _read(tail, PARTITIONS)
    tail.close()
    seen["watermarks at the end"] = _watermarks(probe)

    # Out-of-range fetches under each reset policy.
    high0 = seen["watermarks at the end"][0][1]
    for policy in ("error", "earliest", "latest"):
        c = _consumer(bootstrap, "reader", **{"auto.offset.reset": policy})
        c.assign([TopicPartition(TOPIC, 0, high0 + 1000)])
        if policy == "latest":
            time.sleep(1.5)  # let the reset to the end happen before the next record is produced
            producer.produce(TOPIC, value=b"after-reset", partition=0, timestamp=1_900_000_000_000)
            assert producer.flush(TIMEOUT) == 0
        seen[f"out of range, auto.offset.reset={policy}"] = _first_event(c)
        c.close()

    # Group offsets: commit with one consumer, fetch with another, resume from them with a third.
    committer = _consumer(bootstrap, "diff-group")
    committed = committer.commit(
        offsets=[TopicPartition(TOPIC, 0, 5, "five"), TopicPartition(TOPIC, 2, 11)], asynchronous=False
    )
    seen["commit result"] = sorted((tp.partition, tp.offset, tp.error) for tp in committed)
    committer.close()
    fetcher = _consumer(bootstrap, "diff-group")
    fetched = fetcher.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=TIMEOUT)
    seen["committed"] = [(tp.partition, tp.offset, tp.metadata, tp.error) for tp in fetched]
    fetcher.assign([TopicPartition(TOPIC, 2)])
    seen["resume from committed"] = _first_event(fetcher)
    fetcher.close()
    other = _consumer(bootstrap, "other-group")
    seen["committed, other group"] = [
        tp.offset for tp in other.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=TIMEOUT)
    ]
    other.close()
    probe.close()
    return seen


@pytest.fixture(scope="module")
def mock_results():
    with RdkafkaMockCluster() as cluster:
        cluster.create_topic(TOPIC, PARTITIONS)
        return run_script(cluster.bootstrap_servers)


@pytest.fixture(scope="module")
def dev_results(kafka_broker_fresh_module):
    bootstrap = kafka_broker_fresh_module.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=1)])[TOPIC].result(TIMEOUT)
    deadline = deadline_after(TIMEOUT)
    while len(admin.list_topics(TOPIC, timeout=TIMEOUT).topics[TOPIC].partitions) != PARTITIONS:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return run_script(bootstrap)


@pytest.fixture(scope="module")
def kafka_broker_fresh_module():
    """A dev broker of the module's own: the script uses fixed topic and group names."""
    from samza_devkit.kafka_broker import KafkaDevBroker

    with KafkaDevBroker() as broker:
        yield broker


def test_script_observations_are_meaningful(mock_results):
    # Guard against a vacuous comparison: the reference run saw what the script wrote.
    rounds = _script_rounds()
    produced = sum(len(r) for r in rounds)
    assert sum(high for _low, high in mock_results["round 2 watermarks"]) == produced
    assert len(mock_results["read from the beginning"]) == produced
    assert all(r[0] != "error" and r[0] != "extra" for r in mock_results["read from the beginning"])
    assert mock_results["watermarks before"] == [(0, 0)] * PARTITIONS
    assert mock_results["out of range, auto.offset.reset=error"][0] == "error"
    assert mock_results["out of range, auto.offset.reset=error"][1] in (
        KafkaError._AUTO_OFFSET_RESET,
        KafkaError.OFFSET_OUT_OF_RANGE,
    )
    assert [c[:2] for c in mock_results["committed"]] == [(0, 5), (1, -1001), (2, 11)]


@pytest.mark.parametrize(
    "step",
    [
        "watermarks before",
        "round 0 delivery reports",
        "round 0 watermarks",
        "round 1 delivery reports",
        "round 1 watermarks",
        "round 2 delivery reports",
        "round 2 watermarks",
        "read from the beginning",
        "read from offset 17",
        "read from the end",
        "watermarks at the end",
        "out of range, auto.offset.reset=error",
        "out of range, auto.offset.reset=earliest",
        "out of range, auto.offset.reset=latest",
        "commit result",
        "committed",
        "resume from committed",
        "committed, other group",
    ],
)
def test_dev_broker_observes_what_the_mock_cluster_observes(mock_results, dev_results, step):
    assert set(dev_results) == set(mock_results)
    assert dev_results[step] == mock_results[step]
