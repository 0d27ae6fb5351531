"""Filter pushdown planning (core/bounded_filters.py): what each of Spark's filters lets a batch read skip, and which
filters Spark must still apply. Pure: no Spark session, no broker."""

from __future__ import annotations

import datetime as dt

import pytest

from spark_samza_source.source.pyspark_compat import has_filter_pushdown

if not has_filter_pushdown():
    pytest.skip("PySpark 4.0 has no filter pushdown for Python data sources (4.1+) nor the filter classes these "
                "tests hand the planner; Spark never calls pushFilters there", allow_module_level=True)

from pyspark.sql.datasource import (  # noqa: E402 - after the skip: PySpark 4.0 has none of these
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from spark_samza_source.core.bounded_filters import PushedFilters, push_filters, timestamp_micros

KAFKA = {"value_columns": {"topic": str, "partition": int, "task": str}, "timestamp_column": "timestamp",
         "offset_column": "offset"}
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
T0_MS = 1_704_067_200_000


def push(*filters):
    return push_filters(list(filters), **KAFKA)


def test_value_filters_prune_and_are_fully_handled():
    pushed, rest = push(EqualTo(("topic",), "a"), In(("partition",), (0, 2)), In(("task",), ("Partition 1", None)))
    assert rest == []
    assert pushed.allows("topic", "a") and not pushed.allows("topic", "b")
    assert pushed.allows("partition", 2) and not pushed.allows("partition", 1)
    assert pushed.allows("task", "Partition 1") and not pushed.allows("task", "Partition 0")


def test_contradictory_equalities_read_nothing():
    pushed, _ = push(EqualTo(("topic",), "a"), EqualTo(("topic",), "b"))
    assert pushed.empty


def test_a_value_of_another_type_is_left_to_spark():
    f = EqualTo(("partition",), "1")
    pushed, rest = push(f)
    assert rest == [f] and pushed.allows("partition", 7)


def test_offset_bounds_are_exact_and_inclusive_where_they_should_be():
    cases = [
        (GreaterThanOrEqual(("offset",), 5), 5, None), (GreaterThan(("offset",), 5), 6, None),
        (LessThan(("offset",), 5), None, 5), (LessThanOrEqual(("offset",), 5), None, 6),
        (EqualTo(("offset",), 5), 5, 6),
    ]
    for f, lo, hi in cases:
        pushed, rest = push(f)
        assert (pushed.offset_from, pushed.offset_until, rest) == (lo, hi, []), f
    pushed, _ = push(GreaterThan(("offset",), 3), LessThanOrEqual(("offset",), 9))
    assert (pushed.offset_from, pushed.offset_until) == (4, 10)
    pushed, _ = push(GreaterThan(("offset",), 9), LessThan(("offset",), 5))
    assert pushed.empty


def test_offset_in_narrows_but_is_returned():
    f = In(("offset",), (12, 17))
    pushed, rest = push(f)
    assert rest == [f] and (pushed.offset_from, pushed.offset_until) == (12, 18)


def test_timestamp_lower_bounds_narrow_the_start_and_are_returned():
    ge, gt, eq = (GreaterThanOrEqual(("timestamp",), T0), GreaterThan(("timestamp",), T0),
                  EqualTo(("timestamp",), T0))
    for f, first in [(ge, T0_MS), (gt, T0_MS + 1), (eq, T0_MS)]:
        pushed, rest = push(f)
        assert rest == [f] and pushed.min_timestamp_ms == first, f
    inside = T0 + dt.timedelta(microseconds=1500)  # 1.5 ms: the first whole millisecond that can match is 2
    assert push(GreaterThanOrEqual(("timestamp",), inside))[0].min_timestamp_ms == T0_MS + 2
    assert push(GreaterThan(("timestamp",), inside))[0].min_timestamp_ms == T0_MS + 2
    both, _ = push(GreaterThan(("timestamp",), T0), GreaterThanOrEqual(("timestamp",), T0 + dt.timedelta(seconds=1)))
    assert both.min_timestamp_ms == T0_MS + 1000


def test_upper_timestamp_bounds_naive_times_and_others_are_left_to_spark():
    filters = [LessThan(("timestamp",), T0), GreaterThanOrEqual(("timestamp",), T0.replace(tzinfo=None)),
               Not(EqualTo(("topic",), "a")), IsNotNull(("key",)), StringStartsWith(("topic",), "a")]
    pushed, rest = push(*filters)
    assert rest == filters and pushed == PushedFilters()


def test_timestamp_micros():
    assert timestamp_micros(T0) == T0_MS * 1000
    assert timestamp_micros(T0.replace(tzinfo=None)) is None
