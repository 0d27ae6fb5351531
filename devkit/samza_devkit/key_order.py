"""Per-key order as a consumer of micro-batches sees it, for any Kafka source (samza-kafka or Spark's own).

A keyed producer writes ``key:seq`` values, ``seq`` counting up per key (``keyed_rounds``). A record is *ahead of
its key's order* when it was delivered in an earlier micro-batch than a record of the same key that the producer
wrote before it: a stateful consumer (a running total, a state machine per key) then saw the later write first.
Within one micro-batch Spark gives no order at all, so only the batch a record came in counts.
Shared by the order test (tests/integration/kafka/test_order_beside_spark_kafka.py) and
``benchmarks/kafka_vs_spark.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["ahead_of_key_order", "keyed_rounds", "sequence_of"]


def keyed_rounds(keys: Sequence[bytes], first_seq: int, per_key: int) -> list[tuple[bytes, bytes]]:
    """``per_key`` records of every key, sequence numbers ``first_seq``.., keys interleaved as a producer of many
    keys writes them."""
    return [(key, key + b":" + str(first_seq + n).encode()) for n in range(per_key) for key in keys]


def sequence_of(value: bytes) -> int:
    return int(value.rsplit(b":", 1)[1])


def ahead_of_key_order(batches: Iterable[tuple[int, Iterable]]) -> dict[bytes, int]:
    """Per key, how many records came in an earlier micro-batch than a record of that key written before them.

    ``batches``: ``(batch_id, rows)`` with rows having ``key`` and ``value`` (``key:seq``). Keys with none are
    left out, so an empty result means every key's records arrived in write order across batches.
    """
    by_key: dict[bytes, list[tuple[int, int]]] = {}
    for batch_id, rows in batches:
        for row in rows:
            by_key.setdefault(bytes(row.key), []).append((sequence_of(bytes(row.value)), batch_id))
    ahead: dict[bytes, int] = {}
    for key, items in by_key.items():
        items.sort()
        latest_batch_so_far = -1  # the latest batch any record written before this one came in
        count = 0
        for _seq, batch_id in items:
            if batch_id < latest_batch_so_far:
                count += 1
            latest_batch_so_far = max(latest_batch_so_far, batch_id)
        if count:
            ahead[key] = count
    return ahead
