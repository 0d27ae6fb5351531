"""KafkaAdmin's retries (no broker: the retried operation is a function that fails as Kafka's answers do)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from spark_samza_source.kafka.driver.admin import KafkaAdmin
from spark_samza_source.kafka.driver.group_client import GroupClient
from spark_samza_source.kafka.errors import KafkaSourceError


def failing_then_answering(code: int, failures: int):
    calls = []

    def attempt(left: float) -> str:
        calls.append(left)
        if len(calls) <= failures:
            raise KafkaException(KafkaError(code))  # as a per-partition future raises it: not flagged retriable
        return "answer"

    return attempt, calls


@pytest.mark.parametrize("code", [KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                                  KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.OFFSET_NOT_AVAILABLE])
def test_leadership_errors_are_retried(code):
    """Kafka answers ListOffsets for a partition CreatePartitions just added with NOT_LEADER_OR_FOLLOWER until the
    broker has applied its leadership: a query must ride that out, not fail."""
    attempt, calls = failing_then_answering(code, 2)
    assert KafkaAdmin({"bootstrap.servers": "b:9092"}, api_timeout_ms=10_000)._retrying("watermarks", attempt) \
        == "answer"
    assert len(calls) == 3


def test_other_broker_errors_fail_at_once_naming_the_operation():
    attempt, calls = failing_then_answering(KafkaError.TOPIC_AUTHORIZATION_FAILED, 1)
    with pytest.raises(KafkaSourceError, match=r"Kafka operation 'watermarks' failed \(bootstrap servers b:9092\)"):
        KafkaAdmin({"bootstrap.servers": "b:9092"}, api_timeout_ms=10_000)._retrying("watermarks", attempt)
    assert len(calls) == 1


def test_retries_end_at_the_api_timeout_naming_the_option():
    attempt, _ = failing_then_answering(KafkaError.NOT_LEADER_FOR_PARTITION, 10**6)
    admin = KafkaAdmin({"bootstrap.servers": "b:9092"}, api_timeout_ms=500, timeout_option="endpoint.retryTimeout")
    with pytest.raises(KafkaSourceError, match=r"did not complete within 0.5 s \(option 'endpoint.retryTimeout'"):
        admin._retrying("watermarks", attempt)


def test_leadership_moving_for_a_moment_is_retried_without_a_warning(caplog):
    """Growing a topic makes Kafka answer NOT_LEADER_OR_FOLLOWER for its new partitions for a moment: that is no
    outage to report. A transport failure is, at once."""
    admin = KafkaAdmin({"bootstrap.servers": "b:9092"}, api_timeout_ms=10_000)
    admin._answered = True  # the cluster answered this client before
    caplog.set_level("WARNING", logger="spark_samza_source")
    attempt, _ = failing_then_answering(KafkaError.NOT_LEADER_FOR_PARTITION, 2)
    assert admin._retrying("watermarks", attempt) == "answer"
    assert not caplog.records
    attempt, _ = failing_then_answering(KafkaError._TRANSPORT, 1)
    assert admin._retrying("watermarks", attempt) == "answer"
    assert [r.levelname for r in caplog.records] == ["WARNING"]


def test_a_negative_watermark_is_no_answer_and_is_retried():
    """librdkafka once answered -1001 (its invalid offset) for a partition of a topic created a moment before,
    without an error: taken for the log end, it failed the query as data loss. It is retried instead."""
    from types import SimpleNamespace

    from spark_samza_source.kafka.driver.admin import _low_high

    tp = ("orders", 0)
    answers = [{"low": {tp: SimpleNamespace(offset=-1001)}, "high": {tp: SimpleNamespace(offset=-1001)}},
               {"low": {tp: SimpleNamespace(offset=0)}, "high": {tp: SimpleNamespace(offset=5)}}]
    calls = []

    def attempt(left: float):
        calls.append(left)
        return _low_high(answers[len(calls) - 1], [tp])

    admin = KafkaAdmin({"bootstrap.servers": "b:9092"}, api_timeout_ms=10_000)
    assert admin._retrying("watermarks", attempt) == {tp: (0, 5)}
    assert len(calls) == 2


class _Answer:
    def __init__(self, offset: int) -> None:
        self.offset = offset


def test_an_offset_not_known_yet_is_retried_never_taken_for_a_log_end():
    """A replicated cluster's ListOffsets answers -1001 (librdkafka's OFFSET_INVALID), without an error, while the
    metadata still names a leader that died: taken as the log end it read as a truncation of the whole partition
    (a false data-loss error, or a re-read from offset 0). It is retried as OFFSET_NOT_AVAILABLE."""
    from spark_samza_source.kafka.driver.admin import _low_high

    tp = ("orders", 0)
    answers = iter([{"low": {tp: _Answer(0)}, "high": {tp: _Answer(-1001)}},
                    {"low": {tp: _Answer(0)}, "high": {tp: _Answer(60)}}])
    admin = KafkaAdmin({"bootstrap.servers": "b:9092"}, api_timeout_ms=10_000)
    assert admin._retrying("watermarks", lambda left: _low_high(next(answers), [tp])) == {tp: (0, 60)}
    with pytest.raises(KafkaException, match=r"no offsets yet for orders\[0\]"):
        _low_high({"low": {tp: _Answer(-1001)}, "high": {tp: _Answer(5)}}, [tp])


def test_no_leader_found_is_retried_within_the_timeout_other_not_found_answers_are_final():
    """librdkafka answers _NOENT "No leaders found" while a partition elects a new leader: the partition is back
    within seconds, so the call waits within its retry timeout (the query used to fail at once)."""
    calls = []

    def no_leader_then_answer(left: float) -> str:
        calls.append(left)
        if len(calls) == 1:
            raise KafkaException(KafkaError(KafkaError._NOENT, "Failed to query partition leaders: No leaders found"))
        return "answer"

    admin = KafkaAdmin({"bootstrap.servers": "b:9092"}, api_timeout_ms=10_000)
    assert admin._retrying("watermarks", no_leader_then_answer) == "answer"
    attempt, calls = failing_then_answering(KafkaError._NOENT, 1)
    with pytest.raises(KafkaSourceError, match="failed"):
        admin._retrying("committed offsets", attempt)
    assert len(calls) == 1


def test_a_timed_out_attempt_retires_its_client_and_the_next_attempt_gets_a_new_one():
    """A client that timed out may be wedged (DescribeTopics routed to a dead controller; OffsetCommits to a
    restarted coordinator): the next attempt asks through a new client. The group mirror's client is its own (a
    consumer handle of the group's: group_client.py)."""
    admin = KafkaAdmin({"bootstrap.servers": "127.0.0.1:1"}, api_timeout_ms=10_000)
    seen = []

    def attempt(left: float) -> str:
        seen.append(admin.admin)
        if len(seen) == 1:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Timed out waiting for controller"))
        return "answer"

    assert admin._retrying("topic IDs", attempt) == "answer"
    assert seen[0] is not seen[1]
    mirror = admin._group_client("samza-job")
    assert isinstance(mirror, GroupClient) and admin._group_client("samza-job") is mirror
    admin.close()


