"""The positions samza-kafka mirrors into its consumer group, as Apache Kafka's own consumer-group tool
(``kafka-consumer-groups --describe``, ``ConsumerGroupCommand`` from the broker's jars) describes them: the same
committed offsets, log-end offsets and lag as ``samza-source lag`` reports from the job's metadata store.

Two availableNow runs: the second one's planning commits the first one's batch (Spark commits a batch one batch
late), which writes the checkpoint mirror and the group's offsets at the same commit; records produced afterwards
are the lag both tools must count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic

pytestmark = [pytest.mark.spark, pytest.mark.slow]

GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def _kafka_tool_rows(broker, group: str) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (CURRENT-OFFSET, LOG-END-OFFSET, LAG) from ``kafka-consumer-groups --describe``."""
    out = broker.run_tool(GROUP_COMMAND, "--describe", "--group", group,
                          "--bootstrap-server", broker.bootstrap_servers).stdout
    lines = [line.split() for line in out.splitlines() if line.strip()]
    header = next(words for words in lines if words[0] == "GROUP")
    assert header[1:6] == ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"], out
    return {(w[1], int(w[2])): (int(w[3]), int(w[4]), int(w[5])) for w in lines if w[0] == group}


def _samza_source_lag(kq) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (committed, latest, behind) from ``samza-source lag --json``."""
    done = subprocess.run([sys.executable, "-m", "spark_samza_source.ops.cli", "lag", "--store", kq.store_uri,
                           "--job", kq.job, "--bootstrap", kq.bootstrap, "--json"],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["complete"] is True
    return {(r["stream"], r["partition"]): (r["committed"], r["latest"], r["behind"]) for r in report["rows"]}


def test_kafka_group_tool_and_samza_source_lag_agree(kq, kafka_broker):
    topic = create_topic(kq.bootstrap, unique_topic("grp"), 3)
    produce(kq.bootstrap, topic, [(b"k", b"a%d" % i, None, i % 3) for i in range(30)])
    kq.run_available_now_parquet("grp", subscribe=topic)
    produce(kq.bootstrap, topic, [(b"k", b"b%d" % p, None, p) for p in range(3)])
    kq.run_available_now_parquet("grp", subscribe=topic)  # commits the first run's batch: 10 per partition
    assert len(kq.sink_rows("grp")) == 33
    produce(kq.bootstrap, topic, [(b"k", b"c%d" % i, None, i % 2) for i in range(8)])  # 4 more on 0 and 1

    expected = {(topic, 0): (10, 15, 5), (topic, 1): (10, 15, 5), (topic, 2): (10, 11, 1)}
    assert _kafka_tool_rows(kafka_broker, f"samza-{kq.job}") == expected
    assert _samza_source_lag(kq) == expected
