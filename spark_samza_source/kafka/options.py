"""Options of the ``samza-kafka`` source, parsed: every entry is declared in ``options/kafka.py`` (name, kind,
default, description); this turns the values into the source's types and checks what involves several options.

Parsed once on the driver when the query starts (``DataSource.streamReader``), so every bad value fails the
query before anything is read. The result is plain, picklable data: Spark ships the reader to executors.
"""

from __future__ import annotations

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
from ..options import kafka as spec
from ..options.kafka import (
    BOUNDED_ONLY_OPTIONS,
    EARLIEST,
    KAFKA_CLIENT_OPTIONS_PREFIX,
    KAFKA_GROUP_ID,
    LATEST,
    OAUTHBEARER_TOKEN_PROVIDER,
    POLL_TIMEOUT,
    STARTING_OFFSETS,
    STARTING_TIMESTAMP,
)
from ..options.option import OptionNames
from ..options.values import Options, is_secret_option, json_object, shown
from ..source.job_options import JobOptions
from .client_conf import (
    PYTHON_CALLBACK_SETTINGS,
    TOKEN_PROVIDER_KEY,
    librdkafka_near_names,
    librdkafka_problem,
    load_token_provider,
)
from .java_client import translate_java_settings
from .starting import DEFAULT_STARTING_OFFSETS, ByTimestamp, Earliest, Latest, SpecificOffsets, StartingOffsets

log = logging.getLogger(__name__)

SYSTEM = "kafka"
#: the defaults the executors' reader uses when called without options (its tests, the benchmarks)
DEFAULT_POLL_TIMEOUT_MS: int = spec.POLL_TIMEOUT.default
DEFAULT_MAX_ROWS_PER_BATCH: int = spec.MAX_ROWS_PER_ARROW_BATCH.default
#: the names samza-kafka refuses, with the reason and what to do instead
REFUSED_OPTIONS = spec.REFUSED
#: options under ``kafka.`` that are the source's own, not librdkafka's (librdkafka is not asked about them)
_OWN_CLIENT_OPTIONS = (KAFKA_GROUP_ID.name, OAUTHBEARER_TOKEN_PROVIDER.name)


def option_names() -> OptionNames:
    """The names samza-kafka knows, its namespaces and its refused names, from its spec (read when asked, so an
    entry added to the spec is known without further change)."""
    return spec.KAFKA.names()


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
        return
    key, reason = problem
    if "No such configuration property" in reason:
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
    read_path: str  # readPath: auto | native | python (the executor reader; see kafka/executor/native_reader.py)
    drop_topics: tuple[str, ...]  # dropTopics: topics that may leave the job (deleted or no longer subscribed)
    group_id: str  # the consumer group committed positions are mirrored to (kafka.group.id / groupIdPrefix)

    def __repr__(self) -> str:  # the client config may hold SASL/SSL passwords: never show it
        return f"KafkaSourceOptions({self.describe()})"

    def describe(self) -> str:
        """For logs: what is read, never the client config (it may hold credentials)."""
        what = (
            f"{spec.SUBSCRIBE.name}={','.join(self.topics)}" if self.topics else
            f"{spec.SUBSCRIBE_PATTERN.name}={self.pattern}" if self.pattern else
            f"{spec.ASSIGN.name}={json.dumps(self.assign)}"
        )
        store = redact_uri(self.metadata_store)
        return (f"{spec.SOURCE} {common.JOB_NAME.name}={self.job_name} {what} "
                f"{common.GROUPER.name}={self.grouper} store={store}")

    @classmethod
    def parse(cls, raw: Any) -> KafkaSourceOptions:
        opts = Options(raw)
        spec.KAFKA.check_names(opts.keys())
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
            include_headers=spec.INCLUDE_HEADERS.read(opts),
            commit_offsets_to_kafka=spec.COMMIT_OFFSETS_TO_KAFKA.read(opts),
            max_rows_per_arrow_batch=spec.MAX_ROWS_PER_ARROW_BATCH.read(opts),
            poll_timeout_ms=spec.POLL_TIMEOUT.read(opts),
            read_path=spec.READ_PATH.read(opts),
            drop_topics=_parse_drop_topics(spec.DROP_TOPICS.read(opts)),
        )


def _job_model_fields(opts: Options) -> dict[str, Any]:
    """The grouper, the partition expansion settings, broadcast inputs and co-partitioned groups."""
    grouper = common.GROUPER.read(opts)
    algorithm = common.EXPANSION_ALGORITHM.read(opts)
    ordering = spec.EXPANSION_ORDERING.read(opts)
    settle_ms = spec.EXPANSION_SETTLE.read(opts)
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
            "expansion_settle_ms": settle_ms, "job_model_reset": spec.JOB_MODEL_RESET.read(opts),
            "broadcast": broadcast, "copartition": copartition}


