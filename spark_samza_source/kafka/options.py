"""Every option of the ``samza-kafka`` source, in one place: what it is called, what it takes, its default and what
it means (the entries and :data:`KAFKA`), how the values become the source's types (:class:`KafkaSourceOptions`),
and what only a batch read takes (:class:`KafkaBoundedOptions`).

Spark's Kafka option names where the meaning is the same, the common job options (``options/common.py``), and the
names refused with a reason. To add an option: declare it here (name, kind, description, default), add it to
:data:`KAFKA`, read it into :class:`KafkaSourceOptions` with ``ENTRY.read(opts)``, then regenerate
``docs/options.md`` (``make options-doc``).

Parsed once on the driver when the query starts (``DataSource.streamReader``), so every bad value fails the query
before anything is read. The result is plain, picklable data: Spark ships the reader to executors.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from ..core.broadcast import parse_broadcast_inputs
from ..core.copartition import CoPartitionGroup, parse_copartition
from ..core.errors import ConfigError
from ..core.model import SystemStreamPartition
from ..metadata import redact_uri
from ..options import common
from ..options.common import (
    GROUPING_OPTIONS,
    JOB_OPTIONS,
    MAX_RECORDS_PER_PARTITION_OPTION,
    MIN_PARTITIONS_OPTION,
    RETRY_TIMEOUT,
    TESTING,
)
from ..options.option import (
    Count,
    Duration,
    Flag,
    Namespace,
    OneOf,
    Option,
    OptionNames,
    OptionSpec,
    Text,
    format_duration,
)
from ..options.secrets import scrub
from ..options.values import Options, json_object, shown
from ..source.job_options import JobOptions
from .client_conf import (
    PYTHON_CALLBACK_SETTINGS,
    TOKEN_PROVIDER_KEY,
    TOKEN_PROVIDER_SETTING,
    librdkafka_near_names,
    librdkafka_problem,
    load_token_provider,
    missing_sasl_provider,
)
from .java_client import translate_java_settings
from .starting import (
    EARLIEST_OFFSET,
    LATEST_OFFSET,
    TIMESTAMP_STRATEGIES,
    TIMESTAMP_STRATEGY_ERROR,
    TIMESTAMP_STRATEGY_LATEST,
    ByTimestamp,
    Earliest,
    Latest,
    SpecificOffsets,
    StartingOffsets,
)

__all__ = ["BOUNDED_ONLY_OPTIONS", "DEFAULT_MAX_ROWS_PER_BATCH", "DEFAULT_POLL_TIMEOUT_MS",
           "DEFAULT_STARTING_OFFSETS", "KAFKA", "KafkaBoundedOptions", "KafkaSourceOptions", "epoch_ms",
           "option_names", "per_partition_numbers"]

log = logging.getLogger(__name__)

SOURCE = "samza-kafka"

# ---- words some values take ------------------------------------------------------------------------------------------
#: ``startingOffsets`` / ``endingOffsets`` words (anything else is per-partition JSON)
EARLIEST, LATEST = "earliest", "latest"
#: ``expansion.ordering``: new partitions wait until their feeders are drained, or are read at once
DRAIN_FIRST, NO_ORDERING = "drain-first", "none"
#: ``startingOffsetsByTimestampStrategy``: ``TIMESTAMP_STRATEGIES``, the words of ``starting.ByTimestamp``, which
#: applies them (``error``, Spark's default, or ``latest``)
#: readPath values: which executor reader (the native one in C over librdkafka, or the Python one)
READ_PATHS = ("auto", "native", "python")

# ---- what is read ----------------------------------------------------------------------------------------------------
BOOTSTRAP_SERVERS = Option(
    "kafka.bootstrap.servers", Text("host:port list"),
    "the brokers, e.g. `broker1:9092,broker2:9092`; every other `kafka.*` option goes to librdkafka",
    default_doc="required")
SUBSCRIBE = Option(
    "subscribe", Text("comma-separated topics"),
    "the topics to read; exactly one of `subscribe`, `subscribePattern`, `assign` is set",
    default_doc="one of three")
SUBSCRIBE_PATTERN = Option(
    "subscribePattern", Text("regular expression"),
    "the topics matching it, re-evaluated every trigger (topics that appear start at earliest)",
    default_doc="one of three")
ASSIGN = Option(
    "assign", Text('JSON `{"orders":[0,1]}`'),
    "exactly these partitions",
    default_doc="one of three")
DROP_TOPICS = Option(
    "dropTopics", Text("comma-separated topics"),
    "topics that may leave the job (deleted, or no longer subscribed): their positions and tasks are forgotten; "
    "without it a topic that left fails the query naming this option")

# ---- job model and partition expansion -------------------------------------------------------------------------------
EXPANSION_ORDERING = Option(
    "expansion.ordering", OneOf((DRAIN_FIRST, NO_ORDERING)),
    "`drain-first` reads a new partition only after the partitions feeding it are drained up to the growth; "
    "`none` reads it at once",
    default=DRAIN_FIRST)
#: Producers learn of new partitions only when they refresh their metadata: the Java client's metadata.max.age.ms
#: and librdkafka's topic.metadata.refresh.interval.ms both default to 5 minutes, and until then they write keys
#: to their old partitions. Five minutes covers producers left at those defaults.
EXPANSION_SETTLE = Option(
    "expansion.settleTime", Duration(),
    "how long after a growth is seen the old partitions keep being drained before the cut: your producers' "
    "metadata refresh (`metadata.max.age.ms`, `topic.metadata.refresh.interval.ms`)",
    default=5 * 60_000)
JOB_MODEL_RESET = Option(
    "jobModel.reset", Flag(),
    "a new checkpoint starts from the job model stored for `job.name` (same tasks); `true` regroups instead",
    default=False)

# ---- where a query starts, and how much a micro-batch reads ----------------------------------------------------------
STARTING_OFFSETS = Option(
    "startingOffsets", Text('`earliest`, `latest` or JSON `{"orders":{"0":23,"1":-2}}`'),
    "where a new checkpoint starts (-2 earliest, -1 latest per partition); Startpoints re-position later. An "
    "offset below the log start is data loss (`failOnDataLoss`); entries naming partitions or topics the query "
    "does not read, or offsets beyond the log end, fail naming them",
    default=LATEST, default_doc="`latest` (batch: `earliest`)")
STARTING_TIMESTAMP = Option(
    "startingTimestamp", Text("epoch ms"),
    "a new checkpoint starts at each partition's first record at or after this time")
STARTING_OFFSETS_BY_TIMESTAMP = Option(
    "startingOffsetsByTimestamp", Text('JSON `{"orders":{"0":1700000000000}}`'),
    "as `startingTimestamp`, per partition")
STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY = Option(
    "startingOffsetsByTimestampStrategy", OneOf(TIMESTAMP_STRATEGIES),
    "a partition with no record at or after the time fails the query (`error`) or starts at its end",
    default=TIMESTAMP_STRATEGY_ERROR)
MAX_OFFSETS_PER_TRIGGER = Option(
    "maxOffsetsPerTrigger", Count(minimum=1),
    "rows per micro-batch, split across partitions in proportion to their backlog")
MIN_OFFSETS_PER_TRIGGER = Option(
    "minOffsetsPerTrigger", Count(minimum=1),
    "a micro-batch waits for at least this many rows, unless `maxTriggerDelay` passed")
MAX_TRIGGER_DELAY = Option(
    "maxTriggerDelay", Duration(),
    "the longest a micro-batch waits for `minOffsetsPerTrigger`",
    default=15 * 60 * 1000)
#: Spark's name and promise (at least this many Spark partitions), reached here by spreading a task's partitions
#: over several input partitions, never by cutting one partition's range (core/split.py; docs/options.md says why)
MIN_PARTITIONS = Option(
    MIN_PARTITIONS_OPTION, Count(minimum=1),
    "a micro-batch is read by at least this many Spark partitions where it holds enough partitions with records: "
    "a task's partitions are spread over several Spark partitions (the `task` column stays the task); unlike "
    "Spark's Kafka source one partition's range is never cut, so each is read in offset order by one Spark task. "
    "Not with `task.broadcast.inputs`",
    default_doc="one Spark partition per task")

# ---- what a row holds, and the executors' reads ----------------------------------------------------------------------
INCLUDE_HEADERS = Option(
    "includeHeaders", Flag(),
    "adds the column `headers array<struct<key:string,value:binary>>`",
    default=False)
MAX_ROWS_PER_ARROW_BATCH = Option(
    "maxRowsPerArrowBatch", Count(minimum=1),
    "rows per Arrow batch handed to Spark",
    default=10_000)
POLL_TIMEOUT = Option(
    "kafkaConsumer.pollTimeoutMs", Duration(minimum_ms=1),
    "how long an executor's read waits for the broker before it fails",
    default=120_000)
READ_PATH = Option(
    "readPath", OneOf(READ_PATHS),
    "the executors' Kafka reader: `auto` the native one (C over librdkafka, in the platform wheel) where it can "
    "run, else the Python one, logged once per executor process at INFO; `native` fails a read where the native "
    "reader cannot run, saying why; `python` always the Python one",
    default="auto")

# ---- consumer group and security -------------------------------------------------------------------------------------
COMMIT_OFFSETS_TO_KAFKA = Option(
    "commitOffsetsToKafka", Flag(),
    "mirror committed positions to the consumer group, so standard lag tools work",
    default=True)
KAFKA_GROUP_ID = Option(
    "kafka.group.id", Text("consumer group"),
    "the consumer group committed positions are mirrored to (not together with `groupIdPrefix`)",
    default_doc="`<groupIdPrefix>-<job.name>`")
GROUP_ID_PREFIX = Option(
    "groupIdPrefix", Text("prefix"),
    "prefix of the default consumer group `<groupIdPrefix>-<job.name>`",
    default="samza")
#: its name is the client setting it travels as (``client_conf.py``), under ``kafka.``
OAUTHBEARER_TOKEN_PROVIDER = Option(
    f"kafka.{TOKEN_PROVIDER_SETTING}", Text("dotted path"),
    "a Python function giving SASL/OAUTHBEARER tokens, called as librdkafka's `oauth_cb` on driver and executors")

# ---- batch reads (spark.read) ----------------------------------------------------------------------------------------
ENDING_OFFSETS = Option(
    "endingOffsets", Text('`latest` or JSON `{"orders":{"0":100,"1":-1}}`'),
    "where a batch read ends (exclusive; -1 latest per partition)",
    default=LATEST, bounded_only=True)
ENDING_TIMESTAMP = Option(
    "endingTimestamp", Text("epoch ms"),
    "a batch read ends at each partition's first record at or after this time (exclusive), else at its end",
    bounded_only=True)
ENDING_OFFSETS_BY_TIMESTAMP = Option(
    "endingOffsetsByTimestamp", Text('JSON `{"orders":{"0":1700000000000}}`'),
    "as `endingTimestamp`, per partition",
    bounded_only=True)

#: the librdkafka pass-through: ``kafka.<property>`` goes to the client as ``<property>``, checked by librdkafka
CLIENT = Namespace("kafka.", "librdkafka configuration properties, passed on without the prefix (Java client "
                             "names are translated); librdkafka checks the names and values at `load()`")

# ---- refused: what Spark's Kafka source has and this one deliberately does not ---------------------------------------
_ONE_TASK_PER_PARTITION = (
    "one partition's range is read by one Spark task in offset order, so it is never cut across Spark tasks (that "
    f"would break per-key order). For more read parallelism set '{MIN_PARTITIONS.name}' (a task's partitions spread "
    "over several Spark partitions), or repartition() the DataFrame after load(); remove the option")
_FETCH_RETRIES = (
    f"calls to the cluster are retried with backoff for a time rather than a count; set '{RETRY_TIMEOUT.name}' "
    f"(default {format_duration(RETRY_TIMEOUT.default)}) instead")
FETCH_OFFSET_NUM_RETRIES_OPTION = "fetchOffset.numRetries"
FETCH_OFFSET_RETRY_INTERVAL_OPTION = "fetchOffset.retryIntervalMs"
REFUSED = {
    MAX_RECORDS_PER_PARTITION_OPTION: _ONE_TASK_PER_PARTITION,
    FETCH_OFFSET_NUM_RETRIES_OPTION: _FETCH_RETRIES,
    FETCH_OFFSET_RETRY_INTERVAL_OPTION: _FETCH_RETRIES,
}
#: librdkafka settings refused under ``kafka.`` (Spark's Kafka source refuses them for the same reasons: the source
#: manages groups and offsets itself)
REFUSED_CLIENT_SETTINGS = {
    "enable.auto.commit": "offsets are tracked in Spark's checkpoint; Kafka auto-commit would record progress "
    "Spark has not made. Remove 'kafka.enable.auto.commit'",
    "auto.offset.reset": "use 'startingOffsets' for a new query and Startpoints to re-position a running one; "
    "remove 'kafka.auto.offset.reset'",
    "key.deserializer": "keys are always returned as binary; cast in Spark instead",
    "value.deserializer": "values are always returned as binary; cast in Spark instead",
}

KAFKA = OptionSpec(
    source=SOURCE,
    options=(
        BOOTSTRAP_SERVERS, SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN, *JOB_OPTIONS, *GROUPING_OPTIONS,
        EXPANSION_ORDERING, EXPANSION_SETTLE, JOB_MODEL_RESET, DROP_TOPICS,
        STARTING_OFFSETS, STARTING_TIMESTAMP, STARTING_OFFSETS_BY_TIMESTAMP, STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY,
        MAX_OFFSETS_PER_TRIGGER, MIN_OFFSETS_PER_TRIGGER, MAX_TRIGGER_DELAY, MIN_PARTITIONS,
        INCLUDE_HEADERS, MAX_ROWS_PER_ARROW_BATCH, POLL_TIMEOUT, READ_PATH,
        COMMIT_OFFSETS_TO_KAFKA, KAFKA_GROUP_ID, GROUP_ID_PREFIX, OAUTHBEARER_TOKEN_PROVIDER,
        ENDING_OFFSETS, ENDING_TIMESTAMP, ENDING_OFFSETS_BY_TIMESTAMP,
    ),
    namespaces=(CLIENT, TESTING),
    refused=REFUSED,
)

# the names, for messages (f"option '{STARTING_OFFSETS.name}' ...")
KAFKA_CLIENT_OPTIONS_PREFIX = CLIENT.prefix
BOUNDED_ONLY_OPTIONS = KAFKA.bounded_only()

#: the defaults code uses without parsing options: the executors' reader called without options (its tests, the
#: benchmarks), and where a query starts when no starting option is set
DEFAULT_POLL_TIMEOUT_MS: int = POLL_TIMEOUT.default
DEFAULT_MAX_ROWS_PER_BATCH: int = MAX_ROWS_PER_ARROW_BATCH.default
DEFAULT_STARTING_OFFSETS: StartingOffsets = Earliest() if STARTING_OFFSETS.default == EARLIEST else Latest()


# ---- the options, read -----------------------------------------------------------------------------------------------
SYSTEM = "kafka"
#: options under ``kafka.`` that are the source's own, not librdkafka's (librdkafka is not asked about them)
_OWN_CLIENT_OPTIONS = (KAFKA_GROUP_ID.name, OAUTHBEARER_TOKEN_PROVIDER.name)


def option_names() -> OptionNames:
    """The names samza-kafka knows, its namespaces and its refused names, from its spec (read when asked, so an
    entry added to the spec is known without further change)."""
    return KAFKA.names()


def check_client_conf(client_conf: dict[str, str]) -> None:
    """Each ``kafka.*`` option must be a librdkafka property (``kafka.bootstrap.server`` is caught, with the
    suggestion 'kafka.bootstrap.servers'); librdkafka itself is asked (``client_conf.py``). Values of secret
    properties never appear in the error."""
    prefix = KAFKA_CLIENT_OPTIONS_PREFIX
    known_here = {name.lower()[len(prefix):]: name for name in _OWN_CLIENT_OPTIONS}
    for key in client_conf:
        if key in PYTHON_CALLBACK_SETTINGS:
            raise ConfigError(f"option '{prefix}{key}' is not supported: it is a confluent-kafka setting that takes a "
                              "Python object, which a Spark option (a string) cannot carry; remove it")
    problem = librdkafka_problem({k: v for k, v in client_conf.items() if k not in known_here})
    if problem is None:
        no_provider = missing_sasl_provider(client_conf)
        if no_provider is not None:
            raise ConfigError(f"option '{prefix}sasl.mechanism' asks for a SASL mechanism this librdkafka cannot use "
                              f"({no_provider}): the librdkafka in confluent-kafka's wheels has no Kerberos "
                              "(GSSAPI). Use SCRAM or OAUTHBEARER, or install confluent-kafka built from source "
                              "against a librdkafka built with libsasl2 (docs/security.md)")
        return
    key, reason = problem
    if "No such configuration property" in reason:
        close = librdkafka_near_names(key) or difflib.get_close_matches(key, list(known_here), n=3)
        hint = (f"did you mean {' or '.join(repr(prefix + c) for c in close)}?" if close else
                "see librdkafka's CONFIGURATION.md for the property names (Java-client names differ in places)")
        raise ConfigError(f"option '{prefix}{key}' is not a librdkafka configuration property ('{prefix}*' options "
                          f"are passed to librdkafka without the prefix): {hint}")
    scrubbed = scrub(reason, client_conf)  # librdkafka may quote the value
    hidden = scrubbed != reason
    raise ConfigError(f"option '{prefix}{key}' is refused by librdkafka ({scrubbed}): fix it as librdkafka's "
                      "CONFIGURATION.md describes (Java-client settings have librdkafka equivalents)"
                      + ("; secret values are shown as ***" if hidden else ""))


@dataclass(frozen=True, repr=False)
class KafkaSourceOptions(JobOptions):
    client_conf: dict[str, str]
    topics: tuple[str, ...] | None
    pattern: str | None
    assign: dict[str, tuple[int, ...]] | None
    grouper: str
    expansion_algorithm: str | None
    ordering: str
    expansion_settle_ms: int
    job_model_reset: bool
    broadcast: tuple[SystemStreamPartition, ...]
    copartition: tuple[CoPartitionGroup, ...]
    starting: StartingOffsets  # where a query without a checkpoint starts (starting.py); Startpoints override it
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    min_partitions: int | None  # minPartitions: spread a task's partitions over Spark partitions (core/split.py)
    include_headers: bool
    commit_offsets_to_kafka: bool
    max_rows_per_arrow_batch: int
    poll_timeout_ms: int
    read_path: str  # readPath: auto | native | python (the executor reader; see kafka/executor/native_reader.py)
    drop_topics: tuple[str, ...]  # dropTopics: topics that may leave the job (deleted or no longer subscribed)
    group_id: str  # the consumer group committed positions are mirrored to (kafka.group.id / groupIdPrefix)

    def __repr__(self) -> str:  # the client config may hold SASL/SSL passwords: never show it
        return f"KafkaSourceOptions({self.describe()})"

    @property
    def max_rows_per_batch(self) -> int | None:
        """``maxOffsetsPerTrigger``: the stream reader hands it to Spark as the default read limit and to the
        coordinator when Spark passes none; the planner splits it across partitions (``split_read_limit``)."""
        return self.max_offsets_per_trigger

    def describe(self) -> str:
        """For logs: what is read, never the client config (it may hold credentials)."""
        what = (
            f"{SUBSCRIBE.name}={','.join(self.topics)}" if self.topics else
            f"{SUBSCRIBE_PATTERN.name}={self.pattern}" if self.pattern else
            f"{ASSIGN.name}={json.dumps(self.assign)}"
        )
        store = redact_uri(self.metadata_store)
        return (f"{SOURCE} {common.JOB_NAME.name}={self.job_name} {what} "
                f"{common.GROUPER.name}={self.grouper} store={store}")

    @classmethod
    def parse(cls, raw: Any) -> KafkaSourceOptions:
        opts = Options(raw)
        KAFKA.check_names(opts.keys())
        client_conf = _client_conf(opts)
        topics, pattern, assign = _parse_subscription(opts)
        common_fields = JobOptions.parse_common(opts, job_name_example="orders-enricher",
                                                store_holds="startpoints, job model and checkpoint mirror")
        group_id = _parse_group_id(opts, client_conf, common_fields["job_name"])
        return cls(
            **common_fields,
            client_conf=client_conf,
            topics=topics,
            pattern=pattern,
            assign=assign,
            group_id=group_id,
            **_job_model_fields(opts),
            starting=_parse_starting(opts),
            **_trigger_fields(opts),
            min_partitions=_parse_min_partitions(opts),
            include_headers=INCLUDE_HEADERS.read(opts),
            commit_offsets_to_kafka=COMMIT_OFFSETS_TO_KAFKA.read(opts),
            max_rows_per_arrow_batch=MAX_ROWS_PER_ARROW_BATCH.read(opts),
            poll_timeout_ms=POLL_TIMEOUT.read(opts),
            read_path=READ_PATH.read(opts),
            drop_topics=_parse_drop_topics(DROP_TOPICS.read(opts)),
        )


def _job_model_fields(opts: Options) -> dict[str, Any]:
    """The grouper, the partition expansion settings, broadcast inputs and co-partitioned groups."""
    grouper = common.GROUPER.read(opts)
    algorithm = common.EXPANSION_ALGORITHM.read(opts)
    ordering = EXPANSION_ORDERING.read(opts)
    settle_ms = EXPANSION_SETTLE.read(opts)
    broadcast_raw = common.BROADCAST.read(opts)
    broadcast = tuple(sorted(parse_broadcast_inputs(broadcast_raw))) if broadcast_raw else ()
    for ssp in broadcast:
        if ssp.system != SYSTEM:
            raise ConfigError(
                f"option '{common.BROADCAST.name}': {ssp.system}.{ssp.stream}#{ssp.partition} names system "
                f"'{ssp.system}'; this source reads system '{SYSTEM}' (write e.g. kafka.{ssp.stream}#0)"
            )
    copartition_raw = common.COPARTITION.read(opts)
    copartition = tuple(parse_copartition(copartition_raw, default_system=SYSTEM)) if copartition_raw else ()
    return {"grouper": grouper, "expansion_algorithm": algorithm, "ordering": ordering,
            "expansion_settle_ms": settle_ms, "job_model_reset": JOB_MODEL_RESET.read(opts),
            "broadcast": broadcast, "copartition": copartition}


def _trigger_fields(opts: Options) -> dict[str, Any]:
    """How much a micro-batch reads: ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` and ``maxTriggerDelay``."""
    max_offsets = MAX_OFFSETS_PER_TRIGGER.read(opts)
    min_offsets = MIN_OFFSETS_PER_TRIGGER.read(opts)
    max_delay = MAX_TRIGGER_DELAY.read(opts)
    if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
        raise ConfigError(
            f"option '{MIN_OFFSETS_PER_TRIGGER.name}' ({min_offsets}) must not exceed "
            f"'{MAX_OFFSETS_PER_TRIGGER.name}' ({max_offsets})"
        )
    return {"max_offsets_per_trigger": max_offsets, "min_offsets_per_trigger": min_offsets,
            "max_trigger_delay_ms": max_delay}


def _parse_min_partitions(opts: Options) -> int | None:
    """``minPartitions``, refused beside broadcast inputs: a task's broadcast partition would be read by one of its
    Spark partitions only, so the task's other Spark partitions would not see it (what Samza promises every task's
    reader), and handing it to each of them would repeat its rows under one task name (docs/options.md)."""
    value = MIN_PARTITIONS.read(opts)
    if value is not None and common.BROADCAST.read(opts):
        raise ConfigError(
            f"option '{MIN_PARTITIONS.name}' cannot be set with '{common.BROADCAST.name}': a broadcast partition is "
            "read once per task, by one of the task's Spark partitions, so the task's other Spark partitions would "
            f"not see it. Remove '{MIN_PARTITIONS.name}' (and repartition() after load() for more parallelism), or "
            "read the broadcast stream in a query of its own")
    return value


def _client_conf(opts: Options) -> dict[str, str]:
    """The ``kafka.*`` options as librdkafka configuration, checked: Java client names translated first, then
    ``kafka.bootstrap.servers`` required, the settings the source manages refused, and librdkafka asked."""
    client_conf = _translated_client_conf(opts)
    servers = BOOTSTRAP_SERVERS.name
    if not client_conf.get(servers[len(KAFKA_CLIENT_OPTIONS_PREFIX):], "").strip():
        check_client_conf({k: v for k, v in client_conf.items() if v.strip()})  # kafka.bootstrap.server?
        raise ConfigError(
            f"option '{servers}' is required: a comma-separated list of host:port, "
            f"e.g. .option('{servers}', 'broker1:9092,broker2:9092')"
        )
    check_bootstrap_servers(client_conf[servers[len(KAFKA_CLIENT_OPTIONS_PREFIX):]])
    for key, why in REFUSED_CLIENT_SETTINGS.items():
        if key in client_conf:
            raise ConfigError(f"option 'kafka.{key}' is not supported: {why}")
    for key, value in client_conf.items():
        if value.strip() == "":
            raise ConfigError(f"option 'kafka.{key}' is empty; give a value or remove it ({shown(key, value)})")
    check_client_conf(client_conf)
    return client_conf


#: one broker of ``kafka.bootstrap.servers``: an optional librdkafka protocol prefix (``SSL://``), a host name,
#: IPv4 address or bracketed IPv6 address, and a port
_BROKER_RE = re.compile(r"^(?:[A-Za-z_]+://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


def check_bootstrap_servers(value: str) -> None:
    """Refuse a ``kafka.bootstrap.servers`` that is not ``host:port[,host:port]`` at ``load()``, naming the bad
    entry: librdkafka would otherwise retry it until ``endpoint.retryTimeout`` (60 s) and fail without naming it."""
    for entry in value.split(","):
        broker = entry.strip()
        match = _BROKER_RE.match(broker)
        if match is None or not 0 < int(match.group(1)) <= 65535:
            raise ConfigError(
                f"option '{BOOTSTRAP_SERVERS.name}' entry {broker!r:.100} is not host:port (a host name or address "
                f"and a port 1-65535): write the option as host:port[,host:port], e.g. "
                f".option('{BOOTSTRAP_SERVERS.name}', 'broker1:9092,broker2:9092')"
            )


def _translated_client_conf(opts: Options) -> dict[str, str]:
    """The ``kafka.*`` options as librdkafka configuration: Java client names translated (java_client.py), the
    token provider checked to be importable here on the driver, so a typo fails the start, not an executor."""
    translated = translate_java_settings(opts.prefixed(KAFKA_CLIENT_OPTIONS_PREFIX),
                                         token_provider_option=OAUTHBEARER_TOKEN_PROVIDER.name)
    if translated.rejected:
        raise ConfigError("; ".join(f"option 'kafka.{key}' is not supported: {why}"
                                    for key, why in sorted(translated.rejected.items())))
    for native, java in sorted(translated.derived_from.items()):
        log.info("option 'kafka.%s' translated to librdkafka's 'kafka.%s'", java, native)
    conf = translated.conf
    if TOKEN_PROVIDER_KEY in conf:
        load_token_provider(conf[TOKEN_PROVIDER_KEY])  # raises ConfigError naming the option and the fix
    return conf


def _parse_group_id(opts: Options, client_conf: dict[str, str], job_name: str) -> str:
    """``kafka.group.id`` as given (removed from the client config: readers never join or commit), else
    ``<groupIdPrefix>-<job.name>``. Spark's rule: both together is an error."""
    explicit = client_conf.pop("group.id", None)
    prefix_option = GROUP_ID_PREFIX.name
    prefix = opts.string(prefix_option)
    if explicit is not None and prefix is not None:
        raise ConfigError(f"set either option '{KAFKA_GROUP_ID.name}' (the whole group id) or "
                          f"'{prefix_option}' (the prefix of '<prefix>-<{common.JOB_NAME.name}>'), not both")
    if explicit is not None:
        if not explicit.strip():
            raise ConfigError(f"option '{KAFKA_GROUP_ID.name}' is empty; give the consumer group that "
                              "committed positions are mirrored to, or remove it")
        return explicit.strip()
    default = GROUP_ID_PREFIX.default
    if opts.has(prefix_option) and prefix is None:
        raise ConfigError(f"option '{prefix_option}' is empty; give a prefix (e.g. 'analytics') or "
                          f"remove it (default '{default}')")
    return f"{(prefix or default).strip()}-{job_name}"


def _parse_drop_topics(value: str | None) -> tuple[str, ...]:
    if value is None or not value.strip():
        return ()
    topics = tuple(t.strip() for t in value.split(","))
    if any(not t for t in topics):
        raise ConfigError(f"option '{DROP_TOPICS.name}' has an empty topic name in {value!r}; use e.g. "
                          "'orders-2023,clicks-old'")
    return tuple(sorted(set(topics)))


def _parse_subscription(
    opts: Options,
) -> tuple[tuple[str, ...] | None, str | None, dict[str, tuple[int, ...]] | None]:
    """(topics, pattern, assignment): the one of ``subscribe``, ``subscribePattern`` and ``assign`` that is set."""
    subscribe, pattern, assign = SUBSCRIBE.name, SUBSCRIBE_PATTERN.name, ASSIGN.name
    given = [name for name in (subscribe, pattern, assign) if opts.string(name) is not None]
    if len(given) != 1:
        raise ConfigError(
            f"exactly one of the options '{subscribe}' (comma-separated topics), '{pattern}' (a regex) or "
            f"'{assign}' (JSON like {{\"orders\":[0,1]}}) must be set; got {', '.join(given) if given else 'none'}"
        )
    name = given[0]
    value = opts.string(name)
    assert value is not None  # ``given`` holds only the names set
    if name == subscribe:
        topics = tuple(t.strip() for t in value.split(","))
        if any(not t for t in topics):
            raise ConfigError(f"option '{subscribe}' has an empty topic name in {value!r}; use e.g. 'orders,payments'")
        return tuple(dict.fromkeys(topics)), None, None
    if name == pattern:
        try:
            re.compile(value)
        except re.error as err:
            raise ConfigError(f"option '{pattern}' is not a valid regular expression ({err}): {value!r}") from None
        return None, value, None
    return None, None, _parse_assign(value)


def _parse_assign(value: str) -> dict[str, tuple[int, ...]]:
    try:
        parsed = json_object(value)
        assign = {}
        for topic, parts in parsed.items():
            if not isinstance(parts, list) or not parts or not all(
                isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts
            ):
                raise ValueError
            assign[str(topic)] = tuple(sorted(set(parts)))
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python's recursion limit
        raise ConfigError(
            f"option '{ASSIGN.name}' must be a JSON object of topic -> non-empty list of partitions, e.g. "
            f"{{\"orders\":[0,1]}}; got {value!r}"
        ) from None
    return assign


def _parse_starting(opts: Options) -> StartingOffsets:
    names = (STARTING_OFFSETS.name, STARTING_TIMESTAMP.name, STARTING_OFFSETS_BY_TIMESTAMP.name)
    given = [n for n in names if opts.has(n)]
    strategy = STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY.read(opts)
    if len(given) > 1:
        raise ConfigError(f"set only one of the options {', '.join(given)}; they all choose where a new query starts")
    if not given:
        return DEFAULT_STARTING_OFFSETS
    name = given[0]
    value = opts.string(name) or ""
    if name == STARTING_TIMESTAMP.name:
        return ByTimestamp(timestamp_ms=epoch_ms(name, value), strategy=strategy,
                           option=STARTING_OFFSETS_BY_TIMESTAMP.name,
                           strategy_option=STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY.name)
    if name == STARTING_OFFSETS.name and value.lower() in (EARLIEST, LATEST):
        return Earliest() if value.lower() == EARLIEST else Latest()
    example = '{"orders":{"0":23,"1":-2}}' if name == STARTING_OFFSETS.name else '{"orders":{"0":1700000000000}}'
    try:
        per = per_partition_numbers(value, negatives=(-2, -1) if name == STARTING_OFFSETS.name else ())
    except (ValueError, RecursionError):
        allowed = "'earliest', 'latest' or JSON" if name == STARTING_OFFSETS.name else "JSON"
        meaning = " (-2 = earliest, -1 = latest)" if name == STARTING_OFFSETS.name else " (epoch ms)"
        raise ConfigError(f"option '{name}' must be {allowed} like {example}{meaning}; got {value!r}") from None
    if name == STARTING_OFFSETS.name:
        return SpecificOffsets(per, option=STARTING_OFFSETS.name)
    return ByTimestamp(per_partition=per, strategy=strategy, option=STARTING_OFFSETS_BY_TIMESTAMP.name,
                       strategy_option=STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY.name)


def epoch_ms(option: str, value: str) -> int:
    """Option ``option`` (``startingTimestamp``, ``endingTimestamp``) as epoch milliseconds, as Spark's Kafka source
    takes them; a ConfigError naming the option otherwise."""
    try:
        ms = int(value)
        if ms < 0:
            raise ValueError
    except ValueError:
        raise ConfigError(f"option '{option}' must be epoch milliseconds (>= 0), got {value!r}") from None
    return ms


def per_partition_numbers(value: str, *, negatives: tuple[int, ...] = ()) -> dict[str, dict[int, int]]:
    """``{topic: {partition: number}}`` of Spark's per-partition JSON options (``startingOffsets``,
    ``endingOffsets``, ``...ByTimestamp``): non-negative integers, or one of ``negatives`` (the ones with a meaning
    there: -2 earliest, -1 latest). ValueError for anything else; the caller names the option and an example."""
    per: dict[str, dict[int, int]] = {}
    for topic, parts in json_object(value, empty_ok=True).items():
        if not isinstance(parts, dict):
            raise ValueError(f"topic {topic!r} needs an object of partitions")
        per[str(topic)] = {}
        for part, number in parts.items():
            if not str(part).isdigit() or not isinstance(number, int) or isinstance(number, bool):
                raise ValueError(f"partition {part!r} of {topic!r} needs an integer")
            if number < 0 and number not in negatives:
                raise ValueError(f"{number} is not valid here")
            per[str(topic)][int(part)] = number
    return per


# ---- a batch read (spark.read) ---------------------------------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class KafkaBoundedOptions:
    """A batch read: the source options (``starting`` with the batch default), where it ends, and whether the
    tasks come from the job model stored for ``job.name``."""

    source: KafkaSourceOptions
    ending: StartingOffsets
    use_stored_job_model: bool

    def __repr__(self) -> str:  # never the client config (credentials)
        return f"KafkaBoundedOptions({self.source.describe()}, ending={self.ending!r})"

    @classmethod
    def parse(cls, raw: Any, use_stored_job_model: bool) -> KafkaBoundedOptions:
        source = KafkaSourceOptions.parse(raw)
        opts = Options(raw)
        starting = source.starting
        if not any(opts.has(n) for n in (STARTING_OFFSETS.name, STARTING_TIMESTAMP.name,
                                          STARTING_OFFSETS_BY_TIMESTAMP.name)):
            starting = Earliest()
        elif isinstance(starting, Latest):
            raise ConfigError(f"option '{STARTING_OFFSETS.name}'='latest' is not valid for batch queries: a "
                              "batch read would read nothing. Use 'earliest', per-partition JSON or a timestamp")
        elif isinstance(starting, SpecificOffsets) and any(
                o == LATEST_OFFSET for parts in starting.per_partition.values() for o in parts.values()):
            raise ConfigError(f"option '{STARTING_OFFSETS.name}': -1 (latest) is not valid for batch queries; "
                              "give an offset or -2 (earliest) for each partition named")
        source = dataclasses.replace(source, starting=starting)
        return cls(source, _parse_ending(opts), use_stored_job_model)


def _parse_ending(opts: Options) -> StartingOffsets:
    names = (ENDING_OFFSETS.name, ENDING_TIMESTAMP.name, ENDING_OFFSETS_BY_TIMESTAMP.name)
    given = [n for n in names if opts.has(n)]
    if len(given) > 1:
        raise ConfigError(f"set only one of the options {', '.join(given)}; they all choose where a batch read ends")
    if not given:
        return Latest()
    name = given[0]
    value = (opts.string(name) or "").strip()
    if name == ENDING_TIMESTAMP.name:
        return ByTimestamp(timestamp_ms=epoch_ms(name, value), strategy=TIMESTAMP_STRATEGY_LATEST, option=name,
                           strategy_option=STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY.name)
    if name == ENDING_OFFSETS.name and value.lower() == "latest":
        return Latest()
    if name == ENDING_OFFSETS.name and value.lower() == "earliest":
        raise ConfigError(f"option '{name}'='earliest' is not valid for batch queries: the read would end before it "
                          "starts. Use 'latest' (the default) or per-partition JSON like {\"orders\":{\"0\":100}}")
    example = '{"orders":{"0":100,"1":-1}}' if name == ENDING_OFFSETS.name else '{"orders":{"0":1700000000000}}'
    try:
        per = per_partition_numbers(value, negatives=(LATEST_OFFSET,) if name == ENDING_OFFSETS.name else ())
    except (ValueError, RecursionError):
        meaning = (" (an offset, exclusive, or -1 = latest; -2 = earliest is not valid for an end)"
                   if name == ENDING_OFFSETS.name else " (epoch ms)")
        allowed = "'latest' or JSON" if name == ENDING_OFFSETS.name else "JSON"
        raise ConfigError(f"option '{name}' must be {allowed} like {example}{meaning}; got {value!r}") from None
    if name == ENDING_OFFSETS.name:
        assert EARLIEST_OFFSET not in {o for parts in per.values() for o in parts.values()}
        return SpecificOffsets(per, option=name)
    return ByTimestamp(per_partition=per, strategy=TIMESTAMP_STRATEGY_LATEST, option=name,
                       strategy_option=STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY.name)
