"""Property: over generated records, both read paths fill the same Arrow batches, and those hold exactly what was
produced. Keys, values and header values null, empty or not; records without headers, with an empty list, or with
many; row, byte and Arrow column limits drawn at the records' own boundaries (a limit equal to a running sum of a
column, one byte under or over it), down to limits one record alone exceeds, where both paths must fail with the
same error. Each example appends its records to one shared partition and reads them back as one range.
(Header keys hold no NUL: confluent-kafka's producer cuts a key there.)"""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samza_devkit.kafka_helpers import produce
from spark_samza_source.kafka.errors import KafkaSourceError
from spark_samza_source.kafka.executor.consumer_cache import ConsumerCache
from spark_samza_source.kafka.executor.read_settings import ARROW_COLUMN_BYTES_MAX
from spark_samza_source.kafka.executor.reader import KafkaReadSettings, read_ranges
from spark_samza_source.kafka.input_partition import KafkaRange

TASK = "Partition 0"
PROPERTY = settings(max_examples=50, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

maybe_bytes = st.one_of(st.none(), st.just(b""), st.binary(min_size=1, max_size=64),
                        st.integers(200, 3000).map(lambda n: b"x" * n))
header_key = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12)
header = st.tuples(header_key, st.one_of(st.none(), st.just(b""), st.binary(max_size=200)))
headers = st.one_of(st.none(), st.just([]), st.lists(header, min_size=1, max_size=4),
                    st.lists(header, min_size=20, max_size=120))
records = st.lists(st.tuples(maybe_bytes, maybe_bytes, headers), min_size=1, max_size=25)


@pytest.fixture(scope="module")
def shared(kafka_broker, request):
    """One partition the examples append to, and a consumer cache per path (consumers reused across examples)."""
    from samza_devkit.kafka_helpers import create_topic, unique_topic

    topic = create_topic(kafka_broker.bootstrap_servers, unique_topic("fill"), 1,
                         {"max.message.bytes": str(4 * 1024 * 1024)})
    caches = {"python": ConsumerCache(1), "native": ConsumerCache.native(1)}
    yield topic, caches
    for cache in caches.values():
        cache.close_all()


def _column_sizes(recs) -> dict[str, list[int]]:
    """Each record's bytes in each variable-width column, as the batch cut counts them."""
    hs = [h or [] for _, _, h in recs]
    return {
        "key": [len(k or b"") for k, _, _ in recs],
        "value": [len(v or b"") for _, v, _ in recs],
        "header keys": [sum(len(k.encode()) for k, _ in h) for h in hs],
        "header values": [sum(len(v or b"") for _, v in h) for h in hs],
    }


def _at_boundaries(sizes: list[int]) -> list[int]:
    """Running sums of ``sizes``, one under and one over each: where a cut rule changes its answer."""
    sums = [s for s in itertools.accumulate(sizes) if s > 0]
    return sorted({max(1, s + d) for s in sums for d in (-1, 0, 1)}) or [1]


def _read(bootstrap: str, path: str, rng: KafkaRange, settings: KafkaReadSettings, cache):
    settings = KafkaReadSettings(**{**settings.__dict__, "read_path": path})
    try:
        return list(read_ranges({"bootstrap.servers": bootstrap}, TASK, [rng], settings, cache=cache)), None
    except KafkaSourceError as err:
        return None, str(err)


@PROPERTY
@given(recs=records, data=st.data())
def test_both_paths_fill_the_same_batches_with_what_was_produced(kafka_broker, shared, recs, data):
    topic, caches = shared
    bs = kafka_broker.bootstrap_servers
    produced = produce(bs, topic, [(k, v, h, 0) for k, v, h in recs])
    rng = KafkaRange(topic, 0, produced[0].offset, produced[-1].offset + 1)
    sizes = _column_sizes(recs)
    include_headers = data.draw(st.booleans(), "include_headers")
    counted = [c for c in sizes if include_headers or not c.startswith("header")]
    totals = [sum(sizes[c][i] for c in counted) for i in range(len(recs))]
    column = data.draw(st.sampled_from(counted), "column at its limit")
    limits = _at_boundaries(sizes[column]) + [ARROW_COLUMN_BYTES_MAX]
    if not data.draw(st.sampled_from([False, False, False, True]), "one record too large allowed"):
        fits = max([len(topic), len(TASK)] + [max(sizes[c]) for c in counted])
        limits = [limit for limit in limits if limit >= fits]
    settings = KafkaReadSettings(
        include_headers=include_headers, fail_on_data_loss=True,
        max_rows_per_batch=data.draw(st.integers(1, len(recs) + 1), "max_rows"),
        max_bytes_per_batch=data.draw(st.sampled_from(_at_boundaries(totals)), "max_bytes"),
        max_column_bytes=data.draw(st.sampled_from(limits), "max_column_bytes"))
    py, py_error = _read(bs, "python", rng, settings, caches["python"])
    native, native_error = _read(bs, "native", rng, settings, caches["native"])
    assert native_error == py_error
    limit = settings.max_column_bytes
    too_large = (any(sizes[c][i] > limit for c in counted for i in range(len(recs)))
                 or len(topic.encode()) > limit or len(TASK.encode()) > limit)
    if too_large:  # every record is read up to the first that fits no batch, which fails the read
        assert py_error is not None and "cannot be read" in py_error
        return
    assert py_error is None
    assert [b.num_rows for b in native] == [b.num_rows for b in py]
    for got, want in zip(native, py, strict=True):
        assert got.schema.equals(want.schema) and got.equals(want)
    table = pa.Table.from_batches(py)
    assert table.column("key").to_pylist() == [k for k, _, _ in recs]
    assert table.column("value").to_pylist() == [v for _, v, _ in recs]
    assert table.column("offset").to_pylist() == [p.offset for p in produced]
    if include_headers:
        expected = [[{"key": k, "value": v} for k, v in h] if h else None for _, _, h in recs]
        assert table.column("headers").to_pylist() == expected
    for batch in py:  # no batch takes a column past the limit
        assert max(len(x or b"") for x in batch.column("value").to_pylist()) <= settings.max_column_bytes
        assert sum(len(x or b"") for x in batch.column("value").to_pylist()) <= settings.max_column_bytes
        assert sum(len(x or b"") for x in batch.column("key").to_pylist()) <= settings.max_column_bytes
