"""Startpoint model: Samza-identical JSON, strict parsing that only raises our errors, visitor dispatch."""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_samza_source.core.errors import SamzaSourceError, StartpointFormatError, UnsupportedStartpointError
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import (
    JAVA_LONG_MAX,
    Startpoint,
    StartpointCustom,
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
    StartpointVisitor,
    current_time_ms,
    startpoint_types,
    use_clock,
)

SSP = SystemStreamPartition("kafka", "orders", 3)
T0 = 1_700_000_000_000


@dataclass(frozen=True)
class StartpointTestBootstrap(StartpointCustom):
    """A user type as a system would define it: camelCase JSON name through field metadata."""

    reason: str
    max_records: int | None = field(default=None, metadata={"json": "maxRecords"})
    tags: list = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StartpointTestChecked(StartpointCustom):
    """A custom type with its own validation, registered through ``slots=True`` (the class is re-created)."""

    level: int

    def __post_init__(self) -> None:
        super(StartpointTestChecked, self).__post_init__()
        if self.level > 10:
            raise ValueError(f"level {self.level} is above 10")


# ---- exact JSON ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("startpoint", "text"),
    [
        (
            StartpointSpecific("42", creation_timestamp=T0),
            '{"@type":"StartpointSpecific","creationTimestamp":1700000000000,"specificOffset":"42"}',
        ),
        (
            StartpointTimestamp(1_699_990_000_000, creation_timestamp=T0),
            '{"@type":"StartpointTimestamp","creationTimestamp":1700000000000,"timestampOffset":1699990000000}',
        ),
        (StartpointOldest(creation_timestamp=T0), '{"@type":"StartpointOldest","creationTimestamp":1700000000000}'),
        (
            StartpointUpcoming(creation_timestamp=T0),
            '{"@type":"StartpointUpcoming","creationTimestamp":1700000000000}',
        ),
        (
            StartpointTestBootstrap("reprocess", 5, ["a"], creation_timestamp=T0),
            '{"@type":"StartpointTestBootstrap","creationTimestamp":1700000000000,"reason":"reprocess",'
            '"maxRecords":5,"tags":["a"]}',
        ),
    ],
)
def test_json_is_samzas_jackson_form_and_round_trips(startpoint, text):
    assert startpoint.to_json_str() == text
    back = Startpoint.from_json_str(text)
    assert back == startpoint
    assert type(back) is type(startpoint)
    assert Startpoint.from_json(json.loads(text)) == startpoint


def test_custom_defaults_apply_when_optional_properties_are_absent():
    sp = Startpoint.from_json({"@type": "StartpointTestBootstrap", "creationTimestamp": 7, "reason": "r"})
    assert sp == StartpointTestBootstrap("r", None, [], creation_timestamp=7)


def test_slots_dataclass_subclass_is_the_registered_class():
    sp = Startpoint.from_json({"@type": "StartpointTestChecked", "creationTimestamp": 1, "level": 3})
    assert type(sp) is StartpointTestChecked
    assert startpoint_types()["StartpointTestChecked"] is StartpointTestChecked


def test_known_types_list_builtins_and_registered_customs():
    names = list(startpoint_types())
    assert names[:4] == ["StartpointSpecific", "StartpointTimestamp", "StartpointOldest", "StartpointUpcoming"]
    assert "StartpointTestBootstrap" in names


# ---- creation timestamp and clock ------------------------------------------------------------------------


def test_creation_timestamp_defaults_to_now():
    before = time.time_ns() // 1_000_000
    sp = StartpointOldest()
    after = time.time_ns() // 1_000_000
    assert before <= sp.creation_timestamp <= after


def test_use_clock_injects_the_default_creation_timestamp_and_restores_it():
    with use_clock(lambda: 123):
        assert StartpointUpcoming().creation_timestamp == 123
        assert StartpointSpecific("9").creation_timestamp == 123
        assert current_time_ms() == 123
    assert StartpointUpcoming().creation_timestamp > 123


def test_startpoints_are_immutable_and_compare_by_type_and_value():
    sp = StartpointSpecific("1", creation_timestamp=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sp.position = "2"  # type: ignore[misc]
    assert sp == StartpointSpecific("1", creation_timestamp=5)
    assert sp != StartpointSpecific("1", creation_timestamp=6)
    assert StartpointOldest(creation_timestamp=5) != StartpointUpcoming(creation_timestamp=5)


@pytest.mark.parametrize("cls", [Startpoint, StartpointCustom])
def test_abstract_bases_cannot_be_instantiated(cls):
    with pytest.raises(TypeError, match="abstract"):
        cls(creation_timestamp=1)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: StartpointSpecific(42, creation_timestamp=1), "specificOffset must be a non-empty string"),
        (lambda: StartpointSpecific("", creation_timestamp=1), "specificOffset must be a non-empty string"),
        (lambda: StartpointTimestamp(-1, creation_timestamp=1), "timestampOffset"),
        (lambda: StartpointTimestamp(True, creation_timestamp=1), "timestampOffset"),
        (lambda: StartpointOldest(creation_timestamp=-5), "creationTimestamp"),
        (lambda: StartpointOldest(creation_timestamp=JAVA_LONG_MAX + 1), "creationTimestamp"),
        (lambda: StartpointOldest(creation_timestamp=1.5), "creationTimestamp"),
    ],
)
def test_invalid_construction_raises_format_error(build, match):
    with pytest.raises(StartpointFormatError, match=match):
        build()


