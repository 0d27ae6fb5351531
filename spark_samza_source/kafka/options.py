"""Options of the ``samza-kafka`` source: Spark's Kafka option names where the semantics match.

Parsed once on the driver when the query starts (``DataSource.streamReader``), so every bad value fails the
query before anything is read. The result is plain, picklable data: Spark ships the reader to executors.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.broadcast import parse_broadcast_inputs
from ..core.copartition import CoPartitionGroup, parse_copartition
from ..core.errors import ConfigError
from ..core.model import SystemStreamPartition
from ..source import options as shared_options
from ..source.job_options import JobOptions
from ..source.option_names import OptionNames, check_option_names, option_constants, option_prefixes
from ..source.option_parser import Options, is_secret_option, json_object, shown
from ..source.options import (
    BROADCAST_OPTION,
    COPARTITION_OPTION,
    EXPANSION_ALGORITHM_OPTION,
    GROUPER_OPTION,
    JOB_NAME_OPTION,
    MAX_RECORDS_PER_PARTITION_OPTION,
    MIN_PARTITIONS_OPTION,
    RETRY_TIMEOUT_OPTION,
)

if TYPE_CHECKING:
    from .starting import StartingOffsets

log = logging.getLogger(__name__)

SYSTEM = "kafka"
#: librdkafka poll timeout of a reader (option kafkaConsumer.pollTimeoutMs); the reader's default too.
DEFAULT_POLL_TIMEOUT_MS = 120_000
#: rows per Arrow batch handed to Spark (option maxRowsPerArrowBatch); the reader's default too.
DEFAULT_MAX_ROWS_PER_BATCH = 10_000

# Spark's Kafka source refuses these for the same reasons: the source manages groups and offsets itself.
_REFUSED_KAFKA = {
    "enable.auto.commit": "offsets are tracked in Spark's checkpoint; Kafka auto-commit would record progress "
    "Spark has not made. Remove 'kafka.enable.auto.commit'",
    "auto.offset.reset": "use 'startingOffsets' for a new query and Startpoints to re-position a running one; "
    "remove 'kafka.auto.offset.reset'",
    "key.deserializer": "keys are always returned as binary; cast in Spark instead",
    "value.deserializer": "values are always returned as binary; cast in Spark instead",
}

#: ``startingOffsets`` words (anything else is per-partition JSON)
EARLIEST, LATEST = "earliest", "latest"

# Option names only samza-kafka has (the shared ones: source/options.py), Spark's Kafka names where they match.
SUBSCRIBE_OPTION = "subscribe"
SUBSCRIBE_PATTERN_OPTION = "subscribePattern"
ASSIGN_OPTION = "assign"
EXPANSION_ORDERING_OPTION = "expansion.ordering"
STARTING_OFFSETS_OPTION = "startingOffsets"
STARTING_TIMESTAMP_OPTION = "startingTimestamp"
STARTING_OFFSETS_BY_TIMESTAMP_OPTION = "startingOffsetsByTimestamp"
STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY_OPTION = "startingOffsetsByTimestampStrategy"
MAX_OFFSETS_PER_TRIGGER_OPTION = "maxOffsetsPerTrigger"
MIN_OFFSETS_PER_TRIGGER_OPTION = "minOffsetsPerTrigger"
MAX_TRIGGER_DELAY_OPTION = "maxTriggerDelay"
INCLUDE_HEADERS_OPTION = "includeHeaders"
COMMIT_OFFSETS_TO_KAFKA_OPTION = "commitOffsetsToKafka"
MAX_ROWS_PER_ARROW_BATCH_OPTION = "maxRowsPerArrowBatch"
POLL_TIMEOUT_OPTION = "kafkaConsumer.pollTimeoutMs"
#: which executor reader: the native one (C, librdkafka) where available, else the Python one (read_settings.py)
READ_PATH_OPTION = "readPath"
READ_PATHS = ("auto", "native", "python")

JOB_MODEL_RESET_OPTION = "jobModel.reset"
EXPANSION_SETTLE_OPTION = "expansion.settleTime"
#: How long after a growth is seen the old partitions keep being drained before the cut. Producers learn of new
#: partitions only when they refresh their metadata: the Java client's metadata.max.age.ms and librdkafka's
#: topic.metadata.refresh.interval.ms both default to 5 minutes, and until then they write keys to their old
#: partitions. Five minutes covers producers left at those defaults.
DEFAULT_SETTLE_MS = 5 * 60_000


DROP_TOPICS_OPTION = "dropTopics"

# Consumer group and security (issue #14). The group is where committed positions are mirrored for lag tools
# (commitOffsetsToKafka): kafka.group.id names it, else it is '<groupIdPrefix>-<job.name>'.
KAFKA_GROUP_ID_OPTION = "kafka.group.id"
GROUP_ID_PREFIX_OPTION = "groupIdPrefix"
DEFAULT_GROUP_ID_PREFIX = "samza"
#: dotted path of a Python callable used as librdkafka's oauth_cb (SASL/OAUTHBEARER) on the driver and executors
OAUTHBEARER_TOKEN_PROVIDER_OPTION = "kafka.sasl.oauthbearer.tokenProvider"

# Batch-only names (``spark.read``), Spark's Kafka source's: where a batch read stops. A streaming read refuses them.
ENDING_OFFSETS_OPTION = "endingOffsets"
ENDING_TIMESTAMP_OPTION = "endingTimestamp"
ENDING_OFFSETS_BY_TIMESTAMP_OPTION = "endingOffsetsByTimestamp"
BATCH_ONLY_OPTIONS = (ENDING_OFFSETS_OPTION, ENDING_TIMESTAMP_OPTION, ENDING_OFFSETS_BY_TIMESTAMP_OPTION)

# ---- option validation (source/option_names.py): what is known, passed through, refused ----------------------
#: the librdkafka pass-through: ``kafka.<property>`` goes to the client as ``<property>``; the names are checked
#: against librdkafka's own (``client_conf.librdkafka_problem``)
KAFKA_CLIENT_OPTIONS_PREFIX = "kafka."
# Spark's Kafka source has these; samza-kafka deliberately does not (refused with the reason and what to do instead)
FETCH_OFFSET_NUM_RETRIES_OPTION = "fetchOffset.numRetries"
FETCH_OFFSET_RETRY_INTERVAL_OPTION = "fetchOffset.retryIntervalMs"
_ONE_TASK_PER_PARTITION = (
    "a Spark input partition is one Samza task, which reads its partitions in order, so a range is never split "
    "across Spark tasks (that would break per-key order and task identity). For more parallelism add partitions "
    "to the topic, or repartition() the DataFrame after load(); remove the option")
_FETCH_RETRIES = (
    f"calls to the cluster are retried with backoff for a time rather than a count; set '{RETRY_TIMEOUT_OPTION}' "
    "(default 60s) instead")
REFUSED_OPTIONS = {
    MIN_PARTITIONS_OPTION: _ONE_TASK_PER_PARTITION,
    MAX_RECORDS_PER_PARTITION_OPTION: _ONE_TASK_PER_PARTITION,
    FETCH_OFFSET_NUM_RETRIES_OPTION: _FETCH_RETRIES,
    FETCH_OFFSET_RETRY_INTERVAL_OPTION: _FETCH_RETRIES,
}


def option_names() -> OptionNames:
    """The names samza-kafka knows: every ``*_OPTION`` of this module and ``source/options.py`` (collected when
    asked, so a name added there is known), the ``kafka.`` and ``testing.`` namespaces, and the refused names."""
    import sys

    module = sys.modules[__name__]
    return OptionNames(source="samza-kafka", known=option_constants(shared_options, module),
                       prefixes=option_prefixes(shared_options, module), refused=REFUSED_OPTIONS)


def check_client_conf(client_conf: dict[str, str]) -> None:
    """Each ``kafka.*`` option must be a librdkafka property (``kafka.bootstrap.server`` is caught, with the
    suggestion 'kafka.bootstrap.servers'); librdkafka itself is asked (``client_conf.py``). Values of secret
    properties never appear in the error."""
    from .client_conf import PYTHON_CALLBACK_SETTINGS, librdkafka_near_names, librdkafka_problem

    prefix = KAFKA_CLIENT_OPTIONS_PREFIX
    known_here = {name.lower()[len(prefix):]: name for name in option_names().known
                  if name.lower().startswith(prefix)}
    for key in client_conf:
        if key in PYTHON_CALLBACK_SETTINGS:
            raise ConfigError(f"option '{prefix}{key}' is not supported: it is a confluent-kafka setting that takes a "
                              "Python object, which a Spark option (a string) cannot carry; remove it")
    problem = librdkafka_problem({k: v for k, v in client_conf.items() if k not in known_here})
    if problem is None:
        return
    key, reason = problem
    if "No such configuration property" in reason:
        import difflib

        close = librdkafka_near_names(key) or difflib.get_close_matches(key, list(known_here), n=3)
        hint = (f"did you mean {' or '.join(repr(prefix + c) for c in close)}?" if close else
                "see librdkafka's CONFIGURATION.md for the property names (Java-client names differ in places)")
        raise ConfigError(f"option '{prefix}{key}' is not a librdkafka configuration property ('{prefix}*' options "
                          f"are passed to librdkafka without the prefix): {hint}")
    value = client_conf.get(key, "")
    hide = is_secret_option(key) and value.strip() != "" and value in reason  # librdkafka may quote the value
    detail = "" if hide else f" ({reason})"
    raise ConfigError(f"option '{prefix}{key}' is refused by librdkafka{detail}: fix it as librdkafka's "
                      "CONFIGURATION.md describes (Java-client settings have librdkafka equivalents)"
                      + ("" if detail else "; the value is not shown because it may be secret"))


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
    include_headers: bool
    commit_offsets_to_kafka: bool
    max_rows_per_arrow_batch: int
    poll_timeout_ms: int
    read_path: str  # readPath: auto | native | python (the executor reader; see kafka/native_reader.py)
    drop_topics: tuple[str, ...]  # dropTopics: topics that may leave the job (deleted or no longer subscribed)
    group_id: str  # the consumer group committed positions are mirrored to (kafka.group.id / groupIdPrefix)

    def __repr__(self) -> str:  # the client config may hold SASL/SSL passwords: never show it
        return f"KafkaSourceOptions({self.describe()})"

    def describe(self) -> str:
        """For logs: what is read, never the client config (it may hold credentials)."""
        what = (
            f"subscribe={','.join(self.topics)}" if self.topics else
            f"subscribePattern={self.pattern}" if self.pattern else f"assign={json.dumps(self.assign)}"
        )
        from ..metadata import redact_uri

        store = redact_uri(self.metadata_store)
        return f"samza-kafka {JOB_NAME_OPTION}={self.job_name} {what} {GROUPER_OPTION}={self.grouper} store={store}"

    @classmethod
    def parse(cls, raw: Any) -> KafkaSourceOptions:
        opts = Options(raw)
        check_option_names(opts.keys(), option_names())
        client_conf = _client_conf(opts)  # Java names translated first, then librdkafka checks them
        if not client_conf.get("bootstrap.servers", "").strip():
            check_client_conf({k: v for k, v in client_conf.items() if v.strip()})  # kafka.bootstrap.server?
            raise ConfigError(
                "option 'kafka.bootstrap.servers' is required: a comma-separated list of host:port, "
                "e.g. .option('kafka.bootstrap.servers', 'broker1:9092,broker2:9092')"
            )
        for key, why in _REFUSED_KAFKA.items():
            if key in client_conf:
                raise ConfigError(f"option 'kafka.{key}' is not supported: {why}")
        for key, value in client_conf.items():
            if value.strip() == "":
                raise ConfigError(f"option 'kafka.{key}' is empty; give a value or remove it ({shown(key, value)})")
        check_client_conf(client_conf)

        topics, pattern, assign = _parse_subscription(opts)
        common = JobOptions.parse_common(opts, job_name_example="orders-enricher",
                                         store_holds="startpoints, job model and checkpoint mirror")
        group_id = _parse_group_id(opts, client_conf, common["job_name"])
        grouper = opts.string(GROUPER_OPTION, "GroupByPartitionFixedTasks")
        algorithm = opts.string(EXPANSION_ALGORITHM_OPTION)
        ordering = opts.choice(EXPANSION_ORDERING_OPTION, "drain-first", ("drain-first", "none"))
        settle_ms = opts.duration_ms(EXPANSION_SETTLE_OPTION, DEFAULT_SETTLE_MS)
        broadcast_raw = opts.string(BROADCAST_OPTION)
        broadcast = tuple(sorted(parse_broadcast_inputs(broadcast_raw))) if broadcast_raw else ()
        for ssp in broadcast:
            if ssp.system != SYSTEM:
                raise ConfigError(
                    f"option '{BROADCAST_OPTION}': {ssp.system}.{ssp.stream}#{ssp.partition} names system "
                    f"'{ssp.system}'; this source reads system '{SYSTEM}' (write e.g. kafka.{ssp.stream}#0)"
                )
        copartition_raw = opts.string(COPARTITION_OPTION)
        copartition = tuple(parse_copartition(copartition_raw, default_system=SYSTEM)) if copartition_raw else ()

        max_offsets = opts.integer(MAX_OFFSETS_PER_TRIGGER_OPTION, None, minimum=1)
        min_offsets = opts.integer(MIN_OFFSETS_PER_TRIGGER_OPTION, None, minimum=1)
        max_delay = opts.duration_ms(MAX_TRIGGER_DELAY_OPTION, 15 * 60 * 1000)
        if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
            raise ConfigError(
                f"option 'minOffsetsPerTrigger' ({min_offsets}) must not exceed 'maxOffsetsPerTrigger' ({max_offsets})"
            )
        return cls(
            **common,
            client_conf=client_conf,
            topics=topics,
            pattern=pattern,
            assign=assign,
            grouper=grouper,
            expansion_algorithm=algorithm,
            ordering=ordering,
            expansion_settle_ms=settle_ms,
            job_model_reset=opts.boolean(JOB_MODEL_RESET_OPTION, False),
            broadcast=broadcast,
            copartition=copartition,
            starting=_parse_starting(opts),
            max_offsets_per_trigger=max_offsets,
            min_offsets_per_trigger=min_offsets,
            max_trigger_delay_ms=max_delay,
            include_headers=opts.boolean(INCLUDE_HEADERS_OPTION, False),
            commit_offsets_to_kafka=opts.boolean(COMMIT_OFFSETS_TO_KAFKA_OPTION, True),
            max_rows_per_arrow_batch=opts.integer(MAX_ROWS_PER_ARROW_BATCH_OPTION, DEFAULT_MAX_ROWS_PER_BATCH,
                                                  minimum=1),
            poll_timeout_ms=opts.duration_ms(POLL_TIMEOUT_OPTION, DEFAULT_POLL_TIMEOUT_MS, minimum_ms=1),
            read_path=opts.choice(READ_PATH_OPTION, "auto", READ_PATHS),
            drop_topics=_parse_drop_topics(opts.string(DROP_TOPICS_OPTION)),
            group_id=group_id,
        )


def _client_conf(opts: Options) -> dict[str, str]:
    """The ``kafka.*`` options as librdkafka configuration: Java client names translated (java_client.py), the
    token provider checked to be importable here on the driver, so a typo fails the start, not an executor."""
    from .client_conf import TOKEN_PROVIDER_KEY, load_token_provider
    from .java_client import translate_java_settings

    translated = translate_java_settings(opts.prefixed(KAFKA_CLIENT_OPTIONS_PREFIX),
                                         token_provider_option=OAUTHBEARER_TOKEN_PROVIDER_OPTION)
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
    prefix = opts.string(GROUP_ID_PREFIX_OPTION)
    if explicit is not None and prefix is not None:
        raise ConfigError(f"set either option '{KAFKA_GROUP_ID_OPTION}' (the whole group id) or "
                          f"'{GROUP_ID_PREFIX_OPTION}' (the prefix of '<prefix>-<{JOB_NAME_OPTION}>'), not both")
    if explicit is not None:
        if not explicit.strip():
            raise ConfigError(f"option '{KAFKA_GROUP_ID_OPTION}' is empty; give the consumer group that "
                              "committed positions are mirrored to, or remove it")
        return explicit.strip()
    if opts.has(GROUP_ID_PREFIX_OPTION) and prefix is None:
        raise ConfigError(f"option '{GROUP_ID_PREFIX_OPTION}' is empty; give a prefix (e.g. 'analytics') or "
                          f"remove it (default '{DEFAULT_GROUP_ID_PREFIX}')")
    return f"{(prefix or DEFAULT_GROUP_ID_PREFIX).strip()}-{job_name}"


def _parse_drop_topics(value: str | None) -> tuple[str, ...]:
    if value is None or not value.strip():
        return ()
    topics = tuple(t.strip() for t in value.split(","))
    if any(not t for t in topics):
        raise ConfigError(f"option '{DROP_TOPICS_OPTION}' has an empty topic name in {value!r}; use e.g. "
                          "'orders-2023,clicks-old'")
    return tuple(sorted(set(topics)))


def _parse_subscription(opts: Options):
    given = [name for name in ("subscribe", "subscribePattern", "assign") if opts.string(name) is not None]
    if len(given) != 1:
        raise ConfigError(
            "exactly one of the options 'subscribe' (comma-separated topics), 'subscribePattern' (a regex) or "
            f"'assign' (JSON like {{\"orders\":[0,1]}}) must be set; got {', '.join(given) if given else 'none'}"
        )
    name = given[0]
    value = opts.string(name)
    if name == "subscribe":
        topics = tuple(t.strip() for t in value.split(","))
        if any(not t for t in topics):
            raise ConfigError(f"option 'subscribe' has an empty topic name in {value!r}; use e.g. 'orders,payments'")
        return tuple(dict.fromkeys(topics)), None, None
    if name == "subscribePattern":
        try:
            re.compile(value)
        except re.error as err:
            raise ConfigError(
                f"option 'subscribePattern' is not a valid regular expression ({err}): {value!r}"
            ) from None
        return None, value, None
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
            f"option 'assign' must be a JSON object of topic -> non-empty list of partitions, e.g. "
            f"{{\"orders\":[0,1]}}; got {value!r}"
        ) from None
    return None, None, assign


def _parse_starting(opts: Options) -> StartingOffsets:
    # starting.py names these options in its messages: imported here, so neither module imports the other on load
    from .starting import (
        DEFAULT_STARTING_OFFSETS,
        DEFAULT_TIMESTAMP_STRATEGY,
        TIMESTAMP_STRATEGIES,
        ByTimestamp,
        Earliest,
        Latest,
        SpecificOffsets,
    )

    names = (STARTING_OFFSETS_OPTION, STARTING_TIMESTAMP_OPTION, STARTING_OFFSETS_BY_TIMESTAMP_OPTION)
    given = [n for n in names if opts.has(n)]
    strategy = opts.choice(STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY_OPTION, DEFAULT_TIMESTAMP_STRATEGY,
                           TIMESTAMP_STRATEGIES)
    if len(given) > 1:
        raise ConfigError(f"set only one of the options {', '.join(given)}; they all choose where a new query starts")
    if not given:
        return DEFAULT_STARTING_OFFSETS
    name = given[0]
    value = opts.string(name) or ""
    if name == STARTING_TIMESTAMP_OPTION:
        return ByTimestamp(timestamp_ms=epoch_ms(name, value), strategy=strategy)
    if name == STARTING_OFFSETS_OPTION and value.lower() in (EARLIEST, LATEST):
        return Earliest() if value.lower() == EARLIEST else Latest()
    example = '{"orders":{"0":23,"1":-2}}' if name == STARTING_OFFSETS_OPTION else '{"orders":{"0":1700000000000}}'
    try:
        per = per_partition_numbers(value, negatives=(-2, -1) if name == STARTING_OFFSETS_OPTION else ())
    except (ValueError, RecursionError):
        allowed = "'earliest', 'latest' or JSON" if name == STARTING_OFFSETS_OPTION else "JSON"
        meaning = " (-2 = earliest, -1 = latest)" if name == STARTING_OFFSETS_OPTION else " (epoch ms)"
        raise ConfigError(f"option '{name}' must be {allowed} like {example}{meaning}; got {value!r}") from None
    if name == STARTING_OFFSETS_OPTION:
        return SpecificOffsets(per)
    return ByTimestamp(per_partition=per, strategy=strategy)


__all__ = ["KafkaSourceOptions", "is_secret_option"]


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
