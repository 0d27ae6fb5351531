"""Co-partition planner: joined streams agree in partition count, stay compatible across expansion, and the
job model puts matching partitions in a common task."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_samza_source.core.copartition import (
    CoPartitionGroup,
    JoinedStream,
    check_copartitioning,
    check_partition_counts,
    check_task_affinity,
    parse_copartition,
)
from spark_samza_source.core.errors import ConfigError, CoPartitionError
from spark_samza_source.core.grouping import (
    AllSspToSingleTask,
    GroupByPartition,
    GroupByPartitionFixedTasks,
    GroupBySystemStreamPartition,
)
from spark_samza_source.core.model import SystemStream, SystemStreamPartition

ORDERS = SystemStream("kafka", "orders")
PAYMENTS = SystemStream("kafka", "payments")
CUSTOMERS = SystemStream("kafka", "customers")
JOIN = CoPartitionGroup.of(ORDERS, PAYMENTS)


def ssps(stream: SystemStream, count: int) -> list[SystemStreamPartition]:
    return [SystemStreamPartition(stream.system, stream.stream, p) for p in range(count)]


# ---- partition counts --------------------------------------------------------------------------------------

def test_equal_counts_are_accepted():
    check_partition_counts([JOIN], {ORDERS: 4, PAYMENTS: 4, CUSTOMERS: 7})


def test_three_versus_four_is_rejected_naming_both_streams_and_counts():
    with pytest.raises(CoPartitionError) as err:
        check_partition_counts([JOIN], {ORDERS: 3, PAYMENTS: 4})
    message = str(err.value)
    assert "kafka.orders has 3 partitions" in message
    assert "kafka.payments has 4 partitions" in message
    assert "copartition" in message


def test_every_member_of_the_group_is_listed_including_side_inputs():
    group = CoPartitionGroup.of(ORDERS, PAYMENTS, side_inputs=[CUSTOMERS], name="enrich")
    with pytest.raises(CoPartitionError) as err:
        check_partition_counts([group], {ORDERS: 4, PAYMENTS: 4, CUSTOMERS: 8})
    message = str(err.value)
    for part in ("'enrich'", "kafka.orders has 4 partitions", "kafka.payments has 4 partitions",
                 "kafka.customers (side-input) has 8 partitions"):
        assert part in message, part


def test_a_stream_table_join_checks_the_table_source():
    group = CoPartitionGroup.of(ORDERS, tables=[CUSTOMERS])
    check_partition_counts([group], {ORDERS: 4, CUSTOMERS: 4})
    with pytest.raises(CoPartitionError, match=r"kafka.customers \(table\) has 2 partitions"):
        check_partition_counts([group], {ORDERS: 4, CUSTOMERS: 2})


def test_a_member_the_job_does_not_read_is_an_error():
    with pytest.raises(CoPartitionError) as err:
        check_partition_counts([JOIN], {ORDERS: 4})
    assert "kafka.payments is not among the job's inputs" in str(err.value)
    assert "kafka.orders" in str(err.value)


def test_joint_expansion_by_multiples_is_accepted():
    initial = {ORDERS: 4, PAYMENTS: 4}
    check_partition_counts([JOIN], {ORDERS: 8, PAYMENTS: 4}, initial)
    check_partition_counts([JOIN], {ORDERS: 8, PAYMENTS: 16}, initial)


def test_expansion_by_a_non_multiple_breaks_key_affinity():
    with pytest.raises(CoPartitionError) as err:
        check_partition_counts([JOIN], {ORDERS: 6, PAYMENTS: 4}, {ORDERS: 4, PAYMENTS: 4})
    message = str(err.value)
    assert "kafka.orders has 6 partitions (initially 4)" in message
    assert "kafka.payments has 4 partitions" in message
    assert "not a multiple of 4" in message


def test_streams_that_started_with_different_counts_are_rejected_even_if_equal_now():
    # orders 2 -> 4 and payments added at 4: keys of payments partition 3 go to a task orders never feeds.
    with pytest.raises(CoPartitionError) as err:
        check_partition_counts([JOIN], {ORDERS: 4, PAYMENTS: 4}, {ORDERS: 2, PAYMENTS: 4})
    message = str(err.value)
    assert "first planned" in message
    assert "kafka.orders has 4 partitions (initially 2)" in message and "kafka.payments has 4 partitions" in message


@given(initial=st.integers(1, 16), factors=st.lists(st.integers(1, 8), min_size=2, max_size=4))
def test_any_joint_growth_by_multiples_of_a_shared_initial_count_is_accepted(initial, factors):
    streams = [SystemStream("kafka", f"s{i}") for i in range(len(factors))]
    group = CoPartitionGroup.of(*streams)
    check_partition_counts([group], {s: initial * f for s, f in zip(streams, factors, strict=True)},
                           {s: initial for s in streams})


@given(a=st.integers(1, 64), b=st.integers(1, 64))
def test_first_model_accepts_exactly_equal_counts(a, b):
    if a == b:
        check_partition_counts([JOIN], {ORDERS: a, PAYMENTS: b})
    else:
        with pytest.raises(CoPartitionError):
            check_partition_counts([JOIN], {ORDERS: a, PAYMENTS: b})


# ---- against job models ------------------------------------------------------------------------------------

def test_group_by_partition_fixed_tasks_model_passes_before_and_after_joint_expansion():
    grouper = GroupByPartitionFixedTasks()
    first = grouper.group(None, ssps(ORDERS, 4) + ssps(PAYMENTS, 4))
    check_copartitioning([JOIN], first)
    grown = grouper.group(first, ssps(ORDERS, 8) + ssps(PAYMENTS, 16))
    check_copartitioning([JOIN], grown)


def test_first_model_with_unequal_counts_fails():
    model = GroupByPartitionFixedTasks().group(None, ssps(ORDERS, 3) + ssps(PAYMENTS, 4))
    with pytest.raises(CoPartitionError, match="kafka.orders has 3 partitions, kafka.payments has 4 partitions"):
        check_copartitioning([JOIN], model)


def test_group_by_system_stream_partition_breaks_task_affinity():
    model = GroupBySystemStreamPartition().group(None, ssps(ORDERS, 2) + ssps(PAYMENTS, 2))
    check_partition_counts([JOIN], model.partition_counts())  # the counts alone are fine...
    with pytest.raises(CoPartitionError) as err:  # ...but partition 0 of each stream is in its own task
        check_copartitioning([JOIN], model)
    message = str(err.value)
    assert "not in a common task" in message and "GroupByPartition" in message
    assert "SystemStreamPartition [kafka, orders, 0]" in message
    assert "SystemStreamPartition [kafka, payments, 0]" in message


def test_plain_regrouping_after_expansion_breaks_task_affinity():
    first = GroupByPartition().group(None, ssps(ORDERS, 2) + ssps(PAYMENTS, 2))
    grown = GroupByPartition().group(first, ssps(ORDERS, 4) + ssps(PAYMENTS, 2))
    check_partition_counts([JOIN], grown.partition_counts(), grown.initial_partition_counts)
    with pytest.raises(CoPartitionError, match="partition 2 of kafka.orders is in Partition 2"):
        check_task_affinity([JOIN], grown)


def test_all_ssps_in_every_task_is_trivially_co_located():
    model = AllSspToSingleTask(num_tasks=3).group(None, ssps(ORDERS, 2) + ssps(PAYMENTS, 2))
    check_copartitioning([JOIN], model)


def test_side_inputs_outside_the_job_model_are_checked_through_extra_counts():
    group = CoPartitionGroup.of(ORDERS, PAYMENTS, side_inputs=[CUSTOMERS])
    model = GroupByPartitionFixedTasks().group(None, ssps(ORDERS, 4) + ssps(PAYMENTS, 4))
    check_copartitioning([group], model, extra_counts={CUSTOMERS: 4})
    with pytest.raises(CoPartitionError, match=r"kafka.customers \(side-input\) has 2 partitions"):
        check_copartitioning([group], model, extra_counts={CUSTOMERS: 2})
    with pytest.raises(CoPartitionError, match="kafka.customers is not among the job's inputs"):
        check_copartitioning([group], model)


def test_side_inputs_inside_the_job_model_are_checked():
    group = CoPartitionGroup.of(ORDERS, side_inputs=[CUSTOMERS])
    model = GroupByPartitionFixedTasks().group(None, ssps(ORDERS, 4) + ssps(CUSTOMERS, 2))
    with pytest.raises(CoPartitionError, match=r"kafka.customers \(side-input\) has 2 partitions"):
        check_copartitioning([group], model)


# ---- parsing -----------------------------------------------------------------------------------------------

def test_parse_groups_and_streams():
    groups = parse_copartition("orders,payments;clicks , views", default_system="kafka")
    assert [g.streams for g in groups] == [
        [ORDERS, PAYMENTS],
        [SystemStream("kafka", "clicks"), SystemStream("kafka", "views")],
    ]


def test_parse_system_prefix_only_for_known_systems():
    groups = parse_copartition("kafka.orders,orders.v2", default_system="kafka")
    assert groups[0].streams == [ORDERS, SystemStream("kafka", "orders.v2")]
    groups = parse_copartition("other.orders,kafka.payments", default_system="kafka", known_systems=["kafka", "other"])
    assert groups[0].streams == [SystemStream("other", "orders"), PAYMENTS]


def test_parse_roles():
    (group,) = parse_copartition("orders, customers:table, rates : side-input", default_system="kafka")
    assert group.members == (
        JoinedStream(ORDERS),
        JoinedStream(CUSTOMERS, "table"),
        JoinedStream(SystemStream("kafka", "rates"), "side-input"),
    )


@pytest.mark.parametrize("value", [None, "", "  "])
def test_parse_blank_means_no_group(value):
    assert parse_copartition(value, default_system="kafka") == []


@pytest.mark.parametrize(
    "value, expected",
    [
        ("orders", "single stream"),
        ("orders,payments;", "empty group"),
        ("orders,,payments", "empty stream name"),
        ("orders,orders", "names kafka.orders twice"),
        ("kafka.orders,orders", "names kafka.orders twice"),
        ("orders,pay ments", "bad stream name 'pay ments'"),
        ("orders,payments:lookup", "unknown role 'lookup'"),
        ("orders,pay#ments", "bad stream name"),
    ],
)
def test_parse_errors_name_the_option(value, expected):
    with pytest.raises(ConfigError) as err:
        parse_copartition(value, default_system="kafka")
    message = str(err.value)
    assert "copartition" in message and expected in message
    assert "orders,payments;clicks,views" in message


def test_unknown_role_in_code_is_rejected():
    with pytest.raises(ConfigError, match="unknown role"):
        JoinedStream(ORDERS, "lookup")