def test_custom_field_that_is_not_json_is_refused_on_serialisation():
    sp = StartpointTestBootstrap("r", tags=[object()], creation_timestamp=1)
    with pytest.raises(StartpointFormatError, match="tags must hold a JSON value"):
        sp.to_json()


# ---- registration ----------------------------------------------------------------------------------------


def test_two_custom_types_with_the_same_simple_name_are_refused():
    with pytest.raises(StartpointFormatError, match="two StartpointCustom subclasses named StartpointTestBootstrap"):

        @dataclass(frozen=True)
        class StartpointTestBootstrap(StartpointCustom):  # noqa: F811 - the clash is the point
            other: str

    # the original registration is untouched
    assert startpoint_types()["StartpointTestBootstrap"].__qualname__ == "StartpointTestBootstrap"


def test_custom_type_cannot_take_a_builtin_name():
    with pytest.raises(StartpointFormatError, match="built in"):

        class StartpointOldest(StartpointCustom):  # noqa: F811
            pass


# ---- strict parsing --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ([], "must be a JSON object"),
        ("StartpointOldest", "must be a JSON object"),
        ({"creationTimestamp": 1}, "lacks a string '@type'"),
        ({"@type": 5, "creationTimestamp": 1}, "lacks a string '@type'"),
        ({"@type": "StartpointNope", "creationTimestamp": 1}, "unknown startpoint @type 'StartpointNope'"),
        ({"@type": "Startpoint", "creationTimestamp": 1}, "unknown startpoint @type 'Startpoint'"),
        ({"@type": "StartpointCustom", "creationTimestamp": 1}, "unknown startpoint @type"),
        ({"@type": "StartpointOldest"}, "lacks 'creationTimestamp'"),
        ({"@type": "StartpointOldest", "creationTimestamp": -1}, "creationTimestamp must be a non-negative"),
        ({"@type": "StartpointOldest", "creationTimestamp": "1"}, "creationTimestamp must be a non-negative"),
        ({"@type": "StartpointOldest", "creationTimestamp": True}, "creationTimestamp must be a non-negative"),
        ({"@type": "StartpointOldest", "creationTimestamp": 1.0}, "creationTimestamp must be a non-negative"),
        ({"@type": "StartpointOldest", "creationTimestamp": None}, "creationTimestamp must be a non-negative"),
        ({"@type": "StartpointOldest", "creationTimestamp": 2**63}, "creationTimestamp must be a non-negative"),
        ({"@type": "StartpointOldest", "creationTimestamp": 1, "specificOffset": "3"}, "unknown properties"),
        ({"@type": "StartpointSpecific", "creationTimestamp": 1}, "lacks 'specificOffset'"),
        ({"@type": "StartpointSpecific", "creationTimestamp": 1, "specificOffset": 42}, "non-empty string"),
        ({"@type": "StartpointSpecific", "creationTimestamp": 1, "specificoffset": "4"}, "unknown properties"),
        ({"@type": "StartpointTimestamp", "creationTimestamp": 1}, "lacks 'timestampOffset'"),
        ({"@type": "StartpointTimestamp", "creationTimestamp": 1, "timestampOffset": -3}, "timestampOffset"),
        ({"@type": "StartpointTimestamp", "creationTimestamp": 1, "timestampOffset": "3"}, "timestampOffset"),
        ({"@type": "StartpointTestBootstrap", "creationTimestamp": 1}, "lacks 'reason'"),
        ({"@type": "StartpointTestBootstrap", "creationTimestamp": 1, "reason": 3}, "reason must be str"),
        (
            {"@type": "StartpointTestBootstrap", "creationTimestamp": 1, "reason": "r", "maxRecords": "5"},
            "maxRecords must be int | None",
        ),
        (
            {"@type": "StartpointTestBootstrap", "creationTimestamp": 1, "reason": "r", "max_records": 5},
            "unknown properties",
        ),
        ({"@type": "StartpointTestChecked", "creationTimestamp": 1, "level": 11}, "level 11 is above 10"),
    ],
)
def test_malformed_json_raises_format_error_quoting_the_json(value, match):
    with pytest.raises(StartpointFormatError, match=match) as info:
        Startpoint.from_json(value)
    if isinstance(value, dict) and "@type" in value:
        assert str(value["@type"]) in str(info.value)


