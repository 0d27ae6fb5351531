"""A Samza job.properties, imported, drives the real samza-kafka source exactly like hand-written options.

Against Apache Kafka on a local SparkSession: the imported options and their hand-written equivalent
produce the same job model (metadata store, namespace ``jobmodel``), the same task for every row and the same
offsets in Spark's offset log, before and after the topic grows, for both the default (fixed tasks) and
``job.systemstreampartition.input.expansion.enabled=false`` (plain grouper). The properties syntax itself is
checked against the JVM's own ``java.util.Properties``.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import pytest

from samza_devkit.kafka_helpers import add_partitions, create_topic, produce, unique_topic
from samza_devkit.query_harness import await_available_now
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.metadata import open_store
from spark_samza_source.options.namespaces import JOB_MODEL as JOB_MODEL_NAMESPACE
from spark_samza_source.samza_config import import_properties, parse_properties, read_properties

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]

PROPERTIES = """\
# orders-enricher as it ran on Samza (YARN), with the broker of this test
job.factory.class=org.apache.samza.job.yarn.YarnJobFactory
job.name={job}
job.id=3
job.coordinator.system=kafka-prod
task.class=com.acme.orders.EnrichOrdersTask
task.window.ms=60000
task.inputs=kafka-prod.{orders},\\
            kafka-prod.{payments}
task.broadcast.inputs=kafka-prod.{rates}#0
job.systemstreampartition.grouper.factory=org.apache.samza.container.grouper.stream.GroupByPartitionFactory
job.system.stream.partition.mapper.factory=\\
org.apache.samza.container.grouper.stream.HashSystemStreamPartitionMapperFactory
job.systemstreampartition.input.expansion.enabled={expansion}

serializers.registry.json.class=org.apache.samza.serializers.JsonSerdeFactory
systems.kafka-prod.samza.factory=org.apache.samza.system.kafka.KafkaSystemFactory
systems.kafka-prod.samza.msg.serde=json
systems.kafka-prod.samza.offset.default=oldest
systems.kafka-prod.consumer.bootstrap.servers={bootstrap}
systems.kafka-prod.consumer.zookeeper.connect=zk1:2181/kafka
systems.kafka-prod.consumer.auto.offset.reset=smallest
systems.kafka-prod.consumer.client.id=orders-enricher
systems.kafka-prod.consumer.fetch.max.wait.ms=100
systems.kafka-prod.consumer.max.partition.fetch.bytes=1048576
systems.kafka-prod.producer.bootstrap.servers={bootstrap}
stores.order-totals.factory=org.apache.samza.storage.kv.RocksDbKeyValueStorageEngineFactory
stores.order-totals.changelog=kafka-prod.orders-enricher-changelog
metrics.reporters=jmx
metrics.reporter.jmx.class=org.apache.samza.metrics.reporter.JmxReporterFactory

# options of samza-kafka itself (this test's producers are made after the growth: no stale metadata to wait for)
metadata.store={store}
startpoint.pollInterval=0
expansion.settleTime=0
"""


class Runner:
    """Runs AvailableNow queries into parquet, one checkpoint per name."""

    def __init__(self, spark, root: Path) -> None:
        self.spark = spark
        self.root = root

    def run(self, name: str, options: dict[str, str], timeout: float = 180) -> None:
        query = (
            self.spark.readStream.format("samza-kafka").options(**options).load()
            .writeStream.format("parquet")
            .option("path", str(self.root / "sink" / name))
            .option("checkpointLocation", str(self.root / "checkpoints" / name))
            .queryName(f"{name}_{uuid.uuid4().hex[:6]}")
            .trigger(availableNow=True)
            .start()
        )
        await_available_now(query, name, timeout)

    def rows(self, name: str) -> Counter:
        """(task, topic, partition, offset) of every row written, with multiplicity (broadcast: once per task)."""
        path = self.root / "sink" / name
        found = self.spark.read.parquet(str(path)).collect() if any(path.glob("*.parquet")) else []
        return Counter((r.task, r.topic, r.partition, r.offset) for r in found)

    def last_offset(self, name: str) -> dict:
        """The samza-kafka offset in the newest entry of Spark's offset log (line 3: the first source)."""
        logs = [p for p in (self.root / "checkpoints" / name / "offsets").iterdir() if p.name.isdigit()]
        newest = max(logs, key=lambda p: int(p.name))
        return json.loads(newest.read_text().splitlines()[2])


def job_model(options: dict[str, str]) -> JobModel:
    store = open_store(options["metadata.store"], options["job.name"])
    value = store.get(JOB_MODEL_NAMESPACE, "current")
    assert value is not None, f"no job model for {options['job.name']}"
    return JobModel.from_json(value)


def keyed(topic_tag: str, start: int, count: int):
    return [(f"user-{i % 23}".encode(), f"{topic_tag}-{start + i}".encode()) for i in range(count)]


