"""How KafkaAdmin reads ListOffsets answers (no broker): one future per call holds the whole answer, partition ->
``ListOffsetsResultInfo`` or ``KafkaError``, as librdkafka's binding gives it (``admin._request_offsets``)."""

from __future__ import annotations

import time
from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from spark_samza_source.kafka.driver.admin import KafkaAdmin


def answered(answers: dict) -> Future:
    future: Future = Future()
    future.set_result(answers)
    return future


def call(*partitions_and_answers) -> tuple[int, Future]:
    answers = {TopicPartition("t", p): a for p, a in partitions_and_answers}
    return len(answers), answered(answers)


def collect(calls: dict) -> dict:
    return KafkaAdmin._collect_offsets(calls, time.monotonic() + 5)


def test_every_call_of_a_kind_is_merged_by_topic_and_partition():
    low = [call((0, SimpleNamespace(offset=0)), (1, SimpleNamespace(offset=3))), call((2, SimpleNamespace(offset=7)))]
    out = collect({"low": low, "high": [call((0, SimpleNamespace(offset=9)))]})
    assert {tp: info.offset for tp, info in out["low"].items()} == {("t", 0): 0, ("t", 1): 3, ("t", 2): 7}
    assert {tp: info.offset for tp, info in out["high"].items()} == {("t", 0): 9}


def test_a_partition_that_does_not_exist_is_left_out():
    gone = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
    out = collect({"low": [call((0, SimpleNamespace(offset=0)), (1, gone))]})
    assert list(out["low"]) == [("t", 0)]


def test_any_other_partition_error_is_raised_as_its_kafka_exception():
    refused = KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)
    with pytest.raises(KafkaException) as raised:
        collect({"low": [call((0, SimpleNamespace(offset=0)), (1, refused))]})
    assert raised.value.args[0].code() == KafkaError.NOT_LEADER_FOR_PARTITION


def test_an_answer_missing_partitions_fails_as_list_offsets_would():
    count, future = call((0, SimpleNamespace(offset=0)))
    with pytest.raises(RuntimeError, match="Results length 1 is different from future-map length 2"):
        collect({"low": [(count + 1, future)]})


def test_a_request_wide_failure_is_raised():
    future: Future = Future()
    future.set_exception(KafkaException(KafkaError(KafkaError._TRANSPORT)))
    with pytest.raises(KafkaException):
        collect({"low": [(1, future)]})
