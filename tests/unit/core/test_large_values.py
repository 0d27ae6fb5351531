"""Values of any size in the metadata store (``core/large_values.py``): inline when small (the old format), compressed
chunks behind one pointer when large, published as one version; the kinds that grow with the partition count (job
model, checkpoint mirror, shard tasks) stored through it. On the memory store; the same on file, S3 and DynamoDB in
tests/integration/metadata/test_metadata_large_values.py."""

from __future__ import annotations

import uuid

import pytest

from samza_devkit.store_wrappers import CountingStore, DiesAtTheFlip, WriterDied
from spark_samza_source.core import errors
from spark_samza_source.core.checkpoint import NAMESPACE as CHECKPOINTS
from spark_samza_source.core.checkpoint import Checkpoint, CheckpointMirror
from spark_samza_source.core.errors import FormatVersionError, MetadataStoreError, SamzaSourceError
from spark_samza_source.core.grouping import AllSspToSingleTask, GroupByPartitionFixedTasks
from spark_samza_source.core.jobmodel_store import JobModelStore
from spark_samza_source.core.large_values import (
    CHUNK_CHARS,
    INLINE_MAX_BYTES,
    LargeValues,
    canonical_text,
    encode_chunks,
    is_pointer,
)
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.metadata.memory import MemoryMetadataStore
from spark_samza_source.options.namespaces import JOB_MODEL, JOB_MODEL_CURRENT, VALUE_CHUNKS

NS = "jobmodel"
SMALL = {"tasks": {"Partition 0": [1, 2, 3]}}


def store() -> MemoryMetadataStore:
    return MemoryMetadataStore("j", uuid.uuid4().hex)


def big(seed: str = "a", items: int = 4000) -> dict:
    """A value of about 260 KB of JSON that zlib cannot shrink much (unique hex strings)."""
    return {"items": [uuid.uuid5(uuid.NAMESPACE_OID, f"{seed}{i}").hex * 2 for i in range(items)]}


def ssps(topics: int, partitions: int) -> list[SystemStreamPartition]:
    return [SystemStreamPartition("kafka", f"topic-{t:03d}", p) for t in range(topics) for p in range(partitions)]


def test_a_small_value_is_stored_inline_as_every_earlier_release_wrote_it():
    raw = store()
    LargeValues(raw).put(NS, "k", SMALL)
    assert raw.get(NS, "k") == SMALL
    assert raw.list(VALUE_CHUNKS) == {}
    assert LargeValues(raw).get(NS, "k") == SMALL


def test_a_large_value_goes_to_chunks_none_over_the_chunk_size_and_reads_back_whole():
    raw = store()
    value = big()
    assert len(canonical_text(value)) > INLINE_MAX_BYTES
    values = LargeValues(raw, chunk_chars=50_000)
    values.put(NS, "k", value)
    pointer = raw.get(NS, "k")
    chunks = raw.list(VALUE_CHUNKS)
    assert is_pointer(pointer) and pointer["chunks"] == len(chunks) > 1
    assert all(len(chunk["data"]) <= 50_000 for chunk in chunks.values())
    assert LargeValues(raw).get(NS, "k") == value  # a reader with the default chunk size reads it as well


def test_the_default_chunk_fits_a_dynamodb_item():
    assert CHUNK_CHARS + 1024 < 400_000  # the chunk's base64 plus its keys and attribute names
    assert all(len(part) <= CHUNK_CHARS for part in encode_chunks(canonical_text(big(items=20_000))))


def test_replacing_a_version_deletes_the_replaced_chunks_and_an_inline_value_too():
    raw = store()
    values = LargeValues(raw, chunk_chars=50_000)
    values.put(NS, "k", big("a"))
    values.put(NS, "k", big("b"))
    pointer = raw.get(NS, "k")
    assert {chunk["chunkOf"] for chunk in raw.list(VALUE_CHUNKS).values()} == {pointer["id"]}
    values.put(NS, "k", SMALL)
    assert raw.list(VALUE_CHUNKS) == {} and values.get(NS, "k") == SMALL


def test_a_writer_that_dies_before_the_flip_leaves_the_old_version_readable():
    raw = store()
    LargeValues(raw).put(NS, "k", big("old"))
    dying = DiesAtTheFlip(raw)
    with pytest.raises(WriterDied):
        LargeValues(dying).put(NS, "k", big("new"))
    assert len({chunk["chunkOf"] for chunk in raw.list(VALUE_CHUNKS).values()}) == 2  # the new chunks are there
    assert LargeValues(raw).get(NS, "k") == big("old")


def test_a_reader_whose_version_is_replaced_under_it_follows_the_new_pointer():
    raw = store()
    values = LargeValues(raw)
    values.put(NS, "k", big("old"))
    read_before_the_flip = raw.get(NS, "k")
    values.put(NS, "k", big("new"))  # flips, then deletes the chunks the reader is about to read
    assert values.resolve(NS, "k", read_before_the_flip) == big("new")


