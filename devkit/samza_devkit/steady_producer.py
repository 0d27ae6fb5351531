"""A producer writing keyed records at a steady pace from a thread of its own, keeping every acknowledged write:
what the replicated-cluster tests check a running query against while nodes die, restart and move leaderships.

Idempotent with ``acks=all`` (as Kafka's own producer is by default): a request a dying leader refused is sent
again in its place, so each partition's log holds a key's records in the order they were produced, and only what
the in-sync replicas acknowledged counts as written. Values are ``key:seq`` (``samza_devkit.key_order``), so a
per-key order check reads them back. ``stop()`` flushes and returns the acknowledged writes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from confluent_kafka import Producer

__all__ = ["Acked", "SteadyProducer"]


@dataclass(frozen=True)
class Acked:
    partition: int
    offset: int
    key: bytes
    value: bytes


class SteadyProducer:
    """``per_second`` records, round-robin over ``keys``, sequence numbers from ``first_seq`` per key."""

    def __init__(self, bootstrap: str, topic: str, keys: Sequence[bytes], *, per_second: int = 200,
                 first_seq: int = 0, conf: dict | None = None):
        self.topic = topic
        self.keys = list(keys)
        self.interval = 1.0 / per_second
        self._seq = first_seq
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                   "linger.ms": 5, "partitioner": "murmur2_random", **(conf or {})})
        self.acked: list[Acked] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"steady-producer-{topic}", daemon=True)

    def start(self) -> SteadyProducer:
        self._thread.start()
        return self

    def _run(self) -> None:
        next_at = time.monotonic()
        n = 0
        while not self._stop.is_set():
            key = self.keys[n % len(self.keys)]
            seq = self._seq + n // len(self.keys)
            value = key + b":" + str(seq).encode()
            while True:
                try:
                    self._producer.produce(self.topic, value, key, on_delivery=self._on_delivery)
                    break
                except BufferError:  # the queue is full while a leader moves: serve callbacks, then again
                    self._producer.poll(0.1)
            n += 1
            self._producer.poll(0)
            next_at += self.interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))
        self._next_seq = self._seq + (n + len(self.keys) - 1) // len(self.keys)

    def _on_delivery(self, err, msg) -> None:
        with self._lock:
            if err is not None:
                self.errors.append(str(err))
            else:
                self.acked.append(Acked(msg.partition(), msg.offset(), bytes(msg.key()), bytes(msg.value())))

    def count(self) -> int:
        with self._lock:
            return len(self.acked)

    def stop(self, timeout: float = 120) -> list[Acked]:
        """Stop writing, wait for every outstanding acknowledgement, and return what was acknowledged."""
        self._stop.set()
        self._thread.join()
        left = self._producer.flush(timeout)
        if left:
            self.errors.append(f"{left} records still unacknowledged after {timeout:.0f} s")
        # dropped now: its delivery callback holds this object, a cycle that would keep it reconnecting to the
        # cluster's addresses until a garbage collection, long after the cluster is gone
        self._producer = None
        with self._lock:
            return list(self.acked)

    @property
    def next_seq(self) -> int:
        """The first sequence number a producer continuing these keys after this one uses (after ``stop()``)."""
        return self._next_seq
