"""Which Kafka errors the admin rides out and which end a call at once.

Apache Kafka answers ListOffsets for a partition just created or added with NOT_LEADER_OR_FOLLOWER until its broker's
metadata has the leader (seen on a real broker under the integration tests); librdkafka hands such per-partition
errors back without its retriable flag, so the admin names Kafka's retriable family itself. Nothing is sent here:
the attempts are plain functions.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from spark_samza_source.kafka.admin import KafkaAdmin
from spark_samza_source.kafka.errors import KafkaSourceError


def _admin() -> KafkaAdmin:
    return KafkaAdmin({"bootstrap.servers": "127.0.0.1:9"}, api_timeout_ms=5000)


def _failing(times: int, code: int):
    calls = []

    def attempt(left: float) -> str:
        calls.append(left)
        if len(calls) <= times:
            raise KafkaException(KafkaError(code))
        return "answered"

    return attempt, calls


@pytest.mark.parametrize("code", [KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                                  KafkaError.FENCED_LEADER_EPOCH, KafkaError.UNKNOWN_LEADER_EPOCH])
def test_leadership_errors_are_retried_until_answered(code):
    attempt, calls = _failing(2, code)
    assert _admin()._retrying("watermarks of t[0]", attempt) == "answered"
    assert len(calls) == 3


def test_a_non_retriable_error_ends_the_call_naming_it():
    attempt, calls = _failing(1, KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaSourceError, match="watermarks of t\\[0\\]' failed"):
        _admin()._retrying("watermarks of t[0]", attempt)
    assert len(calls) == 1
