"""The native read path of ``samza-kafka``: ``read_ranges`` with its per-record loop in C (``_native/``).

Why: the Python reader turns every record into a confluent-kafka ``Message`` object (~1.3 us each) before any
work; the extension consumes through librdkafka itself, routes records to their ranges, keeps ``[start, end)``
and fills the Arrow columns from librdkafka's buffers, handing pyarrow each batch through the Arrow C Data
Interface. The decisions taken per fetch or per batch (turn order, pausing, data loss, the stall timeout, error
messages) stay here, in the same shape as :class:`~spark_samza_source.kafka.reader._RangeReader`, so the two
paths give identical batches (tests/integration/kafka/test_reader_differential.py).

librdkafka is found at run time, never at build time: the copy confluent-kafka's wheel ships
(``site-packages/confluent_kafka.libs/librdkafka-*.so.1``, or ``confluent_kafka/.dylibs`` on macOS), else the
system's ``librdkafka.so.1``. The native path is unavailable when the extension was not built, no librdkafka
loads, or the configuration needs a Python callback (the OAUTHBEARER token provider); ``readPath=auto`` then
reads through the Python path, logged once per process at INFO.
"""

from __future__ import annotations

import glob
import importlib.util
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
from confluent_kafka import KafkaError

from ..spec.kafka import READ_PATH_OPTION
from .client_conf import TOKEN_PROVIDER_KEY
from .errors import KafkaSourceError
from .input_partition import KafkaRange
from .read_settings import KafkaReadSettings
from .reader_rules import (
    CONSUME_BYTES,
    CONSUME_MAX,
    CONSUME_WAIT_S,
    GONE,
    MAX_REPOSITION,
    OUT_OF_RANGE,
    WAIT_BYTES_MIN,
    WAIT_BYTES_TOTAL,
    data_loss,
    stalled_error,
)
from .schema import kafka_arrow_schema

__all__ = ["native_unavailable_reason", "choose_read_path", "NativeRangeReader", "native_consumer_class",
           "new_native_consumer", "forward_librdkafka_logs"]

log = logging.getLogger(__name__)

_FATAL = KafkaError._FATAL
_PARTITION_EOF = KafkaError._PARTITION_EOF
_HOW_TO_FIX = ("reinstall spark-samza-source from the platform wheel (or run `make setup` where a C compiler "
               "exists) and confluent-kafka from its wheel, or set the option "
               f"'{READ_PATH_OPTION}' to 'auto' or 'python'")

# librdkafka's log lines go where the Python path's go (consumer_cache gives confluent-kafka this logger)
_LIBRDKAFKA_LOG = logging.getLogger("spark_samza_source.kafka.consumer_cache")
_SYSLOG_TO_LOGGING = {0: logging.CRITICAL, 1: logging.CRITICAL, 2: logging.CRITICAL, 3: logging.ERROR,
                      4: logging.WARNING, 5: logging.INFO, 6: logging.INFO, 7: logging.DEBUG}

_state_lock = threading.Lock()
_loaded: tuple[object | None, str | None] | None = None  # (extension module, why unavailable)
_logged: set[tuple[str, str]] = set()


