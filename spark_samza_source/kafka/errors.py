"""Errors raised by the Kafka system package.

One class, :class:`KafkaSourceError`, so callers can tell a clear, intended Kafka failure (missing topic, data
loss, a broker that does not answer within the timeout) apart from a bug.  Messages name the operation, the
topics / partitions / offsets at fault and, where it helps, the option that changes the behaviour.  They never
contain client configuration values other than ``bootstrap.servers`` (SASL passwords and keys live there).
"""

from __future__ import annotations

from ..core.errors import DataLossError, SamzaSourceError

__all__ = ["JaasError", "KafkaDataLossError", "KafkaSourceError"]


class KafkaSourceError(SamzaSourceError):
    """A Kafka operation failed or timed out; the message names the operation and the topics involved."""


class KafkaDataLossError(KafkaSourceError, DataLossError):
    """Records the query should have read are gone (deleted, aged out, topic re-created) and
    ``failOnDataLoss`` is true. A :class:`DataLossError` like the planner's, so ``except DataLossError`` catches
    a loss whether the driver or an executor found it."""


class JaasError(KafkaSourceError, ValueError):
    """A ``sasl.jaas.config`` line that does not parse; the message never holds the line (it has a password)."""
