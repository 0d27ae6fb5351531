"""task.broadcast.inputs: Samza's syntax, whitespace tolerance, and clear errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_samza_source.core.broadcast import (
    MAX_BROADCAST_SSPS,
    format_broadcast_inputs,
    parse_broadcast_inputs,
)
from spark_samza_source.core.errors import ConfigError
from spark_samza_source.core.model import SystemStreamPartition


def ssp(system: str, stream: str, partition: int) -> SystemStreamPartition:
    return SystemStreamPartition(system, stream, partition)


def test_samza_example():
    assert parse_broadcast_inputs("kafka.config#0, kafka.config#[1-3]") == [
        ssp("kafka", "config", p) for p in range(4)
    ]


def test_range_is_inclusive_and_single_element_ranges_work():
    assert parse_broadcast_inputs("system.stream#[0-2]") == [ssp("system", "stream", p) for p in range(3)]
    assert parse_broadcast_inputs("kafka.config#[5-5]") == [ssp("kafka", "config", 5)]


def test_system_is_the_part_before_the_first_dot():
    assert parse_broadcast_inputs("kafka.orders.v2.dlq#1") == [ssp("kafka", "orders.v2.dlq", 1)]


def test_whitespace_is_tolerated_around_every_token():
    assert parse_broadcast_inputs("  kafka.config  #  [ 1 -  2 ] ,\tkafka.rates#0\n") == [
        ssp("kafka", "config", 1), ssp("kafka", "config", 2), ssp("kafka", "rates", 0)
    ]


def test_result_is_sorted_without_duplicates():
    assert parse_broadcast_inputs("kafka.b#1, kafka.a#[0-1], kafka.a#0") == [
        ssp("kafka", "a", 0), ssp("kafka", "a", 1), ssp("kafka", "b", 1)
    ]


@pytest.mark.parametrize("value", [None, "", "   "])
def test_blank_means_no_broadcast_input(value):
    assert parse_broadcast_inputs(value) == []


@pytest.mark.parametrize(
    "value, fragment, reason",
    [
        ("kafka.config#[3-1]", "kafka.config#[3-1]", "reversed range"),
        ("kafka.config#-1", "kafka.config#-1", "must be >= 0"),
        ("kafka.config#[-1-3]", "kafka.config#[-1-3]", "must be >= 0"),
        ("kafka.config", "kafka.config", "missing '#partition'"),
        ("config#0", "config#0", "is not 'system.stream'"),
        (".config#0", ".config#0", "is not 'system.stream'"),
        ("kafka.#0", "kafka.#0", "is not 'system.stream'"),
        ("kafka.config#0,,kafka.config#1", "", "empty entry"),
        ("kafka.config#0,", "", "empty entry"),
        ("kafka.config#x", "kafka.config#x", ""),
        ("kafka.config#[1-]", "kafka.config#[1-]", ""),
        ("kafka.config#1-3", "kafka.config#1-3", ""),
        ("kafka.my topic#0", "kafka.my topic#0", ""),
        ("kafka.config#0#1", "kafka.config#0#1", ""),
    ],
)
def test_bad_values_name_the_option_the_fragment_and_the_expected_form(value, fragment, reason):
    with pytest.raises(ConfigError) as err:
        parse_broadcast_inputs(value)
    message = str(err.value)
    assert "task.broadcast.inputs" in message
    assert repr(fragment) in message
    assert reason in message
    assert "system.stream#[A-B]" in message


def test_non_string_is_rejected():
    with pytest.raises(ConfigError, match="must be a string"):
        parse_broadcast_inputs(["kafka.config#0"])  # type: ignore[arg-type]


def test_huge_ranges_are_rejected_instead_of_exhausting_memory():
    with pytest.raises(ConfigError, match="too many partitions"):
        parse_broadcast_inputs(f"kafka.config#[0-{MAX_BROADCAST_SSPS}]")
    assert len(parse_broadcast_inputs(f"kafka.config#[0-{MAX_BROADCAST_SSPS - 1}]")) == MAX_BROADCAST_SSPS


def test_format_compacts_consecutive_partitions_into_ranges():
    value = format_broadcast_inputs([ssp("kafka", "config", p) for p in (0, 1, 2, 5)] + [ssp("kafka", "a.b", 3)])
    assert value == "kafka.a.b#3, kafka.config#[0-2], kafka.config#5"


@given(
    st.sets(
        st.builds(
            SystemStreamPartition,
            st.sampled_from(["kafka", "kinesis"]),
            st.sampled_from(["config", "rates.v2", "a-b_c"]),
            st.integers(0, 40),
        ),
        max_size=30,
    )
)
def test_format_then_parse_round_trips(ssps):
    assert parse_broadcast_inputs(format_broadcast_inputs(ssps)) == sorted(ssps)