def test_a_missing_chunk_under_an_unchanged_pointer_is_damage_naming_the_chunk():
    raw = store()
    LargeValues(raw, chunk_chars=50_000).put(NS, "k", big())
    missing = sorted(raw.list(VALUE_CHUNKS))[1]
    raw.delete(VALUE_CHUNKS, missing)
    with pytest.raises(MetadataStoreError) as caught:
        LargeValues(raw).get(NS, "k")
    assert caught.value.condition == errors.METADATA_VALUE_INVALID
    assert "chunk 1 of the" in caught.value.detail and missing in caught.value.detail


def test_chunks_that_do_not_add_up_to_the_pointer_are_damage():
    raw = store()
    LargeValues(raw).put(NS, "k", big())
    (key, chunk), = raw.list(VALUE_CHUNKS).items()
    raw.put(VALUE_CHUNKS, key, {**chunk, "data": encode_chunks(canonical_text(big("other")))[0]})
    with pytest.raises(MetadataStoreError, match="do not add up"):
        LargeValues(raw).get(NS, "k")


def test_a_pointer_of_a_newer_format_names_the_upgrade():
    raw = store()
    LargeValues(raw).put(NS, "k", big())
    raw.put(NS, "k", {**raw.get(NS, "k"), "chunkedValue": 2})
    with pytest.raises(FormatVersionError, match="format 2 is newer"):
        LargeValues(raw).get(NS, "k")


def test_a_job_model_of_10000_partitions_round_trips_and_an_unchanged_one_reads_no_chunk():
    raw = store()
    model = GroupByPartitionFixedTasks().group(None, ssps(100, 100))
    assert len(canonical_text(model.to_json())) > 400_000  # over DynamoDB's item limit as one record
    assert JobModelStore(raw).write(model) is True
    assert JobModelStore(raw).current() == model
    counting = CountingStore(raw)
    assert JobModelStore(counting).write(model) is False
    assert counting.calls == {("get", JOB_MODEL): 1}


def test_a_job_model_with_a_chunk_missing_fails_with_the_job_model_rule():
    raw = store()
    JobModelStore(raw).write(GroupByPartitionFixedTasks().group(None, ssps(100, 100)))
    for key in raw.list(VALUE_CHUNKS):
        raw.delete(VALUE_CHUNKS, key)
    with pytest.raises(SamzaSourceError) as caught:
        JobModelStore(raw).current()
    assert caught.value.condition == errors.JOB_MODEL_INVALID
    assert "is missing" in caught.value.detail and "jobModel.reset=true" in caught.value.detail


def test_the_old_inline_job_model_is_read_and_replaced_by_a_chunked_one():
    raw = store()
    small = GroupByPartitionFixedTasks().group(None, ssps(2, 4))
    raw.put(JOB_MODEL, JOB_MODEL_CURRENT, small.to_json())  # as an earlier release stored it
    models = JobModelStore(raw)
    assert models.current() == small
    large = GroupByPartitionFixedTasks().group(small, ssps(2, 4) + ssps(100, 100)[8:])
    assert models.write(large) is True
    assert is_pointer(raw.get(JOB_MODEL, JOB_MODEL_CURRENT))
    assert models.current() == large and models.previous() == small


def test_a_checkpoint_mirror_task_of_10000_ssps_is_chunked_and_its_chunks_go_with_the_task():
    raw = store()
    all_ssps = ssps(100, 100)
    model = AllSspToSingleTask().group(None, all_ssps)
    (task,) = model.tasks
    checkpoint = Checkpoint({task: {ssp: ssp.partition * 7 for ssp in all_ssps}}, batch_id=3)
    mirror = CheckpointMirror(raw)
    mirror.write(checkpoint)
    assert is_pointer(raw.get(CHECKPOINTS, task.name))
    assert CheckpointMirror(raw).read() == checkpoint
    smaller = Checkpoint({"Partition 0": {all_ssps[0]: 1}}, batch_id=4)
    mirror.write(smaller)  # the big task is gone: its record and its chunks are removed
    assert raw.list(VALUE_CHUNKS) == {}
    assert CheckpointMirror(raw).read() == smaller


def test_a_checkpoint_mirror_task_with_a_chunk_missing_is_skipped_with_the_mirror_rule():
    """Backs Guarantees (docs/guarantees.md, the damaged-record rule): a chunk's damage is its owner's, under the
    owner's verdict (the mirror: skip, the other tasks' records still read)."""
    raw = store()
    all_ssps = ssps(100, 100)
    (task,) = AllSspToSingleTask().group(None, all_ssps).tasks
    CheckpointMirror(raw).write(Checkpoint({task: {ssp: 1 for ssp in all_ssps},
                                            "Partition 7": {all_ssps[0]: 5}}, batch_id=1))
    for key in raw.list(VALUE_CHUNKS):
        raw.delete(VALUE_CHUNKS, key)
    mirror = CheckpointMirror(raw)
    read = mirror.read()
    assert read is not None and [t.name for t in read.positions] == ["Partition 7"]
    assert [bad.key for bad in mirror.skipped] == [task.name]
