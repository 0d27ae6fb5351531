"""What Apache Kafka stores, read back byte-exact through both executor read paths (native and Python).

One topic, one partition per shape: gzip, snappy, lz4 and zstd batches (many records per batch, so a read starting
inside a batch has to drop the records before its start that the broker sends with it), holding null keys,
tombstones (null values), empty values and headers (a null header value, a repeated header key); and an
uncompressed partition holding a record whose batch is within 128 bytes of the topic's ``max.message.bytes``
(Kafka's default, 1 MiB + 12), beside small ones. A Spark batch read per path must give exactly what the broker
acknowledged: key, value, headers, offset and timestamp of every record. Kafka's own ``DumpLogSegments`` tool
(from the broker's jars) shows that the batches are stored as the test means them: each partition in its codec,
the first compressed batch reaching past the read's start, the big record's batch near the limit.
"""

from __future__ import annotations

import json
import os

import pytest

from samza_devkit.apache_kafka import ApacheKafkaBroker
from samza_devkit.kafka_helpers import create_topic, produce, unique_topic

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CODECS = ("gzip", "snappy", "lz4", "zstd")
PER_CODEC = 120
START_INSIDE_BATCH = 7  # the compressed partitions are read from here: inside their first batch
MAX_MESSAGE_BYTES = 1024 * 1024 + 12  # Kafka's default max.message.bytes (a record batch, compressed or not)
BIG_VALUE = MAX_MESSAGE_BYTES - 128  # one record alone in its batch: 61 bytes of batch header, ~20 of record framing


def _shaped(i: int, partition: int) -> tuple:
    key = None if i % 4 == 0 else b"k%d" % (i % 9)
    value = None if i % 5 == 0 else b"" if i % 13 == 0 else b"value %d " % i * (1 + i % 30)
    headers = [("h", b"%d" % i), ("nul", None), ("h", b"again")] if i % 3 == 0 else None
    return key, value, headers, partition


@pytest.fixture(scope="module")
def shapes(kafka_broker):
    """(topic, {(partition, offset): (key, value, headers, timestamp)} of every record the broker acknowledged)."""
    bs = kafka_broker.bootstrap_servers
    topic = create_topic(bs, unique_topic("shapes"), len(CODECS) + 1)
    acks = []
    for p, codec in enumerate(CODECS):
        acks += produce(bs, topic, [_shaped(i, p) for i in range(PER_CODEC)],
                        extra_conf={"compression.type": codec, "linger.ms": "100", "batch.num.messages": "50"})
    big = len(CODECS)
    acks += produce(bs, topic, [(b"before", b"small", None, big)])
    acks += produce(bs, topic, [(b"big", os.urandom(BIG_VALUE), [("size", b"near max")], big)])  # alone: own batch
    acks += produce(bs, topic, [(None, None, None, big), (b"after", b"small", None, big)])
    if isinstance(kafka_broker, ApacheKafkaBroker):  # a cluster of the user's: its files are not here to look at
        _check_stored_batches(kafka_broker, topic)
    return topic, {(a.partition, a.offset): (a.key, a.value, a.headers, a.timestamp_ms) for a in acks}


def _check_stored_batches(broker: ApacheKafkaBroker, topic: str) -> None:
    """Kafka's DumpLogSegments over the topic's segments: one line per record batch, ``key: value`` pairs."""
    segments = sorted(broker.data_dir.glob(f"{topic}-*/*.log"))
    dump = broker.run_tool("kafka.tools.DumpLogSegments", "--files", ",".join(map(str, segments))).stdout
    batches: dict[int, list[dict[str, str]]] = {}
    partition = None
    for line in dump.splitlines():
        if line.startswith("Dumping "):
            partition = int(line.split("/")[-2].rsplit("-", 1)[1])
        elif line.startswith("baseOffset:"):
            words = line.split()
            batches.setdefault(partition, []).append(dict(zip(words[0::2], words[1::2], strict=False)))
    for p, codec in enumerate(CODECS):
        assert {b["compresscodec:"] for b in batches[p]} == {codec}, batches[p]
        assert int(batches[p][0]["lastOffset:"]) > START_INSIDE_BATCH, batches[p][0]
    sizes = [int(b["size:"]) for b in batches[len(CODECS)]]
    assert MAX_MESSAGE_BYTES - 200 < max(sizes) <= MAX_MESSAGE_BYTES, sizes


def test_compressed_batches_and_odd_records_read_back_exactly(spark, kafka_broker, shapes, read_path):
    """``read_path``: both executor read paths (conftest.py)."""
    topic, produced = shapes
    starts = {str(p): START_INSIDE_BATCH for p in range(len(CODECS))} | {str(len(CODECS)): -2}
    df = (spark.read.format("samza-kafka")
          .options(**{"kafka.bootstrap.servers": kafka_broker.bootstrap_servers, "subscribe": topic,
                      "includeHeaders": "true", "readPath": read_path,
                      "startingOffsets": json.dumps({topic: starts})})
          .load())
    got = {(r.partition, r.offset): (r.key, r.value, tuple((h.key, h.value) for h in r.headers or ()),
                                     round(r.timestamp.timestamp() * 1000)) for r in df.collect()}
    wanted = {k: v for k, v in produced.items() if k[0] == len(CODECS) or k[1] >= START_INSIDE_BATCH}
    assert sorted(got) == sorted(wanted)
    differing = [k for k in wanted if got[k] != wanted[k]]
    assert differing == [], [(k, got[k][:1], wanted[k][:1]) for k in differing[:3]]
    big = [v for v in got.values() if v[0] == b"big"]
    assert len(big) == 1 and len(big[0][1]) == BIG_VALUE
    assert any(v[0] is None for v in got.values()) and any(v[1] is None for v in got.values())