def test_an_attempt_that_timed_out_gives_the_next_one_twice_its_time():
    """A call slower than one attempt's slice (the watermarks of 10,000 partitions on a loaded driver) is answered
    by a later, longer attempt instead of timing out at every attempt until the deadline."""
    admin = KafkaAdmin({"bootstrap.servers": "127.0.0.1:1"}, api_timeout_ms=120_000)
    admin._answered = True  # the cluster answered this client before: attempts start at 10 s
    given = []

    def attempt(left: float) -> str:
        given.append(left)
        if left < 30:  # the answer takes 30 s
            raise TimeoutError()
        return "answer"

    assert admin._retrying("watermarks", attempt) == "answer"
    assert [round(s) for s in given] == [10, 20, 40]
    admin.close()


def test_a_long_retry_timeout_does_not_lengthen_the_first_attempts():
    """A client with a stale view of the cluster waits out whatever time it is given; with a retry timeout of 10
    minutes (set to ride out a long outage) a stuck first attempt still gives way to a new client after 10 s."""
    admin = KafkaAdmin({"bootstrap.servers": "127.0.0.1:1"}, api_timeout_ms=600_000)
    admin._answered = True
    given, clients = [], []

    def attempt(left: float) -> str:
        given.append(left)
        clients.append(admin.admin)
        if len(given) == 1:
            raise TimeoutError()  # stuck on a dead leader until its time ran out
        return "answer"

    assert admin._retrying("watermarks", attempt) == "answer"
    assert [round(s) for s in given] == [10, 20]
    assert clients[0] is not clients[1]
    admin.close()
