"""The split of a batch's tasks over Spark input partitions (core/split.py): what ``minPartitions`` may and may not
do to a plan, as properties over random plans, and the Kafka unit rule (``kafka/driver/input_splits.py``)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_samza_source.core.copartition import CoPartitionGroup
from spark_samza_source.core.model import SystemStream, TaskName
from spark_samza_source.core.split import split_tasks
from spark_samza_source.kafka.driver.input_splits import spread_tasks
from spark_samza_source.kafka.input_partition import KafkaRange


@st.composite
def plans(draw) -> list[tuple[TaskName, list[KafkaRange]]]:
    """Tasks holding ranges of distinct partitions of two topics (some tasks idle, as in a real batch)."""
    task_count = draw(st.integers(1, 6))
    partitions = draw(st.lists(st.tuples(st.sampled_from(["orders", "payments"]), st.integers(0, 40)),
                               unique=True, max_size=30))
    owners = [draw(st.integers(0, task_count - 1)) for _ in partitions]
    plan = []
    for t in range(task_count):
        mine = sorted(p for p, owner in zip(partitions, owners, strict=True) if owner == t)
        ranges = [KafkaRange(topic, partition, 10, 10 + draw(st.integers(1, 500))) for topic, partition in mine]
        plan.append((TaskName(f"Partition {t}"), ranges))
    return plan


def by_partition(r: KafkaRange):
    return (r.topic, r.partition)


def split(plan, target):
    return split_tasks(plan, target, weight=lambda r: r.size, unit=by_partition)


TARGETS = st.one_of(st.none(), st.integers(1, 40))


@settings(max_examples=300, deadline=None)
@given(plan=plans(), target=TARGETS)
def test_every_range_is_in_exactly_one_split_of_its_own_task_and_in_order(plan, target):
    splits = split(plan, target)
    task_of = {r: task for task, ranges in plan for r in ranges}
    seen = [r for _, ranges in splits for r in ranges]
    assert sorted(seen, key=by_partition) == sorted(task_of, key=by_partition), "a range was lost or repeated"
    for task, ranges in splits:
        assert all(task_of[r] == task for r in ranges), "a range moved to another task"
        original = [r for r in dict(plan)[task] if r in ranges]
        assert ranges == original, "a split changed the order of its task's ranges"


@settings(max_examples=300, deadline=None)
@given(plan=plans(), target=TARGETS)
def test_the_batch_gets_min_partitions_where_its_ranges_allow_and_never_more(plan, target):
    splits = split(plan, target)
    tasks = len(plan)
    ranges = sum(len(r) for _, r in plan)
    idle = sum(1 for _, r in plan if not r)
    if target is None or target <= tasks:
        assert splits == [(t, list(r)) for t, r in plan]  # no split: one input partition per task, as before
        return
    assert len(splits) == min(target, ranges + idle), "not as many input partitions as asked and possible"
    assert len(splits) <= max(target, tasks)
    for task, task_ranges in plan:
        own = [r for t, r in splits if t == task]
        assert 1 <= len(own) <= max(1, len(task_ranges)), f"{task}: {len(own)} input partitions"
        assert all(own) or not task_ranges, "an empty split beside splits with ranges"


@settings(max_examples=200, deadline=None)
@given(plan=plans(), target=TARGETS, seed=st.integers(0, 1000))
def test_the_split_depends_on_the_ranges_not_on_the_order_of_the_tasks(plan, target, seed):
    shuffled = list(plan)
    random.Random(seed).shuffle(shuffled)
    as_set = lambda splits: sorted((t.name, tuple(map(by_partition, r))) for t, r in splits)  # noqa: E731
    assert as_set(split(plan, target)) == as_set(split(shuffled, target))
    assert split(plan, target) == split(plan, target)


def test_extra_partitions_go_to_the_heaviest_task_and_ranges_are_balanced():
    big = [KafkaRange("orders", p, 0, size) for p, size in enumerate([900, 100, 100, 100, 100, 100, 100, 100, 100])]
    small = [KafkaRange("orders", 100 + p, 0, 10) for p in range(4)]
    splits = split([(TaskName("Partition 0"), big), (TaskName("Partition 1"), small)], 4)
    sizes = {t.name: [] for t, _ in splits}
    for task, ranges in splits:
        sizes[task.name].append(sum(r.size for r in ranges))
    assert sizes == {"Partition 0": [900, 400, 400], "Partition 1": [40]}


def test_copartitioned_partitions_stay_in_one_split():
    """orders-1 and payments-1 of one task stay together, so a join inside one Spark task sees both sides."""
    task = TaskName("Partition 1")
    ranges = [KafkaRange(t, p, 0, 100) for t in ("orders", "payments", "refunds") for p in (1, 5)]
    joined = CoPartitionGroup.of(SystemStream("kafka", "orders"), SystemStream("kafka", "payments"))
    splits = spread_tasks([(task, ranges)], 8, [joined])
    together = [{(r.topic, r.partition) for r in rs} for _, rs in splits]
    assert len(splits) == 4
    for p in (1, 5):
        assert {("orders", p), ("payments", p)} in together
        assert {("refunds", p)} in together


def test_without_min_partitions_a_task_is_one_input_partition():
    plan = [(TaskName("Partition 0"), [KafkaRange("orders", p, 0, 5) for p in (0, 2, 4)])]
    assert spread_tasks(plan, None) == plan
    assert len(spread_tasks(plan, 3)) == 3
