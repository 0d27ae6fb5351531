"""A topic grown by other than a multiple of its partition count is said at run time, not only in the docs.

Growth 4 -> 6 moves keys between partitions that existed before, so moving keys' records produced inside the
settle window may be read out of order (docs/guarantees.md, "Guarantees"). The driver logs one WARN naming the
topic, the counts, the window and the two fixes, and keeps the growth in the progress
(``latestOffset["nonMultipleGrowth"]``); a growth by a multiple (2 -> 4) is quiet. Against the development
broker, without Spark: the coordinator is what Spark's ``latestOffset`` calls.
"""

from __future__ import annotations

import logging

from samza_devkit.kafka_helpers import add_partitions, create_topic, unique_topic
from spark_samza_source.kafka.driver.coordinator import KafkaCoordinator
from spark_samza_source.kafka.options import KafkaSourceOptions

LOGGER = "spark_samza_source.kafka.driver.coordinator"


def test_a_growth_that_is_not_a_multiple_warns_and_is_recorded_in_the_progress(kafka_broker, tmp_path, caplog):
    """Backs Guarantees: "other accepted growth (4 -> 6) ... is logged at WARN and recorded in the progress"."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("uneven"), 2)
    coord = KafkaCoordinator(KafkaSourceOptions.parse({
        "kafka.bootstrap.servers": bootstrap, "job.name": "uneven", "metadata.store": f"file://{tmp_path}/meta",
        "subscribe": topic, "startingOffsets": "earliest", "startpoint.pollInterval": "0",
        "expansion.settleTime": "90s"}))
    try:
        offset = coord.initial_offset()
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            add_partitions(bootstrap, topic, 4)                       # a multiple of 2: nothing to say
            offset = coord.latest_offset(offset, max_rows=None)
            assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
            assert "nonMultipleGrowth" not in coord.system_progress()

            add_partitions(bootstrap, topic, 6)                       # 6 is not a multiple of 4
            coord.latest_offset(offset, max_rows=None)
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1, warnings
        message = warnings[0]
        assert f"topic '{topic}' grew from 4 to 6 partitions, which is not a multiple of 4" in message
        assert "expansion.settleTime (90 s)" in message and "(4 -> 8)" in message
        growth = coord.system_progress()["nonMultipleGrowth"][topic]
        assert (growth["from"], growth["to"]) == (4, 6)
        assert growth["cutAtMs"] - growth["seenAtMs"] == 90_000
    finally:
        coord.lease.release()
