"""samza-kinesis never skips silently: a stream deleted and re-created while the query was stopped, and an offset
log entry the source cannot use, on local Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.query_harness import failure_of
from samza_devkit.waits import scaled

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.both_emulators
def test_a_stream_recreated_while_stopped_is_data_loss_or_read_from_its_start(ks):
    """Backs docs/guarantees.md: "A Kinesis stream deleted and re-created under the same name ... stops the query
    naming the stream, or is read from TRIM_HORIZON with the loss reported"."""
    stream = ks.create_stream(1, "recreated")
    kh.put_records(ks.client, stream, [f"old-{i}".encode() for i in range(5)])
    assert sorted(r.data for r in ks.run_available_now("q", stream)) == [f"old-{i}".encode() for i in range(5)]

    kh.recreate_stream(ks.client, stream, 1)
    new = [f"new-{i}".encode() for i in range(8)]  # sequence numbers start over on moto: the old positions skip 5
    kh.put_records(ks.client, stream, new)

    message = failure_of(ks.start_collecting("q", stream, trigger={"availableNow": True}))
    assert f"stream {stream!r} was deleted and re-created" in message and "failOnDataLoss=false" in message
    assert "testing" not in message  # the AWS keys of the harness

    query = ks.start_collecting("q", stream, trigger={"availableNow": True}, failOnDataLoss="false")
    assert query.awaitTermination(scaled(240)) and query.exception() is None
    after = [r.data for r in ks.collected("q")][5:]
    assert sorted(after) == sorted(new)  # every record of the new stream, none skipped
    reported = [p["sources"][0].get("latestOffset") for p in query.recentProgress]
    losses = [json.loads(r)["dataLoss"] if isinstance(r, str) else r["dataLoss"] for r in reported if r]
    assert losses and "streamRecreated" in losses[-1] and stream in losses[-1]["streamRecreated"][0]


def test_an_offset_the_source_cannot_use_fails_naming_the_file(ks):
    """Backs docs/guarantees.md: "A damaged or hand-edited offset in the checkpoint fails with the source's own
    error ... never re-reads silently"."""
    stream = ks.create_stream(1, "damaged")
    kh.put_records(ks.client, stream, [b"a", b"b"])
    assert len(ks.run_available_now("q", stream)) == 2
    offsets = Path(ks.checkpoint("q")) / "offsets"
    last = max(int(p.name) for p in offsets.iterdir() if p.name.isdigit())
    path = offsets / str(last)
    lines = path.read_text().splitlines()
    offset = json.loads(lines[-1])
    offset["shards"] = {}  # read on from this, the source would re-read the whole stream
    lines[-1] = json.dumps(offset)
    path.write_text("\n".join(lines))

    message = failure_of(ks.start_collecting("q", stream, trigger={"availableNow": True}))
    assert f"offsets/{last} in the checkpoint location" in message and "lists no shards" in message
    assert "latestOffset" in message and "new checkpoint location" in message
    assert len(ks.collected("q")) == 2  # nothing was read again


def test_an_offset_file_that_is_not_json_fails_with_the_sources_error(ks):
    """Backs docs/guarantees.md: "A damaged or hand-edited offset in the checkpoint fails with the source's own
    error": PySpark's runner decodes the offset before the source sees it, and the shared guard turns its
    ``JSONDecodeError`` into an error naming the offset and the file."""
    stream = ks.create_stream(1, "notjson")
    kh.put_records(ks.client, stream, [b"a", b"b"])
    assert len(ks.run_available_now("q", stream)) == 2
    offsets = Path(ks.checkpoint("q")) / "offsets"
    path = offsets / str(max(int(p.name) for p in offsets.iterdir() if p.name.isdigit()))
    lines = path.read_text().splitlines()
    lines[-1] = lines[-1][: len(lines[-1]) // 2]
    path.write_text("\n".join(lines))

    message = failure_of(ks.start_collecting("q", stream, trigger={"availableNow": True}))
    assert "samza-kinesis cannot use the start offset of the next batch (latestOffset)" in message
    assert "it is not valid JSON" in message and "the newest batch file in <checkpoint>/offsets/" in message
    assert len(ks.collected("q")) == 2  # nothing was read again