@pytest.mark.parametrize("text", ["", "{", "not json", b"\xff\xfe", '{"@type":', "[1,"])
def test_invalid_json_text_raises_format_error(text):
    with pytest.raises(StartpointFormatError, match="not valid JSON"):
        Startpoint.from_json_str(text)


def test_huge_offending_json_is_truncated_in_the_message():
    value = {"@type": "StartpointSpecific", "creationTimestamp": 1, "specificOffset": 7, "pad": "x" * 100_000}
    with pytest.raises(StartpointFormatError) as info:
        Startpoint.from_json(value)
    assert len(str(info.value)) < 1_500
    assert "truncated" in str(info.value)


# ---- property-based --------------------------------------------------------------------------------------

epoch_ms = st.integers(min_value=0, max_value=JAVA_LONG_MAX)
startpoints = st.one_of(
    st.builds(StartpointSpecific, st.text(min_size=1), creation_timestamp=epoch_ms),
    st.builds(StartpointTimestamp, epoch_ms, creation_timestamp=epoch_ms),
    st.builds(StartpointOldest, creation_timestamp=epoch_ms),
    st.builds(StartpointUpcoming, creation_timestamp=epoch_ms),
    st.builds(
        StartpointTestBootstrap,
        st.text(),
        st.none() | st.integers(),
        st.lists(st.text() | st.integers()),
        creation_timestamp=epoch_ms,
    ),
)


@given(startpoints)
def test_every_startpoint_round_trips_through_json_text(sp):
    text = sp.to_json_str()
    assert json.loads(text)["@type"] == type(sp).__name__
    assert Startpoint.from_json_str(text) == sp


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)
property_names = st.sampled_from(
    ["@type", "creationTimestamp", "specificOffset", "timestampOffset", "reason", "maxRecords", "tags", "level"]
)
near_valid = st.fixed_dictionaries(
    {"@type": st.sampled_from(list(startpoint_types())) | json_values},
    optional={"creationTimestamp": st.integers() | json_values},
).flatmap(
    lambda base: st.dictionaries(property_names | st.text(), json_values, max_size=3).map(
        lambda extra: {**extra, **base}
    )
)


@given(json_values | near_valid)
def test_arbitrary_json_raises_only_our_errors(value):
    try:
        sp = Startpoint.from_json(value)
    except SamzaSourceError:
        return
    # whatever parses must be a real startpoint that writes back the same JSON
    assert isinstance(sp, Startpoint)
    assert Startpoint.from_json(sp.to_json()) == sp


@given(st.text() | st.binary())
def test_arbitrary_text_raises_only_our_errors(text):
    try:
        Startpoint.from_json_str(text)
    except SamzaSourceError:
        pass


# ---- visitor ---------------------------------------------------------------------------------------------


class RecordingVisitor(StartpointVisitor[str]):
    def visit_specific(self, ssp, startpoint):
        return f"specific {ssp.partition} {startpoint.position}"

    def visit_timestamp(self, ssp, startpoint):
        return f"timestamp {ssp.partition} {startpoint.timestamp_ms}"

    def visit_oldest(self, ssp, startpoint):
        return f"oldest {ssp.partition}"

    def visit_upcoming(self, ssp, startpoint):
        return f"upcoming {ssp.partition}"

    def visit_custom(self, ssp, startpoint):
        return f"custom {startpoint.type_name}"


@pytest.mark.parametrize(
    ("startpoint", "expected"),
    [
        (StartpointSpecific("42", creation_timestamp=1), "specific 3 42"),
        (StartpointTimestamp(99, creation_timestamp=1), "timestamp 3 99"),
        (StartpointOldest(creation_timestamp=1), "oldest 3"),
        (StartpointUpcoming(creation_timestamp=1), "upcoming 3"),
        (StartpointTestBootstrap("r", creation_timestamp=1), "custom StartpointTestBootstrap"),
    ],
)
def test_apply_dispatches_to_the_matching_visit_method(startpoint, expected):
    assert startpoint.apply(SSP, RecordingVisitor()) == expected


class SpecificOnlyVisitor(StartpointVisitor[int]):
    def visit_specific(self, ssp, startpoint):
        return int(startpoint.position)


@pytest.mark.parametrize(
    "startpoint",
    [
        StartpointTimestamp(99, creation_timestamp=1),
        StartpointOldest(creation_timestamp=1),
        StartpointUpcoming(creation_timestamp=1),
        StartpointTestBootstrap("r", creation_timestamp=1),
    ],
)
def test_unimplemented_visit_raises_unsupported_naming_type_visitor_and_ssp(startpoint):
    with pytest.raises(UnsupportedStartpointError) as info:
        startpoint.apply(SSP, SpecificOnlyVisitor())
    message = str(info.value)
    assert type(startpoint).__name__ in message
    assert "SpecificOnlyVisitor" in message
    assert "SystemStreamPartition [kafka, orders, 3]" in message
    assert StartpointSpecific("17", creation_timestamp=1).apply(SSP, SpecificOnlyVisitor()) == 17