def _librdkafka_candidates() -> list[str]:
    """Where librdkafka may be: confluent-kafka's bundled copy first (already loaded by it: one copy per
    process), then the dynamic loader's search path."""
    found: list[str] = []
    spec = importlib.util.find_spec("confluent_kafka")
    for location in (spec.submodule_search_locations or []) if spec else []:
        package = os.path.abspath(location)
        site = os.path.dirname(package)
        found += sorted(glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*")))
        found += sorted(glob.glob(os.path.join(package, ".dylibs", "librdkafka*.dylib")))
    return found + ["librdkafka.so.1", "librdkafka.1.dylib"]


def _load() -> tuple[object | None, str | None]:
    global _loaded
    with _state_lock:
        if _loaded is None:
            _loaded = _load_extension()
        return _loaded


def _load_extension() -> tuple[object | None, str | None]:
    try:
        from . import _native_reader as ext
    except ImportError as err:
        return None, f"the native reader extension is not built or not loadable ({err})"
    failures = []
    for path in _librdkafka_candidates():
        try:
            ext.load_library(path)
            return ext, None
        except OSError as err:
            failures.append(str(err))
    return None, "no loadable librdkafka (" + "; ".join(failures[-2:]) + ")"


def native_unavailable_reason() -> str | None:
    """None when the native reader can run in this process, else why not."""
    return _load()[1]


def choose_read_path(settings: KafkaReadSettings, client_conf: Mapping[str, str]) -> str:
    """``native`` or ``python`` for a read with ``settings`` and ``client_conf``; logs the choice once per process
    (and once per reason for falling back). ``readPath=native`` where it cannot run raises, saying why."""
    asked = settings.read_path
    if asked == "python":
        return _chosen("python", f"option '{READ_PATH_OPTION}' is 'python'")
    why = native_unavailable_reason()
    if why is None and TOKEN_PROVIDER_KEY in client_conf:
        why = "the OAUTHBEARER token provider (a Python callback) needs the Python consumer"
    if why is None:
        return _chosen("native", "extension and librdkafka loaded")
    if asked == "native":
        raise KafkaSourceError(f"option '{READ_PATH_OPTION}' is 'native' but the native Kafka reader cannot run "
                               f"here: {why}. To fix: {_HOW_TO_FIX}")
    return _chosen("python", f"native reader unavailable: {why}")


def _chosen(path: str, why: str) -> str:
    with _state_lock:
        first = (path, why) not in _logged
        _logged.add((path, why))
    if first:
        log.info("samza-kafka executor reads through the %s path (%s)", path, why)
    return path


def native_consumer_class() -> type:
    """The extension's consumer type (librdkafka loaded); raises like ``readPath=native`` where unavailable."""
    ext, why = _load()
    if ext is None:
        raise KafkaSourceError(f"the native Kafka reader cannot run here: {why}. To fix: {_HOW_TO_FIX}")
    return ext.NativeConsumer


def new_native_consumer(conf: dict[str, str]):
    """A native consumer for the cache (``consumer_cache.native_cache``): ``conf`` is ``consumer_config``'s."""
    consumer_class = native_consumer_class()
    try:
        return consumer_class(sorted(conf.items()))
    except (RuntimeError, ValueError) as err:  # names a property, never a value
        raise KafkaSourceError(f"cannot create a Kafka consumer (bootstrap servers "
                               f"{conf.get('bootstrap.servers', '?')}): {err}") from None


def forward_librdkafka_logs(consumer) -> None:
    """Hand the log lines librdkafka's threads kept in ``consumer`` to Python logging (a bounded buffer in C:
    those threads never take the GIL)."""
    lines, dropped = consumer.logs()
    for level, text in lines:
        _LIBRDKAFKA_LOG.log(_SYSLOG_TO_LOGGING.get(level, logging.DEBUG), "%s", text)
    if dropped:
        _LIBRDKAFKA_LOG.debug("%d earlier librdkafka log lines of this consumer were dropped", dropped)


class NativeRangeReader:
    """One task's read over a borrowed native consumer: the rules of reader.py's ``_RangeReader``, with the
    records themselves kept and converted in C (a range is addressed by its index in ``ranges``)."""

    def __init__(self, consumer, task: str, ranges: Sequence[KafkaRange], settings: KafkaReadSettings) -> None:
        self.c = consumer
        self.task = task
        self.ranges = list(ranges)
        self.labels = [f"{r.topic}[{r.partition}]" for r in self.ranges]
        self.settings = settings
        self.max_rows = settings.max_rows_per_batch
        self.max_bytes = settings.max_bytes_per_batch
        self.poll_timeout_s = settings.poll_timeout_ms / 1000.0
        self.schema = kafka_arrow_schema(settings.include_headers)
        self.wait_rows = 3 * self.max_rows
        self.wait_bytes = max(WAIT_BYTES_MIN, WAIT_BYTES_TOTAL // len(self.ranges))
        self.repositions = [0] * len(self.ranges)
        self.last_progress = time.monotonic()
        self.last_error: str | None = None
        self.seen_msgs = 0
        self.seen_bytes = 0

    # ---- main loop ----------------------------------------------------------------------------------------
    def run(self) -> Iterator[pa.RecordBatch]:
        """Round robin over the ranges in order, one batch per turn (reader.py's rule)."""
        c = self.c
        c.set_ranges(self.task, self.settings.include_headers,
                     [(r.topic, r.partition, r.start, r.end) for r in self.ranges])
        c.assign()
        forward_librdkafka_logs(c)  # what an idle cached consumer logged meanwhile
        try:
            yield from self._turns()
        finally:
            forward_librdkafka_logs(c)

    def _turns(self) -> Iterator[pa.RecordBatch]:
        c = self.c
        turns = deque(range(len(self.ranges)))
        while turns:
            cur = turns.popleft()
            while True:
                _, rows, vbytes, done, paused = c.state(cur)
                if done or (rows and (rows >= self.max_rows or vbytes >= self.max_bytes)):
                    break
                if paused:
                    self._resume(cur)
                self._fetch(cur)
            if rows:
                yield self._emit(cur)
                _, rows, _, done, _ = c.state(cur)
            if not done or rows:
                turns.append(cur)

    def _fetch(self, cur: int) -> None:
        """One consume call: routed and range-checked in C; then errors, pausing, gaps and the stall timeout."""
        c = self.c
        states = [c.state(i) for i in range(len(self.ranges))]
        want = min(CONSUME_MAX, max(1, sum(self.ranges[i].end - s[0] for i, s in enumerate(states)
                                           if not s[3] and not s[4])))
        if self.seen_msgs:
            avg = max(1, self.seen_bytes // self.seen_msgs)
            want = max(1, min(want, CONSUME_BYTES // avg))
        count, kept, progressed, events = c.fetch(want, int(CONSUME_WAIT_S * 1000))
        forward_librdkafka_logs(c)
        if count:
            self.seen_msgs += count
            self.seen_bytes += kept
        for event in events:
            if event[0] == "error":
                self._on_error(event[1], event[2], event[3])
            else:
                self._check_start_gap(event[1], event[3], event[2])
        if progressed:
            self.last_progress = time.monotonic()
        for i in range(len(self.ranges)):
            if i != cur:
                _, rows, vbytes, done, paused = c.state(i)
                if not done and not paused and (rows >= self.wait_rows or vbytes >= self.wait_bytes):
                    c.pause_range(i, True)
        if count < want:
            self._check_positions()
        if time.monotonic() - self.last_progress > self.poll_timeout_s:
            self._stalled()

    def _resume(self, i: int) -> None:
        self.c.pause_range(i, False)
        self.last_progress = time.monotonic()

    def _check_positions(self) -> None:
        """Finish ranges whose consumer position passed ``end`` without a record (the range ends in a gap)."""
        open_ = [i for i in range(len(self.ranges)) if not any(self.c.state(i)[3:])]
        if not open_:
            return
        for i, offset in zip(open_, self.c.positions(open_), strict=True):
            if offset >= self.ranges[i].end:
                self.c.finish(i)
                self.last_progress = time.monotonic()

    # ---- errors and data loss -----------------------------------------------------------------------------
    def _on_error(self, i: int, code: int, text: str) -> None:
        if code == _FATAL:
            raise KafkaSourceError(f"Kafka consumer failed in task {self.task!r}: {text}")
        done = i >= 0 and self.c.state(i)[3]
        if i >= 0 and not done and code in OUT_OF_RANGE:
            self._out_of_range(i)
        elif i >= 0 and not done and code in GONE:
            self._maybe_gone(i, text)
        elif code != _PARTITION_EOF:
            self.last_error = text
            log.debug("Kafka consumer error in task %r (librdkafka retries): %s", self.task, text)

    def _watermarks(self, i: int) -> tuple[int, int]:
        try:
            return self.c.watermarks(i, int(min(30.0, self.poll_timeout_s) * 1000))
        except RuntimeError as err:
            raise KafkaSourceError(f"task {self.task!r}: cannot read the log start/end offsets of {self.labels[i]} "
                                   f"to check for data loss: {err}") from None

    def _out_of_range(self, i: int) -> None:
        rng, nxt = self.ranges[i], self.c.state(i)[0]
        low, high = self._watermarks(i)
        if nxt < low:
            self._data_loss(i, nxt, min(low, rng.end), f"the log now starts at offset {low}")
            if low >= rng.end:
                self.c.finish(i)
            else:
                self.c.set_next(i, low)
                self.c.reposition(i, low)
        elif nxt >= high:
            self._data_loss(i, nxt, rng.end, f"the log now ends at offset {high} (topic re-created or truncated?)")
            self.c.finish(i)
        else:
            self.repositions[i] += 1
            if self.repositions[i] > MAX_REPOSITION:
                raise KafkaSourceError(
                    f"task {self.task!r}: the broker keeps answering 'offset out of range' for {self.labels[i]} at "
                    f"offset {nxt} although the log holds offsets {low}..{high - 1}"
                )
            self.c.reposition(i, nxt)
        self.last_progress = time.monotonic()

    def _check_start_gap(self, i: int, nxt: int, first: int) -> None:
        """First record above the range start: data loss only if the log start moved past ``next`` meanwhile."""
        low, _ = self._watermarks(i)
        if low > nxt:
            self._data_loss(i, nxt, min(low, first, self.ranges[i].end), f"the log now starts at offset {low}")

    def _maybe_gone(self, i: int, text: str) -> None:
        try:
            exists = self.c.partition_exists(i, int(min(30.0, self.poll_timeout_s) * 1000))
        except RuntimeError:  # cannot tell: let librdkafka retry, the stall timeout bounds it
            exists = True
        if exists:
            self.last_error = text
            return
        self._data_loss(i, self.c.state(i)[0], self.ranges[i].end, "the partition no longer exists (topic deleted?)")
        self.c.finish(i)
        self.last_progress = time.monotonic()

    def _data_loss(self, i: int, lost_from: int, lost_to: int, why: str) -> None:
        data_loss(self.task, self.labels[i], self.ranges[i], lost_from, lost_to, why,
                  self.settings.fail_on_data_loss)

    def _stalled(self) -> None:
        pending = []
        for i, rng in enumerate(self.ranges):
            nxt, _, _, done, _ = self.c.state(i)
            if not done:
                pending.append(f"{self.labels[i]} at offset {nxt} of [{rng.start}, {rng.end})")
        raise stalled_error(self.task, self.poll_timeout_s, pending, self.last_error)

    # ---- batches ------------------------------------------------------------------------------------------
    def _emit(self, i: int) -> pa.RecordBatch:
        """The next batch of range ``i``, built in C and imported through the Arrow C Data Interface."""
        batch = pa.RecordBatch._import_from_c(self.c.emit(i, self.max_rows, self.max_bytes), self.schema)
        _, rows, vbytes, done, paused = self.c.state(i)
        if paused and not done and rows < self.max_rows and vbytes < self.wait_bytes // 2:
            self._resume(i)  # prefetch its next batch while the other ranges take their turn
        self.last_progress = time.monotonic()
        return batch
