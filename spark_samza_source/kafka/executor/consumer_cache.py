"""A small per-process pool of idle Kafka consumers for the executors.

Why: Spark reuses Python workers across tasks and micro-batches (``spark.python.worker.reuse``, default true),
and creating a librdkafka consumer costs a bootstrap connection, an ApiVersions/Metadata round trip and -- with
SASL/SSL -- a handshake.  Keeping a few idle consumers per worker process makes the next micro-batch start
fetching at once.

Rules:

* Keyed by a hash of the *effective* client configuration (the key is a SHA-256 digest: the configuration, which
  may hold credentials, is never kept as a dictionary key or logged).
* A consumer is *borrowed* exclusively (never shared between two readers) and given back unassigned and
  un-paused.  A consumer whose user raised is closed, never reused: its state (assignment, queued fetches,
  error state) is unknown.
* Bounded: at most ``capacity`` idle consumers in total; the least recently returned one is closed first.
* Thread-safe: one lock around the bookkeeping; Kafka calls (create, unassign, close) happen outside it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Consumer, KafkaException

from ...core.errors import InternalError
from ...options.secrets import scrub
from .. import errors
from ..client_conf import LOOKUP_GROUP_ID, isolation_level_of, with_callbacks

__all__ = [
    "ConsumerCache",
    "DEFAULT_CAPACITY",
    "READER_GROUP_ID",
    "READER_DEFAULTS",
    "READER_FORCED",
    "consumer_config",
    "default_cache",
]

log = logging.getLogger(__name__)

DEFAULT_CAPACITY = 8
READER_GROUP_ID = LOOKUP_GROUP_ID

# Always set by us, whatever the user passed: the reader decides positions, never the consumer.
_FORCED = {
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "auto.offset.reset": "error",  # an out-of-range position is data loss, reported by the reader
    "enable.partition.eof": "false",
}
# Throughput defaults (benchmarks/kafka_reader_raw.py); the user's kafka.* options win.  librdkafka's own
# queued.min.messages (100000) is kept: lowering it to 20000 halved the read rate (less prefetch).  Larger
# per-partition fetches mean fewer round trips when a task reads several partitions.
# queued.max.messages.kbytes caps librdkafka's prefetch per partition (default 64 MiB): with large messages a
# task holding several partitions otherwise prefetched hundreds of MiB (benchmarks/kafka_source.py, memory).
#
# fetch.queue.backoff.ms (librdkafka >= 2.1, default 1000): once queued.min.messages are queued, librdkafka
# postpones the partition's next fetch by this long.  A bounded range read drains that queue in ~0.1 s and then
# sat idle for the rest of the second: 1,000,000 x 100 B from one partition took 7.6 s at the default and 2.5-3 s
# at 10 ms (CPU-bound from there); 1 ms and 0 ms were slower (fetch churn competing with the reader for the CPU),
# as was a larger queued.min.messages (500000) (benchmarks/kafka_native.py; benchmarks/README.md, "Why the reader's
# librdkafka defaults are what they are").
#
# fetch.wait.max.ms (librdkafka default 500): how long the broker holds a fetch that finds no data. A range reader
# only fetches at the log end after its last record (librdkafka prefetches past the range), and that fetch is
# still in flight when the consumer goes back to the cache; librdkafka keeps one fetch per broker connection, so
# the next read's first fetch waits for it. Reads of 200 records at the log end, the usual case of a low-rate
# stream, took a median 103 ms at 100 ms and 12 ms at 10 ms on the Python path (benchmarks/kafka_reader_raw.py,
# "small reads"); at 1 ms the tail goes too (p90 1.9 ms against 11.6 at 10). A short wait costs nothing here: a
# reader's consumer fetches at the log end only after its ranges are read (their partitions are then paused, and
# unassigned when the consumer is returned), and bulk reads kept their rate and CPU per record (native path
# 0.90-1.02x kcat's CPU per record at 1 ms).
_TUNING = {
    "fetch.queue.backoff.ms": "10",
    "fetch.wait.max.ms": "1",
    "queued.max.messages.kbytes": "16384",
    "max.partition.fetch.bytes": str(4 * 1024 * 1024),
}

READER_DEFAULTS: Mapping[str, str] = _TUNING
READER_FORCED: Mapping[str, str] = _FORCED


def consumer_config(client_conf: Mapping[str, str]) -> dict[str, str]:
    """The effective librdkafka configuration of an executor consumer for ``client_conf``: the user's ``kafka.*``
    settings, the throughput defaults of :data:`READER_DEFAULTS` where the user set nothing, then the settings the
    reader needs (:data:`READER_FORCED`)."""
    conf = {str(k): str(v) for k, v in client_conf.items()}
    conf.setdefault("group.id", READER_GROUP_ID)
    conf["isolation.level"] = isolation_level_of(conf)
    for key, value in _TUNING.items():
        conf.setdefault(key, value)
    conf.update(_FORCED)
    return conf


def _config_key(conf: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(sorted(conf.items())).encode()).hexdigest()


# librdkafka cuts a client's name (``<client.id>#consumer-<n>``) to 127 bytes and a log line to 2,047; confluent-kafka
# decodes both strictly when it hands a line to a Python logger, and a cut inside a multi-byte character then
# fails the consume call it happens in (UnicodeDecodeError) and leaves close() waiting forever.
_NAME_BYTES, _LINE_BYTES = 127, 2047
_logged_unsafe_names: set[str] = set()


def _cut_inside_a_character(text: str, limit: int) -> bool:
    raw = text.encode("utf-8", "surrogatepass")
    return len(raw) > limit and (raw[limit] & 0xC0) == 0x80


def _log_lines_decodable(conf: Mapping[str, str]) -> bool:
    """Whether every librdkafka log line of a consumer with ``conf`` decodes as UTF-8 where librdkafka cuts it:
    a non-ASCII ``client.id`` longer than the name's 127 bytes, or a non-ASCII value near a line's length, may be
    cut inside a character."""
    if _cut_inside_a_character(conf.get("client.id", ""), _NAME_BYTES):
        return False
    return not any(not v.isascii() and len(v.encode("utf-8", "surrogatepass")) > _LINE_BYTES // 2
                   for v in conf.values())


def _new_consumer(conf: dict[str, str]) -> Consumer:
    full: dict[str, Any] = with_callbacks(conf)  # the OAUTHBEARER token provider as oauth_cb
    if _log_lines_decodable(conf):
        full["logger"] = log  # librdkafka logs through Python logging (served during consume/poll)
    else:  # librdkafka's own printer (stderr) keeps every line, where confluent-kafka would fail the read
        digest = hashlib.sha256(conf.get("client.id", "").encode("utf-8", "surrogatepass")).hexdigest()
        if digest not in _logged_unsafe_names:
            _logged_unsafe_names.add(digest)
            log.warning("librdkafka's log lines of the Python read path's consumers go to stderr, not to Python "
                        "logging: librdkafka cuts their text inside a multi-byte UTF-8 character (a non-ASCII "
                        "kafka.client.id longer than %d bytes, or a long non-ASCII setting), which confluent-kafka "
                        "cannot decode. To keep them in Python logging, use a shorter or ASCII kafka.client.id, or "
                        "the native read path (option 'readPath').", _NAME_BYTES)
    try:
        return Consumer(full)
    except KafkaException as err:
        raise errors.consumer_not_created(
            conf.get('bootstrap.servers', '?'),
            scrub(err.args[0].str() if err.args and hasattr(err.args[0], 'str') else err, conf)
        ) from None


def _close_quietly(consumer: Consumer) -> None:
    try:
        consumer.close()
    except Exception as err:  # closing is best effort (e.g. already closed)
        log.debug("closing a cached consumer failed: %s", err)


class ConsumerCache:
    """LRU pool of idle consumers keyed by configuration hash. See the module docstring for the rules."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY,
                 factory: Callable[[dict[str, str]], Consumer] = _new_consumer, *, is_native: bool = False) -> None:
        if capacity < 0:
            raise InternalError("capacity must be >= 0")
        self._capacity = capacity
        self._factory = factory
        self.is_native = is_native  # holds the native reader's consumers (native_reader.py), not confluent-kafka's
        self._idle: OrderedDict[int, tuple[str, Consumer]] = OrderedDict()  # id(consumer) -> (key, consumer)
        self._lock = threading.Lock()
        self.created = 0  # consumers created by this cache (for tests and metrics)

    @classmethod
    def native(cls, capacity: int = DEFAULT_CAPACITY) -> ConsumerCache:
        """A cache of the native reader's consumers (same rules; they answer assignment/resume/unassign/close)."""
        from .native_reader import new_native_consumer

        return cls(capacity, new_native_consumer, is_native=True)

    @property
    def capacity(self) -> int:
        return self._capacity

    def set_capacity(self, capacity: int) -> None:
        if capacity < 0:
            raise InternalError("capacity must be >= 0")
        with self._lock:
            self._capacity = capacity
            evicted = self._trim()
        for consumer in evicted:
            _close_quietly(consumer)

    def __len__(self) -> int:
        with self._lock:
            return len(self._idle)

    def _trim(self) -> list[Consumer]:
        evicted = []
        while len(self._idle) > self._capacity:
            _, (_, consumer) = self._idle.popitem(last=False)
            evicted.append(consumer)
        return evicted

    def acquire(self, client_conf: Mapping[str, str]) -> tuple[str, Consumer]:
        """Borrow a consumer for ``client_conf`` (reused if an idle one exists). Returns ``(key, consumer)``."""
        conf = consumer_config(client_conf)
        key = _config_key(conf)
        with self._lock:
            for ident, (k, consumer) in reversed(self._idle.items()):  # most recently returned first
                if k == key:
                    del self._idle[ident]
                    return key, consumer
        consumer = self._factory(conf)
        with self._lock:
            self.created += 1
        return key, consumer

    def release(self, key: str, consumer: Consumer, *, healthy: bool) -> None:
        """Give a borrowed consumer back: unassigned and kept if ``healthy``, else closed."""
        if healthy:
            try:
                assigned = consumer.assignment()
                if assigned:
                    consumer.resume(assigned)  # librdkafka keeps the pause flag across (re)assignment
                consumer.unassign()
            except Exception as err:
                log.debug("resetting a consumer for reuse failed, closing it: %s", err)
                healthy = False
        if not healthy:
            _close_quietly(consumer)
            return
        with self._lock:
            self._idle[id(consumer)] = (key, consumer)
            evicted = self._trim()
        for old in evicted:
            _close_quietly(old)

    @contextmanager
    def borrow(self, client_conf: Mapping[str, str]) -> Iterator[Consumer]:
        """``with cache.borrow(conf) as consumer:`` -- returned on normal exit (or generator close), closed on error."""
        key, consumer = self.acquire(client_conf)
        healthy = False
        try:
            yield consumer
            healthy = True
        except GeneratorExit:
            healthy = True  # the reading generator was closed early: the consumer itself is fine
            raise
        finally:
            self.release(key, consumer, healthy=healthy)

    def close_all(self) -> None:
        with self._lock:
            idle = [c for _, c in self._idle.values()]
            self._idle.clear()
        for consumer in idle:
            _close_quietly(consumer)


_DEFAULTS: dict[bool, ConsumerCache] = {}
_DEFAULT_LOCK = threading.Lock()


def default_cache(capacity: int | None = None, *, native: bool = False) -> ConsumerCache:
    """The process-wide cache used by :func:`~spark_samza_source.kafka.executor.reader.read_ranges` (resized if asked):
    one of confluent-kafka consumers, one of native ones."""
    with _DEFAULT_LOCK:
        cache = _DEFAULTS.get(native)
        if cache is None:
            size = DEFAULT_CAPACITY if capacity is None else capacity
            cache = _DEFAULTS[native] = ConsumerCache.native(size) if native else ConsumerCache(size)
            return cache
    if capacity is not None and capacity != cache.capacity:
        cache.set_capacity(capacity)
    return cache
