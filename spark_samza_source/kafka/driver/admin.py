"""Driver-side Kafka metadata: partition counts, watermarks, offsets for timestamps, consumer-group mirror.

Everything goes through confluent-kafka (librdkafka).  Three rules shape this module:

* **Bulk, not per partition.** Spark calls ``latestOffset`` at every trigger; with 1,000 partitions a
  per-partition ``get_watermark_offsets`` loop costs seconds.  ``Consumer.offsets_for_times`` takes many
  partitions in one request per leader, so ``watermarks`` issues the *earliest* and *latest* lookups together, in
  calls of :data:`OFFSETS_PER_CALL` partitions run side by side, and waits for all of them.
* **Offsets through a consumer handle, not the AdminClient.** librdkafka 2.16's AdminClient, while a ListOffsets
  request waits for a partition's leader whose process died (its port refuses connections until the controllers
  fence it and elect another), reconnects to that broker in a loop without its reconnect backoff: about 16,000
  connection attempts a second from one driver, for as long as the request waits (measured on a replicated Apache
  Kafka cluster; ``reconnect.backoff.ms``, ``retry.backoff.ms`` and ``socket.connection.setup.timeout.ms`` do not
  change it). That burns a core of the driver, floods the broker's host with connections, and on the 2-core test
  machines starved the kernel until the controllers themselves stalled. The consumer's ListOffsets path waits for
  the broker with the normal backoff (5 attempts in 5 s), and its lookups were no slower (10,000 partitions'
  watermarks in 0.11 s, 0.07 CPU-s; through the AdminClient 0.14-0.19 s, 0.11-0.14 CPU-s).
* **Bounded.** Every call has a deadline (``api_timeout_ms``, default 30 s; librdkafka's own retries happen
  inside it), and a timeout or failure becomes a :class:`KafkaSourceError` naming the operation, the topics and
  the bootstrap servers -- never another configuration value (SASL passwords live in the client config).
* **Same isolation level as the executors.** The "latest" offset is the high watermark under
  ``read_uncommitted`` (Spark's default, and ours) but the last stable offset under ``read_committed``; the
  readers stop at the offsets planned here, so both sides must use the same ``isolation.level``.

**A client that stops answering is replaced.** On a replicated cluster librdkafka's AdminClient can stay wedged
after a node is lost: DescribeTopics keeps being routed to the controller it last knew ("Timed out waiting for
controller" until the whole retry time runs out), and after the group coordinator's node restarts every later
OffsetCommit from the same client times out. An attempt that times out therefore retires its client and the next
attempt makes a new one, which asks the live brokers afresh. The consumer-group mirror has a client of its own, so
its failures (a mirror for tools, never allowed to fail the query) cannot wedge the client every trigger plans with;
it is a consumer handle of the group's, not an AdminClient (``group_client.py``: librdkafka's AdminClient aborts
the process when a group request that timed out meets its coordinator coming back).

Clients are created lazily: building a ``KafkaAdmin`` does no I/O, so it is cheap in ``__init__`` of a reader.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from ...core.errors import InternalError
from ...options.secrets import scrub
from .. import errors
from ..client_conf import LOOKUP_GROUP_ID, isolation_level_of, with_callbacks
from ..errors import KafkaSourceError
from ..options import (
    ASSIGN,
    DROP_TOPICS,
    GROUP_ID_PREFIX,
    KAFKA_GROUP_ID,
    OAUTHBEARER_TOKEN_PROVIDER,
    SUBSCRIBE,
)
from ..security_failures import SecurityWatch, WatchingLogger, key_unreadable
from .group_client import GroupClient, is_refusal

__all__ = ["KafkaAdmin", "DEFAULT_API_TIMEOUT_MS", "isolation_level_of"]

log = logging.getLogger(__name__)

DEFAULT_API_TIMEOUT_MS = 30_000
_RETRY_BACKOFF_S = 0.2
_ATTEMPT_S = 10.0  # each attempt of a retried call gets this (doubled after each timeout), at most what is left
# until the cluster has answered this client once: a broker refusing our login (librdkafka retries it inside the
# call) is reported after this, not after a whole attempt
_FIRST_CONTACT_ATTEMPT_S = 2.0
# Errors meaning "this topic or partition does not exist (any more)".
_MISSING = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}
# Broker errors Kafka's clients retry (its RetriableException kinds) that confluent-kafka does not flag as retriable
# when it hands them back per partition or per topic: after CreatePartitions, Kafka answers ListOffsets for a new
# partition with NOT_LEADER_OR_FOLLOWER until the broker has applied its leadership; a leader election answers
# LEADER_NOT_AVAILABLE or a stale leader epoch.
_RETRIABLE = {
    KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._DESTROY_BROKER,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.REPLICA_NOT_AVAILABLE, KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.FENCED_LEADER_EPOCH, KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NETWORK_EXCEPTION, KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.KAFKA_STORAGE_ERROR,
}
# Of those, the answers of leadership or a coordinator moving, which Kafka settles in moments (a partition just added
# answers NOT_LEADER_OR_FOLLOWER until its leader serves it): retried without a warning unless they last this long,
# so growing a topic does not log an outage
_MOMENTARY = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.FENCED_LEADER_EPOCH,
              KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.REPLICA_NOT_AVAILABLE, KafkaError.OFFSET_NOT_AVAILABLE,
              KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.COORDINATOR_LOAD_IN_PROGRESS}
_MOMENTARY_GRACE_S = 5.0
# retired clients kept referenced a while: destroying a client whose requests are still pending fails them at once
_RETIRED_KEPT = 3
_PLANNING, _OFFSETS = "planning", "offset lookups"
#: what a group with active members answers an OffsetCommit from outside it (generation -1, no member id)
_GROUP_BUSY = KafkaError.UNKNOWN_MEMBER_ID
#: How long one DescribeTopics (topic IDs, every trigger) may wait. librdkafka 2.16 sends it to the node it takes
#: for the controller, and while that node is dead (its port refusing, before the controllers fence it) the
#: AdminClient reconnects to it in a loop without backoff (~13,000 attempts a second, measured) until the request
#: times out: a short request bounds that, the attempt's timeout retires the client, and the next one asks the live
#: nodes afresh. A live node answers in milliseconds; one that is slow to (thousands of partitions on a loaded
#: driver) gets twice the time at each timeout, up to the maximum.
_DESCRIBE_ATTEMPT_S, _DESCRIBE_ATTEMPT_MAX_S = 3.0, 60.0
#: offset lookups in flight at once: 10,000 partitions' watermarks are 40 calls of OFFSETS_PER_CALL, each mostly a
#: wait on the broker with the GIL released
_LOOKUP_THREADS = 8
_ZERO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"
#: partitions per ``list_offsets`` call: what one call costs in confluent-kafka 2.16 / librdkafka grows with the
#: square of its partitions (measured on one broker: 1,000 in 0.02 s, 10,000 in 3.1 s, the same 10,000 in calls of
#: 500 in 0.3 s; docs/performance.md), so a wide job's watermarks go in calls of this size, all issued at once
#: (still one round trip: the requests are pipelined to each leader, none waits for another)
OFFSETS_PER_CALL = 500  # Kafka's Uuid.ZERO_UUID in base64: "no topic ID"

TP = tuple[str, int]
T = TypeVar("T")
#: one ListOffsets call issued: how many partitions it asked for, and the future of its whole answer
_OffsetsCall = tuple[int, Future]


class KafkaAdmin:
    """Metadata and offset operations against one Kafka cluster (lazy clients, bounded calls).

    ``client_conf`` is librdkafka configuration without the ``kafka.`` prefix (``bootstrap.servers``, SASL, SSL
    ...).  It is never logged nor put into error messages, except ``bootstrap.servers``.
    """

    def __init__(self, client_conf: Mapping[str, str], *, api_timeout_ms: int = DEFAULT_API_TIMEOUT_MS,
                 timeout_option: str | None = None) -> None:
        self._conf = {str(k): str(v) for k, v in client_conf.items()}
        self._timeout_option = timeout_option  # the option that set api_timeout_ms, named in timeout errors
        self._timeout_s = max(0.001, api_timeout_ms / 1000.0)
        self._isolation = isolation_level_of(self._conf)
        self._clients: dict[str, Any] = {}  # per use: planning (AdminClient), offsets (Consumer), a group's mirror
        self._retired: list[Any] = []
        self._pool: ThreadPoolExecutor | None = None  # runs the offset lookups side by side
        self._describe_s = _DESCRIBE_ATTEMPT_S
        # what librdkafka reports about our security settings (a refused password, an untrusted certificate ...)
        self._watch = SecurityWatch(self._conf, self._where(), token_provider_option=OAUTHBEARER_TOKEN_PROVIDER.name)
        self._answered = False  # a call has succeeded: the cluster took our credentials
        self._lock = threading.Lock()

    # ---- plumbing -----------------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return self._conf.get("bootstrap.servers", "?")

    def _where(self) -> str:
        return f"(bootstrap servers {self.bootstrap_servers})"

    def _said(self, err: BaseException | None) -> str:
        """What librdkafka said, without a secret of the client's configuration (it may quote a key's path)."""
        return scrub(_msg(err), self._conf)

    def _client_conf(self) -> dict[str, Any]:
        conf: dict[str, Any] = with_callbacks(self._conf)  # the OAUTHBEARER token provider as oauth_cb
        conf["logger"] = WatchingLogger(log, self._watch)  # librdkafka logs go to Python logging, not stderr
        return conf

    @property
    def admin(self) -> AdminClient:
        """The client every planning call uses (metadata, offsets)."""
        return self._client(_PLANNING)

    @property
    def _admin(self) -> AdminClient | None:
        return self._clients.get(_PLANNING)

    def _client(self, use: str) -> AdminClient:
        def settings() -> dict[str, Any]:
            conf = self._client_conf()
            # Consumer-only properties would only produce librdkafka warnings on an admin (producer) handle.
            for key in ("isolation.level", "group.id", "auto.offset.reset", "enable.auto.commit"):
                conf.pop(key, None)
            return conf

        return self._made(use, AdminClient, settings)

    def _offsets_consumer(self) -> Consumer:
        """The consumer handle the offset lookups go through (see the module docstring); it never subscribes,
        commits or fetches. Its ``group.id`` is the readers' (the user's ``kafka.group.id`` if set), so it needs
        no permission the executors' consumers do not."""
        def settings() -> dict[str, Any]:
            conf = self._client_conf()
            conf.setdefault("group.id", LOOKUP_GROUP_ID)
            conf["isolation.level"] = self._isolation
            conf["enable.auto.commit"] = "false"
            return conf

        return self._made(_OFFSETS, Consumer, settings)

    def _made(self, name: str, kind: Callable[[dict[str, Any]], Any], settings: Callable[[], dict[str, Any]]) -> Any:
        """The client kept under ``name``, made as ``kind(settings())`` when there is none; librdkafka's refusal
        of the configuration is reported without a secret of it."""
        with self._lock:
            client = self._clients.get(name)
            if client is None:
                conf = settings()
                conf["error_cb"] = self._on_client_error
                try:
                    client = self._clients[name] = kind(conf)
                except KafkaException as err:
                    said = self._said(err)
                    raise (key_unreadable(said, self._where())
                           or errors.admin_client_not_created(self._where(), said)) from None
            return client

    def _lookup_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(_LOOKUP_THREADS, thread_name_prefix="samza-kafka-offsets")
            return self._pool

    def _replace_client(self, use: str) -> None:
        """Retire ``use``'s client (see the module docstring); the next call makes a new one. The retired one is
        kept referenced for a while so its pending requests end by their own timeouts, not by its destruction.
        Planning's offset consumer goes with its AdminClient: either may be the one that stopped answering."""
        with self._lock:
            for name in (use, _OFFSETS) if use == _PLANNING else (use,):
                client = self._clients.pop(name, None)
                if client is not None:
                    self._retired = [*self._retired, client][-_RETIRED_KEPT:]

    def _on_client_error(self, err: KafkaError) -> None:
        self._watch.on_error(err.name(), err.str())

    def _security_failure(self) -> KafkaSourceError | None:
        """A clear error when the broker refused our credentials or certificate, or we do not speak its
        listener's protocol (``security_failures.py``): retrying cannot help, so it ends the call."""
        for client in (self._admin, self._clients.get(_OFFSETS)):
            if client is not None:
                client.poll(0)  # serves error_cb and the log (the offset consumer is never polled otherwise)
        return self._watch.failure

    def _deadline(self) -> float:
        return time.monotonic() + self._timeout_s

    def _retrying(self, what: str, fn: Callable[[float], T], use: str = _PLANNING) -> T:
        """Run ``fn(seconds)``, retrying retriable Kafka errors until the API timeout; raise a clear error.

        Each attempt gets 10 s, whatever the whole timeout: a client whose view of the cluster is stale (a
        leader that died, a node cut off) waits out the whole time it is given, and only a new client asks the
        live nodes afresh, so a long ``endpoint.retryTimeout`` must not mean a long wait before that happens. The
        first failure is logged (once per call) while retries go on. Until the cluster has answered once,
        attempts last 2 s, so that credentials it refuses (which librdkafka retries inside the call) fail the call
        within seconds; a slow first answer is waited for, unlogged, meanwhile.

        An attempt that timed out gives the next one twice its time: a call whose answer takes longer than a slice
        (the watermarks of 10,000 partitions on a loaded driver took more than 10 s) would otherwise time out, and
        retire its client, at every attempt until the deadline, and fail a query the cluster serves."""
        started = time.monotonic()
        deadline = self._deadline()
        stretch = 1  # doubled by every attempt that timed out (below)
        last: BaseException | None = None
        momentary = False  # the last failure was leadership moving (see _MOMENTARY)
        warned = False  # one line per call that has to retry: operators see an outage while it is ridden out
        renewed = started  # when the clients were last replaced (below)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                # Attempts in slices, so an outage is seen (and logged) while it is ridden out, not only at the end.
                result = fn(min(left, (_ATTEMPT_S if self._answered else _FIRST_CONTACT_ATTEMPT_S) * stretch))
                self._answered = True
                self._watch.answered()
                return result
            except KafkaSourceError:
                raise
            except KafkaException as err:
                last = err
                kerr = err.args[0] if err.args and isinstance(err.args[0], KafkaError) else None
                if kerr is not None and not (kerr.retriable() or kerr.code() in _RETRIABLE or _no_leader(kerr)):
                    raise errors.operation_failed(what, self._where(), self._said(err)) from None
                momentary = kerr is not None and kerr.code() in _MOMENTARY
                if kerr is not None and kerr.code() == KafkaError._TIMED_OUT:
                    self._replace_client(use)
                    stretch *= 2
                elif momentary and time.monotonic() - renewed >= _MOMENTARY_GRACE_S:
                    # leadership that stays "moving" past the grace may be this client's stale view of it (a
                    # consumer handle's ListOffsets kept going to a node that had handed its partitions over):
                    # a new client asks the live nodes afresh
                    self._replace_client(use)
                    renewed = time.monotonic()
            except TimeoutError as err:  # concurrent.futures.TimeoutError is TimeoutError on 3.11
                last, momentary = err, False
                self._replace_client(use)
                stretch *= 2
            refused = self._security_failure()
            if refused is not None:
                raise refused
            left = deadline - time.monotonic()
            waited = time.monotonic() - started
            if not warned and left > 0 and (self._answered or waited >= _ATTEMPT_S) \
                    and (not momentary or waited >= _MOMENTARY_GRACE_S):
                warned = True
                log.warning("Kafka operation '%s' failed %s: %s; retrying for up to %.0f s more%s", what,
                            self._where(), self._said(last) or type(last).__name__, left,
                            f" ({self._timeout_option})" if self._timeout_option else "")
            time.sleep(min(_RETRY_BACKOFF_S, max(0.0, left)))
        raise errors.operation_timed_out(what, self._timeout_s, self._timeout_option, self._where(),
                                         self._said(last) if last is not None and str(last) else "")

    # ---- topics -------------------------------------------------------------------------------------------
    def _topic_partitions(self, left: float) -> dict[str, int | KafkaError]:
        """Existing topics -> partition count, or the topic's metadata error when it is temporarily incomplete."""
        md = self.admin.list_topics(timeout=left)
        out: dict[str, int | KafkaError] = {}
        for name, tm in md.topics.items():
            if tm.error is None:
                out[name] = len(tm.partitions)
            elif tm.error.code() not in _MISSING:
                out[name] = tm.error
        return out

    def list_partition_counts(
        self, topics: Iterable[str] | None = None, pattern: str | re.Pattern[str] | None = None
    ) -> dict[str, int]:
        """Partition count per topic, sorted by topic name.

        ``topics``: exactly these topics; a missing one raises :class:`KafkaSourceError` naming it.
        ``pattern``: every non-internal topic (not starting with ``__``) whose whole name matches the regex.
        One Metadata request for the whole cluster (asking for named topics could auto-create them on brokers
        with ``auto.create.topics.enable``).  Topics whose metadata is temporarily incomplete (no leader yet,
        just created) are retried until the API timeout.
        """
        if (topics is None) == (pattern is None):
            raise InternalError("give exactly one of topics or pattern")
        wanted = sorted(set(topics)) if topics is not None else None
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        if wanted is not None:
            what = f"list partitions of {', '.join(wanted)}"
        else:
            assert regex is not None  # exactly one of topics and pattern, checked above
            what = f"list topics matching {regex.pattern!r}"

        def attempt(left: float) -> dict[str, int]:
            found = self._topic_partitions(left)
            if wanted is not None:
                missing = [t for t in wanted if t not in found]
                if missing:
                    raise errors.topics_not_found(missing, self._where(), subscribe_option=SUBSCRIBE.name,
                                                  assign_option=ASSIGN.name, drop_topics_option=DROP_TOPICS.name)
                names = wanted
            else:
                assert regex is not None  # exactly one of topics and pattern, checked above
                names = sorted(t for t in found if not t.startswith("__") and regex.fullmatch(t))
            for t in names:  # incomplete metadata (e.g. just created): retried until the API timeout
                count = found[t]
                if isinstance(count, KafkaError):
                    raise KafkaException(count)
                if count == 0:
                    raise KafkaException(KafkaError(KafkaError.LEADER_NOT_AVAILABLE, f"topic {t!r} has no partitions"))
            return {t: int(found[t]) for t in names}  # type: ignore[arg-type]

        return self._retrying(what, attempt)

    def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        """Kafka's topic ID (base64, as Kafka's tools show it) per existing topic; missing topics are left out.

        A topic deleted and re-created under the same name gets a new ID. One DescribeTopics call for all.
        Brokers too old to have topic IDs (before Kafka 2.8) answer the all-zero ID: left out too.
        """
        wanted = sorted(set(topics))
        if not wanted:
            return {}

        def attempt(left: float) -> dict[str, str]:
            return self._collect_topic_ids(self._describe(wanted, left), time.monotonic() + left)

        return self._retrying(f"topic IDs of {_describe_topics(wanted)}", attempt)

    def _describe(self, wanted: list[str], left: float) -> dict[str, Any]:
        """DescribeTopics, waiting at most :attr:`_describe_s` (see :data:`_DESCRIBE_ATTEMPT_S`)."""
        return self.admin.describe_topics(TopicCollection(wanted), request_timeout=min(left, self._describe_s))

    def _collect_topic_ids(self, futures: Mapping[str, Any], deadline: float) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, fut in futures.items():
            try:
                desc = fut.result(timeout=max(0.001, deadline - time.monotonic()))
            except KafkaException as err:
                code = err.args[0].code() if err.args and isinstance(err.args[0], KafkaError) else None
                if code in _MISSING:
                    continue
                if code == KafkaError._TIMED_OUT:  # a slow answer gets twice the time next (none of a dead node)
                    self._describe_s = min(self._describe_s * 2, _DESCRIBE_ATTEMPT_MAX_S)
                raise
            topic_id = str(desc.topic_id) if desc.topic_id is not None else ""
            if topic_id and topic_id != _ZERO_TOPIC_ID:
                out[name] = topic_id
        self._describe_s = _DESCRIBE_ATTEMPT_S
        return dict(sorted(out.items()))

    # ---- offsets ------------------------------------------------------------------------------------------
    def _list_offsets(self, specs: dict[str, Callable[[TP], int]], tps: list[TP], left: float,
                      ) -> dict[str, dict[TP, Any]]:
        """One ListOffsets call per spec kind and :data:`OFFSETS_PER_CALL` partitions, all issued before
        waiting (:meth:`_issue_offsets`). Missing partitions are omitted."""
        return self._collect_offsets(self._issue_offsets(specs, tps, left), time.monotonic() + left)

    def _issue_offsets(self, specs: dict[str, Callable[[TP], int]], tps: list[TP], left: float,
                       ) -> dict[str, list[_OffsetsCall]]:
        """Each kind's lookups (``spec(tp)`` is what ListOffsets asks: a time in ms, or :data:`_EARLIEST` /
        :data:`_LATEST`), in calls of :data:`OFFSETS_PER_CALL` partitions handed to the lookup threads at once."""
        deadline = time.monotonic() + left
        consumer, pool = self._offsets_consumer(), self._lookup_pool()
        issued: dict[str, list[_OffsetsCall]] = {}
        for kind, spec in specs.items():
            issued[kind] = []
            for first in range(0, len(tps), OFFSETS_PER_CALL):
                request = [TopicPartition(t, p, spec((t, p))) for t, p in tps[first:first + OFFSETS_PER_CALL]]
                issued[kind].append((len(request), pool.submit(_look_up_offsets, consumer, request, deadline)))
        return issued

    @staticmethod
    def _collect_offsets(calls: dict[str, list[_OffsetsCall]], deadline: float) -> dict[str, dict[TP, Any]]:
        """Each call's answer, per kind: (topic, partition) -> ``ListOffsetsResultInfo``. A partition answered with
        a "does not exist" error is left out; any other error is raised, as ``list_offsets``'s own futures do."""
        out: dict[str, dict[TP, Any]] = {}
        for kind, kind_calls in calls.items():
            res: dict[TP, Any] = {}
            for asked, future in kind_calls:
                answers = future.result(timeout=max(0.001, deadline - time.monotonic()))
                if len(answers) != asked:  # what AdminClient.list_offsets raises in every partition's future
                    raise RuntimeError(f"Results length {len(answers)} is different from future-map length {asked}")
                for tp, answer in answers.items():
                    if isinstance(answer, KafkaError):
                        if answer.code() in _MISSING:
                            continue
                        raise KafkaException(answer)
                    res[(tp.topic, tp.partition)] = answer
            out[kind] = res
        return out

    def watermarks(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        """``(low, high)`` per existing partition: log start offset and high watermark (LSO if read_committed).

        Partitions that do not exist are left out (the planner reports them as lost).  Two bulk requests.
        """
        tps = sorted(set(tps))
        if not tps:
            return {}

        def attempt(left: float) -> dict[TP, tuple[int, int]]:
            return _low_high(self._list_offsets(_WATERMARK_SPECS, tps, left), tps)

        return self._retrying(f"watermarks of {_describe_tps(tps)}", attempt)

    def watermarks_and_topic_ids(self, tps: Iterable[TP], topics: Iterable[str],
                                 ) -> tuple[dict[TP, tuple[int, int]], dict[str, str]]:
        """``watermarks(tps)`` and ``topic_ids(topics)`` in one round trip: the DescribeTopics and both
        ListOffsets requests are issued before any answer is awaited (every trigger needs both)."""
        tps, wanted = sorted(set(tps)), sorted(set(topics))

        def attempt(left: float) -> tuple[dict[TP, tuple[int, int]], dict[str, str]]:
            deadline = time.monotonic() + left
            described = self._describe(wanted, left) if wanted else {}
            offsets = self._issue_offsets(_WATERMARK_SPECS, tps, left) if tps else {}
            marks = _low_high(self._collect_offsets(offsets, deadline), tps) if tps else {}
            return marks, self._collect_topic_ids(described, deadline)

        what = f"watermarks of {_describe_tps(tps)} and topic IDs of {_describe_topics(wanted)}"
        return self._retrying(what, attempt)

    def offsets_for_times(self, requests: Mapping[TP, int]) -> dict[TP, int | None]:
        """Earliest offset whose timestamp is >= the given epoch-ms timestamp, per partition.

        ``None`` when the partition has no record at or after that time (Kafka answers offset -1).  Missing
        partitions are left out.
        """
        tps = sorted(requests)
        if not tps:
            return {}

        def attempt(left: float) -> dict[TP, int | None]:
            res = self._list_offsets({"ts": lambda tp: int(requests[tp])}, tps, left)["ts"]
            unknown = sorted(tp for tp, info in res.items() if info.offset < -1)  # -1: no record; -1001: not known
            if unknown:
                raise KafkaException(KafkaError(KafkaError.OFFSET_NOT_AVAILABLE,
                                                f"offsets of {_describe_tps(unknown)} not known yet"))
            return {tp: (info.offset if info.offset >= 0 else None) for tp, info in res.items()}

        return self._retrying(f"offsets for timestamps of {_describe_tps(tps)}", attempt)

    # ---- consumer group mirror ----------------------------------------------------------------------------
    def _group_client(self, group_id: str) -> GroupClient:
        """The handle that writes and reads ``group_id``'s offsets (``group_client.py``: not the AdminClient)."""
        def settings() -> dict[str, Any]:
            conf = self._client_conf()
            conf["group.id"] = group_id
            return conf

        return self._made(_group_use(group_id), GroupClient, settings)

    def commit_group_offsets(self, group_id: str, offsets: Mapping[TP, int]) -> None:
        """Commit ``offsets`` (next offset to read, Kafka convention) to consumer group ``group_id``.

        A mirror for standard lag tools (``kafka-consumer-groups``, Burrow, ...), written the way Kafka's own
        ``kafka-consumer-groups --reset-offsets`` does: an OffsetCommit from outside the group, to its coordinator,
        so no consumer joins and no poll loop runs between batches. Kafka accepts it only while the group has no
        active members; a group some other consumer is running in answers UNKNOWN_MEMBER_ID, reported here as
        such (why Spark warns against sharing a group id).
        """
        if not offsets:
            return
        tps = sorted(offsets)
        what = f"commit offsets of group '{group_id}' for {_describe_tps(tps)}"
        request = [TopicPartition(t, p, int(offsets[(t, p)])) for t, p in tps]

        def attempt(left: float) -> None:
            try:
                answered = self._group_client(group_id).commit(request, left)
            except KafkaException as err:
                kerr = err.args[0] if err.args and isinstance(err.args[0], KafkaError) else None
                if kerr is not None and kerr.code() == _GROUP_BUSY:
                    raise self._group_busy(group_id) from None
                if kerr is not None and is_refusal(kerr):
                    self._replace_client(_group_use(group_id))
                raise
            bad = [tp for tp in answered if tp.error is not None]
            if bad:
                if bad[0].error.code() == _GROUP_BUSY:
                    raise self._group_busy(group_id)
                raise KafkaException(bad[0].error)

        self._retrying(what, attempt, use=_group_use(group_id))

    def _group_busy(self, group_id: str) -> KafkaSourceError:
        return errors.group_has_active_members(group_id, self._where(), group_id_option=KAFKA_GROUP_ID.name,
                                               group_id_prefix_option=GROUP_ID_PREFIX.name)

    def group_offsets(self, group_id: str, tps: Iterable[TP]) -> dict[TP, int | None]:
        """Offsets committed by consumer group ``group_id`` (``None`` where the group has none)."""
        tps = sorted(set(tps))
        if not tps:
            return {}

        def attempt(left: float) -> dict[TP, int | None]:
            answered = self._group_client(group_id).committed([TopicPartition(t, p) for t, p in tps], left)
            out: dict[TP, int | None] = {}
            for tp in answered:
                if tp.error is not None and tp.error.code() not in _MISSING:
                    raise KafkaException(tp.error)
                out[(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else None
            return out

        return self._retrying(f"committed offsets of group '{group_id}' for {_describe_tps(tps)}", attempt,
                              use=_group_use(group_id))

    # ---- lifecycle ----------------------------------------------------------------------------------------
    def close(self) -> None:
        """Drop the clients (AdminClient has no close; the offset consumer never joined a group, so dropping it
        is its close) and stop the lookup threads."""
        with self._lock:
            self._clients.clear()
            self._retired.clear()
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> KafkaAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _group_use(group_id: str) -> str:
    """The name a group's client is kept (and retired) under."""
    return f"group mirror of '{group_id}'"


def _msg(err: BaseException | None) -> str:
    if err is None:
        return ""
    if isinstance(err, KafkaException) and err.args and isinstance(err.args[0], KafkaError):
        return err.args[0].str()
    return str(err)


def _look_up_offsets(consumer: Consumer, request: list[TopicPartition], deadline: float,
                     ) -> dict[TopicPartition, Any]:
    """One ListOffsets lookup (``Consumer.offsets_for_times``: each partition's offset field holds what is asked):
    ``TopicPartition`` -> the answered ``TopicPartition`` (its ``offset``) or its ``KafkaError``.

    A consumer handle asks the leaders its metadata cache names, and that cache may predate a topic's growth (the
    planner learns of a new partition from a fresh listing): a partition answered as unknown is asked again once
    after its topic's metadata is refreshed, and only then left out as missing."""
    answers = _ask_offsets(consumer, request, deadline)
    unknown = [tp for tp in request if _is_missing(answers[TopicPartition(tp.topic, tp.partition)])]
    if unknown:
        for topic in sorted({tp.topic for tp in unknown}):
            consumer.list_topics(topic, timeout=max(0.001, deadline - time.monotonic()))
        answers.update(_ask_offsets(consumer, unknown, deadline))
    return answers


def _ask_offsets(consumer: Consumer, request: list[TopicPartition], deadline: float) -> dict[TopicPartition, Any]:
    """``offsets_for_times`` with what is left of ``deadline``. A lookup whose deadline passed while it waited for a
    thread is not sent: the attempt that issued it has given up on it, and a retry's lookups would otherwise queue
    behind it."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "offset lookup not sent: its attempt timed out"))
    try:
        answered = consumer.offsets_for_times(request, timeout=left)
    except KafkaException as err:
        kerr = err.args[0] if err.args else None
        if not (isinstance(kerr, KafkaError) and kerr.code() in _MISSING):
            raise
        return _missing_or_leaderless(consumer, request, kerr, deadline)
    return {TopicPartition(tp.topic, tp.partition): (tp.error if tp.error is not None else tp) for tp in answered}


def _is_missing(answer: Any) -> bool:
    return isinstance(answer, KafkaError) and answer.code() in _MISSING


def _missing_or_leaderless(consumer: Consumer, request: list[TopicPartition], err: KafkaError, deadline: float,
                           ) -> dict[TopicPartition, Any]:
    """librdkafka fails a whole lookup as "unknown partition" when it knows a leader for none of its partitions
    (answered one by one, a partition that does not exist is "unknown" beside the others' offsets). Those the
    cluster's metadata does not hold are left out as missing, as they are in a partial answer; if it holds any, that
    partition is waiting for a leader it has not named yet, and the lookup is retried."""
    metadata = consumer.list_topics(timeout=max(0.001, deadline - time.monotonic()))
    waiting = [tp for tp in request
               if tp.topic in metadata.topics and tp.partition in metadata.topics[tp.topic].partitions]
    if waiting:
        raise KafkaException(KafkaError(KafkaError.LEADER_NOT_AVAILABLE, f"no leader known for "
                                        f"{_describe_tps([(tp.topic, tp.partition) for tp in waiting])} yet"))
    return {TopicPartition(tp.topic, tp.partition): err for tp in request}


#: what ListOffsets asks for the log start and the log end (Kafka's EARLIEST_TIMESTAMP and LATEST_TIMESTAMP); the
#: log end is the last stable offset under read_committed, the high watermark otherwise (the consumer's
#: ``isolation.level``)
_EARLIEST, _LATEST = -2, -1
_WATERMARK_SPECS: dict[str, Callable[[TP], int]] = {"low": lambda _: _EARLIEST, "high": lambda _: _LATEST}


def _low_high(res: dict[str, dict[TP, Any]], tps: list[TP]) -> dict[TP, tuple[int, int]]:
    """(log start, high watermark) of every partition both lookups answered (missing partitions are left out).

    A negative offset is no answer: librdkafka reports -1001 (its "offset not known") without an error for a
    partition of a topic created a moment before (seen once, on Apache Kafka, at a load of 4 per core) and while the
    metadata still names a leader that died; taken as a log end it read as a truncation of everything (a false
    data-loss error, or a re-read from offset 0). It is raised as Kafka's OFFSET_NOT_AVAILABLE, which
    ``_retrying`` retries, as it does when the broker says so itself."""
    out = {tp: (res["low"][tp].offset, res["high"][tp].offset) for tp in tps if tp in res["low"] and tp in res["high"]}
    unanswered = sorted(tp for tp, (low, high) in out.items() if low < 0 or high < 0)
    if unanswered:
        raise KafkaException(KafkaError(KafkaError.OFFSET_NOT_AVAILABLE,
                                         f"no offsets yet for {_describe_tps(unanswered)}: {out[unanswered[0]]}"))
    return out


def _describe_topics(topics: list[str], limit: int = 6) -> str:
    return f"{', '.join(topics[:limit])}{' ...' if len(topics) > limit else ''}"


def _describe_tps(tps: list[TP], limit: int = 6) -> str:
    """``orders[0,1,2], clicks[3]``, shortened for thousands of partitions and for hundreds of topics (a
    ``subscribePattern`` job's error named all 100 topics of a 10,000-partition job, 6 KB of one line)."""
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    parts = []
    for t, ps in sorted(by_topic.items())[:limit]:
        shown = ",".join(str(p) for p in sorted(ps)[:limit])
        if len(ps) > limit:
            shown += f",... ({len(ps)} partitions)"
        parts.append(f"{t}[{shown}]")
    if len(by_topic) > limit:
        parts.append(f"... ({len(by_topic)} topics, {len(tps)} partitions)")
    return ", ".join(parts)


def _no_leader(err: KafkaError) -> bool:
    """librdkafka's "Failed to query partition leaders: No leaders found" (_NOENT) while a partition elects a new
    leader: retried like LEADER_NOT_AVAILABLE (other _NOENT answers, such as a group or topic that is not there,
    are final)."""
    return err.code() == KafkaError._NOENT and "leader" in err.str().lower()