def test_imported_properties_give_the_same_job_model_tasks_and_offsets_as_hand_written_options(
        spark, kafka_broker, tmp_path):
    bootstrap = kafka_broker.bootstrap_servers
    orders = create_topic(bootstrap, unique_topic("orders"), 2)
    payments = create_topic(bootstrap, unique_topic("payments"), 2)
    rates = create_topic(bootstrap, unique_topic("rates"), 1)
    produced = len(produce(bootstrap, orders, keyed("o", 0, 300)))
    produced += len(produce(bootstrap, payments, keyed("p", 0, 200)))
    produce(bootstrap, rates, [(b"EUR", b"1.08"), (b"GBP", b"1.27")])

    runner = Runner(spark, tmp_path)
    suffix = uuid.uuid4().hex[:6]
    configs: dict[str, dict[str, str]] = {}
    for variant, expansion in (("fixed", "true"), ("plain", "false")):
        path = tmp_path / f"{variant}.properties"
        path.write_text(PROPERTIES.format(
            job=f"orders-enricher-{variant}-{suffix}", orders=orders, payments=payments, rates=rates,
            bootstrap=bootstrap, store=f"file://{tmp_path}/imported-store", expansion=expansion))
        imported = import_properties(path)
        assert imported.format == "samza-kafka" and imported.system == "kafka-prod"
        assert imported.options["job.name"] == f"orders-enricher-{variant}-{suffix}-3"
        assert imported.options["kafka.fetch.wait.max.ms"] == "100"  # renamed for librdkafka, which must accept it
        assert {"systems.kafka-prod.consumer.zookeeper.connect",
                "systems.kafka-prod.consumer.auto.offset.reset"} <= set(imported.rejected)
        assert {"task.class", "stores.order-totals.factory", "metrics.reporters"} <= set(imported.ignored)
        configs[f"imported-{variant}"] = imported.options
        hand = {
            "kafka.bootstrap.servers": bootstrap,
            "subscribe": f"{orders},{payments}",
            "job.name": f"hand-{variant}-{suffix}",
            "metadata.store": f"file://{tmp_path}/hand-store",
            "startingOffsets": "earliest",
            "task.broadcast.inputs": f"kafka.{rates}#0",
            "startpoint.pollInterval": "0",
            "expansion.settleTime": "0",
        }
        if variant == "plain":
            hand["grouper"] = "GroupByPartition"
        configs[f"hand-{variant}"] = hand

    # First runs: a new checkpoint each, read from earliest (samza.offset.default=oldest).
    for name, options in configs.items():
        runner.run(name, options)
    for variant in ("fixed", "plain"):
        imported, hand = f"imported-{variant}", f"hand-{variant}"
        model = job_model(configs[imported])
        assert model == job_model(configs[hand])
        assert sorted(t.name for t in model.tasks) == ["Partition 0", "Partition 1"]
        assert all(any(s.stream == rates and s.system == "kafka" for s in ssps) for ssps in model.tasks.values())
        rows = runner.rows(imported)
        assert rows == runner.rows(hand)
        assert sum(n for (_, topic, _, _), n in rows.items() if topic != rates) == produced
        assert sum(n for (_, topic, _, _), n in rows.items() if topic == rates) == 2 * 2  # broadcast: every task
        assert runner.last_offset(imported) == runner.last_offset(hand)

    # The topic grows 2 -> 4; the second runs resume from their checkpoints.
    add_partitions(bootstrap, orders, 4)
    produced_after = len(produce(bootstrap, orders, keyed("o", 300, 400)))
    assert produced_after == 400
    for name, options in configs.items():
        runner.run(name, options)
    models = {name: job_model(options) for name, options in configs.items()}
    assert models["imported-fixed"] == models["hand-fixed"]
    assert models["imported-plain"] == models["hand-plain"]
    # The two variants really differ: Samza's SSPGrouperProxy keeps 2 tasks, without it partitions 2, 3 get tasks.
    assert sorted(t.name for t in models["imported-fixed"].tasks) == ["Partition 0", "Partition 1"]
    assert sorted(t.name for t in models["imported-plain"].tasks) == [f"Partition {p}" for p in range(4)]
    for variant in ("fixed", "plain"):
        imported, hand = f"imported-{variant}", f"hand-{variant}"
        rows = runner.rows(imported)
        assert rows == runner.rows(hand)
        assert sum(n for (_, topic, _, _), n in rows.items() if topic == orders) == 300 + produced_after
        assert runner.last_offset(imported) == runner.last_offset(hand)
    fixed_tasks = {(p, task) for (task, topic, p, _), _ in runner.rows("imported-fixed").items() if topic == orders}
    assert fixed_tasks == {(0, "Partition 0"), (1, "Partition 1"), (2, "Partition 0"), (3, "Partition 1")}


TRICKY = (
    "# comment\n! bang comment\n  \t\n"
    "a=1\nb:2\nc 3\n d = 4 \ne :=5\nkeyonly\n"
    "cont=one,\\\n    two,\\\n   # not a comment\n"
    "even=x\\\\\nnext=y\n"
    "esc\\ key\\=x\\:y=v\\t\\n\\u00e9\\u20ac\\uD83D\\uDE00\\q\n"
    "crlf=1\r\ncr=2\rend=\\\n\n"
    "# trailing comment \\\nafter=z\n"
    "dup=1\ndup=2\n"
    "last=value\\"
)


def java_properties(spark, text: str) -> dict[str, str]:
    jvm = spark.sparkContext._jvm
    props = jvm.java.util.Properties()
    props.load(jvm.java.io.StringReader(text))
    return {str(k): str(props.getProperty(k)) for k in props.stringPropertyNames()}


def test_properties_syntax_matches_java_util_properties(spark):
    assert parse_properties(TRICKY) == java_properties(spark, TRICKY)
    files = [*sorted((REPO / "tests" / "data").glob("*.properties")), *sorted((REPO / "conf").glob("*.properties")),
             REPO / "conf" / "spark-defaults.conf"]
    assert len(files) >= 5
    for path in files:
        assert read_properties(path) == java_properties(spark, path.read_text(encoding="utf-8")), path.name