def _trigger_fields(opts: Options) -> dict[str, Any]:
    """How much a micro-batch reads: ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` and ``maxTriggerDelay``."""
    max_offsets = spec.MAX_OFFSETS_PER_TRIGGER.read(opts)
    min_offsets = spec.MIN_OFFSETS_PER_TRIGGER.read(opts)
    max_delay = spec.MAX_TRIGGER_DELAY.read(opts)
    if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
        raise ConfigError(
            f"option '{spec.MIN_OFFSETS_PER_TRIGGER.name}' ({min_offsets}) must not exceed "
            f"'{spec.MAX_OFFSETS_PER_TRIGGER.name}' ({max_offsets})"
        )
    return {"max_offsets_per_trigger": max_offsets, "min_offsets_per_trigger": min_offsets,
            "max_trigger_delay_ms": max_delay}


def _client_conf(opts: Options) -> dict[str, str]:
    """The ``kafka.*`` options as librdkafka configuration, checked: Java client names translated first, then
    ``kafka.bootstrap.servers`` required, the settings the source manages refused, and librdkafka asked."""
    client_conf = _translated_client_conf(opts)
    servers = spec.BOOTSTRAP_SERVERS.name
    if not client_conf.get(servers[len(KAFKA_CLIENT_OPTIONS_PREFIX):], "").strip():
        check_client_conf({k: v for k, v in client_conf.items() if v.strip()})  # kafka.bootstrap.server?
        raise ConfigError(
            f"option '{servers}' is required: a comma-separated list of host:port, "
            f"e.g. .option('{servers}', 'broker1:9092,broker2:9092')"
        )
    for key, why in spec.REFUSED_CLIENT_SETTINGS.items():
        if key in client_conf:
            raise ConfigError(f"option 'kafka.{key}' is not supported: {why}")
    for key, value in client_conf.items():
        if value.strip() == "":
            raise ConfigError(f"option 'kafka.{key}' is empty; give a value or remove it ({shown(key, value)})")
    check_client_conf(client_conf)
    return client_conf


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
    prefix_option = spec.GROUP_ID_PREFIX.name
    prefix = opts.string(prefix_option)
    if explicit is not None and prefix is not None:
        raise ConfigError(f"set either option '{KAFKA_GROUP_ID.name}' (the whole group id) or "
                          f"'{prefix_option}' (the prefix of '<prefix>-<{common.JOB_NAME.name}>'), not both")
    if explicit is not None:
        if not explicit.strip():
            raise ConfigError(f"option '{KAFKA_GROUP_ID.name}' is empty; give the consumer group that "
                              "committed positions are mirrored to, or remove it")
        return explicit.strip()
    default = spec.GROUP_ID_PREFIX.default
    if opts.has(prefix_option) and prefix is None:
        raise ConfigError(f"option '{prefix_option}' is empty; give a prefix (e.g. 'analytics') or "
                          f"remove it (default '{default}')")
    return f"{(prefix or default).strip()}-{job_name}"


def _parse_drop_topics(value: str | None) -> tuple[str, ...]:
    if value is None or not value.strip():
        return ()
    topics = tuple(t.strip() for t in value.split(","))
    if any(not t for t in topics):
        raise ConfigError(f"option '{spec.DROP_TOPICS.name}' has an empty topic name in {value!r}; use e.g. "
                          "'orders-2023,clicks-old'")
    return tuple(sorted(set(topics)))


def _parse_subscription(opts: Options):
    subscribe, pattern, assign = spec.SUBSCRIBE.name, spec.SUBSCRIBE_PATTERN.name, spec.ASSIGN.name
    given = [name for name in (subscribe, pattern, assign) if opts.string(name) is not None]
    if len(given) != 1:
        raise ConfigError(
            f"exactly one of the options '{subscribe}' (comma-separated topics), '{pattern}' (a regex) or "
            f"'{assign}' (JSON like {{\"orders\":[0,1]}}) must be set; got {', '.join(given) if given else 'none'}"
        )
    name = given[0]
    value = opts.string(name)
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
            f"option '{spec.ASSIGN.name}' must be a JSON object of topic -> non-empty list of partitions, e.g. "
            f"{{\"orders\":[0,1]}}; got {value!r}"
        ) from None
    return assign


def _parse_starting(opts: Options) -> StartingOffsets:
    names = (STARTING_OFFSETS.name, STARTING_TIMESTAMP.name, spec.STARTING_OFFSETS_BY_TIMESTAMP.name)
    given = [n for n in names if opts.has(n)]
    strategy = spec.STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY.read(opts)
    if len(given) > 1:
        raise ConfigError(f"set only one of the options {', '.join(given)}; they all choose where a new query starts")
    if not given:
        return DEFAULT_STARTING_OFFSETS
    name = given[0]
    value = opts.string(name) or ""
    if name == STARTING_TIMESTAMP.name:
        return ByTimestamp(timestamp_ms=epoch_ms(name, value), strategy=strategy)
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
        return SpecificOffsets(per)
    return ByTimestamp(per_partition=per, strategy=strategy)


# POLL_TIMEOUT.name and the DEFAULT_* values: for the executors' reader, which names and defaults them
__all__ = ["BOUNDED_ONLY_OPTIONS", "DEFAULT_MAX_ROWS_PER_BATCH", "DEFAULT_POLL_TIMEOUT_MS", "POLL_TIMEOUT",
           "KafkaSourceOptions", "epoch_ms", "option_names", "per_partition_numbers"]


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
