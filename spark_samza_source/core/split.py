"""The split of a micro-batch's tasks across more Spark input partitions (option ``minPartitions``): pure planning.

By default a Spark input partition is one Samza task (docs/architecture.md §1), so a topic grown 4 -> 64 under the
fixed-task grouper is still read by 4 Spark tasks. With a target above the task count, :func:`split_tasks` spreads
a task's *units* over several input partitions of the same task name:

- a unit is never cut: it is one partition's range (Kafka) or one shard's read (Kinesis), or the same-numbered
  partitions of co-partitioned streams together, so one partition is read by one Spark task in offset order;
- nothing moves between tasks or between batches: the split only regroups the reads ``partitions(start, end)``
  already planned, so drain-first (the planner never plans a grown partition in a batch that still holds its
  parent's records from before the growth, §5), the job model, the checkpoint and the ``task`` column are what
  they were without the split;
- a task keeps at least one input partition (an idle task's is empty, as without the split), a task is split into
  at most as many input partitions as it has units, and the batch into at most ``max(target, tasks)``;
- the answer depends only on the reads, not on their order in the plan (tasks are ranked by their names), so a
  replayed batch splits the same way.

Extra input partitions go to the task whose input partitions would otherwise be the heaviest (its weight over its
split count), one at a time; inside a task the units are packed largest first into the lightest input partition.
Both run in O(n log n) for n units, far below the planner's own cost at 1,000 partitions.

Called by a system's coordinator in ``batch_reads`` (the Kafka one; its weight is a range's offset count). Imports
nothing but the standard library: it never sees a system's types, only the functions the caller passes.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from .errors import InternalError

Read = TypeVar("Read")
Task = TypeVar("Task")

__all__ = ["split_tasks"]


def split_tasks(
    plan: Sequence[tuple[Task, Sequence[Read]]],
    target: int | None,
    *,
    weight: Callable[[Read], int],
    unit: Callable[[Read], Hashable],
) -> list[tuple[Task, list[Read]]]:
    """``plan`` (one entry per task, each with its reads in order) regrouped into about ``target`` entries.

    ``weight(read)`` is the work of one read (offsets, records; counted as at least 1), ``unit(read)`` the key of
    the reads that must stay together (equal keys go to one input partition). With ``target`` None or not above
    the task count the plan is returned as it is. Each entry's reads keep their order in the plan, and a task's
    entries are ordered by their first read.
    """
    if target is None or target <= len(plan):
        return [(task, list(reads)) for task, reads in plan]
    tasks_units = [_units(reads, weight, unit) for _, reads in plan]
    counts = _split_counts([(str(task), units) for (task, _), units in zip(plan, tasks_units, strict=True)], target)
    out: list[tuple[Task, list[Read]]] = []
    for (task, reads), units, count in zip(plan, tasks_units, counts, strict=True):
        for group in _pack(units, count):
            out.append((task, [reads[i] for i in group]))
    return out


# one unit: (weight, the indexes of its reads in the task's read list, in order)
_Unit = tuple[int, list[int]]


def _units(reads: Sequence[Any], weight: Callable[[Any], int], unit: Callable[[Any], Hashable]) -> list[_Unit]:
    """A task's reads grouped by unit key, in the order of their first read."""
    by_key: dict[Hashable, _Unit] = {}
    for index, read in enumerate(reads):
        w = max(1, int(weight(read)))
        key = unit(read)
        held = by_key.get(key)
        if held is None:
            by_key[key] = (w, [index])
        else:
            by_key[key] = (held[0] + w, held[1] + [index])
    return list(by_key.values())


def _split_counts(tasks: list[tuple[str, list[_Unit]]], target: int) -> list[int]:
    """How many input partitions each task gets: one each, then the rest, one at a time, to the task with the
    heaviest input partitions (total weight / count) among those with units left to spread; ties go to the task
    whose name sorts first, so the answer does not depend on the plan's order."""
    counts = [1] * len(tasks)
    totals = [sum(w for w, _ in units) for _, units in tasks]
    heap: list[tuple[float, str, int]] = [(-float(totals[i]), name, i) for i, (name, units) in enumerate(tasks)
                                          if len(units) > 1]
    heapq.heapify(heap)
    spare = target - len(tasks)
    while spare > 0 and heap:
        _, name, i = heapq.heappop(heap)
        counts[i] += 1
        spare -= 1
        if counts[i] < len(tasks[i][1]):
            heapq.heappush(heap, (-totals[i] / counts[i], name, i))
    return counts


def _pack(units: list[_Unit], count: int) -> list[list[int]]:
    """``units`` in ``count`` groups (largest first into the lightest group; ties by the unit's and the group's
    place), each group's read indexes ascending, groups ordered by their first read. With ``count`` <= the unit
    count every group gets a unit: the first ``count`` units land in empty groups."""
    if count <= 1:
        return [sorted(i for _, indexes in units for i in indexes)]
    if count > len(units):
        raise InternalError(f"a task split into {count} input partitions has only {len(units)} units")
    order = sorted(range(len(units)), key=lambda u: (-units[u][0], units[u][1][0]))
    loads = [(0, g) for g in range(count)]  # a heap of (load, group)
    groups: list[list[int]] = [[] for _ in range(count)]
    for u in order:
        load, g = heapq.heappop(loads)
        weight, indexes = units[u]
        groups[g].extend(indexes)
        heapq.heappush(loads, (load + weight, g))
    return sorted((sorted(group) for group in groups), key=lambda group: group[0])
