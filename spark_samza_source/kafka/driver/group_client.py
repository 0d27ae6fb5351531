"""A consumer handle that writes and reads one consumer group's offsets from outside the group.

The consumer-group mirror (offsets for lag tools) is written through the group's own consumer handle, never through
the AdminClient's ``alter_consumer_group_offsets`` / ``list_consumer_group_offsets``. In librdkafka (2.2 to 2.16 at
least, its issues #3663 and #4605), an AdminClient group request that times out while it waits for the group's
coordinator frees its state, and when the coordinator is back the pending lookup uses that freed state: the
process aborts on ``rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0' failed`` (reproduced: one
node, the request timed out while the node was down, the node restarted). On a replicated cluster that is any
restart of the node coordinating the group while the mirror retries a commit, and the abort takes the whole
driver-side Python process with it, so the query fails without a cause.

A consumer's commits and offset fetches take another path: a commit made while the coordinator is unknown waits for
it (at most ``session.timeout.ms``) and then fails or lands; nothing is freed under a pending request. The handle
never subscribes, so it never joins the group: its OffsetCommit carries no member id and generation -1, the
request Kafka's AdminClient sends for ``kafka-consumer-groups --reset-offsets``, and Kafka takes it only while
the group has no active members.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

__all__ = ["GroupClient", "is_refusal"]

#: commit answers kept for matching: answers to attempts that gave up are never taken, and must not pile up
_ANSWERS_KEPT = 32
#: how long one wait for a commit's answer polls before looking again
_POLL_S = 0.2

#: what the group's coordinator lookup can answer that no waiting mends: the consumer reports it as an event of its
#: queue, and the commit would otherwise wait out its time (a principal without READ on the group)
_REFUSALS = frozenset({KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED,
                       KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError.SASL_AUTHENTICATION_FAILED,
                       KafkaError._AUTHENTICATION, KafkaError.INVALID_GROUP_ID})

_Answer = tuple[KafkaError | None, list[TopicPartition]]


def is_refusal(err: KafkaError) -> bool:
    """Whether ``err`` is a refusal no waiting mends. librdkafka reports it once per handle (later commits would
    wait silently), so a caller that meets one makes a new handle for its next commit."""
    return err.code() in _REFUSALS or err.fatal()


class GroupClient:
    """Commits and fetches ``conf['group.id']``'s offsets; thread-safe (librdkafka's handle is)."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._answers: list[_Answer] = []
        self._lock = threading.Lock()
        settings = dict(conf)
        settings["enable.auto.commit"] = "false"
        settings["on_commit"] = self._on_commit
        self._consumer = Consumer(settings)

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self._answers = [*self._answers, (err, list(partitions))][-_ANSWERS_KEPT:]

    def _take(self, wanted: set[tuple[str, int, int]]) -> _Answer | None:
        """The answer to a commit of exactly ``wanted``, removed from those kept; None until it has come. An
        identical commit of an earlier attempt answers as well as this one's: they wrote the same offsets."""
        with self._lock:
            for i, (err, parts) in enumerate(self._answers):
                if {(tp.topic, tp.partition, tp.offset) for tp in parts} == wanted:
                    del self._answers[i]
                    return err, parts
        return None

    def commit(self, offsets: list[TopicPartition], timeout_s: float) -> list[TopicPartition]:
        """Commit ``offsets``; the partitions as answered (each may carry its own error). Raises KafkaException
        with the commit's error, or ``_TIMED_OUT`` when no answer came within ``timeout_s`` (the commit may still
        land later: librdkafka keeps it until the coordinator answers or its wait runs out)."""
        wanted = {(tp.topic, tp.partition, tp.offset) for tp in offsets}
        deadline = time.monotonic() + timeout_s
        self._consumer.commit(offsets=offsets, asynchronous=True)
        while True:
            answer = self._take(wanted)
            if answer is not None:
                err, parts = answer
                if err is not None and not any(tp.error is not None for tp in parts):
                    raise KafkaException(err)
                return parts
            left = deadline - time.monotonic()
            if left <= 0:
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "the group's coordinator did not answer the "
                                                "offset commit in time"))
            event = self._consumer.poll(min(_POLL_S, left))  # serves on_commit (and error_cb, the log)
            refused = event.error() if event is not None else None
            if refused is not None and is_refusal(refused):
                raise KafkaException(refused)

    def committed(self, partitions: list[TopicPartition], timeout_s: float) -> list[TopicPartition]:
        """The group's committed offsets of ``partitions`` (offset < 0 where it has none)."""
        return self._consumer.committed(partitions, timeout=timeout_s)
