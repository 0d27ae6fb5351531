"""Offsets from the checkpoint that the source cannot use fail with the source's own error, naming which offset
Spark handed over and which file of ``<checkpoint>/offsets/`` holds it: invalid JSON (decoded by PySpark's
runner before the source is called), an offset whose ``positions`` were emptied (read as "no positions", it would
re-read every partition), and a position moved past the log end (whose error must not advise a full re-read)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from spark_samza_source.core.errors import DataLossError, OffsetFormatError
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kafka.source import SamzaKafkaStreamReader


def _newest_offset_file(checkpoint: str) -> Path:
    files = [p for p in Path(checkpoint, "offsets").iterdir() if p.name.isdigit()]
    return max(files, key=lambda p: int(p.name))


def _edit_source_line(path: Path, edit) -> None:
    """Replace this source's offset (the line after Spark's 'v1' and metadata lines) with ``edit(text)``."""
    lines = path.read_text().split("\n")
    lines[2] = edit(lines[2])
    path.write_text("\n".join(lines))


@pytest.mark.spark
@pytest.mark.slow
def test_an_offset_file_that_is_not_json_fails_with_the_sources_error_naming_the_file(kq):
    topic = create_topic(kq.bootstrap, unique_topic("badjson"), 1)
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(5)])
    kq.run_available_now_parquet("badjson", subscribe=topic)
    _edit_source_line(_newest_offset_file(kq.checkpoint("badjson")), lambda text: text[: len(text) // 2])
    produce(kq.bootstrap, topic, [(b"k", b"more")])
    with pytest.raises(Exception) as err:
        kq.run_available_now_parquet("badjson", subscribe=topic)
    message = str(err.value)
    assert "samza-kafka cannot use the start offset of the next batch (latestOffset)" in message
    assert "it is not valid JSON" in message and "the newest batch file in <checkpoint>/offsets/" in message
    assert [int(r.value) for r in kq.sink_rows("badjson")] == list(range(5))


@pytest.fixture
def reader(kafka_broker, tmp_path):
    topic = create_topic(kafka_broker.bootstrap_servers, unique_topic("edited"), 2)
    produce(kafka_broker.bootstrap_servers, topic, [(b"k", f"{i}".encode(), None, i % 2) for i in range(10)])
    made = SamzaKafkaStreamReader(KafkaSourceOptions.parse({
        "kafka.bootstrap.servers": kafka_broker.bootstrap_servers, "subscribe": topic, "job.name": "edited",
        "metadata.store": f"file://{tmp_path}/meta", "startingOffsets": "earliest"}), None)
    made.topic = topic
    yield made
    lease = getattr(made.coordinator, "_lease", None)
    if lease is not None:
        lease.release()


def test_an_offset_with_empty_positions_fails_instead_of_re_reading_the_topic(reader):
    end = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    emptied = {**end, "positions": {}}
    for call in (lambda: reader.latestOffset(emptied, ReadAllAvailable()), lambda: reader.commit(emptied),
                 lambda: reader.partitions(end, emptied)):
        with pytest.raises(OffsetFormatError) as err:
            call()
        message = str(err.value)
        assert "'positions' is empty while the job model has 2 (task, SSP) pair(s)" in message
        assert "<checkpoint>/offsets/" in message
    with pytest.raises(OffsetFormatError, match=r"the end offset of the batch being planned \(partitions\)"):
        reader.partitions(end, emptied)


def test_a_position_past_the_log_end_fails_without_advising_a_full_re_read(reader):
    end = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    moved = json.loads(json.dumps(end))
    for by_ssp in moved["positions"].values():
        for key in by_ssp:
            by_ssp[key] = 500
    with pytest.raises(DataLossError) as err:
        reader.latestOffset(moved, ReadAllAvailable())
    message = str(err.value)
    assert "the position to read next, 500, is past the end of the log (5" in message
    assert "continue from the earliest available offset" not in message
    assert "StartpointUpcoming" in message
