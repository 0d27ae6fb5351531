"""Where a new checkpoint starts: ``startingOffsets`` / ``startingOffsetsByTimestamp`` entries that cannot apply
fail naming them, and a start below the log start is data loss. Driven exactly as Spark's runner
calls the reader, against Apache Kafka."""

from __future__ import annotations

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from samza_devkit.kafka_helpers import create_topic, delete_records_before, produce, unique_topic
from spark_samza_source.core.errors import ConfigError, DataLossError
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kafka.source import SamzaKafkaStreamReader


@pytest.fixture
def readers(kafka_broker, tmp_path):
    made: list[SamzaKafkaStreamReader] = []

    def make(**options: str) -> SamzaKafkaStreamReader:
        reader = SamzaKafkaStreamReader(KafkaSourceOptions.parse({
            "kafka.bootstrap.servers": kafka_broker.bootstrap_servers, "job.name": f"start{len(made)}",
            "metadata.store": f"file://{tmp_path}/meta", "startpoint.pollInterval": "0", **options}), None)
        made.append(reader)
        return reader

    yield make
    for reader in made:
        lease = getattr(reader.coordinator, "_lease", None)
        if lease is not None:
            lease.release()


@pytest.fixture
def trimmed(kafka_broker):
    """A 2-partition topic with 30 records in partition 0, of which offsets 0..19 are deleted."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("trim"), 2)
    produce(bootstrap, topic, [(b"k", f"{i}".encode(), None, 0) for i in range(30)])
    delete_records_before(bootstrap, topic, 0, 20)
    return topic


def test_a_starting_offset_below_the_log_start_fails_naming_the_partition_and_the_lost_range(readers, trimmed):
    reader = readers(subscribe=trimmed, startingOffsets=f'{{"{trimmed}":{{"0":5,"1":-2}}}}')
    with pytest.raises(DataLossError) as err:
        reader.initialOffset()
    message = str(err.value)
    assert f"SystemStreamPartition [kafka, {trimmed}, 0]" in message
    assert "offsets 5..19 are no longer available" in message and "failOnDataLoss=false" in message


def test_a_starting_offset_below_the_log_start_is_counted_in_progress_with_fail_on_data_loss_false(
    readers, trimmed, caplog
):
    reader = readers(subscribe=trimmed, startingOffsets=f'{{"{trimmed}":{{"0":5,"1":-2}}}}', failOnDataLoss="false")
    with caplog.at_level("WARNING"):
        initial = reader.initialOffset()
    assert any("offsets 5..19 are no longer available" in r.getMessage() for r in caplog.records)
    end = reader.latestOffset(initial, ReadAllAvailable())
    assert reader.reportLatestOffset()["dataLoss"] == {f"kafka.{trimmed}.0": 15}
    ranges = [(r.partition, r.start, r.end) for part in reader.partitions(initial, end) for r in part.reads]
    assert ranges == [(0, 20, 30)]


@pytest.mark.parametrize("case", ["no-such-partition", "topic-not-subscribed", "beyond-log-end",
                                  "timestamp-no-such-partition"])
def test_unusable_starting_entries_fail_naming_them(readers, kafka_broker, trimmed, case):
    other = create_topic(kafka_broker.bootstrap_servers, unique_topic("other"), 1)
    option, value, expected = {
        "no-such-partition": ("startingOffsets", f'{{"{trimmed}":{{"0":-2,"7":3}}}}',
                              [f"topic '{trimmed}' has no partition 7", "Specified:", "Assigned:", '"0-1"']),
        "topic-not-subscribed": ("startingOffsets", f'{{"{trimmed}":{{"0":-2}},"{other}":{{"0":0}}}}',
                                 [f"topic '{other}' is not read by this query", "Specified:", "Assigned:"]),
        "beyond-log-end": ("startingOffsets", f'{{"{trimmed}":{{"0":31}}}}',
                           [f"{trimmed} partition 0: offset 31 (log end 30)", "-1 for latest"]),
        "timestamp-no-such-partition": ("startingOffsetsByTimestamp", f'{{"{trimmed}":{{"2":0}}}}',
                                        ["'startingOffsetsByTimestamp'", f"topic '{trimmed}' has no partition 2"]),
    }[case]
    reader = readers(subscribe=trimmed, **{option: value})
    with pytest.raises(ConfigError) as err:
        reader.initialOffset()
    for text in expected:
        assert text in str(err.value)


def test_starting_offsets_inside_the_log_start_there(readers, trimmed):
    reader = readers(subscribe=trimmed, startingOffsets=f'{{"{trimmed}":{{"0":25}}}}')
    initial = reader.initialOffset()
    end = reader.latestOffset(initial, ReadAllAvailable())
    ranges = [(r.partition, r.start, r.end) for part in reader.partitions(initial, end) for r in part.reads]
    assert ranges == [(0, 25, 30)]
    assert "dataLoss" not in (reader.reportLatestOffset() or {})
