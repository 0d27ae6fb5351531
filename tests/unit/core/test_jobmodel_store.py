"""The stored job model (``core/jobmodel_store.py``): current and previous, written only when it changes, read back
by the Kafka coordinator as a new checkpoint's starting model."""

from __future__ import annotations

import uuid

import pytest

from spark_samza_source.core.errors import SamzaSourceError
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.jobmodel_store import JobModelStore
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.kafka.driver.coordinator import KafkaCoordinator
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.metadata.memory import MemoryMetadataStore
from spark_samza_source.options.namespaces import JOB_MODEL, JOB_MODEL_CURRENT

P0, P1 = TaskName("Partition 0"), TaskName("Partition 1")
ONE = JobModel({P0: frozenset({SystemStreamPartition("kafka", "t", 0)})})
TWO = JobModel({P0: frozenset({SystemStreamPartition("kafka", "t", 0)}),
                P1: frozenset({SystemStreamPartition("kafka", "t", 1)})})


def store() -> MemoryMetadataStore:
    return MemoryMetadataStore("j", uuid.uuid4().hex)


def test_a_new_model_becomes_current_and_the_one_it_replaces_previous():
    models = JobModelStore(store())
    assert models.current() is None and models.previous() is None
    assert models.write(ONE) is True
    assert models.current() == ONE and models.previous() is None
    assert models.write(TWO) is True
    assert models.current() == TWO and models.previous() == ONE


def test_an_unchanged_model_is_not_written_again():
    models = JobModelStore(store())
    models.write(ONE)
    models.write(TWO)
    assert models.write(TWO) is False
    assert models.previous() == ONE  # the previous model is not overwritten by the current one


def test_a_value_that_is_no_job_model_raises_the_sources_error():
    raw = store()
    raw.put(JOB_MODEL, JOB_MODEL_CURRENT, {"version": 1})
    with pytest.raises(SamzaSourceError, match="lacks a 'tasks' object"):
        JobModelStore(raw).current()


def test_the_kafka_coordinator_starts_from_the_stored_model_or_names_the_reset_option():
    options = KafkaSourceOptions.parse({"kafka.bootstrap.servers": "b:9092", "subscribe": "t", "job.name": "j",
                                        "metadata.store": "memory:"})
    coordinator = KafkaCoordinator(options)
    coordinator._store = store()
    assert coordinator.stored_job_model() is None
    JobModelStore(coordinator.store).write(TWO)
    assert coordinator.stored_job_model() == TWO
    coordinator.store.put(JOB_MODEL, JOB_MODEL_CURRENT, ["not", "a", "model"])
    with pytest.raises(SamzaSourceError, match="jobModel.reset=true"):
        coordinator.stored_job_model()


def test_the_kafka_coordinator_keeps_the_previous_model_object_only_when_the_grouper_returns_an_equal_one():
    """What a model computed once (its JSON, its (task, SSP) pairs) carries over to the next plan only when the
    model did not change; a changed model is the grouper's own, stored as the current one."""
    options = KafkaSourceOptions.parse({"kafka.bootstrap.servers": "b:9092", "subscribe": "t", "job.name": "j",
                                        "metadata.store": "memory:", "grouper": "GroupByPartitionFixedTasks"})
    coordinator = KafkaCoordinator(options)
    coordinator._store = store()
    ssps = [SystemStreamPartition("kafka", "t", p) for p in range(2)]
    first = coordinator.job_model(None, ssps, frozenset())
    same = JobModel(dict(first.tasks), dict(first.initial_partition_counts), first.broadcast)
    assert coordinator.job_model(same, ssps, frozenset()) is same
    doubled = [SystemStreamPartition("kafka", "t", p) for p in range(4)]
    grown = coordinator.job_model(same, doubled, frozenset())
    assert grown is not same and grown != same and grown.ssps() == frozenset(doubled)
    assert JobModelStore(coordinator.store).current() == grown
