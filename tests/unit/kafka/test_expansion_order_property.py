"""Per-key order and fixed tasks through any growth the grouper accepts, on a model of ``hash % N`` producers.

Backs the README guarantee "per-key order across partition expansion". The model is a Kafka topic whose
producers put a key with hash h into partition ``h % N`` (Kafka's default partitioner with N partitions).
Hypothesis draws a growth chain that the default grouper accepts (every count a multiple of the initial one,
including counts that are not multiples of the previous one: 2 -> 4 -> 6, 3 -> 6 -> 9 -> 12, 4 -> 8 -> 12),
interleaves production, growth and planning at random, with random read limits and settle times, and plans
every batch with the real grouper and the real planner. The reading order is the order a task emits rows:
batch by batch, tasks in order, each task's SSPs in order, offsets ascending.

Producers switch to the new partition count (a) at any moment between the growth and the cut when the new
count is a multiple of the previous one, (b) at the cut otherwise (records of keys that move between old
partitions are ambiguous before it; docs/guarantees.md says so). The query sees every growth before the next
one (two growths between two triggers look like one to it). Within those rules every key must come out
in produce order, every SSP must stay in its first task, and once production stops everything is read.

Each batch is also spread over Spark input partitions as ``minPartitions`` would (``input_splits.spread_tasks``),
and its input partitions are emitted in a random order (Spark runs them in parallel, in no order): per-key order
must hold all the same, because within one batch every key's records come from one partition (drain-first keeps a
grown partition out of any batch that holds its parent's records from before the growth), which is also checked.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_samza_source.core.grouping import GroupByPartitionFixedTasks
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.kafka.driver.input_splits import spread_tasks
from spark_samza_source.kafka.driver.offset import KafkaOffset
from spark_samza_source.kafka.driver.planner import PlanRules, plan_next
from spark_samza_source.kafka.input_partition import KafkaRange
from spark_samza_source.kafka.positions import Watermarks

STREAM = "orders"


def ssp(partition: int) -> SystemStreamPartition:
    return SystemStreamPartition("kafka", STREAM, partition)


@dataclass
class Topic:
    """Partition logs of (key, sequence number) records, and the count producers currently partition by."""

    logs: list[list[tuple[int, int]]]
    producer_count: int
    next_seq: dict[int, int] = field(default_factory=dict)

    def produce(self, key_hash: int) -> None:
        seq = self.next_seq.get(key_hash, 0)
        self.next_seq[key_hash] = seq + 1
        self.logs[key_hash % self.producer_count].append((key_hash, seq))

    def grow(self, count: int) -> None:
        self.logs.extend([] for _ in range(count - len(self.logs)))

    def watermarks(self) -> dict[SystemStreamPartition, Watermarks]:
        return {ssp(p): Watermarks(0, len(log)) for p, log in enumerate(self.logs)}


@st.composite
def growth_chains(draw) -> list[int]:
    """Partition counts, each a multiple of the first (what the default algorithm accepts), growing."""
    initial = draw(st.integers(1, 4))
    factors = draw(st.lists(st.integers(2, 4), min_size=1, max_size=3, unique=True).map(sorted))
    chain = [initial] + [initial * f for f in factors]
    # Make sure non-multiples of the previous count are well represented (2 -> 4 -> 6, 3 -> 6 -> 9 -> 12).
    if draw(st.booleans()):
        chain = [initial] + [initial * f for f in range(2, 2 + len(factors))]
    return chain


STEP = st.one_of(
    st.tuples(st.just("produce"), st.lists(st.integers(0, 40), min_size=1, max_size=12)),
    st.tuples(st.just("plan"), st.one_of(st.none(), st.integers(1, 8))),
    st.tuples(st.just("grow"), st.integers(0, 8)),  # the read limit of the plan that sees the growth
    st.tuples(st.just("tick"), st.integers(0, 3)),  # wall-clock time passes (settle times run out)
)


# SAMZA_PROPERTY_EXAMPLES=6000 for a deeper search by hand (about 30 s)
@settings(max_examples=int(os.environ.get("SAMZA_PROPERTY_EXAMPLES", "300")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    chain=growth_chains(),
    steps=st.lists(STEP, min_size=5, max_size=60),
    settle_ticks=st.integers(0, 4),
    early_switch=st.booleans(),
    min_partitions=st.one_of(st.none(), st.integers(1, 16)),
    split_order=st.integers(0, 2**16),
)
def test_every_key_in_produce_order_and_every_ssp_in_its_task(chain, steps, settle_ticks, early_switch,
                                                              min_partitions, split_order):
    grouper = GroupByPartitionFixedTasks()
    topic = Topic([[] for _ in range(chain[0])], chain[0])
    growths = iter(chain[1:])
    model = grouper.group(None, [ssp(p) for p in range(chain[0])])
    offset = KafkaOffset(model, {(t, s): 0 for t, group in model.tasks.items() for s in group})
    task_of = {s: t for t, group in model.tasks.items() for s in group}
    initial_tasks = set(model.tasks)
    emitted: list[tuple[int, int]] = []
    now = 0
    pending_switch: int | None = None  # count producers switch to once the growth is cut
    unseen_growth = False  # a growth no plan has seen yet: a second one would merge with it (README says so)

    def plan(max_rows: int | None) -> None:
        nonlocal offset, model, pending_switch, unseen_growth
        unseen_growth = False
        model = grouper.group(offset.job_model, [ssp(p) for p in range(len(topic.logs))])
        assert set(model.tasks) == initial_tasks, "growth added or removed a task"
        result = plan_next(offset, model, topic.watermarks(), max_rows=max_rows, now_ms=now * 1000,
                           rules=PlanRules(settle_ms=settle_ticks * 1000))
        end = result.offset
        if end is offset:  # nothing to do: Spark plans no batch
            return
        batch = []
        for task, group in end.job_model.tasks.items():
            ranges = []
            for s in sorted(group):
                assert task_of.setdefault(s, task) == task, f"{s} moved from {task_of[s]} to {task}"
                begin = end.start_of(task, s, offset)
                stop = end.positions[(task, s)]
                if begin is not None and stop > begin:
                    ranges.append(KafkaRange(STREAM, s.partition, begin, stop))
            batch.append((task, ranges))
        splits = spread_tasks(batch, min_partitions)
        random.Random(split_order + len(emitted)).shuffle(splits)  # Spark runs a batch's input partitions in no order
        partition_of_key: dict[int, int] = {}
        for _, ranges in splits:
            for r in ranges:
                for key_hash, seq in topic.logs[r.partition][r.start:r.end]:
                    assert partition_of_key.setdefault(key_hash, r.partition) == r.partition, (
                        f"key {key_hash} in partitions {partition_of_key[key_hash]} and {r.partition} of one batch")
                    emitted.append((key_hash, seq))
        offset = end
        if pending_switch is not None and not any(b.settling for c in end.barriers.values() for b in c):
            topic.producer_count, pending_switch = pending_switch, None  # the growth is cut: producers switch

    for kind, arg in steps:
        if kind == "produce":
            for key_hash in arg:
                topic.produce(key_hash)
        elif kind == "plan":
            plan(arg)
        elif kind == "tick":
            now += arg
        elif kind == "grow" and pending_switch is None and not unseen_growth:
            count = next(growths, None)
            if count is None:
                continue
            grown_multiple = count % len(topic.logs) == 0
            topic.grow(count)
            if grown_multiple and early_switch:
                topic.producer_count = count  # producers may see a growth by a multiple before the query does
                unseen_growth = True
            else:
                pending_switch = count
                plan(arg)  # the query sees the growth (a non-multiple's producers switch only at the cut)

    # Production stops: everything is read within a bounded number of plans (liveness).
    for _ in range(4 * len(chain) + 4):
        now += settle_ticks + 1
        plan(None)
    total = sum(len(log) for log in topic.logs)
    assert len(emitted) == total and sorted(emitted) == sorted(r for log in topic.logs for r in log), (
        "not everything was read exactly once"
    )
    assert offset.barriers == {}, f"barriers never released: {offset.barriers}"
    last: dict[int, int] = {}
    for key_hash, seq in emitted:
        assert seq == last.get(key_hash, -1) + 1, f"key {key_hash}: {seq} came after {last.get(key_hash)}"
        last[key_hash] = seq
    assert set(task_of.values()) == initial_tasks


CONFIG = "config"


@settings(max_examples=int(os.environ.get("SAMZA_PROPERTY_EXAMPLES", "200")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    initial=st.integers(1, 4),
    config_counts=st.lists(st.integers(1, 6), min_size=1, max_size=4).map(lambda c: sorted(set(c))),
    steps=st.lists(st.one_of(
        st.tuples(st.just("produce"), st.lists(st.integers(0, 40), min_size=1, max_size=8)),
        st.tuples(st.just("plan"), st.one_of(st.none(), st.integers(1, 8))),
        st.tuples(st.just("grow"), st.none()),
    ), min_size=3, max_size=40),
)
def test_a_growing_broadcast_topic_adds_no_task_and_every_task_reads_every_record_once_in_order(
        initial, config_counts, steps):
    """Backs docs/guarantees.md: "Growing a topic read only as broadcast input adds its new partitions to every task
    and adds no task". Planned batch after batch with the real grouper, broadcast rule and planner."""
    from spark_samza_source.core.broadcast import effective_broadcast
    from spark_samza_source.core.model import SystemStream

    grouper = GroupByPartitionFixedTasks()
    config = Topic([[] for _ in range(config_counts[0])], config_counts[0])
    growths = iter(config_counts[1:])
    orders = [SystemStreamPartition("kafka", STREAM, p) for p in range(initial)]

    def cfg(p: int) -> SystemStreamPartition:
        return SystemStreamPartition("kafka", CONFIG, p)

    configured = [cfg(p) for p in range(config_counts[0])]  # task.broadcast.inputs names the first partitions
    model = grouper.group(None, orders + configured, configured)
    tasks = set(model.tasks)
    offset = KafkaOffset(model, {(t, s): 0 for t, group in model.tasks.items() for s in group})
    read: dict[tuple, list[tuple[int, int]]] = {}  # (task, config partition) -> records in read order

    def plan(max_rows):
        nonlocal offset
        counts = {SystemStream("kafka", CONFIG): len(config.logs)}
        broadcast = effective_broadcast(configured, offset.job_model, counts)
        ssps = orders + [cfg(p) for p in range(len(config.logs))]
        current = grouper.group(offset.job_model, ssps, broadcast)
        assert set(current.tasks) == tasks, "a growing broadcast topic added or removed a task"
        marks = {s: Watermarks(0, 0) for s in orders} | {cfg(p): Watermarks(0, len(log))
                                                        for p, log in enumerate(config.logs)}
        end = plan_next(offset, current, marks, max_rows=max_rows).offset
        if end is offset:
            return
        for task, group in end.job_model.tasks.items():
            for s in sorted(group):
                if s.stream != CONFIG:
                    continue
                begin = end.start_of(task, s, offset)
                stop = end.positions[(task, s)]
                read.setdefault((task, s.partition), []).extend(config.logs[s.partition][begin:stop])
        offset = end

    for kind, arg in steps:
        if kind == "produce":
            for key_hash in arg:
                config.produce(key_hash)
        elif kind == "plan":
            plan(arg)
        else:
            count = next(growths, None)
            if count is not None:
                config.grow(count)
                config.producer_count = count
    plan(None)
    plan(None)
    for task in tasks:
        for p, log in enumerate(config.logs):
            assert read.get((task, p), []) == log, f"{task} did not read config partition {p} once, in order"
