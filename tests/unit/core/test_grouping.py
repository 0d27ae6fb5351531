"""Groupers: Samza's task naming, broadcast inputs, initial counts, SEP-5 fixed tasks across expansion."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_samza_source.core.errors import ConfigError, PartitionExpansionError
from spark_samza_source.core.expansion import DefaultPartitionExpansionAlgorithm, PartitionExpansionAlgorithm
from spark_samza_source.core.grouping import (
    AllSspToSingleTask,
    GroupByPartition,
    GroupByPartitionFixedTasks,
    GroupBySystemStreamPartition,
    GroupBySystemStreamPartitionFixedTasks,
    SspGrouper,
    resolve_grouper,
)
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStream, SystemStreamPartition, TaskName

ORDERS = SystemStream("kafka", "orders")
PAYMENTS = SystemStream("kafka", "payments")


def ssps(stream: str, count: int, system: str = "kafka", start: int = 0) -> list[SystemStreamPartition]:
    return [SystemStreamPartition(system, stream, p) for p in range(start, count)]


def partitions_by_task(model: JobModel, stream: str | None = None) -> dict[str, list[int]]:
    return {
        t.name: sorted(s.partition for s in group if stream is None or s.stream == stream)
        for t, group in model.tasks.items()
    }


FIXED = [GroupByPartitionFixedTasks, GroupBySystemStreamPartitionFixedTasks]
BASE_OF = {GroupByPartitionFixedTasks: GroupByPartition,
           GroupBySystemStreamPartitionFixedTasks: GroupBySystemStreamPartition}
ALL_GROUPERS = [GroupByPartition, GroupBySystemStreamPartition, GroupByPartitionFixedTasks,
                GroupBySystemStreamPartitionFixedTasks, AllSspToSingleTask]


# ---- custom classes resolved by dotted path ---------------------------------------------------------------

class EvenGrowthOnly(PartitionExpansionAlgorithm):
    """p % initial, but only growth by an even factor (to see a plugged algorithm's validate at work)."""

    def partition_before_expansion(self, partition, current_count, initial_count):
        return partition % initial_count

    def validate(self, stream, current_count, initial_count):
        super().validate(stream, current_count, initial_count)
        if current_count % (2 * initial_count) and current_count != initial_count:
            raise PartitionExpansionError(f"{stream}: EvenGrowthOnly refuses {initial_count} -> {current_count}")


class BlockExpansion(PartitionExpansionAlgorithm):
    """Breaks SEP-5's identity rule (partition 1 of 2 -> 4 maps to 0)."""

    def partition_before_expansion(self, partition, current_count, initial_count):
        return partition // (current_count // initial_count)


class OneTaskPerStream(SspGrouper):
    """A custom grouper: task = stream name."""

    name = "OneTaskPerStream"

    def _group_regular(self, previous, by_stream, counts, initial):
        return {TaskName(str(stream)): list(group) for stream, group in sorted(by_stream.items())}


class GrouperWithAlgorithm(GroupByPartitionFixedTasks):
    def __init__(self, expansion_algorithm=None, label="x"):
        super().__init__(expansion_algorithm)
        self.label = label


# ---- plain groupers ---------------------------------------------------------------------------------------

def test_group_by_partition_puts_partition_n_of_every_stream_in_task_partition_n():
    model = GroupByPartition().group(None, ssps("orders", 3) + ssps("payments", 2))
    assert [t.name for t in model.tasks] == ["Partition 0", "Partition 1", "Partition 2"]
    assert model.tasks[TaskName("Partition 1")] == {
        SystemStreamPartition("kafka", "orders", 1), SystemStreamPartition("kafka", "payments", 1)}
    assert model.tasks[TaskName("Partition 2")] == {SystemStreamPartition("kafka", "orders", 2)}
    assert model.initial_partition_counts == {ORDERS: 3, PAYMENTS: 2}


def test_group_by_partition_orders_tasks_naturally():
    model = GroupByPartition().group(None, ssps("orders", 12))
    assert [t.name for t in model.tasks][-3:] == ["Partition 9", "Partition 10", "Partition 11"]


def test_group_by_system_stream_partition_names_tasks_after_the_ssp():
    model = GroupBySystemStreamPartition().group(None, ssps("orders", 2) + ssps("payments", 1))
    assert [t.name for t in model.tasks] == [
        "SystemStreamPartition [kafka, orders, 0]",
        "SystemStreamPartition [kafka, orders, 1]",
        "SystemStreamPartition [kafka, payments, 0]",
    ]
    for task, group in model.tasks.items():
        assert group == {SystemStreamPartition.parse(task.name)}


def test_all_ssp_to_single_task_gives_every_task_every_ssp():
    inputs = ssps("shards", 5, system="kinesis")
    model = AllSspToSingleTask(num_tasks=3).group(None, inputs)
    assert [t.name for t in model.tasks] == ["Task-0", "Task-1", "Task-2"]
    assert all(group == frozenset(inputs) for group in model.tasks.values())
    assert model.initial_partition_counts == {SystemStream("kinesis", "shards"): 5}
    assert list(AllSspToSingleTask().group(None, inputs).tasks) == [TaskName("Task-0")]


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2"])
def test_all_ssp_to_single_task_rejects_bad_task_counts(bad):
    with pytest.raises(ConfigError, match="num_tasks"):
        AllSspToSingleTask(num_tasks=bad)


@pytest.mark.parametrize("grouper_cls", ALL_GROUPERS)
def test_no_input_gives_no_task(grouper_cls):
    model = grouper_cls().group(None, [])
    assert model.tasks == {} and model.initial_partition_counts == {}


@pytest.mark.parametrize("grouper_cls", ALL_GROUPERS)
def test_grouping_is_deterministic_whatever_the_input_order(grouper_cls):
    inputs = ssps("orders", 7) + ssps("payments", 3)
    a = grouper_cls().group(None, inputs)
    b = grouper_cls().group(None, list(reversed(inputs)) + inputs[:2])  # order and duplicates do not matter
    assert a == b and a.to_json_str() == b.to_json_str()


def test_plain_groupers_simply_regroup_after_expansion():
    first = GroupByPartition().group(None, ssps("orders", 2))
    grown = GroupByPartition().group(first, ssps("orders", 4))
    assert partitions_by_task(grown) == {"Partition 0": [0], "Partition 1": [1], "Partition 2": [2],
                                         "Partition 3": [3]}
    assert grown.initial_partition_counts == {ORDERS: 2}  # carried over: the planner still knows the history


def test_plain_grouper_restarts_initial_count_when_a_stream_shrank():
    first = GroupByPartition().group(None, ssps("orders", 4))
    recreated = GroupByPartition().group(first, ssps("orders", 2))
    assert recreated.initial_partition_counts == {ORDERS: 2}
    assert len(recreated.tasks) == 2


# ---- broadcast ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("grouper_cls", ALL_GROUPERS)
def test_broadcast_ssps_are_in_every_task_and_never_grouped(grouper_cls):
    config = ssps("config", 2)
    model = grouper_cls().group(None, ssps("orders", 3) + config, broadcast=config)
    assert model.tasks, "the regular stream must produce tasks"
    for group in model.tasks.values():
        assert set(config) <= group
    assert model.broadcast == frozenset(config)
    assert SystemStream("kafka", "config") not in model.initial_partition_counts
    assert all(ssp.stream == "orders" for ssp in model.ssp_to_task())
    assert len(model.ssp_to_task()) == 3


def test_broadcast_ssps_need_not_be_among_the_grouped_inputs():
    config = [SystemStreamPartition("kafka", "config", 0)]
    model = GroupByPartition().group(None, ssps("orders", 2), broadcast=config)
    assert all(config[0] in group for group in model.tasks.values())
    assert len(model.tasks) == 2


def test_a_stream_partly_broadcast_keeps_its_other_partitions_grouped():
    model = GroupByPartition().group(None, ssps("config", 3), broadcast=ssps("config", 1))
    assert partitions_by_task(model) == {"Partition 1": [0, 1], "Partition 2": [0, 2]}
    assert model.initial_partition_counts == {SystemStream("kafka", "config"): 2}


def test_only_broadcast_inputs_give_no_task_but_are_recorded():
    config = ssps("config", 2)
    model = GroupByPartitionFixedTasks().group(None, config, broadcast=config)
    assert model.tasks == {} and model.broadcast == frozenset(config)


@pytest.mark.parametrize("grouper_cls", FIXED)
def test_broadcast_stays_in_every_task_across_expansion(grouper_cls):
    config = ssps("config", 1)
    grouper = grouper_cls()
    first = grouper.group(None, ssps("orders", 2) + config, broadcast=config)
    grown = grouper.group(first, ssps("orders", 4) + config, broadcast=config)
    assert set(grown.tasks) == set(first.tasks)
    assert all(config[0] in group for group in grown.tasks.values())


# ---- initial partition counts ------------------------------------------------------------------------------

@pytest.mark.parametrize("grouper_cls", ALL_GROUPERS)
def test_initial_counts_are_carried_over_and_new_streams_start_at_their_current_count(grouper_cls):
    grouper = grouper_cls()
    first = grouper.group(None, ssps("orders", 2))
    assert first.initial_partition_counts == {ORDERS: 2}
    second = grouper.group(first, ssps("orders", 4) + ssps("payments", 3))
    assert second.initial_partition_counts == {ORDERS: 2, PAYMENTS: 3}
    third = grouper.group(second, ssps("orders", 8) + ssps("payments", 6))
    assert third.initial_partition_counts == {ORDERS: 2, PAYMENTS: 3}


def test_a_previous_model_without_initial_counts_falls_back_to_its_partition_counts():
    previous = JobModel({TaskName("Partition 0"): frozenset(ssps("orders", 1)),
                         TaskName("Partition 1"): frozenset(ssps("orders", 2, start=1))})
    grown = GroupByPartitionFixedTasks().group(previous, ssps("orders", 4))
    assert grown.initial_partition_counts == {ORDERS: 2}
    assert partitions_by_task(grown) == {"Partition 0": [0, 2], "Partition 1": [1, 3]}


# ---- SEP-5 fixed tasks -------------------------------------------------------------------------------------

def test_sep5_example_two_to_four_partitions():
    grouper = GroupByPartitionFixedTasks()
    first = grouper.group(None, ssps("orders", 2))
    grown = grouper.group(first, ssps("orders", 4))
    assert partitions_by_task(grown) == {"Partition 0": [0, 2], "Partition 1": [1, 3]}
    assert grown.initial_partition_counts == {ORDERS: 2}


def test_design_example_four_to_eight_keeps_partitions_1_and_5_together():
    grouper = GroupByPartitionFixedTasks()
    grown = grouper.group(grouper.group(None, ssps("orders", 4)), ssps("orders", 8))
    assert partitions_by_task(grown)["Partition 1"] == [1, 5]
    assert len(grown.tasks) == 4


def test_ssp_fixed_tasks_keep_ssp_named_tasks_after_expansion():
    grouper = GroupBySystemStreamPartitionFixedTasks()
    grown = grouper.group(grouper.group(None, ssps("orders", 2)), ssps("orders", 6))
    assert partitions_by_task(grown) == {
        "SystemStreamPartition [kafka, orders, 0]": [0, 2, 4],
        "SystemStreamPartition [kafka, orders, 1]": [1, 3, 5],
    }


@pytest.mark.parametrize("grouper_cls", FIXED)
def test_fixed_tasks_equal_base_grouper_on_first_model(grouper_cls):
    inputs = ssps("orders", 5) + ssps("payments", 5)
    assert grouper_cls().group(None, inputs) == BASE_OF[grouper_cls]().group(None, inputs)


@pytest.mark.parametrize("grouper_cls", FIXED)
def test_fixed_tasks_survive_a_json_round_trip_of_the_previous_model(grouper_cls):
    grouper = grouper_cls()
    first = grouper.group(None, ssps("orders", 3))
    grown = grouper.group(first, ssps("orders", 6))
    replayed = grouper.group(JobModel.from_json_str(first.to_json_str()), ssps("orders", 6))
    assert replayed == grown


@pytest.mark.parametrize("grouper_cls", FIXED)
def test_a_stream_new_to_the_job_is_grouped_by_the_base_grouper(grouper_cls):
    grouper = grouper_cls()
    first = grouper.group(None, ssps("orders", 2))
    grown = grouper.group(first, ssps("orders", 4) + ssps("payments", 3))
    expected_new = BASE_OF[grouper_cls]().group(None, ssps("payments", 3))
    for task, group in expected_new.tasks.items():
        assert set(group) <= grown.tasks[task]
    assert grown.diff(first).moved_ssps == {}


def test_fixed_tasks_keep_the_previous_task_of_every_existing_ssp():
    # A previous model made by another grouper: fixed tasks keep its assignment rather than regrouping.
    previous = GroupBySystemStreamPartition().group(None, ssps("orders", 2))
    grown = GroupByPartitionFixedTasks().group(previous, ssps("orders", 4))
    assert set(grown.tasks) == set(previous.tasks)
    assert partitions_by_task(grown) == {
        "SystemStreamPartition [kafka, orders, 0]": [0, 2],
        "SystemStreamPartition [kafka, orders, 1]": [1, 3],
    }


stream_names = st.sampled_from(["orders", "payments", "clicks", "views"])


@settings(max_examples=150, deadline=None)
@given(
    plan=st.dictionaries(
        stream_names,
        st.tuples(st.integers(1, 6), st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=3)),
        min_size=1,
    ),
    fixed_cls=st.sampled_from(FIXED),
    broadcast_config=st.booleans(),
)
def test_expansion_by_multiples_keeps_every_key_in_its_pre_expansion_task(plan, fixed_cls, broadcast_config):
    """Streams grow by (possibly different) multiples over several steps; a factor 1 is a step without growth."""
    grouper = fixed_cls()
    base = BASE_OF[fixed_cls]()
    config = ssps("config", 2) if broadcast_config else []
    initial = {stream: n for stream, (n, _) in plan.items()}
    counts = dict(initial)

    def inputs() -> list[SystemStreamPartition]:
        return [ssp for stream, n in counts.items() for ssp in ssps(stream, n)] + config

    first = grouper.group(None, inputs(), broadcast=config)
    assert first == base.group(None, inputs(), broadcast=config)
    original_task = first.ssp_to_task()
    previous = first
    steps = max(len(factors) for _, factors in plan.values())
    for step in range(steps):
        before = dict(counts)
        for stream, (_, factors) in plan.items():
            if step < len(factors):
                counts[stream] *= factors[step]
        model = grouper.group(previous, inputs(), broadcast=config)
        assignment = model.ssp_to_task()
        # The task set never changes and every SSP is in exactly one task.
        assert set(model.tasks) == set(first.tasks)
        assert sorted(assignment) == sorted(s for s in inputs() if s not in config)
        # Every SSP sits in the task that held its pre-expansion partition (and keys of p % n stay together).
        for ssp, task in assignment.items():
            origin = SystemStreamPartition(ssp.system, ssp.stream, ssp.partition % initial[ssp.stream])
            assert task == original_task[origin]
        for group in model.tasks.values():
            assert set(config) <= group
        assert model.initial_partition_counts == {SystemStream("kafka", s): n for s, n in initial.items()}
        if counts == before:
            assert model == previous  # nothing expanded: identical model
        previous = model


