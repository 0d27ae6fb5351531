"""samza-kafka at the scale of a ``subscribePattern`` job over a big cluster: 100 topics x 100 partitions (10,000
partitions) on Apache Kafka, end to end (issue #46).

One broker for the module (not the suite's shared one: 10,000 partitions need a bigger heap and smaller index
files than the other tests' broker, and would slow every test that shares it). One query over the pattern writes
Spark's Parquet sink, an idempotent sink (exactly once through its ``_spark_metadata`` log); while it runs two
topics grow 100 -> 200 partitions (SEP-5's growth by a multiple) and a Startpoint rewinds two partitions. The sink,
read through its log, is checked against every write the broker acknowledged (idempotent producers): each record
once, the rewound partitions' records twice. Then the consumer-group mirror of 10,200 partitions is read back by
Kafka's own ``kafka-consumer-groups --describe``.

What a micro-batch costs the driver at this size (query progress ``durationMs``) and the size of Spark's offset
log entries are printed (``pytest -s``) and written to ``build/scale-kafka.json``: ``docs/performance.md`` has
the figures of a run. Run by ``make test-scale``, not ``make test`` (minutes on two cores).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException

from samza_devkit.apache_kafka import ApacheKafkaBroker
from samza_devkit.checkpoint_log import batch_figures, committed_batches, offset_log, startpoint_rebases
from samza_devkit.fault_harness import exactly_once
from samza_devkit.kafka_helpers import add_partitions, create_topics, produce
from samza_devkit.kafka_query_harness import KafkaQueryHarness
from spark_samza_source.core.jobmodel_store import JobModelStore
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import StartpointOldest
from spark_samza_source.metadata import open_store

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(1800)]

TOPICS = 100
PARTITIONS = 100
PER_PARTITION = 3
GROWN = 2  # topics that grow 100 -> 200 partitions mid-query
GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
FIGURES = Path(__file__).resolve().parents[3] / "build" / "scale-kafka.json"

# One node holding 10,000 partitions: a heap for their metadata and replica state, index files of 64 KiB instead of
# 10 MiB (two are mapped per partition: 20,000 mappings either way, but the address space and the sparse files
# stay small), and more I/O threads for the fetches of 100 tasks. File handles: one open log segment per
# partition, about 10,300 with the sockets, under the 20,000 a process may open here.
_BIG_BROKER = {
    "log.index.size.max.bytes": "65536",
    "log.segment.bytes": "1048576",
    "num.io.threads": "4",
    "num.network.threads": "3",
    "offsets.topic.num.partitions": "1",
}


@pytest.fixture(scope="module")
def big_broker():
    broker = ApacheKafkaBroker(heap_mb=1536, config=_BIG_BROKER, start_timeout=240).start()
    try:
        yield broker
    finally:
        broker.kill()  # a clean shutdown of 10,000 partitions takes minutes, and nothing of it is kept
        broker.stop()


def _records(topic: str, partitions: range, tag: str, per_partition: int = PER_PARTITION):
    return [(f"k{p}".encode(), f"{topic}/{p}/{tag}{i}".encode(), None, p)
            for p in partitions for i in range(per_partition)]


def _produce(bootstrap: str, topic: str, partitions: range, tag: str,
             per_partition: int = PER_PARTITION) -> list[tuple[str, int, int]]:
    acks = produce(bootstrap, topic, _records(topic, partitions, tag, per_partition), metadata_first=True)
    return [(topic, a.partition, a.offset) for a in acks]


def _sink_counts(spark, sink: str) -> Counter:
    """(topic, partition, offset) -> copies in the Parquet sink, read through the sink's own log."""
    if not (Path(sink) / "_spark_metadata").exists():
        return Counter()
    rows = spark.read.parquet(sink).select("topic", "partition", "offset").collect()
    return Counter((r.topic, r.partition, r.offset) for r in rows)


def _sink_size(spark, sink: str) -> int:
    """Rows in the sink so far (its first batches may have committed no file yet: nothing to read then)."""
    log = Path(sink) / "_spark_metadata"
    if not log.is_dir() or not any(p.name.isdigit() or p.name.endswith(".compact") for p in log.iterdir()):
        return 0
    try:
        return spark.read.parquet(sink).count()
    except AnalysisException:  # batches committed so far wrote no file: nothing to infer a schema from
        return 0


def _model_partitions(kq: KafkaQueryHarness) -> int:
    """The SSPs of the job model the running query last planned with (its store), read as the source reads it: a
    model of 10,000 partitions is stored in compressed chunks behind a pointer record."""
    model = JobModelStore(open_store(kq.store_uri, kq.job)).current()
    return 0 if model is None else len(model.ssp_to_task())


