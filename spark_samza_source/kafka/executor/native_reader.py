"""The native read path of ``samza-kafka``: ``read_ranges`` with its per-record loop in C (``_native/``).

Why: the Python reader turns every record into a confluent-kafka ``Message`` object (~1.3 us each) before any
work; the extension consumes through librdkafka itself, routes records to their ranges, keeps ``[start, end)``
and fills the Arrow columns from librdkafka's buffers, handing pyarrow each batch through the Arrow C Data
Interface. The decisions taken per fetch or per batch (turn order, pausing, data loss, the stall timeout, error
messages) are not here: :class:`~spark_samza_source.kafka.executor.read_control.RangeReadControl` takes them for both
paths
over :class:`NativeBackend` or the Python path's back-end, so the two give identical batches
(tests/integration/kafka/test_reader_differential.py).

librdkafka is found at run time, never at build time: the copy confluent-kafka's wheel ships
(``site-packages/confluent_kafka.libs/librdkafka-*.so.1``, or ``confluent_kafka/.dylibs`` on macOS), else the
system's ``librdkafka.so.1``. The native path is unavailable when the extension was not built, no librdkafka
loads, or the configuration needs a Python callback (the OAUTHBEARER token provider); ``readPath=auto`` then
reads through the Python path, logged once per process at INFO.
"""

from __future__ import annotations

import glob
import importlib
import importlib.util
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from types import ModuleType

import pyarrow as pa

from .. import errors
from ..client_conf import TOKEN_PROVIDER_KEY
from ..input_partition import KafkaRange
from ..options import READ_PATH
from ..schema import kafka_arrow_schema
from .read_settings import KafkaReadSettings

__all__ = ["native_unavailable_reason", "choose_read_path", "NativeBackend", "native_consumer_class",
           "new_native_consumer", "forward_librdkafka_logs"]

log = logging.getLogger(__name__)

# librdkafka's log lines go where the Python path's go (consumer_cache gives confluent-kafka this logger)
_LIBRDKAFKA_LOG = logging.getLogger("spark_samza_source.kafka.executor.consumer_cache")
_SYSLOG_TO_LOGGING = {0: logging.CRITICAL, 1: logging.CRITICAL, 2: logging.CRITICAL, 3: logging.ERROR,
                      4: logging.WARNING, 5: logging.INFO, 6: logging.INFO, 7: logging.DEBUG}

#: set when this installation has no compiled reader at all: the pure ``py3-none-any`` wheel, or a build from the
#: sdist where no C compiler or Python headers were found. Said once, at import, at INFO: the read path is then
#: known before any read runs, and ``readPath=native`` is refused with this reason.
NOT_INSTALLED = ("the native reader extension is not built into this installation (the pure py3-none-any wheel, "
                 "or a build from source without a C compiler)")
if importlib.util.find_spec(f"{__package__}._native_reader") is None:
    log.info("samza-kafka: %s; Kafka reads go through the Python path", NOT_INSTALLED)

_state_lock = threading.Lock()
_loaded: tuple[ModuleType | None, str | None] | None = None  # (extension module, why unavailable)
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


def _load() -> tuple[ModuleType | None, str | None]:
    global _loaded
    with _state_lock:
        if _loaded is None:
            _loaded = _load_extension()
        return _loaded


def _load_extension() -> tuple[ModuleType | None, str | None]:
    if importlib.util.find_spec(f"{__package__}._native_reader") is None:
        return None, NOT_INSTALLED
    try:
        # imported by name: the compiled extension has no stub, so a static import of it cannot be checked
        ext = importlib.import_module(f"{__package__}._native_reader")
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
        return _chosen("python", f"option '{READ_PATH.name}' is 'python'")
    why = native_unavailable_reason()
    if why is None and TOKEN_PROVIDER_KEY in client_conf:
        why = "the OAUTHBEARER token provider (a Python callback) needs the Python consumer"
    if why is None:
        return _chosen("native", "extension and librdkafka loaded")
    if asked == "native":
        raise errors.native_reader_unavailable(why, asked=True, read_path_option=READ_PATH.name)
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
        raise errors.native_reader_unavailable(why, asked=False, read_path_option=READ_PATH.name)
    return ext.NativeConsumer


def new_native_consumer(conf: dict[str, str]):
    """A native consumer for the cache (``consumer_cache.native_cache``): ``conf`` is ``consumer_config``'s."""
    consumer_class = native_consumer_class()
    try:
        return consumer_class(sorted(conf.items()))
    except (RuntimeError, ValueError) as err:  # names a property, never a value
        raise errors.consumer_not_created(conf.get('bootstrap.servers', '?'), err) from None


def forward_librdkafka_logs(consumer) -> None:
    """Hand the log lines librdkafka's threads kept in ``consumer`` to Python logging (a bounded buffer in C:
    those threads never take the GIL)."""
    lines, dropped = consumer.logs()
    for level, text in lines:
        _LIBRDKAFKA_LOG.log(_SYSLOG_TO_LOGGING.get(level, logging.DEBUG), "%s", text)
    if dropped:
        _LIBRDKAFKA_LOG.debug("%d earlier librdkafka log lines of this consumer were dropped", dropped)


class NativeBackend:
    """The native path's part of a read (read_control.ReadBackend) over a borrowed native consumer: the records
    are routed, kept and converted in C; the decisions are :class:`~.read_control.RangeReadControl`'s.

    The consumer's methods are bound directly where their signatures match, so a call from the controller costs
    no Python frame of ours."""

    query_errors: tuple[type[BaseException], ...] = (RuntimeError,)

    def __init__(self, consumer, task: str, ranges: Sequence[KafkaRange], include_headers: bool) -> None:
        self.c = consumer
        self.task = task
        self.ranges = [(r.topic, r.partition, r.start, r.end) for r in ranges]
        self.include_headers = include_headers
        self.schema = kafka_arrow_schema(include_headers)
        self.state, self.pause, self.finish = consumer.state, consumer.pause_range, consumer.finish
        self.set_next, self.reposition, self.positions = consumer.set_next, consumer.reposition, consumer.positions
        self.watermarks, self.partition_exists = consumer.watermarks, consumer.partition_exists
        self.cut = consumer.cut

    def start(self) -> None:
        self.c.set_ranges(self.task, self.include_headers, self.ranges)
        self.c.assign()
        forward_librdkafka_logs(self.c)  # what an idle cached consumer logged meanwhile

    def stop(self) -> None:
        forward_librdkafka_logs(self.c)

    def fetch(self, want: int, wait_ms: int) -> tuple[int, int, bool, list[tuple]]:
        """One consume call, routed and range-checked in C; librdkafka's log lines follow at once."""
        fetched = self.c.fetch(want, wait_ms)
        forward_librdkafka_logs(self.c)
        return fetched

    def emit(self, i: int, rows: int) -> pa.RecordBatch:
        """The next ``rows`` records of range ``i``, built in C and imported through the Arrow C Data Interface."""
        return pa.RecordBatch._import_from_c(self.c.emit(i, rows), self.schema)