@settings(max_examples=60, deadline=None)
@given(counts=st.dictionaries(stream_names, st.integers(1, 8), min_size=1), fixed_cls=st.sampled_from(FIXED))
def test_fixed_tasks_equal_base_grouper_when_nothing_expanded(counts, fixed_cls):
    inputs = [ssp for stream, n in counts.items() for ssp in ssps(stream, n)]
    base_model = BASE_OF[fixed_cls]().group(None, inputs)
    again = fixed_cls().group(base_model, inputs)
    assert again == base_model == BASE_OF[fixed_cls]().group(base_model, inputs)


# ---- errors ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("grouper_cls", FIXED)
def test_non_multiple_growth_is_rejected_with_stream_counts_and_fix(grouper_cls):
    grouper = grouper_cls()
    first = grouper.group(None, ssps("orders", 2))
    with pytest.raises(PartitionExpansionError) as err:
        grouper.group(first, ssps("orders", 3))
    message = str(err.value)
    for part in ("kafka.orders", "from 2 partitions", "to 3", "multiple of 2", "job.name", "expansion.algorithm"):
        assert part in message, part


def test_non_multiple_of_the_initial_count_is_rejected_even_after_a_valid_step():
    grouper = GroupByPartitionFixedTasks()
    grown = grouper.group(grouper.group(None, ssps("orders", 2)), ssps("orders", 4))
    with pytest.raises(PartitionExpansionError, match="not a multiple of 2"):
        grouper.group(grown, ssps("orders", 5))


