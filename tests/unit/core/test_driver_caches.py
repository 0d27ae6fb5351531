"""What the driver computes once per immutable object at scale (issue #46): never a stale or shared-mutable value."""

from __future__ import annotations

import random

from spark_samza_source.core.checkpoint import Checkpoint
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStreamPartition, TaskName, ssp_order


def ssp(stream: str, partition: int) -> SystemStreamPartition:
    return SystemStreamPartition("kafka", stream, partition)


def model(*streams: str, partitions: int = 3) -> JobModel:
    return JobModel({TaskName(f"Partition {p}"): frozenset(ssp(s, p) for s in streams) for p in range(partitions)})


def test_ssp_order_sorts_as_the_ssps_own_order():
    ssps = [SystemStreamPartition(system, stream, p) for system in ("kafka", "k") for stream in ("a", "a.b", "b")
            for p in (0, 2, 10, 11)]
    random.Random(7).shuffle(ssps)
    assert sorted(ssps, key=ssp_order) == sorted(ssps)


def test_a_job_models_json_is_its_own_each_time_and_a_changed_copy_does_not_leak():
    first = model("orders", "clicks")
    again = first.to_json()
    again["tasks"]["Partition 0"].append({"system": "kafka", "stream": "x", "partition": 9})
    assert first.to_json() == JobModel.from_json(first.to_json()).to_json()
    assert len(first.to_json()["tasks"]["Partition 0"]) == 2
    assert model("orders").to_json()["tasks"]["Partition 0"] == [{"partition": 0, "stream": "orders",
                                                                   "system": "kafka"}]


def test_task_ssp_pairs_are_the_models_own():
    assert model("orders", partitions=2).task_ssp_pairs == {
        (TaskName("Partition 0"), ssp("orders", 0)), (TaskName("Partition 1"), ssp("orders", 1))}
    assert model("orders", "clicks", partitions=1).task_ssp_pairs == {
        (TaskName("Partition 0"), ssp("orders", 0)), (TaskName("Partition 0"), ssp("clicks", 0))}


def test_a_checkpoint_keeps_int_positions_and_detaches_nested_ones():
    nested = {"sequence": "49", "subSequence": [1]}
    checkpoint = Checkpoint({TaskName("t"): {ssp("a", 1): 42, ssp("a", 0): nested}})
    nested["subSequence"].append(2)
    assert checkpoint.positions[TaskName("t")] == {ssp("a", 0): {"sequence": "49", "subSequence": [1]},
                                                   ssp("a", 1): 42}
    assert list(checkpoint.positions[TaskName("t")]) == [ssp("a", 0), ssp("a", 1)]
