"""A samza-kafka batch's tasks spread over ``minPartitions`` Spark input partitions (the pure rule: core/split.py).

What must stay together in one input partition, for Kafka: one partition's range (never cut: it is read in offset
order by one Spark task), and, for streams joined in one task (option ``copartition``), the same-numbered
partitions of the joined streams, so a join inside one Spark task (``mapPartitions``) still sees both sides of a
key. A range's weight is its offset count. Used by the coordinator's ``batch_reads`` and the batch read's plan.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from ...core.copartition import CoPartitionGroup
from ...core.model import TaskName
from ...core.split import split_tasks
from ..input_partition import KafkaRange

__all__ = ["spread_tasks"]


def spread_tasks(plan: Sequence[tuple[TaskName, Sequence[KafkaRange]]], min_partitions: int | None,
                 copartition: Sequence[CoPartitionGroup] = ()) -> list[tuple[TaskName, list[KafkaRange]]]:
    """``plan`` (one entry per task) as the entries of its Spark input partitions: one per task without
    ``min_partitions``, else each task's ranges spread as :func:`~spark_samza_source.core.split.split_tasks`
    says."""
    if min_partitions is None:
        return [(task, list(ranges)) for task, ranges in plan]
    joined = _joined_topics(copartition)

    def unit(r: KafkaRange) -> Hashable:
        group = joined.get(r.topic)
        return ("joined", group, r.partition) if group is not None else ("topic", r.topic, r.partition)

    return split_tasks(plan, min_partitions, weight=lambda r: r.size, unit=unit)


def _joined_topics(groups: Sequence[CoPartitionGroup]) -> dict[str, int]:
    """topic -> the number of its joined set: groups that share a topic are one set (a topic in two joins keeps
    both joins' partners with it)."""
    owner: dict[str, int] = {}
    for number, group in enumerate(groups):
        topics = [s.stream for s in group.streams]
        merged = {owner[t] for t in topics if t in owner}
        target = min(merged, default=number)
        for topic, held in list(owner.items()):
            if held in merged:
                owner[topic] = target
        for topic in topics:
            owner[topic] = target
    return owner