@pytest.mark.parametrize("grouper_cls", FIXED)
def test_contraction_is_rejected_with_stream_counts_and_fix(grouper_cls):
    grouper = grouper_cls()
    grown = grouper.group(grouper.group(None, ssps("orders", 2)), ssps("orders", 4))
    with pytest.raises(PartitionExpansionError) as err:
        grouper.group(grown, ssps("orders", 2))
    message = str(err.value)
    for part in ("kafka.orders", "shrank from 4", "to 2", "re-created", "job.name"):
        assert part in message, part


@pytest.mark.parametrize("grouper_cls", FIXED)
def test_a_vanished_stream_is_rejected(grouper_cls):
    grouper = grouper_cls()
    first = grouper.group(None, ssps("orders", 2) + ssps("payments", 2))
    with pytest.raises(PartitionExpansionError) as err:
        grouper.group(first, ssps("orders", 2))
    message = str(err.value)
    for part in ("kafka.payments", "had 2 partitions", "disappeared", "deleted", "job.name"):
        assert part in message, part


def test_lost_partitions_with_the_same_count_are_rejected():
    grouper = GroupByPartitionFixedTasks()
    first = grouper.group(None, ssps("orders", 2))
    with pytest.raises(PartitionExpansionError, match="lost partitions 1"):
        grouper.group(first, [SystemStreamPartition("kafka", "orders", p) for p in (0, 2)])


