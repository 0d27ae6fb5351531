"""Kafka's startpoint resolver, pure: watermarks and the offsets-for-times lookup are handed in, no broker."""

from dataclasses import dataclass

import pytest

from spark_samza_source.core.errors import StartpointFormatError, UnsupportedStartpointError
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import (
    StartpointCustom,
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
)
from spark_samza_source.kafka.driver.startpoints import KafkaStartpointResolver, kafka_startpoint_problem
from spark_samza_source.kafka.positions import Watermarks

SSP = SystemStreamPartition("kafka", "orders", 1)
MARKS = {SSP: Watermarks(5, 40)}


def resolver(found=None, asked=None):
    def offsets_for_times(query):
        if asked is not None:
            asked.append(dict(query))
        return {tp: (found or {}).get(tp) for tp in query}

    return KafkaStartpointResolver(MARKS, offsets_for_times)


def test_specific_is_that_offset_whitespace_trimmed():
    assert StartpointSpecific(" 17 ", creation_timestamp=1).apply(SSP, resolver()) == 17


def test_oldest_and_upcoming_are_the_watermarks():
    assert StartpointOldest(creation_timestamp=1).apply(SSP, resolver()) == 5
    assert StartpointUpcoming(creation_timestamp=1).apply(SSP, resolver()) == 40


def test_timestamp_asks_offsets_for_times_for_that_partition_only():
    asked = []
    position = StartpointTimestamp(1_700_000_000_000, creation_timestamp=1).apply(
        SSP, resolver({("orders", 1): 23}, asked))
    assert position == 23
    assert asked == [{("orders", 1): 1_700_000_000_000}]


@pytest.mark.parametrize("found", [None, -1])
def test_timestamp_past_every_record_is_the_end_offset(found):
    # Samza's KafkaStartpointToOffsetResolver: no record at or after the timestamp -> upcoming
    assert StartpointTimestamp(9, creation_timestamp=1).apply(SSP, resolver({("orders", 1): found})) == 40


@pytest.mark.parametrize("text", ["-3", "4x", "٣", "1.5"])
def test_a_specific_offset_that_is_not_a_whole_number_is_malformed(text):
    startpoint = StartpointSpecific(text, creation_timestamp=1)
    assert "non-negative whole number" in kafka_startpoint_problem(startpoint)
    with pytest.raises(StartpointFormatError, match=r"SystemStreamPartition \[kafka, orders, 1\]"):
        startpoint.apply(SSP, resolver())


def test_other_types_have_no_kafka_problem():
    for startpoint in (StartpointSpecific("42", creation_timestamp=1), StartpointOldest(creation_timestamp=1),
                       StartpointTimestamp(5, creation_timestamp=1), StartpointUpcoming(creation_timestamp=1)):
        assert kafka_startpoint_problem(startpoint) is None


@dataclass(frozen=True)
class StartpointKafkaResolverProbe(StartpointCustom):
    """A system-specific startpoint type this resolver has no visit method for."""

    region: str


def test_a_custom_startpoint_is_unsupported_naming_the_resolver():
    with pytest.raises(UnsupportedStartpointError, match="KafkaStartpointResolver"):
        StartpointKafkaResolverProbe("x", creation_timestamp=1).apply(SSP, resolver())
