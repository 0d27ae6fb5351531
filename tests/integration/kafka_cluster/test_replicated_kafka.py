"""samza-kafka queries on a replicated Apache Kafka cluster (three KRaft nodes, RF 3, ``min.insync.replicas=2``;
``samza_devkit.kafka_cluster``) while leaders are lost, nodes restart one by one and replicas are cut off.

One cluster for the module (the ``kafka_cluster`` fixture: three JVM starts). Each test runs a live query into an
idempotent sink (a ``foreachBatch`` kept per batch id: a batch Spark runs again replaces its earlier rows) and
checks it record by record against every write the cluster acknowledged (``acks=all``, idempotent producers,
``samza_devkit.steady_producer``): each acknowledged (partition, offset) delivered exactly once, and every key's
records in write order across micro-batches (``samza_devkit.key_order``). Each test leaves every node running and
every replica in sync for the next. Recovery times are printed (``-s`` shows them), never asserted.

Backs docs/guarantees.md, "Guarantees" (on a replicated cluster).
"""

from __future__ import annotations

import time

import pytest

from samza_devkit.fault_harness import exactly_once
from samza_devkit.kafka_helpers import add_partitions, unique_topic
from samza_devkit.kafka_query_harness import KafkaQueryHarness
from samza_devkit.key_order import ahead_of_key_order
from samza_devkit.steady_producer import SteadyProducer
from samza_devkit.waits import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KEYS = [f"user-{i}".encode() for i in range(24)]
COLUMNS = ("key", "value", "partition", "offset")
TRIGGER = {"processingTime": "300 milliseconds"}


@pytest.fixture
def queries(spark, kafka_cluster, tmp_path):
    harness = KafkaQueryHarness(spark, kafka_cluster.bootstrap_servers, tmp_path)
    yield harness
    for query in harness.started:
        query.stop()
    for node_id, node in kafka_cluster.nodes.items():  # the next test starts on a whole cluster
        if not node.running:
            kafka_cluster.start_node(node_id)
    kafka_cluster.heal() if kafka_cluster.lab is not None else None


def start_query(queries: KafkaQueryHarness, name: str, topic: str, **extra: str):
    df = queries.stream(subscribe=topic, maxOffsetsPerTrigger="150", **extra)
    return queries.collect_batches(name, df, TRIGGER, columns=COLUMNS)


def delivered(queries: KafkaQueryHarness, name: str) -> list:
    return queries.collected(name)


def last_delivered(queries, name: str, partition: int) -> int:
    return max((r.offset for r in delivered(queries, name) if r.partition == partition), default=-1)


def check_exactly_once_in_key_order(queries, name: str, acked) -> None:
    wanted = {(a.partition, a.offset) for a in acked}
    queries.wait_for(lambda: wanted <= {(r.partition, r.offset) for r in delivered(queries, name)}, timeout=120,
                     what=f"every acknowledged write ({len(wanted)}) in {name}",
                     seen=lambda: len(wanted - {(r.partition, r.offset) for r in delivered(queries, name)}))
    rows = delivered(queries, name)
    from collections import Counter

    assert exactly_once(Counter((r.partition, r.offset) for r in rows), wanted) == []
    by_position = {(a.partition, a.offset): a.value for a in acked}
    assert [bytes(r.value) for r in rows if by_position[(r.partition, r.offset)] != bytes(r.value)] == []
    assert ahead_of_key_order(queries.batches[name]) == {}


@pytest.mark.parametrize("read_path", ["native", "python"])
def test_a_partition_leader_sigkilled_mid_batch_the_read_moves_to_the_new_leader_exactly_once(
        queries, kafka_cluster, read_path):
    """The leader of a partition the query reads is SIGKILLed while producers write and micro-batches run: the
    cluster elects a new leader from the ISR (nothing acknowledged is lost, ``acks=all``), librdkafka moves the
    read there, and the query delivers every acknowledged record exactly once, each key in order."""
    cluster = kafka_cluster
    topic = cluster.create_topic(unique_topic("leader-kill"), 2)
    producer = SteadyProducer(cluster.bootstrap_servers, topic, KEYS, per_second=300).start()
    query = start_query(queries, "q", topic, readPath=read_path)
    began = time.monotonic()
    queries.wait_for(lambda: len(delivered(queries, "q")) >= 300, what="a first 300 records read")
    print(f"\n[{read_path}] first 300 records read {time.monotonic() - began:.1f} s after the start")

    leader = cluster.leader_of(topic, 0)
    last_before = last_delivered(queries, "q", 0)
    killed_at = time.monotonic()
    cluster.kill(leader)
    new_leader = cluster.wait_for_leader(topic, 0, not_on=[leader])
    elected_s = time.monotonic() - killed_at
    queries.wait_for(lambda: last_delivered(queries, "q", 0) > last_before + 150, timeout=90,
                     what=f"{topic}[0] read on from its new leader {new_leader}")
    resumed_s = time.monotonic() - killed_at
    print(f"\n[{read_path}] leader {leader} of {topic}[0] SIGKILLed: node {new_leader} leads after {elected_s:.1f} s, "
          f"the query read on from it {resumed_s:.1f} s after the kill")

    acked = producer.stop()
    assert producer.errors == []
    check_exactly_once_in_key_order(queries, "q", acked)
    print(f"[{read_path}] {len(acked)} acknowledged records read exactly once {time.monotonic() - killed_at:.1f} s "
          "after the kill")
    assert query.exception() is None
    cluster.start_node(leader)
    cluster.wait_until_in_sync([topic])


def test_a_rolling_restart_with_growth_between_two_restarts_exactly_once_no_batch_failed(queries, kafka_cluster):
    """Every node restarted in turn with a controlled shutdown (SIGTERM: its leaderships move first), waiting for
    its replicas to catch up before the next, while a producer writes and the query reads; between the first and
    the second restart the topic grows 4 -> 8 (the producer restarted after it, with fresh metadata, as one that
    refreshed would). Exactly once, every key in order across the growth, and the query never failed."""
    cluster = kafka_cluster
    topic = cluster.create_topic(unique_topic("rolling"), 4)
    producer = SteadyProducer(cluster.bootstrap_servers, topic, KEYS, per_second=200).start()
    query = start_query(queries, "q", topic, readPath="native", **{"expansion.settleTime": "0"})
    queries.wait_for(lambda: len(delivered(queries, "q")) >= 200, what="a first 200 records read")

    acked = []
    stalls = []
    for step, node_id in enumerate(sorted(cluster.nodes)):
        before = len(delivered(queries, "q"))
        started = time.monotonic()
        cluster.stop(node_id)
        cluster.start_node(node_id)
        cluster.wait_until_in_sync([topic])
        queries.wait_for(lambda b=before: len(delivered(queries, "q")) > b + 100,
                         what=f"reading on after node {node_id}'s restart")
        stalls.append(f"node {node_id}: {time.monotonic() - started:.1f} s to restart, catch up and read on")
        if step == 0:
            acked += producer.stop()
            add_partitions(cluster.bootstrap_servers, topic, 8)
            cluster.wait_until_in_sync([topic])
            producer = SteadyProducer(cluster.bootstrap_servers, topic, KEYS, per_second=200,
                                      first_seq=producer.next_seq).start()
    acked += producer.stop()
    print("\nrolling restart: " + "; ".join(stalls))
    assert producer.errors == []
    assert {a.partition for a in acked} == set(range(8))
    check_exactly_once_in_key_order(queries, "q", acked)
    assert query.exception() is None and query.isActive