def test_a_plugged_algorithm_by_dotted_path_decides_what_growth_is_valid():
    grouper = resolve_grouper("GroupByPartitionFixedTasks", expansion_algorithm=f"{__name__}.EvenGrowthOnly")
    assert type(grouper.expansion_algorithm).__name__ == "EvenGrowthOnly"
    first = grouper.group(None, ssps("orders", 2))
    with pytest.raises(PartitionExpansionError, match="EvenGrowthOnly refuses 2 -> 6"):
        grouper.group(first, ssps("orders", 6))
    grown = grouper.group(first, ssps("orders", 8))
    assert partitions_by_task(grown) == {"Partition 0": [0, 2, 4, 6], "Partition 1": [1, 3, 5, 7]}


def test_an_algorithm_breaking_the_sep5_contract_is_rejected():
    # BlockExpansion maps partition 1 of 2 -> 4 to 0: partition 1 existed from the start, so its keys cannot
    # have moved; the grouper checks the contract as soon as the stream expands.
    grouper = GroupByPartitionFixedTasks(expansion_algorithm=BlockExpansion())
    first = grouper.group(None, ssps("orders", 2))
    with pytest.raises(PartitionExpansionError) as err:
        grouper.group(first, ssps("orders", 4))
    assert "map to themselves" in str(err.value) and "partition 1 of stream kafka.orders" in str(err.value)


