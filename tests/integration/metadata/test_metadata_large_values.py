"""Stored values of any size on every store (``core/large_values.py``): the job model and the checkpoint mirror of a
10,000-partition job on the file, S3 (moto) and DynamoDB (moto) stores, a reader meeting a half-written new
version, a chunk missing under the damage rule, and the old single-item format still read. The memory store's
twin of each is in tests/unit/core/test_large_values.py; the store contract itself in
test_metadata_store_conformance.py. One moto server (the session's) serves both AWS stores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from samza_devkit.store_wrappers import DiesAtTheFlip, WriterDied
from spark_samza_source.core import errors
from spark_samza_source.core.checkpoint import NAMESPACE as CHECKPOINTS
from spark_samza_source.core.checkpoint import Checkpoint, CheckpointMirror
from spark_samza_source.core.errors import MetadataStoreError, SamzaSourceError
from spark_samza_source.core.grouping import AllSspToSingleTask, GroupByPartitionFixedTasks
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.jobmodel_store import JobModelStore
from spark_samza_source.core.large_values import is_pointer
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.metadata import MetadataStore, open_store
from spark_samza_source.options.namespaces import JOB_MODEL, JOB_MODEL_CURRENT, VALUE_CHUNKS

STORES = ["file", "s3", "dynamodb"]
JOB = "scale-job"


def ssps(topics: int, partitions: int) -> list[SystemStreamPartition]:
    return [SystemStreamPartition("kafka", f"topic-{t:03d}", p) for t in range(topics) for p in range(partitions)]


@pytest.fixture(scope="module")
def large_models() -> tuple[JobModel, JobModel]:
    """A 100 topics x 100 partitions model, and the one after five of its topics doubled (to 200 partitions)."""
    first = GroupByPartitionFixedTasks().group(None, ssps(100, 100))
    grown = ssps(100, 100) + [SystemStreamPartition("kafka", f"topic-{t:03d}", p)
                              for t in range(5) for p in range(100, 200)]
    return first, GroupByPartitionFixedTasks().group(first, grown)


@pytest.fixture(params=STORES)
def store_uri(request: pytest.FixtureRequest, tmp_path) -> str:
    if request.param == "file":
        return tmp_path.as_uri()
    return request.getfixturevalue(f"{request.param}_store_uri")


@pytest.fixture
def opened(store_uri: str) -> Iterator[list[MetadataStore]]:
    stores: list[MetadataStore] = []
    yield stores
    for store in stores:
        store.close()


def client(store_uri: str, opened: list[MetadataStore]) -> MetadataStore:
    """Another client of the same store, as another process (the CLI, a restarted driver) would open it."""
    store = open_store(store_uri, JOB)
    opened.append(store)
    return store


def chunk_versions(store: MetadataStore) -> set[str]:
    return {chunk["chunkOf"] for chunk in store.list(VALUE_CHUNKS).values()}


def test_a_10000_partition_job_model_is_stored_read_back_and_replaced(store_uri, opened, large_models):
    first, grown = large_models
    writer = client(store_uri, opened)
    assert JobModelStore(writer).write(first) is True
    assert JobModelStore(client(store_uri, opened)).current() == first
    assert JobModelStore(writer).write(grown) is True
    reader = JobModelStore(client(store_uri, opened))
    assert reader.current() == grown and reader.previous() == first
    assert len(chunk_versions(writer)) == 2  # current's and previous's: the first current's went with its flip


def test_dynamodb_refuses_the_same_model_as_one_item(dynamodb_store_uri, large_models):
    """Why chunks: without them the model of a 10,000-partition job cannot be stored on DynamoDB at all."""
    with open_store(dynamodb_store_uri, JOB) as store, pytest.raises(MetadataStoreError, match="400 KB"):
        store.put(JOB_MODEL, JOB_MODEL_CURRENT, large_models[0].to_json())


def test_a_checkpoint_mirror_of_10000_positions_round_trips(store_uri, opened):
    all_ssps = ssps(100, 100)
    (task,) = AllSspToSingleTask().group(None, all_ssps).tasks
    checkpoint = Checkpoint({task: {ssp: 1000 + ssp.partition for ssp in all_ssps},
                             "Partition 0": {all_ssps[0]: 3}}, batch_id=41)
    writer = client(store_uri, opened)
    CheckpointMirror(writer).write(checkpoint)
    assert is_pointer(writer.get(CHECKPOINTS, task.name))
    assert not is_pointer(writer.get(CHECKPOINTS, "Partition 0"))  # a small task keeps the single-item format
    assert CheckpointMirror(client(store_uri, opened)).read() == checkpoint


def test_a_reader_meeting_a_half_written_version_reads_the_old_one_then_the_damage_rule(
        store_uri, opened, large_models):
    """Backs Guarantees (docs/guarantees.md, the damaged-record rule): a version is published whole or not at all,
    and a chunk missing under its pointer fails the job model's read with the kind's error and repair."""
    first, grown = large_models
    JobModelStore(client(store_uri, opened)).write(first)
    dying = DiesAtTheFlip(client(store_uri, opened))
    with pytest.raises(WriterDied):
        JobModelStore(dying).write(grown)
    reader = JobModelStore(client(store_uri, opened))
    assert reader.current() == first  # the new version's chunks are stored, but no pointer names them yet
    dying.dying = False
    assert JobModelStore(dying).write(grown) is True
    assert reader.current() == grown
    raw = client(store_uri, opened)
    current = raw.get(JOB_MODEL, JOB_MODEL_CURRENT)
    raw.delete(VALUE_CHUNKS, f"{JOB_MODEL}/{JOB_MODEL_CURRENT}/{current['id']}/000000")
    with pytest.raises(SamzaSourceError) as caught:
        reader.current()
    assert caught.value.condition == errors.JOB_MODEL_INVALID
    assert "chunk 0 of the 1" in caught.value.detail and "is missing" in caught.value.detail


def test_the_old_single_item_format_is_still_read(store_uri, opened, large_models):
    small = GroupByPartitionFixedTasks().group(None, ssps(3, 4))
    old = client(store_uri, opened)
    old.put(JOB_MODEL, JOB_MODEL_CURRENT, small.to_json())  # as every release before chunks wrote it
    models = JobModelStore(client(store_uri, opened))
    assert models.current() == small
    assert models.write(large_models[0]) is True
    assert models.current() == large_models[0] and models.previous() == small
