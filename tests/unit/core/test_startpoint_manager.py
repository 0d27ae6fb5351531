"""StartpointManager on the in-memory store: keys, fan-out, precedence, TTL, safe conditional deletion."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_samza_source.core.errors import ConfigError, SamzaSourceError, StartpointFormatError
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.core.startpoint import (
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
)
from spark_samza_source.core.startpoint_manager import (
    NAMESPACE,
    FanOutResult,
    StartpointManager,
    parse_startpoint_key,
    startpoint_key,
)
from spark_samza_source.core.store import JsonValue, MetadataStore
from spark_samza_source.metadata.memory import MemoryMetadataStore
from spark_samza_source.options.common import DEFAULT_STARTPOINT_TTL_MS as DEFAULT_TTL_MS

NOW = 1_700_000_000_000
HOUR = 3600 * 1000
_ids = itertools.count()

A0 = SystemStreamPartition("kafka", "orders", 0)
A1 = SystemStreamPartition("kafka", "orders", 1)
CFG = SystemStreamPartition("kafka", "config", 0)  # broadcast
P0, P1 = TaskName("Partition 0"), TaskName("Partition 1")
JOB_MODEL = JobModel({P0: {A0, CFG}, P1: {A1, CFG}}, broadcast=frozenset({CFG}))


def new_store(job: str = "job") -> MemoryMetadataStore:
    return MemoryMetadataStore(job, name=f"startpoint-manager-{next(_ids)}")


class Clock:
    def __init__(self, now: int = NOW) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def manager(store: MetadataStore | None = None, clock: Clock | None = None, **kw) -> StartpointManager:
    return StartpointManager(store or new_store(), clock=clock or Clock(), **kw)


def specific(pos: str, age_ms: int = 0) -> StartpointSpecific:
    return StartpointSpecific(pos, creation_timestamp=NOW - age_ms)


class HookedStore(MetadataStore):
    """Delegates to a memory store and runs ``hooks[(method, key)]`` once, just before that call.

    Simulates another process writing between two of the manager's calls.
    """

    def __init__(self, inner: MemoryMetadataStore) -> None:
        self.inner, self.uri, self.job_name = inner, inner.uri, inner.job_name
        self.hooks: dict[tuple[str, str], Callable[[], None]] = {}

    def _hook(self, method: str, key: str) -> None:
        hook = self.hooks.pop((method, key), None)
        if hook:
            hook()

    def get(self, namespace: str, key: str) -> JsonValue | None:
        self._hook("get", key)
        return self.inner.get(namespace, key)

    def put(self, namespace: str, key: str, value: JsonValue) -> None:
        self.inner.put(namespace, key, value)

    def put_if_absent(self, namespace: str, key: str, value: JsonValue) -> bool:
        self._hook("put_if_absent", key)
        return self.inner.put_if_absent(namespace, key, value)

    def delete(self, namespace: str, key: str) -> None:
        self.inner.delete(namespace, key)

    def delete_if_equal(self, namespace: str, key: str, expected: JsonValue) -> bool:
        self._hook("delete_if_equal", key)
        return self.inner.delete_if_equal(namespace, key, expected)

    def replace_if_equal(self, namespace: str, key: str, expected: JsonValue, value: JsonValue) -> bool:
        self._hook("replace_if_equal", key)
        return self.inner.replace_if_equal(namespace, key, expected, value)

    def list(self, namespace: str) -> dict[str, JsonValue]:
        return self.inner.list(namespace)


# ---- keys ------------------------------------------------------------------------------------------------


def test_keys_are_samzas_form_for_plain_names():
    assert startpoint_key(A0) == "kafka.orders.0" == A0.key
    assert startpoint_key(A0, P0) == "kafka.orders.0.Partition 0"
    assert startpoint_key(A0, "Partition 0") == "kafka.orders.0.Partition 0"
    assert parse_startpoint_key("kafka.orders.0.Partition 0") == (A0, P0)
    assert parse_startpoint_key("kafka.orders.0") == (A0, None)


def test_keys_stay_unambiguous_with_dots_in_stream_and_task_names():
    # Samza's form would write both of these as "kafka.a.1.2"
    one = startpoint_key(SystemStreamPartition("kafka", "a", 1), "2")
    other = startpoint_key(SystemStreamPartition("kafka", "a.1", 2))
    assert one != other
    task = TaskName("SystemStreamPartition [kafka, my.topic, 3]")
    ssp = SystemStreamPartition("kafka", "my.topic", 3)
    key = startpoint_key(ssp, task)
    assert key == "kafka.my%2Etopic.3.SystemStreamPartition [kafka, my%2Etopic, 3]"
    assert parse_startpoint_key(key) == (ssp, task)
    assert parse_startpoint_key(startpoint_key(SystemStreamPartition("k", "100%.x", 0))) == (
        SystemStreamPartition("k", "100%.x", 0),
        None,
    )


names = st.text(min_size=1, max_size=12)


@given(names, names, st.integers(min_value=0, max_value=10**6), st.none() | names)
def test_key_round_trips_for_any_names(system, stream, partition, task):
    ssp = SystemStreamPartition(system, stream, partition)
    key = startpoint_key(ssp, task)
    assert parse_startpoint_key(key) == (ssp, TaskName(task) if task else None)


@pytest.mark.parametrize(
    "key", ["", "kafka", "kafka.orders", "kafka.orders.x", "kafka.orders.01", "kafka.orders.-1", "..1",
            "kafka.orders.1.", "a.b.c.d.e", "kafka.or%ders.1", "kafka.orders.1.task%2", "kafka.orders.1.a.b"],
)
def test_keys_the_manager_cannot_have_written_are_refused(key):
    with pytest.raises(StartpointFormatError, match="startpoint key"):
        parse_startpoint_key(key)


@given(st.text())
def test_parsing_arbitrary_keys_raises_only_our_errors(key):
    try:
        ssp, task = parse_startpoint_key(key)
    except SamzaSourceError:
        return
    assert startpoint_key(ssp, task) == key  # whatever parses is canonical


# ---- write / read / delete / list ------------------------------------------------------------------------


def test_write_stores_samzas_json_and_read_returns_it():
    store = new_store()
    mgr = manager(store)
    key = mgr.write(A0, specific("42"))
    assert key == "kafka.orders.0"
    assert store.get(NAMESPACE, key) == {
        "@type": "StartpointSpecific", "creationTimestamp": NOW, "specificOffset": "42",
    }
    mgr.write(A0, StartpointOldest(creation_timestamp=NOW), task=P0)
    assert mgr.read(A0) == specific("42")
    assert mgr.read(A0, P0) == StartpointOldest(creation_timestamp=NOW)
    assert mgr.read(A0, "Partition 0") == StartpointOldest(creation_timestamp=NOW)
    assert mgr.read(A1) is None
    mgr.delete(A0)
    assert mgr.read(A0) is None
    assert mgr.read(A0, P0) is not None


def test_a_startpoint_written_by_another_tool_in_samzas_form_is_read():
    store = new_store()
    store.put(NAMESPACE, "kafka.orders.1", {"@type": "StartpointTimestamp", "creationTimestamp": NOW,
                                           "timestampOffset": 5})
    assert manager(store).read(A1) == StartpointTimestamp(5, creation_timestamp=NOW)


def test_write_refuses_what_is_not_a_startpoint():
    with pytest.raises(StartpointFormatError, match="needs a Startpoint"):
        manager().write(A0, {"@type": "StartpointOldest"})  # type: ignore[arg-type]


def test_read_hides_expired_startpoints_unless_asked():
    clock = Clock()
    mgr = manager(clock=clock)
    mgr.write(A0, specific("1"))
    clock.now += DEFAULT_TTL_MS
    assert mgr.read(A0) is None
    assert mgr.read(A0, include_expired=True) == specific("1")


def test_read_of_a_malformed_value_names_store_uri_and_key():
    store = new_store()
    store.put(NAMESPACE, "kafka.orders.0", {"@type": "StartpointSpecific", "creationTimestamp": NOW})
    with pytest.raises(StartpointFormatError) as info:
        manager(store).read(A0)
    assert store.uri in str(info.value)
    assert "'kafka.orders.0'" in str(info.value)
    assert "specificOffset" in str(info.value)


def test_list_returns_every_startpoint_with_its_key_sorted():
    mgr = manager()
    mgr.write(A1, specific("1"))
    mgr.write(A0, specific("2"), task=P1)
    mgr.write(A0, specific("3"))
    entries = mgr.list()
    assert [(e.key, e.ssp, e.task, e.startpoint) for e in entries] == [
        ("kafka.orders.0", A0, None, specific("3")),
        ("kafka.orders.0.Partition 1", A0, P1, specific("2")),
        ("kafka.orders.1", A1, None, specific("1")),
    ]


def test_list_raises_on_malformed_entries_naming_them_or_skips_them():
    store = new_store()
    mgr = manager(store)
    mgr.write(A0, specific("1"))
    store.put(NAMESPACE, "kafka.orders.1", {"@type": "StartpointBogus", "creationTimestamp": 1})
    store.put(NAMESPACE, "not a key", specific("1").to_json())
    with pytest.raises(StartpointFormatError) as info:
        mgr.list()
    message = str(info.value)
    assert store.uri in message and "'kafka.orders.1'" in message and "'not a key'" in message
    assert "StartpointBogus" in message
    assert [e.key for e in mgr.list(skip_malformed=True)] == ["kafka.orders.0"]


@pytest.mark.parametrize("ttl", [0, -1, 1.5, True, "12h"])
def test_ttl_must_be_positive_milliseconds(ttl):
    with pytest.raises(ConfigError, match="TTL"):
        StartpointManager(new_store(), ttl_ms=ttl)


# ---- fan-out ---------------------------------------------------------------------------------------------


def test_fan_out_moves_ssp_only_startpoints_to_their_task_and_deletes_the_ssp_key():
    store = new_store()
    mgr = manager(store)
    mgr.write(A1, specific("7"))
    result = mgr.fan_out(JOB_MODEL)
    assert isinstance(result, FanOutResult)
    assert dict(result) == {(A1, P1): specific("7")}
    assert result.by_task_ssp() == {(P1, A1): specific("7")}
    assert mgr.read(A1) is None
    assert mgr.read(A1, P1) == specific("7")
    assert store.list(NAMESPACE).keys() == {"kafka.orders.1.Partition 1"}
    assert (result.expired, result.unknown_ssp, result.malformed, result.kept) == ([], [], [], [])


def test_fan_out_of_a_broadcast_ssp_reaches_every_task_holding_it():
    mgr = manager()
    mgr.write(CFG, StartpointOldest(creation_timestamp=NOW))
    result = mgr.fan_out(JOB_MODEL)
    assert dict(result) == {(CFG, P0): StartpointOldest(creation_timestamp=NOW),
                            (CFG, P1): StartpointOldest(creation_timestamp=NOW)}
    assert mgr.read(CFG) is None
    assert mgr.read(CFG, P0) == mgr.read(CFG, P1) == StartpointOldest(creation_timestamp=NOW)


def test_fan_out_keeps_existing_task_startpoints_and_returns_them():
    mgr = manager()
    mgr.write(CFG, specific("5"), task=P0)
    result = mgr.fan_out(JOB_MODEL)
    assert dict(result) == {(CFG, P0): specific("5")}
    assert mgr.read(CFG, P0) == specific("5")


def test_newer_ssp_only_startpoint_replaces_an_older_task_startpoint():
    mgr = manager()
    mgr.write(CFG, specific("old", age_ms=10), task=P0)
    mgr.write(CFG, specific("new", age_ms=5))
    result = mgr.fan_out(JOB_MODEL)
    assert result[(CFG, P0)] == specific("new", age_ms=5)
    assert result[(CFG, P1)] == specific("new", age_ms=5)
    assert mgr.read(CFG, P0) == specific("new", age_ms=5)
    assert mgr.read(CFG) is None


def test_newer_task_startpoint_beats_an_older_ssp_only_one_which_is_still_consumed():
    mgr = manager()
    mgr.write(CFG, specific("task", age_ms=5), task=P0)
    mgr.write(CFG, specific("ssp", age_ms=10))
    result = mgr.fan_out(JOB_MODEL)
    assert result[(CFG, P0)] == specific("task", age_ms=5)
    assert result[(CFG, P1)] == specific("ssp", age_ms=10)  # P1 had none: the SSP-only one applies there
    assert mgr.read(CFG, P0) == specific("task", age_ms=5)
    assert mgr.read(CFG) is None


def test_on_equal_creation_timestamps_the_task_startpoint_wins_as_in_samza():
    mgr = manager()
    mgr.write(A0, specific("task"), task=P0)
    mgr.write(A0, specific("ssp"))
    assert mgr.fan_out(JOB_MODEL)[(A0, P0)] == specific("task")


def test_fan_out_is_idempotent():
    store = new_store()
    mgr = manager(store)
    mgr.write(CFG, specific("1"))
    mgr.write(A0, specific("2"))
    first = mgr.fan_out(JOB_MODEL)
    snapshot = store.list(NAMESPACE)
    second = mgr.fan_out(JOB_MODEL)
    assert dict(second) == dict(first) and len(first) == 3
    assert store.list(NAMESPACE) == snapshot


def test_ssp_only_startpoint_for_an_ssp_outside_the_job_model_stays_and_is_reported():
    mgr = manager()
    other = SystemStreamPartition("kafka", "orders", 9)
    mgr.write(other, specific("1"))
    mgr.write(A0, specific("2"), task=P1)  # P1 does not hold A0
    result = mgr.fan_out(JOB_MODEL)
    assert dict(result) == {}
    assert [(e.ssp, e.task) for e in result.unknown_ssp] == [(A0, P1), (other, None)]
    assert mgr.read(other) == specific("1")
    assert mgr.read(A0, P1) == specific("2")


def test_fan_out_works_with_dotted_stream_and_task_names():
    ssp = SystemStreamPartition("kafka", "my.topic", 0)
    task = TaskName("SystemStreamPartition [kafka, my.topic, 0]")
    mgr = manager()
    mgr.write(ssp, specific("3"))
    assert dict(mgr.fan_out(JobModel({task: {ssp}}))) == {(ssp, task): specific("3")}
    assert mgr.read(ssp, task) == specific("3")


# ---- TTL -------------------------------------------------------------------------------------------------


def test_expired_startpoints_are_ignored_reported_and_left_in_the_store(caplog):
    clock = Clock()
    store = new_store()
    mgr = manager(store, clock=clock, ttl_ms=HOUR)
    mgr.write(A0, specific("ssp-only", age_ms=HOUR))  # exactly the TTL old: expired (Samza's rule)
    mgr.write(A1, specific("task", age_ms=HOUR + 1), task=P1)
    mgr.write(CFG, specific("fresh", age_ms=HOUR - 1))
    with caplog.at_level(logging.WARNING, logger="spark_samza_source.core.startpoint_manager"):
        result = mgr.fan_out(JOB_MODEL)
    assert dict(result) == {(CFG, P0): specific("fresh", age_ms=HOUR - 1),
                            (CFG, P1): specific("fresh", age_ms=HOUR - 1)}
    assert sorted((e.ssp, e.task) for e in result.expired) == [(A0, None), (A1, P1)]
    assert mgr.read(A0, include_expired=True) == specific("ssp-only", age_ms=HOUR)
    assert mgr.read(A1, P1, include_expired=True) is not None
    assert "older than the TTL" in caplog.text and "kafka.orders.0" in caplog.text


def test_a_startpoint_expires_when_the_injected_clock_passes_the_ttl():
    clock = Clock()
    mgr = manager(clock=clock, ttl_ms=HOUR)
    mgr.write(A0, specific("1"), task=P0)
    assert dict(mgr.fan_out(JOB_MODEL)) == {(A0, P0): specific("1")}
    clock.now += HOUR - 1
    assert dict(mgr.fan_out(JOB_MODEL)) == {(A0, P0): specific("1")}
    clock.now += 1
    result = mgr.fan_out(JOB_MODEL)
    assert dict(result) == {} and [e.key for e in result.expired] == ["kafka.orders.0.Partition 0"]


def test_expired_warning_is_logged_once_per_manager(caplog):
    clock = Clock()
    mgr = manager(clock=clock)
    mgr.write(A0, specific("1"))
    clock.now += DEFAULT_TTL_MS
    with caplog.at_level(logging.WARNING, logger="spark_samza_source.core.startpoint_manager"):
        mgr.fan_out(JOB_MODEL)
        mgr.fan_out(JOB_MODEL)
    assert caplog.text.count("older than the TTL") == 1


def test_purge_expired_deletes_only_expired_startpoints():
    clock = Clock()
    mgr = manager(clock=clock, ttl_ms=HOUR)
    mgr.write(A0, specific("old", age_ms=2 * HOUR))
    mgr.write(A1, specific("new"))
    assert [e.key for e in mgr.purge_expired()] == ["kafka.orders.0"]
    assert [e.key for e in mgr.list()] == ["kafka.orders.1"]


# ---- malformed values during fan-out ---------------------------------------------------------------------


def test_fan_out_skips_malformed_values_reports_them_and_leaves_them(caplog):
    store = new_store()
    mgr = manager(store)
    bad = {"@type": "StartpointFromAModuleNotImported", "creationTimestamp": NOW}
    store.put(NAMESPACE, "kafka.orders.0", bad)
    store.put(NAMESPACE, "kafka.orders.x", specific("1").to_json())
    mgr.write(A1, specific("9"))
    with caplog.at_level(logging.WARNING, logger="spark_samza_source.core.startpoint_manager"):
        result = mgr.fan_out(JOB_MODEL)
    assert dict(result) == {(A1, P1): specific("9")}
    assert sorted(m.key for m in result.malformed) == ["kafka.orders.0", "kafka.orders.x"]
    assert "StartpointFromAModuleNotImported" in next(m.error for m in result.malformed if m.key == "kafka.orders.0")
    assert store.get(NAMESPACE, "kafka.orders.0") == bad
    assert store.uri in caplog.text


def test_fan_out_replaces_a_malformed_task_value_with_a_valid_ssp_startpoint():
    store = new_store()
    mgr = manager(store)
    store.put(NAMESPACE, "kafka.orders.0.Partition 0", {"@type": "StartpointSpecific"})
    mgr.write(A0, specific("4"))
    result = mgr.fan_out(JOB_MODEL)
    assert dict(result) == {(A0, P0): specific("4")}
    assert result.malformed == []
    assert mgr.read(A0, P0) == specific("4")


# ---- concurrency -----------------------------------------------------------------------------------------


def test_fan_out_does_not_delete_an_ssp_key_rewritten_between_read_and_delete():
    store = HookedStore(new_store())
    mgr = manager(store)
    other_tool = StartpointManager(store.inner, clock=Clock())
    mgr.write(A0, specific("first", age_ms=10))
    store.hooks[("delete_if_equal", "kafka.orders.0")] = lambda: other_tool.write(A0, specific("second"))
    result = mgr.fan_out(JOB_MODEL)
    assert result[(A0, P0)] == specific("first", age_ms=10)
    assert [e.startpoint for e in result.kept] == [specific("first", age_ms=10)]
    assert mgr.read(A0) == specific("second")  # survived
    # the next fan-out applies the newer startpoint and then consumes it
    again = mgr.fan_out(JOB_MODEL)
    assert again[(A0, P0)] == specific("second")
    assert again.kept == [] and mgr.read(A0) is None


def test_fan_out_never_overwrites_a_newer_task_startpoint_written_while_it_merges():
    store = HookedStore(new_store())
    mgr = manager(store)
    mgr.write(A0, specific("old", age_ms=20), task=P0)
    mgr.write(A0, specific("ssp", age_ms=10))
    task_key = "kafka.orders.0.Partition 0"
    # after fan-out deletes the older task value, another writer stores a newer one before the put
    newest = specific("newest").to_json()
    store.hooks[("put_if_absent", task_key)] = lambda: store.inner.put(NAMESPACE, task_key, newest)
    result = mgr.fan_out(JOB_MODEL)
    assert result[(A0, P0)] == specific("newest")
    assert mgr.read(A0, P0) == specific("newest")
    assert mgr.read(A0) is None


# ---- conditional deletion at commit ----------------------------------------------------------------------


def test_delete_if_unchanged_deletes_the_applied_startpoint():
    mgr = manager()
    mgr.write(A0, specific("1"), task=P0)
    assert mgr.delete_if_unchanged(A0, P0, NOW) is True
    assert mgr.read(A0, P0) is None
    assert mgr.delete_if_unchanged(A0, P0, NOW) is False  # already gone


def test_delete_if_unchanged_keeps_a_newer_startpoint_written_meanwhile():
    mgr = manager()
    mgr.write(A0, specific("applied", age_ms=100), task=P0)
    created = mgr.fan_out(JOB_MODEL)[(A0, P0)].creation_timestamp
    mgr.write(A0, StartpointUpcoming(creation_timestamp=NOW), task=P0)  # user rewinds again mid-batch
    assert mgr.delete_if_unchanged(A0, P0, created) is False
    assert mgr.read(A0, P0) == StartpointUpcoming(creation_timestamp=NOW)


def test_delete_if_unchanged_for_an_ssp_only_key_and_a_malformed_value():
    store = new_store()
    mgr = manager(store)
    mgr.write(A1, specific("1"))
    assert mgr.delete_if_unchanged(A1, None, NOW - 1) is False
    assert mgr.delete_if_unchanged(A1, None, NOW) is True
    store.put(NAMESPACE, "kafka.orders.0.Partition 0", {"garbage": True})
    assert mgr.delete_if_unchanged(A0, P0, NOW) is False
    assert store.get(NAMESPACE, "kafka.orders.0.Partition 0") == {"garbage": True}


def test_delete_if_unchanged_loses_to_a_rewrite_after_its_read():
    store = HookedStore(new_store())
    mgr = manager(store)
    mgr.write(A0, specific("1"), task=P0)
    key = "kafka.orders.0.Partition 0"
    store.hooks[("delete_if_equal", key)] = lambda: store.inner.put(NAMESPACE, key, specific("2").to_json())
    assert mgr.delete_if_unchanged(A0, P0, NOW) is False
    assert mgr.read(A0, P0) == specific("2")