def test_a_pre_expansion_partition_missing_from_the_previous_model_is_rejected():
    previous = JobModel({TaskName("Partition 0"): frozenset(ssps("orders", 1))}, {ORDERS: 2})
    with pytest.raises(PartitionExpansionError) as err:
        GroupByPartitionFixedTasks().group(previous, ssps("orders", 1) + ssps("orders", 4, start=3))
    assert "partition 3 maps to pre-expansion partition 1" in str(err.value)


# ---- resolve_grouper ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "name, cls",
    [
        ("GroupByPartition", GroupByPartition),
        ("groupbypartition", GroupByPartition),
        (" GroupBySystemStreamPartition ", GroupBySystemStreamPartition),
        ("GROUPBYPARTITIONFIXEDTASKS", GroupByPartitionFixedTasks),
        ("GroupBySystemStreamPartitionFixedTasks", GroupBySystemStreamPartitionFixedTasks),
        ("AllSspToSingleTask", AllSspToSingleTask),
        ("org.apache.samza.container.grouper.stream.GroupByPartitionFactory", GroupByPartitionFixedTasks),
        ("org.apache.samza.container.grouper.stream.GroupBySystemStreamPartitionFactory",
         GroupBySystemStreamPartitionFixedTasks),
        ("org.apache.samza.container.grouper.stream.AllSspToSingleTaskGrouperFactory", AllSspToSingleTask),
        ("GroupByPartitionFactory", GroupByPartitionFixedTasks),
    ],
)
def test_resolve_grouper_by_name(name, cls):
    assert type(resolve_grouper(name)) is cls