def _group_tool_rows(broker, group: str) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (CURRENT-OFFSET, LOG-END-OFFSET, LAG) from ``kafka-consumer-groups --describe``."""
    out = broker.run_tool(GROUP_COMMAND, "--describe", "--group", group,
                          "--bootstrap-server", broker.bootstrap_servers, timeout=300).stdout
    lines = [line.split() for line in out.splitlines() if line.strip()]
    header = next(words for words in lines if words[0] == "GROUP")
    assert header[1:6] == ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"], out[:2000]
    return {(w[1], int(w[2])): (int(w[3]), int(w[4]), int(w[5])) for w in lines if w[0] == group}


def _report(figures: list[dict], **extra) -> None:
    FIGURES.parent.mkdir(exist_ok=True)
    FIGURES.write_text(json.dumps({"batches": figures, **extra}, indent=1))
    print(f"\n{'batch':>5} {'rows':>6} {'trigger':>8} {'latestOffset':>12} {'getBatch':>8} {'planning':>8} "
          f"{'addBatch':>8} {'walCommit':>9} {'commit':>7} {'offsetLog':>10}")
    for f in figures:
        d = f["durationMs"]
        print(f"{f['batch']:>5} {f['rows']:>6} {d.get('triggerExecution', 0):>8} {d.get('latestOffset', 0):>12} "
              f"{d.get('getBatch', 0):>8} {d.get('queryPlanning', 0):>8} {d.get('addBatch', 0):>8} "
              f"{d.get('walCommit', 0):>9} {d.get('commitOffsets', 0):>7} {f['offsetLogBytes'] or 0:>10}")
    print(json.dumps(extra))


def test_pattern_over_10000_partitions_grows_and_rewinds_exactly_once_and_the_group_tool_reads_the_mirror(
        spark, big_broker, tmp_path):
    bootstrap = big_broker.bootstrap_servers
    prefix = f"scale-{uuid.uuid4().hex[:6]}"
    topics = create_topics(bootstrap, [f"{prefix}-{t:03d}" for t in range(TOPICS)], PARTITIONS)
    acked = [key for topic in topics for key in _produce(bootstrap, topic, range(PARTITIONS), "a")]
    assert len(acked) == TOPICS * PARTITIONS * PER_PARTITION

    kq = KafkaQueryHarness(spark, bootstrap, tmp_path)
    sink = kq.sink_path("scale")
    query = kq.start_parquet("scale", trigger={"processingTime": "1 second"}, subscribePattern=f"{prefix}-.*")
    kq.wait_for(lambda: _sink_size(spark, sink) >= len(acked), timeout=900, interval=3,
                what="the first 30,000 records in the sink", seen=lambda: _sink_size(spark, sink))

    # growth mid-query: two topics 100 -> 200 partitions, records in the new partitions and in their old siblings
    grown = topics[:GROWN]
    for topic in grown:
        add_partitions(bootstrap, topic, 2 * PARTITIONS)
    kq.wait_for(lambda: _model_partitions(kq) == TOPICS * PARTITIONS + GROWN * PARTITIONS, timeout=300,
                interval=2, what="the job model to take the new partitions", seen=lambda: _model_partitions(kq))
    for topic in grown:
        acked += _produce(bootstrap, topic, range(2 * PARTITIONS), "b")

    kq.wait_for(lambda: _sink_size(spark, sink) >= len(acked), timeout=600, interval=3,
                what="the grown topics' records in the sink", seen=lambda: _sink_size(spark, sink))

    # a Startpoint mid-query, once every record so far is in the sink: two partitions (one of a grown topic)
    # rewound to their oldest record, so each of their records is read twice and nothing else is
    rewound = {(topics[0], 7), (topics[-1], 42)}
    twice = Counter(key for key in acked if key[:2] in rewound)
    for topic, partition in sorted(rewound):
        kq.startpoints().write(SystemStreamPartition("kafka", topic, partition), StartpointOldest())
    kq.wait_for(lambda: not kq.startpoints().list() and len(startpoint_rebases(offset_log(kq.checkpoint("scale"))))
                == len(rewound), timeout=300, interval=2, what="both startpoints applied and deleted",
                seen=lambda: (kq.startpoints().list(), startpoint_rebases(offset_log(kq.checkpoint("scale")))))
    acked += _produce(bootstrap, topics[-1], range(PARTITIONS), "c")  # after the rewind: read once
    kq.wait_for(lambda: _sink_size(spark, sink) >= len(acked) + sum(twice.values()), timeout=600, interval=3,
                what="every record in the sink", seen=lambda: _sink_size(spark, sink))
    figures = batch_figures(query, kq.checkpoint("scale"))
    query.stop()

    counts = _sink_counts(spark, sink)
    assert exactly_once(counts - twice, acked) == [], "the sink against the broker's acknowledgements"
    log = offset_log(kq.checkpoint("scale"))
    assert committed_batches(kq.checkpoint("scale")) >= set(log) - {max(log)}

    _report(figures, partitions=TOPICS * PARTITIONS + GROWN * PARTITIONS, records=len(acked),
            offsetLogEntries=len(log),
            jobModelBytes=len(json.dumps(open_store(kq.store_uri, kq.job).get("jobmodel", "current"))))

    # Spark commits a batch to the source one batch late, when it plans the next one: one record more, read by an
    # AvailableNow run from the checkpoint, makes it commit the last batch above, and with it the consumer-group
    # mirror of every partition; the new record is the one record of lag the group then shows
    lagging = (topics[1], 0)
    acked += _produce(bootstrap, lagging[0], range(1), "d", per_partition=1)
    kq.run_available_now_parquet("scale", timeout=600, subscribePattern=f"{prefix}-.*")
    ends = Counter((topic, partition) for topic, partition, _ in acked)
    group = _group_tool_rows(big_broker, f"samza-{kq.job}")
    assert len(group) == TOPICS * PARTITIONS + GROWN * PARTITIONS
    assert group == {tp: (n - (tp == lagging), n, int(tp == lagging)) for tp, n in ends.items()}