def test_resolve_grouper_passes_the_algorithm_to_fixed_groupers_only():
    algorithm = DefaultPartitionExpansionAlgorithm()
    assert resolve_grouper("GroupByPartitionFixedTasks", expansion_algorithm=algorithm).expansion_algorithm \
        is algorithm
    assert type(resolve_grouper("GroupByPartition", expansion_algorithm=algorithm)) is GroupByPartition


def test_resolve_grouper_passes_kwargs():
    assert resolve_grouper("AllSspToSingleTask", num_tasks=4).num_tasks == 4
    with pytest.raises(ConfigError, match="option grouper: cannot build GroupByPartition"):
        resolve_grouper("GroupByPartition", num_tasks=4)


def test_resolve_grouper_by_dotted_path():
    grouper = resolve_grouper(f"{__name__}.OneTaskPerStream")
    model = grouper.group(None, ssps("orders", 2) + ssps("payments", 1))
    assert [t.name for t in model.tasks] == ["kafka.orders", "kafka.payments"]
    custom = resolve_grouper(f"{__name__}.GrouperWithAlgorithm", expansion_algorithm=f"{__name__}.EvenGrowthOnly",
                             label="y")
    assert custom.label == "y" and type(custom.expansion_algorithm).__name__ == "EvenGrowthOnly"


def test_resolve_grouper_returns_instances_as_is():
    grouper = GroupByPartition()
    assert resolve_grouper(grouper) is grouper


@pytest.mark.parametrize(
    "name, expected",
    [
        ("GroupByTopic", "unknown grouper 'GroupByTopic'"),
        ("org.apache.samza.container.grouper.stream.Unknown", "unknown grouper"),
        ("no_such_module_xyz.Grouper", "cannot import module 'no_such_module_xyz'"),
        (f"{__name__}.Missing", "has no attribute 'Missing'"),
        (f"{__name__}.ORDERS", "is not a grouper"),
        ("collections.OrderedDict", "is not a grouper"),
    ],
)
def test_resolve_grouper_errors_name_the_option_and_allowed_names(name, expected):
    with pytest.raises(ConfigError) as err:
        resolve_grouper(name)
    message = str(err.value)
    assert "grouper" in message and expected in message
    if "unknown grouper" in expected:
        for allowed in ("GroupByPartition", "GroupBySystemStreamPartition", "GroupByPartitionFixedTasks",
                        "GroupBySystemStreamPartitionFixedTasks", "AllSspToSingleTask"):
            assert allowed in message
