"""Import a Samza ``job.properties`` file as reader options for ``samza-kafka`` or ``samza-kinesis``.

```python
from spark_samza_source.config import import_properties, load_properties

options = load_properties("job.properties")                      # dict[str, str]; logs what it left out
df = spark.readStream.format("samza-kafka").options(**options).option("metadata.store", "s3://b/p").load()

result = import_properties("job.properties")                     # the full report
print(result.describe())                                         # options, notes, rejected and ignored keys
df = spark.readStream.format(result.format).options(**result.options).load()
```

The file is read with Java's ``Properties`` syntax (``key=value``, ``key: value``, ``key value``, ``#``/``!``
comments, ``\\`` line continuations, ``\\t \\n \\uXXXX`` escapes; UTF-8, or ISO-8859-1 when the bytes are not
UTF-8; the last of duplicate keys wins, as in Java). Nothing is read beyond that file: no broker, no AWS call.

Every key of the file ends up in exactly one place of the :class:`PropertiesImport`:

- ``options``: what the source needs, under its option names (see ``docs/migration.md`` for the table);
- ``notes``: how keys were translated where the translation is not one to one;
- ``rejected``: keys that do mean something for reading, which the source refuses or does its own way; the
  reason says what happens instead (e.g. ``consumer.group.id``: the group is ``samza-<job.name>``);
- ``ignored``: keys that only configure Samza's runtime (serdes, stores, ``task.class``, metrics, YARN, ...),
  or that the importer does not know (said so in the reason);
- a :class:`~spark_samza_source.core.errors.ConfigError` instead of a result for keys whose meaning would be
  lost silently and change which records are read or which task reads them (an unknown grouper factory,
  ``samza.reset.offset=true``, bootstrap streams, ``job.elasticity.factor`` > 1, ...). The message names the key.

Decisions worth knowing:

- ``job.name`` is ``job.name`` when ``job.id`` is ``1`` (Samza's default) and ``<job.name>-<job.id>`` otherwise,
  since Samza identifies a job by both (its KCL application name is ``<job.name>-<job.id>-<stream>``).
- One query reads one system. Inputs from several systems (or Kafka and Kinesis together) fail unless
  ``system=`` picks one; the other systems' inputs are then reported as ignored (read them in another query).
- The source's SSPs always carry the system name ``kafka`` (or ``kinesis``), whatever the Samza system was
  called; ``task.broadcast.inputs`` is rewritten accordingly (a note says so).
- Options of the source itself may be written into the file too (``metadata.store=s3://...``,
  ``maxOffsetsPerTrigger=...``): they are passed through; one that contradicts a value derived from Samza keys
  is a ``ConfigError``.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .core.broadcast import format_broadcast_inputs, parse_broadcast_inputs
from .core.errors import ConfigError
from .core.grouping import SAMZA_GROUPER_FACTORIES, FixedTasksGrouper
from .core.model import SystemStreamPartition
from .kafka.options import (
    ASSIGN_OPTION,
    COMMIT_OFFSETS_TO_KAFKA_OPTION,
    DROP_TOPICS_OPTION,
    EXPANSION_ORDERING_OPTION,
    EXPANSION_SETTLE_OPTION,
    INCLUDE_HEADERS_OPTION,
    JOB_MODEL_RESET_OPTION,
    MAX_OFFSETS_PER_TRIGGER_OPTION,
    MAX_ROWS_PER_ARROW_BATCH_OPTION,
    MAX_TRIGGER_DELAY_OPTION,
    MIN_OFFSETS_PER_TRIGGER_OPTION,
    POLL_TIMEOUT_OPTION,
    STARTING_OFFSETS_BY_TIMESTAMP_OPTION,
    STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY_OPTION,
    STARTING_OFFSETS_OPTION,
    STARTING_TIMESTAMP_OPTION,
    SUBSCRIBE_OPTION,
    SUBSCRIBE_PATTERN_OPTION,
)
from .kinesis.options import (
    ACCESS_KEY_ID_OPTION,
    ASSIGNMENT_OPTION,
    DYNAMODB_ENDPOINT_URL_OPTION,
    ENDPOINT_URL_OPTION,
    KCL_LEASE_TABLE_OPTION,
    MAX_FETCH_TIME_PER_SHARD_OPTION,
    MAX_RECORDS_PER_SHARD_OPTION,
    REGION_OPTION,
    ROLE_ARN_OPTION,
    ROLE_SESSION_NAME_OPTION,
    SECRET_KEY_OPTION,
    SESSION_TOKEN_OPTION,
    STARTING_POSITION_OPTION,
    STREAM_NAME_OPTION,
    TASKS_OPTION,
)
from .metadata.base import validate_job_name
from .source.options import (
    BROADCAST_OPTION,
    COPARTITION_OPTION,
    EXPANSION_ALGORITHM_OPTION,
    FAIL_ON_DATA_LOSS_OPTION,
    GROUPER_OPTION,
    JOB_NAME_OPTION,
    JOB_OWNERSHIP_TTL_OPTION,
    METADATA_STORE_OPTION,
    RETRY_TIMEOUT_OPTION,
    STARTPOINT_POLL_INTERVAL_OPTION,
    STARTPOINT_TTL_OPTION,
)
from .spark.options import is_secret_option

__all__ = [
    "KAFKA_FORMAT",
    "KINESIS_FORMAT",
    "PropertiesImport",
    "import_mapping",
    "import_properties",
    "load_properties",
    "parse_properties",
    "properties_to_options",
    "read_properties",
    "starting_offsets_from_samza_checkpoint",
    "starting_offsets_from_spark_checkpoint",
]

log = logging.getLogger(__name__)

KAFKA_FORMAT = "samza-kafka"
KINESIS_FORMAT = "samza-kinesis"

# ---- Java properties syntax ----------------------------------------------------------------------------------

_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str) -> dict[str, str]:
    """Parse ``text`` as ``java.util.Properties.load`` does; duplicate keys: the last one wins."""
    return {key: value for _, key, value in _entries(text)}


def read_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a properties file (UTF-8, falling back to ISO-8859-1, Java's historical encoding)."""
    return parse_properties(_read_text(path))


def _read_text(path: str | os.PathLike[str]) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise ConfigError(f"cannot read Samza properties file {os.fspath(path)!r}: {err.strerror or err}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("iso-8859-1")


def _entries(text: str) -> list[tuple[int, str, str]]:
    """``(line number, key, value)`` for every entry, in file order."""
    out = []
    for lineno, line in _logical_lines(text):
        raw_key, raw_value = _split_key_value(line)
        out.append((lineno, _unescape(raw_key, lineno), _unescape(raw_value, lineno)))
    return out


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    natural = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(natural):
        lineno = i + 1
        line = natural[i].lstrip(_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":
            continue  # blank or comment: a comment never continues, even when it ends with a backslash
        while _odd_trailing_backslashes(line):
            line = line[:-1]
            if i >= len(natural):
                break  # a backslash at the very end of the file is dropped, as in Java
            line += natural[i].lstrip(_WHITESPACE)  # a continuation's leading whitespace is skipped
            i += 1
        yield lineno, line


def _odd_trailing_backslashes(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    key_end = value_start = len(line)
    has_separator = False
    backslash = False
    for i, char in enumerate(line):
        if not backslash and char in "=:":
            key_end, value_start, has_separator = i, i + 1, True
            break
        if not backslash and char in _WHITESPACE:
            key_end, value_start = i, i + 1
            break
        backslash = (not backslash) if char == "\\" else False
    j = value_start
    while j < len(line):
        char = line[j]
        if char not in _WHITESPACE:
            if has_separator or char not in "=:":
                break
            has_separator = True
        j += 1
    return line[:key_end], line[j:]


def _unescape(raw: str, lineno: int) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        i += 1
        if char != "\\":
            out.append(char)
            continue
        if i >= len(raw):
            break
        char = raw[i]
        i += 1
        if char == "u":
            digits = raw[i:i + 4]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                shown_escape = "\\u" + digits
                raise ConfigError(f"Samza properties line {lineno}: malformed \\uXXXX escape {shown_escape!r}")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(char, char))
    text = "".join(out)
    # \uD83D\uDE00 (UTF-16 surrogate pairs, as Java writes them) -> one code point
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


# ---- the result ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PropertiesImport:
    """What a Samza configuration becomes: options for one source, and every key that did not carry over."""

    format: str  # "samza-kafka" or "samza-kinesis": the argument of spark.readStream.format(...)
    system: str  # the Samza system the inputs were read from
    options: dict[str, str]
    notes: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    ignored: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:  # options may hold credentials
        shown = {k: ("***" if is_secret_option(k) else v) for k, v in self.options.items()}
        return (f"PropertiesImport(format={self.format!r}, system={self.system!r}, options={shown!r}, "
                f"{len(self.notes)} notes, {len(self.rejected)} rejected, {len(self.ignored)} ignored)")

    def describe(self) -> str:
        """A human-readable report (secret values are never shown)."""
        lines = [f"{self.format} options from Samza system '{self.system}':"]
        lines += [f"  {k} = {'***' if is_secret_option(k) else v}" for k, v in self.options.items()]
        for title, entries in (("notes", self.notes),
                               ("rejected (not carried over)", [f"{k}: {w}" for k, w in self.rejected.items()]),
                               ("ignored", [f"{k}: {w}" for k, w in self.ignored.items()])):
            if entries:
                lines.append(f"{title}:")
                lines += [f"  - {entry}" for entry in entries]
        return "\n".join(lines)


# ---- entry points -------------------------------------------------------------------------------------------


def import_properties(
    path: str | os.PathLike[str],
    *,
    system: str | None = None,
    stream: str | None = None,
    partition_counts: Mapping[str, int] | None = None,
) -> PropertiesImport:
    """Read a Samza ``job.properties`` file and translate it; see the module documentation.

    ``system``: the Samza system to read when ``task.inputs`` spans several. ``stream``: the Kinesis stream to
    read when the system has several (one ``samza-kinesis`` query reads one stream). ``partition_counts``
    (topic -> current partition count) lets Kafka topics with different ``samza.offset.default`` values be
    expressed as per-partition ``startingOffsets`` JSON; without it that case is a ``ConfigError``.
    """
    try:
        return import_mapping(read_properties(path), system=system, stream=stream,
                              partition_counts=partition_counts)
    except ConfigError as err:
        raise ConfigError(f"{os.fspath(path)}: {err}") from None


def import_mapping(
    mapping: Mapping[str, str],
    *,
    system: str | None = None,
    stream: str | None = None,
    partition_counts: Mapping[str, int] | None = None,
) -> PropertiesImport:
    """Translate an already parsed Samza configuration (key -> value); see :func:`import_properties`."""
    return _Importer(mapping, system=system, stream=stream, partition_counts=partition_counts).run()


def load_properties(
    path: str | os.PathLike[str],
    *,
    system: str | None = None,
    stream: str | None = None,
    partition_counts: Mapping[str, int] | None = None,
) -> dict[str, str]:
    """The reader options of :func:`import_properties`; rejected keys are logged as warnings, the rest at info."""
    result = import_properties(path, system=system, stream=stream, partition_counts=partition_counts)
    _log_report(result, os.fspath(path))
    return dict(result.options)


def properties_to_options(
    mapping: Mapping[str, str],
    *,
    system: str | None = None,
    stream: str | None = None,
    partition_counts: Mapping[str, int] | None = None,
) -> dict[str, str]:
    """The reader options of :func:`import_mapping`, logging what was left out as :func:`load_properties` does."""
    result = import_mapping(mapping, system=system, stream=stream, partition_counts=partition_counts)
    _log_report(result, "Samza configuration")
    return dict(result.options)


def _log_report(result: PropertiesImport, where: str) -> None:
    for note in result.notes:
        log.info("%s: %s", where, note)
    for key, why in result.rejected.items():
        log.warning("%s: %s is not carried over: %s", where, key, why)
    for key, why in result.ignored.items():
        log.info("%s: %s ignored: %s", where, key, why)


# ---- resuming where another consumer stopped ----------------------------------------------------------------

_SAMZA_CHECKPOINT_LINE = re.compile(
    r"tasknames\.(?P<task>.+)\.systems\.(?P<system>[^.\s]+)\.streams\.(?P<stream>.+)\.partitions\."
    r"(?P<partition>[0-9]+)\s*[=:]\s*(?P<offset>\S+)\s*$"
)


def starting_offsets_from_samza_checkpoint(text: str, *, system: str | None = None) -> str:
    """``startingOffsets`` JSON that resumes where a Samza job's Kafka checkpoint stands.

    ``text``: the lines Samza's ``checkpoint-tool.sh`` prints for a job (or a ``--new-offsets`` file), each
    holding ``tasknames.<task>.systems.<system>.streams.<topic>.partitions.<p> = <offset>``; other lines are
    skipped. Samza checkpoints the last *processed* offset and resumes after it, so each offset becomes
    ``offset + 1``. An SSP in several tasks (broadcast) resumes at the smallest. ``system`` picks one system
    when the checkpoint spans several. Use the result for a *new* query (no Spark checkpoint yet).
    """
    found: dict[tuple[str, str, int], int] = {}
    systems: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), 1):
        match = _SAMZA_CHECKPOINT_LINE.search(line)
        if not match:
            continue
        if system is not None and match["system"] != system:
            continue
        try:
            offset = int(match["offset"])
            if offset < 0:
                raise ValueError
        except ValueError:
            raise ConfigError(f"Samza checkpoint line {lineno}: offset {match['offset']!r} of "
                              f"{match['system']}.{match['stream']}#{match['partition']} is not a Kafka offset "
                              "(a whole number >= 0)") from None
        systems.add(match["system"])
        key = (match["system"], match["stream"], int(match["partition"]))
        found[key] = min(found.get(key, offset + 1), offset + 1)
    if not found:
        raise ConfigError("no Samza checkpoint line (tasknames.<task>.systems.<system>.streams.<topic>.partitions."
                          f"<p> = <offset>){f' of system {system!r}' if system else ''} found")
    if len(systems) > 1:
        raise ConfigError(f"the checkpoint spans systems {', '.join(sorted(systems))}: pass system='<name>'")
    out: dict[str, dict[str, int]] = {}
    for (_, stream, partition), offset in sorted(found.items()):
        out.setdefault(stream, {})[str(partition)] = offset
    return json.dumps(out, separators=(",", ":"))


def starting_offsets_from_spark_checkpoint(checkpoint_location: str | os.PathLike[str], *, source: int = 0) -> str:
    """``startingOffsets`` JSON that resumes where a query of Spark's built-in Kafka source stands.

    Reads the checkpoint's offset log (``offsets/<n>``: ``v1``, the batch metadata, then one offset per source)
    at the newest batch ``n`` that has a commit marker (``commits/<n>``): the end of the last completed batch,
    where Spark itself would resume. The Kafka source's offset, ``{"topic": {"0": next offset}}``, is exactly the
    ``startingOffsets`` JSON. ``source``: the index of the Kafka source when the query has several. A local
    path (or ``file:`` URI); copy ``offsets/`` and ``commits/`` from object storage first.
    """
    root = os.fspath(checkpoint_location)
    if root.startswith("file://"):
        root = root[len("file://"):]
    elif root.startswith("file:"):
        root = root[len("file:"):]
    offsets_dir, commits_dir = os.path.join(root, "offsets"), os.path.join(root, "commits")
    try:
        committed = sorted((int(n) for n in os.listdir(commits_dir) if n.isdigit()), reverse=True)
        logged = {int(n) for n in os.listdir(offsets_dir) if n.isdigit()}
    except OSError as err:
        raise ConfigError(f"{root} is not a readable Spark checkpoint ({err.strerror or err}): expected the "
                          "directories offsets/ and commits/") from None
    batch = next((n for n in committed if n in logged), None)
    if batch is None:
        raise ConfigError(f"{root}: no committed batch in the checkpoint: nothing to resume from")
    path = os.path.join(offsets_dir, str(batch))
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    if not lines or not lines[0].startswith("v") or len(lines) < 3 + source:
        raise ConfigError(f"{path} is not a Spark offset log entry with a source #{source}")
    raw = lines[2 + source].strip()
    try:
        parsed = json.loads(raw)
        if not isinstance(parsed, dict) or not parsed:
            raise ValueError
        out = {}
        for topic, parts in sorted(parsed.items()):
            if not isinstance(parts, dict) or not parts:
                raise ValueError
            out[str(topic)] = {}
            for partition, offset in sorted(parts.items(), key=lambda kv: int(kv[0])):
                if not str(partition).isdigit() or not isinstance(offset, int) or isinstance(offset, bool) \
                        or offset < 0:
                    raise ValueError
                out[str(topic)][str(int(partition))] = offset
    except ValueError:
        raise ConfigError(f"{path}: source #{source} of batch {batch} is not a Kafka source offset "
                          f'({{"topic": {{"0": offset}}}}): {raw[:200]!r}') from None
    return json.dumps(out, separators=(",", ":"))


# ---- translation --------------------------------------------------------------------------------------------

_SAMZA_PREFIX = "org.apache.samza."
_KAFKA_FACTORY = "KafkaSystemFactory"
_KINESIS_FACTORY = "KinesisSystemFactory"
_HASH_MAPPER_FACTORIES = {
    "hashsystemstreampartitionmapperfactory", "hashsystemstreampartitionmapper", "defaultpartitionexpansionalgorithm",
}

_GROUPER_KEY = "job.systemstreampartition.grouper.factory"
_EXPANSION_KEY = "job.systemstreampartition.input.expansion.enabled"
_MAPPER_KEY = "job.system.stream.partition.mapper.factory"
_ALGORITHM_KEY = "job.systemstreampartition.expansion.algorithm"  # SEP-5's name for the same choice
# Samza properties whose names the sources' options carry over unchanged (so they are the same constants)
_SAMZA_JOB_NAME_KEY = JOB_NAME_OPTION
_SAMZA_BROADCAST_KEY = BROADCAST_OPTION

# Options of the sources themselves, passed through verbatim when a file carries them.
_KAFKA_NATIVE = {
    SUBSCRIBE_OPTION, SUBSCRIBE_PATTERN_OPTION, ASSIGN_OPTION, METADATA_STORE_OPTION, GROUPER_OPTION,
    EXPANSION_ALGORITHM_OPTION, EXPANSION_ORDERING_OPTION, EXPANSION_SETTLE_OPTION, JOB_MODEL_RESET_OPTION,
    COPARTITION_OPTION, STARTING_OFFSETS_OPTION, STARTING_TIMESTAMP_OPTION, STARTING_OFFSETS_BY_TIMESTAMP_OPTION,
    STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY_OPTION, MAX_OFFSETS_PER_TRIGGER_OPTION, MIN_OFFSETS_PER_TRIGGER_OPTION,
    MAX_TRIGGER_DELAY_OPTION, FAIL_ON_DATA_LOSS_OPTION, INCLUDE_HEADERS_OPTION, STARTPOINT_TTL_OPTION,
    STARTPOINT_POLL_INTERVAL_OPTION, COMMIT_OFFSETS_TO_KAFKA_OPTION, MAX_ROWS_PER_ARROW_BATCH_OPTION,
    POLL_TIMEOUT_OPTION, JOB_OWNERSHIP_TTL_OPTION, RETRY_TIMEOUT_OPTION, DROP_TOPICS_OPTION,
}
_KINESIS_NATIVE = {
    STREAM_NAME_OPTION, REGION_OPTION, ENDPOINT_URL_OPTION, DYNAMODB_ENDPOINT_URL_OPTION, ACCESS_KEY_ID_OPTION,
    SECRET_KEY_OPTION, SESSION_TOKEN_OPTION, ROLE_ARN_OPTION, ROLE_SESSION_NAME_OPTION, METADATA_STORE_OPTION,
    TASKS_OPTION, ASSIGNMENT_OPTION, STARTING_POSITION_OPTION, MAX_RECORDS_PER_SHARD_OPTION,
    MAX_FETCH_TIME_PER_SHARD_OPTION, KCL_LEASE_TABLE_OPTION, FAIL_ON_DATA_LOSS_OPTION, STARTPOINT_TTL_OPTION,
    STARTPOINT_POLL_INTERVAL_OPTION, JOB_OWNERSHIP_TTL_OPTION, RETRY_TIMEOUT_OPTION,
}
_EXCLUSIVE = ((SUBSCRIBE_OPTION, SUBSCRIBE_PATTERN_OPTION, ASSIGN_OPTION),
              (STARTING_OFFSETS_OPTION, STARTING_TIMESTAMP_OPTION, STARTING_OFFSETS_BY_TIMESTAMP_OPTION))

# systems.<s>.consumer.<key>: Java consumer keys that mean something else here, or nothing to librdkafka.
_CONSUMER_REJECTED = {
    "group.id": "the source assigns partitions itself and mirrors committed offsets to the consumer group "
                "'samza-<job.name>' (commitOffsetsToKafka); Samza's group is not used",
    "auto.offset.reset": "in Samza it silently resets a position that fell out of range; here failOnDataLoss "
                         "(default true) fails the query naming the lost range, false continues from the earliest "
                         "available offset. Where a new query starts is startingOffsets (from samza.offset.default)",
    "enable.auto.commit": "offsets are tracked in Spark's checkpoint; Kafka auto-commit is refused by the source",
    "auto.commit.enable": "offsets are tracked in Spark's checkpoint; Kafka auto-commit is refused by the source",
    "key.deserializer": "keys are always returned as binary; decode them in Spark",
    "value.deserializer": "values are always returned as binary; decode them in Spark",
    "sasl.jaas.config": "a Java JAAS setting librdkafka does not have; set kafka.sasl.mechanism, "
                        "kafka.sasl.username and kafka.sasl.password instead",
    "ssl.truststore.location": "Java trust stores are not supported by librdkafka; set kafka.ssl.ca.location to a "
                               "PEM file instead",
    "ssl.truststore.password": "Java trust stores are not supported by librdkafka; use kafka.ssl.ca.location",
    "ssl.truststore.type": "Java trust stores are not supported by librdkafka; use kafka.ssl.ca.location",
    "ssl.keystore.type": "librdkafka reads PKCS#12 key stores only (kafka.ssl.keystore.location/password) or PEM "
                         "(kafka.ssl.certificate.location, kafka.ssl.key.location)",
    "partition.assignment.strategy": "the source assigns partitions itself (no consumer-group rebalancing)",
}
# Java consumer settings librdkafka has no equivalent for: dropping them changes no record read.
_CONSUMER_JAVA_ONLY = {
    "default.api.timeout.ms", "exclude.internal.topics", "interceptor.classes", "internal.leave.group.on.close",
    "metric.reporters", "metrics.num.samples", "metrics.sample.window.ms", "metrics.recording.level",
    "rebalance.timeout.ms", "sasl.login.class", "sasl.login.callback.handler.class", "security.providers",
    "ssl.enabled.protocols", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.protocol",
    "ssl.secure.random.implementation", "ssl.provider", "sasl.client.callback.handler.class",
    "client.dns.lookup.config",
}
# Java consumer names librdkafka spells differently, same meaning.
_CONSUMER_RENAMED = {
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
}

# Keys (exact, or prefixes ending in '.') that only configure Samza's runtime.
_IGNORED_EXACT = {
    "task.class": "the Samza task's code: write the processing as Spark transformations on the stream",
    "app.class": "the Samza application's code: write the processing as Spark transformations on the stream",
    "app.runner.class": "Samza's application runner: Spark runs the query",
    "job.factory.class": "Samza's deployment (YARN, local, standalone): spark-submit deploys the query",
    "task.window.ms": "Samza's window() callback: use Spark windows or a trigger interval",
    "task.commit.ms": "Samza's commit interval: Spark commits once per micro-batch (see the trigger interval)",
    "task.opts": "JVM options of Samza containers: see spark.executor.extraJavaOptions",
    "task.java.home": "Samza container JVM: Spark executors use their own",
    "task.name.grouper.factory": "Samza's task-to-container grouping: Spark schedules tasks on executors",
    "job.container.count": "Samza containers: each task is one Spark input partition, run on Spark executors",
    "job.container.thread.pool.size": "Samza's task threads: Spark runs one thread per task",
    "job.default.system": "Samza's default system (used here only to resolve streams.<id>.* keys)",
    "job.coordinator.system": "Samza's coordinator stream: the job model is kept in the metadata store",
    "job.changelog.system": "Samza's store changelogs: Spark state is checkpointed by Spark",
    "job.coordinator.monitor-partition-change.frequency.ms": "partition expansion is detected at every trigger",
    "job.coordinator.monitor-input-regex.frequency.ms": "subscribePattern is re-evaluated at every trigger",
    "job.jmx.enabled": "Samza JMX: Spark has its own metrics",
    "job.logged.store.base.dir": "Samza local stores: use Spark state",
    "job.non-logged.store.base.dir": "Samza local stores: use Spark state",
}
_IGNORED_PREFIXES = (
    ("serializers.", "Samza serdes: the source returns raw bytes; decode with Spark functions"),
    ("stores.", "Samza local stores: use Spark state (e.g. applyInPandasWithState); changelog contents are not "
                "migrated"),
    ("metrics.", "Samza metrics reporters: Spark reports streaming progress (StreamingQueryProgress)"),
    ("yarn.", "YARN deployment of Samza: spark-submit deploys the query"),
    ("cluster-manager.", "Samza's cluster manager: spark-submit deploys the query"),
    ("task.checkpoint.", "Samza checkpoints: the Spark checkpoint location is the source of truth (to resume "
                         "where Samza stopped, see docs/migration.md)"),
    ("task.", "Samza task runtime setting"),
    ("job.container.", "Samza container setting: Spark executors run the tasks"),
    ("job.coordinator.", "Samza job coordinator setting: the Spark driver plans every batch"),
    ("job.autosizing.", "Samza auto-sizing: size Spark executors instead"),
    ("job.standbytasks.", "Samza standby tasks: Spark re-runs failed tasks from the checkpoint"),
    ("job.", "Samza job runtime setting"),
    ("app.", "Samza application setting"),
    ("processor.", "Samza standalone processor setting"),
    ("zk.", "Samza standalone (ZooKeeper) coordination: the Spark driver coordinates"),
    ("coordinator.", "Samza coordination setting: the Spark driver coordinates"),
    ("diagnostics.", "Samza diagnostics"),
    ("container.", "Samza container setting"),
    ("cluster.", "Samza cluster setting"),
)


class _Importer:
    def __init__(self, mapping: Mapping[str, str], *, system: str | None, stream: str | None,
                 partition_counts: Mapping[str, int] | None) -> None:
        self.props: dict[str, str] = {}
        self.original: dict[str, str] = {}
        for key, value in mapping.items():
            key = str(key).strip()
            name = key[len("sensitive."):] if key.startswith("sensitive.") else key
            if name in self.props:
                raise ConfigError(f"both {self.original[name]!r} and {key!r} are set: keep one of them")
            self.props[name] = "" if value is None else str(value)
            self.original[name] = key
        self.want_system = system
        self.want_stream = stream
        self.partition_counts = dict(partition_counts or {})
        self.used: set[str] = set()
        self.options: dict[str, str] = {}
        self.derived_from: dict[str, str] = {}  # option -> the Samza key(s) it came from
        self.soft: set[str] = set()  # derived options an option of the source in the file may override
        self.notes: list[str] = []
        self.rejected: dict[str, str] = {}
        self.ignored: dict[str, str] = {}

    # ---- bookkeeping ------------------------------------------------------------------------------------
    def get(self, key: str) -> str | None:
        value = self.props.get(key)
        if value is not None:
            self.used.add(key)
            return value.strip()
        return None

    def keys_with(self, prefix: str) -> list[str]:
        return sorted(k for k in self.props if k.startswith(prefix))

    def name(self, key: str) -> str:
        return self.original.get(key, key)

    def ignore(self, key: str, why: str) -> None:
        self.used.add(key)
        self.ignored[self.name(key)] = why

    def reject(self, key: str, why: str) -> None:
        self.used.add(key)
        self.rejected[self.name(key)] = why

    def fail(self, key: str, why: str) -> ConfigError:
        return ConfigError(f"{self.name(key)}: {why}")

    def set_option(self, option: str, value: str, source: str) -> None:
        self.options[option] = value
        self.derived_from[option] = source

    # ---- the run ----------------------------------------------------------------------------------------
    def run(self) -> PropertiesImport:
        job_name = self._job_name()
        inputs, patterns = self._inputs()
        broadcast = self._broadcast()
        system = self._choose_system(inputs, patterns, broadcast)
        kind = self._system_type(system)
        self.set_option(JOB_NAME_OPTION, job_name, _SAMZA_JOB_NAME_KEY)
        if kind == KAFKA_FORMAT:
            self._kafka(system, inputs, patterns, broadcast)
        else:
            self._kinesis(system, inputs, patterns, broadcast, job_name)
        self._common(kind)
        self._native(kind)
        self._leftovers(system)
        return PropertiesImport(kind, system, dict(self.options), self.notes, dict(sorted(self.rejected.items())),
                                dict(sorted(self.ignored.items())))

    def _job_name(self) -> str:
        name_key = _SAMZA_JOB_NAME_KEY if self.props.get(_SAMZA_JOB_NAME_KEY, "").strip() else "app.name"
        name = self.get(name_key)
        if not name:
            raise ConfigError("job.name is required: it names the job's startpoints, job model and checkpoint "
                              "mirror in the metadata store (Samza's app.name is accepted too)")
        id_key = "job.id" if name_key == _SAMZA_JOB_NAME_KEY else "app.id"
        job_id = self.get(id_key) or "1"
        for other in ("app.name", "app.id") if name_key == _SAMZA_JOB_NAME_KEY else ("job.id",):
            if other in self.props:
                self.ignore(other, f"{name_key} and {id_key} name the job")
        folded = name if job_id == "1" else f"{name}-{job_id}"
        try:
            validate_job_name(folded)
        except ConfigError as err:
            raise ConfigError(f"{self.name(name_key)}/{self.name(id_key)}: {err}") from None
        if job_id != "1":
            self.notes.append(f"{id_key}={job_id} is folded into job.name '{folded}' (Samza identifies a job by "
                              f"{name_key} and {id_key}; id 1, the default, is left out)")
        return folded

    def _inputs(self) -> tuple[dict[str, list[str]], dict[str, list[tuple[str, str]]]]:
        """system -> input streams (file order), system -> [(regex, rewriter key)] from RegExTopicGenerator."""
        inputs: dict[str, list[str]] = {}
        raw = self.get("task.inputs")
        if raw:
            for entry in raw.split(","):
                entry = entry.strip()
                if not entry:
                    continue
                system, dot, stream = entry.partition(".")
                if not dot or not system or not stream:
                    raise self.fail("task.inputs", f"entry {entry!r} is not 'system.stream' (e.g. kafka.orders)")
                if stream not in inputs.setdefault(system, []):
                    inputs[system].append(stream)
        patterns: dict[str, list[tuple[str, str]]] = {}
        rewriters = self.get("job.config.rewriters")
        active = [n.strip() for n in (rewriters or "").split(",") if n.strip()]
        for rewriter in active:
            class_key = f"job.config.rewriter.{rewriter}.class"
            cls = self.get(class_key)
            simple = (cls or "").rsplit(".", 1)[-1]
            prefix = f"job.config.rewriter.{rewriter}."
            if simple == "RegExTopicGenerator":
                regex_key, system_key = prefix + "regex", prefix + "system"
                regex, system = self.get(regex_key), self.get(system_key)
                if not regex or not system:
                    raise self.fail(class_key, f"RegExTopicGenerator needs {regex_key} and {system_key}")
                try:
                    re.compile(regex)
                except re.error as err:
                    raise self.fail(regex_key, f"{regex!r} is not a regular expression Python accepts ({err})") \
                        from None
                patterns.setdefault(system, []).append((regex, regex_key))
                for key in self.keys_with(prefix + "config."):
                    self.used.add(key)  # inherited stream properties: read in _stream_props
            elif simple == "EnvironmentConfigRewriter":
                self.reject(class_key, "values from environment variables are not applied: resolve them into the "
                                       "file (or the options) before importing")
            else:
                raise self.fail(class_key, f"config rewriter {cls!r} may rewrite any key, including the inputs; "
                                           "apply it first and import the rewritten configuration")
        for key in self.keys_with("job.config.rewriter."):
            if key not in self.used and key.split(".")[3] not in active:
                self.ignore(key, "this rewriter is not listed in job.config.rewriters, so Samza does not run it")
        if not inputs and not patterns:
            raise ConfigError("task.inputs is missing or empty: name the input streams as system.stream, e.g. "
                              "task.inputs=kafka.orders,kafka.payments")
        return inputs, patterns

    def _broadcast(self) -> list[SystemStreamPartition]:
        raw = self.get(_SAMZA_BROADCAST_KEY)
        if not raw:
            return []
        return parse_broadcast_inputs(raw)

    def _choose_system(self, inputs, patterns, broadcast) -> str:
        systems = list(dict.fromkeys([*inputs, *patterns]))
        if self.want_system is not None:
            if self.want_system not in systems:
                raise ConfigError(f"system={self.want_system!r} has no input in task.inputs (systems with inputs: "
                                  f"{', '.join(systems)})")
            for other in systems:
                if other != self.want_system:
                    streams = ", ".join(f"{other}.{s}" for s in inputs.get(other, [])) or "regex inputs"
                    self.ignored[f"task.inputs ({streams})"] = (
                        f"inputs of system '{other}': import again with system='{other}' for a second query")
            system = self.want_system
        elif len(systems) > 1:
            described = "; ".join(
                f"'{s}' ({self._describe_type(s)}): {', '.join(inputs.get(s, [])) or 'regex inputs'}"
                for s in systems)
            raise ConfigError(
                f"task.inputs reads from several systems ({described}). One query reads one system: import with "
                "system='<name>' once per system and combine the streams in Spark (union or join)")
        else:
            system = systems[0]
        others = sorted({b.system for b in broadcast} - {system})
        if others:
            raise self.fail(_SAMZA_BROADCAST_KEY, f"names system(s) {', '.join(others)}, but this query reads "
                                                     f"system '{system}': a broadcast input must come from the same "
                                                     "system as the other inputs")
        return system

    def _describe_type(self, system: str) -> str:
        try:
            return self._system_type(system, quiet=True)
        except ConfigError:
            return "unknown type"

    def _system_type(self, system: str, quiet: bool = False) -> str:
        factory_key = f"systems.{system}.samza.factory"
        factory = self.props.get(factory_key, "").strip()
        if factory:
            if not quiet:
                self.used.add(factory_key)
            simple = factory.rsplit(".", 1)[-1]
            if simple == _KAFKA_FACTORY:
                return KAFKA_FORMAT
            if simple == _KINESIS_FACTORY:
                return KINESIS_FORMAT
            raise self.fail(factory_key, f"system '{system}' uses {factory}; this project reads Kafka "
                                         f"({_KAFKA_FACTORY}) and Kinesis ({_KINESIS_FACTORY}) only")
        prefix = f"systems.{system}."
        keys = self.keys_with(prefix)
        kafka = any(k.startswith((prefix + "consumer.", prefix + "producer.")) for k in keys)
        kinesis = any(k.startswith(prefix + "aws.") or (k.startswith(prefix + "streams.") and ".aws." in k)
                      for k in keys)
        if kafka != kinesis:
            kind = KAFKA_FORMAT if kafka else KINESIS_FORMAT
            if not quiet:
                self.notes.append(f"{factory_key} is not set: system '{system}' is taken for "
                                  f"{'Kafka' if kafka else 'Kinesis'} from its "
                                  f"{'consumer/producer' if kafka else 'aws.*'} keys")
            return kind
        raise ConfigError(f"{factory_key} is not set and the keys under {prefix}* do not tell Kafka from Kinesis: "
                          f"set it to org.apache.samza.system.kafka.{_KAFKA_FACTORY} or "
                          f"org.apache.samza.system.kinesis.{_KINESIS_FACTORY}")

    # ---- stream properties ------------------------------------------------------------------------------
    def _stream_ids(self, system: str, streams: Iterable[str]) -> dict[str, str]:
        """streams.<id>.* keys that belong to our inputs: id -> physical stream."""
        wanted = set(streams)
        default_system = self.props.get("job.default.system", "").strip()
        out = {}
        ids = {k.split(".")[1] for k in self.props if k.startswith("streams.") and k.count(".") >= 2}
        for stream_id in sorted(ids):
            sys_of = self.props.get(f"streams.{stream_id}.samza.system", "").strip() or default_system
            physical = self.props.get(f"streams.{stream_id}.samza.physical.name", "").strip() or stream_id
            if sys_of == system and physical in wanted:
                out[stream_id] = physical
        return out

    def _stream_props(self, system: str, streams: list[str]) -> dict[str, dict[str, tuple[str, str]]]:
        """stream -> {property: (value, key)} merged as Samza does: streams.<id> > systems.<s>.streams.<t>."""
        out: dict[str, dict[str, tuple[str, str]]] = {s: {} for s in streams}
        prefix = f"systems.{system}.streams."
        by_length = sorted(streams, key=len, reverse=True)  # "orders.v2" before "orders"
        for key in self.keys_with(prefix):
            rest = key[len(prefix):]
            stream = next((s for s in by_length if rest.startswith(s + ".")), None)
            if stream is None:
                self.ignore(key, f"stream is not an input of this query (an output, or unused): "
                                 f"{rest.split('.', 1)[0]!r}")
                continue
            self.used.add(key)
            out[stream][rest[len(stream) + 1:]] = (self.props[key].strip(), key)
        for stream_id, physical in self._stream_ids(system, streams).items():
            for key in self.keys_with(f"streams.{stream_id}."):
                self.used.add(key)
                prop = key[len(f"streams.{stream_id}."):]
                if prop in ("samza.system", "samza.physical.name"):
                    continue
                out[physical][prop] = (self.props[key].strip(), key)
        return out

    def _check_stream_semantics(self, props: dict[str, tuple[str, str]], stream: str) -> None:
        """Stream properties whose loss would change results, and the harmless ones."""
        for prop, (value, key) in props.items():
            if prop == "samza.reset.offset":
                if value.lower() == "true":
                    raise self.fail(key, f"Samza ignores the checkpoint of '{stream}' at every start and begins at "
                                         "samza.offset.default; this source always resumes from the Spark "
                                         "checkpoint. Write a Startpoint (StartpointOldest / StartpointUpcoming) "
                                         "before a start to re-position, or remove the key")
                self.ignore(key, "false is Samza's default: resume from the checkpoint, as here")
            elif prop == "samza.bootstrap":
                if value.lower() == "true":
                    raise self.fail(key, f"'{stream}' is a bootstrap stream in Samza (read to its end before any "
                                         "other input); this source has no bootstrap ordering. Load it as a static "
                                         "DataFrame or a separate query first, or remove the key")
                self.ignore(key, "not a bootstrap stream: nothing to do")
            elif prop == "samza.broadcast":
                if value.lower() == "true":
                    raise self.fail(key, f"'{stream}' is broadcast in Samza (every partition to every task); list "
                                         "its partitions in task.broadcast.inputs (e.g. kafka.config#[0-3])")
                self.ignore(key, "not broadcast: nothing to do")
            elif prop == "samza.priority":
                self.ignore(key, "Samza's message chooser priority: a micro-batch reads every input of a task "
                                 "up to the batch end, so there is no priority between inputs")
            elif prop in ("samza.key.serde", "samza.msg.serde"):
                self.ignore(key, "Samza serde: the source returns raw bytes; decode with Spark functions")
            elif prop == "samza.offset.default":
                pass  # read by the caller
            elif prop.startswith("consumer."):
                if prop == "consumer.auto.offset.reset":
                    self.reject(key, _CONSUMER_REJECTED["auto.offset.reset"])
                else:
                    self.reject(key, "per-stream consumer settings are not supported: one librdkafka "
                                     "configuration (kafka.*) serves every topic of the query")
            elif prop.startswith("samza."):
                self.ignore(key, "Samza stream setting with no bearing on what is read")
            else:
                self.ignore(key, "a stream property Samza uses to create the stream (e.g. topic configs): the "
                                 "source never creates streams")

    # ---- Kafka ------------------------------------------------------------------------------------------
    def _kafka(self, system: str, inputs, patterns, broadcast) -> None:
        topics = list(inputs.get(system, []))
        regexes = patterns.get(system, [])
        if regexes:
            alternatives = [re.escape(t) for t in topics] + [regex for regex, _ in regexes]
            pattern = alternatives[0] if len(alternatives) == 1 else "|".join(f"(?:{a})" for a in alternatives)
            self.set_option(SUBSCRIBE_PATTERN_OPTION, pattern, ", ".join(["task.inputs"] * bool(topics)
                                                                   + [k for _, k in regexes]))
            self.notes.append("RegExTopicGenerator input(s) become subscribePattern (matched against whole topic "
                              "names, as Samza does); it is re-evaluated at every trigger and topics that start "
                              "matching later are read from earliest (Samza needs a restart and uses "
                              "samza.offset.default). Python's regex syntax must accept the pattern")
        else:
            self.set_option(SUBSCRIBE_OPTION, ",".join(topics), "task.inputs")
        self._kafka_consumer(system)
        self._kafka_system_keys(system)
        broadcast_topics = [t for t in dict.fromkeys(b.stream for b in broadcast) if t not in topics]
        stream_props = self._stream_props(system, topics + broadcast_topics)
        for stream, props in stream_props.items():
            self._check_stream_semantics(props, stream)
        self._kafka_offsets(system, topics + broadcast_topics, stream_props, regexes)
        self._kafka_grouper()
        if broadcast:
            renamed = [SystemStreamPartition("kafka", b.stream, b.partition) for b in broadcast]
            self.set_option(BROADCAST_OPTION, format_broadcast_inputs(renamed), _SAMZA_BROADCAST_KEY)
            if system != "kafka":
                self.notes.append(f"task.broadcast.inputs: system '{system}' is written as 'kafka', the system "
                                  "name of every SSP of the samza-kafka source")
        if system != "kafka":
            self.notes.append(f"the Samza system '{system}' is called 'kafka' here: SSPs, task names of "
                              "GroupBySystemStreamPartition and Startpoint keys say 'kafka'")
        if "kafka.bootstrap.servers" not in self.options and "kafka.bootstrap.servers" not in {
                k.lower() for k in self.props}:
            self.notes.append(f"systems.{system}.consumer.bootstrap.servers is not set: add the option "
                              "kafka.bootstrap.servers")

    def _kafka_consumer(self, system: str) -> None:
        prefix = f"systems.{system}.consumer."
        for key in self.keys_with(prefix):
            prop = key[len(prefix):]
            value = self.props[key].strip()
            self.used.add(key)
            if prop.startswith("zookeeper.") or prop == "zk.connect":
                self.reject(key, "a ZooKeeper setting of old Kafka clients; librdkafka connects through "
                                 "bootstrap.servers only")
            elif prop in _CONSUMER_REJECTED:
                self.reject(key, _CONSUMER_REJECTED[prop])
            elif prop in _CONSUMER_JAVA_ONLY:
                self.reject(key, "a Java Kafka client setting librdkafka does not have; it changes no record read")
            elif prop in _CONSUMER_RENAMED:
                self.set_option(f"kafka.{_CONSUMER_RENAMED[prop]}", value, key)
                self.notes.append(f"{self.name(key)} -> kafka.{_CONSUMER_RENAMED[prop]} (librdkafka's name)")
            elif not value:
                self.ignore(key, "empty value")
            else:
                self.set_option(f"kafka.{prop}", value, self.name(key))
        if "kafka.bootstrap.servers" not in self.options:
            producer = f"systems.{system}.producer.bootstrap.servers"
            if self.props.get(producer, "").strip():
                self.set_option("kafka.bootstrap.servers", self.props[producer].strip(), producer)
                self.used.add(producer)
                self.notes.append(f"kafka.bootstrap.servers is taken from {producer} (no consumer setting)")

    def _kafka_system_keys(self, system: str) -> None:
        prefix = f"systems.{system}."
        for key in self.keys_with(prefix):
            if key in self.used:
                continue
            prop = key[len(prefix):]
            if prop.startswith("producer."):
                self.ignore(key, "producer setting: the source only reads")
            elif prop in ("samza.key.serde", "samza.msg.serde"):
                self.ignore(key, "Samza serde: the source returns raw bytes; decode with Spark functions")
            elif prop.startswith("samza.fetch.threshold"):
                self.ignore(key, "Samza's consumer buffer: bound batches with maxOffsetsPerTrigger")
            elif prop == "samza.offset.default" or prop == "default.stream.samza.offset.default":
                pass  # read in _kafka_offsets
            elif prop.startswith("default.stream."):
                self._check_stream_semantics({prop[len("default.stream."):]: (self.props[key].strip(), key)},
                                             f"every stream of {system}")
            elif prop.startswith("streams."):
                pass  # read in _stream_props
            else:
                self.ignore(key, "Samza system setting with no bearing on what is read")

    def _offset_value(self, value: str, key: str) -> str:
        lowered = value.lower()
        if lowered not in ("oldest", "upcoming"):
            raise self.fail(key, f"samza.offset.default must be 'oldest' or 'upcoming', got {value!r}")
        return lowered

    def _kafka_offsets(self, system, topics, stream_props, regexes) -> None:
        fallback: tuple[str, str] | None = None
        for key in (f"systems.{system}.default.stream.samza.offset.default", f"systems.{system}.samza.offset.default"):
            value = self.get(key)
            if value and fallback is None:
                fallback = (self._offset_value(value, key), key)
            elif value:
                self.ignore(key, f"overridden by {self.name(fallback[1])}")
            elif key in self.props:
                self.ignore(key, "empty value")
        per_topic: dict[str, tuple[str, str | None]] = {}
        for topic in topics:
            own = stream_props.get(topic, {}).get("samza.offset.default")
            if own:
                per_topic[topic] = (self._offset_value(own[0], own[1]), own[1])
            else:
                per_topic[topic] = fallback or ("upcoming", None)
        for regex, regex_key in regexes:
            inherited_key = regex_key.rsplit(".", 1)[0] + ".config.samza.offset.default"
            inherited = self.props.get(inherited_key, "").strip()
            label = f"topics matching {regex!r}"
            per_topic[label] = ((self._offset_value(inherited, inherited_key), inherited_key) if inherited
                                else fallback or ("upcoming", None))
            for key in self.keys_with(regex_key.rsplit(".", 1)[0] + ".config."):
                if key != inherited_key:
                    prop = key[len(regex_key.rsplit(".", 1)[0] + ".config."):]
                    self._check_stream_semantics({prop: (self.props[key].strip(), key)}, label)
        configured = [k for _, k in per_topic.values() if k is not None]
        if not configured:
            self.notes.append("no samza.offset.default: Samza's default 'upcoming' is this source's default "
                              "startingOffsets=latest (for a query without a checkpoint)")
            return
        values = {v for v, _ in per_topic.values()}
        sources = ", ".join(dict.fromkeys(self.name(k) for k in configured))
        if len(values) == 1:
            value = values.pop()
            self.set_option(STARTING_OFFSETS_OPTION, "earliest" if value == "oldest" else "latest", sources)
            self.notes.append(f"samza.offset.default={value} -> startingOffsets="
                              f"{self.options[STARTING_OFFSETS_OPTION]}: it applies to a query without a Spark "
                              "checkpoint; Startpoints override it, partitions added later start at earliest")
            return
        listing = "; ".join(f"{t}: {v} ({self.name(k) if k else 'Samza default'})" for t, (v, k) in per_topic.items())
        if regexes:
            raise ConfigError(f"samza.offset.default differs between inputs ({listing}) and some inputs come from a "
                              "regex: startingOffsets cannot express that. Make the values agree or read the "
                              "streams in separate queries")
        oldest = [t for t, (v, _) in per_topic.items() if v == "oldest"]
        missing = [t for t in oldest if not isinstance(self.partition_counts.get(t), int)
                   or self.partition_counts[t] < 1]
        if missing:
            raise ConfigError(
                f"samza.offset.default differs between inputs ({listing}). startingOffsets can express that only "
                f"per partition: pass partition_counts={{topic: current partition count}} for "
                f"{', '.join(missing)}, make the values agree, or read the topics in separate queries")
        per_partition = {t: {str(p): -2 for p in range(self.partition_counts[t])} for t in oldest}
        self.set_option(STARTING_OFFSETS_OPTION, json.dumps(per_partition, sort_keys=True, separators=(",", ":")),
                        sources)
        self.notes.append(f"per-topic samza.offset.default ({listing}) -> per-partition startingOffsets (-2 = "
                          "earliest; topics not listed start at latest) from the partition counts given")

    def _kafka_grouper(self) -> None:
        factory = self.get(_GROUPER_KEY)
        expansion_raw = self.get(_EXPANSION_KEY)
        expansion = True
        if expansion_raw is not None:
            if expansion_raw.lower() not in ("true", "false"):
                raise self.fail(_EXPANSION_KEY, f"must be true or false, got {expansion_raw!r}")
            expansion = expansion_raw.lower() == "true"
        grouper_cls = None
        if factory:
            simple = factory.rsplit(".", 1)[-1]
            if "." in factory and not factory.startswith(_SAMZA_PREFIX):
                grouper_cls = None
            else:
                grouper_cls = next((c for n, c in SAMZA_GROUPER_FACTORIES.items() if n.lower() == simple.lower()),
                                   None)
            if grouper_cls is None:
                raise self.fail(_GROUPER_KEY, f"{factory!r} is not a grouper this project implements (it knows "
                                              f"{', '.join(SAMZA_GROUPER_FACTORIES)}). A custom Java grouper "
                                              "cannot run here: write it in Python as a subclass of "
                                              "spark_samza_source.core.grouping.SspGrouper and set the option "
                                              f"'{GROUPER_OPTION}' to its dotted path")
        else:
            grouper_cls = SAMZA_GROUPER_FACTORIES["GroupByPartitionFactory"]
        fixed = issubclass(grouper_cls, FixedTasksGrouper)
        if factory or not expansion:
            chosen = grouper_cls.base.name if fixed and not expansion else grouper_cls.name
            source = ", ".join(self.name(k) for k in (_GROUPER_KEY, _EXPANSION_KEY) if k in self.props)
            self.set_option(GROUPER_OPTION, chosen, source)
            if fixed and not expansion:
                self.notes.append(f"{self.name(_EXPANSION_KEY)}=false: Samza does not keep tasks fixed when a "
                                  f"stream grows, so grouper={chosen}: new partitions get tasks of their own "
                                  "(the task set changes)")
            elif not fixed:
                self.notes.append(f"{factory} -> grouper={chosen}: one task 'Task-0' holds every partition "
                                  "(Samza names it Task-<processorId>)")
        if fixed and expansion and not any(k.startswith("stores.") for k in self.props):
            self.notes.append("Samza keeps tasks fixed across partition expansion only for jobs with persistent "
                              "stores; this source always does (identical until a stream grows). Set "
                              f"grouper={grouper_cls.base.name} for Samza's stateless behaviour")
        for key in (_MAPPER_KEY, _ALGORITHM_KEY):
            mapper = self.get(key)
            if not mapper:
                continue
            simple = mapper.rsplit(".", 1)[-1].lower()
            if simple in _HASH_MAPPER_FACTORIES:
                if fixed and expansion:
                    self.set_option(EXPANSION_ALGORITHM_OPTION, "default", self.name(key))
                else:
                    self.ignore(key, "the expansion algorithm only applies to fixed-task groupers")
            elif fixed and expansion:
                raise self.fail(key, f"{mapper!r} is a custom expansion algorithm; a Java class cannot run "
                                     "here: write it in Python as a subclass of spark_samza_source.core."
                                     "expansion.PartitionExpansionAlgorithm and set the option "
                                     f"'{EXPANSION_ALGORITHM_OPTION}' to its dotted path")
            else:
                self.ignore(key, "the expansion algorithm only applies to fixed-task groupers")

    # ---- Kinesis ----------------------------------------------------------------------------------------
    def _kinesis(self, system: str, inputs, patterns, broadcast, job_name: str) -> None:
        if patterns.get(system):
            raise self.fail(patterns[system][0][1], "RegExTopicGenerator lists Kafka topics; it cannot select "
                                                    "Kinesis streams")
        if broadcast:
            raise self.fail(_SAMZA_BROADCAST_KEY, "Kinesis streams cannot be broadcast (in Samza neither); "
                                                     "samza-kinesis has no broadcast inputs")
        streams = inputs[system]
        if self.want_stream is not None:
            if self.want_stream not in streams:
                raise ConfigError(f"stream={self.want_stream!r} is not an input of system '{system}' "
                                  f"({', '.join(streams)})")
            for other in streams:
                if other != self.want_stream:
                    self.ignored[f"task.inputs ({system}.{other})"] = (
                        f"one samza-kinesis query reads one stream: import again with stream='{other}'")
            stream = self.want_stream
        elif len(streams) > 1:
            raise ConfigError(f"task.inputs names {len(streams)} Kinesis streams of system '{system}' "
                              f"({', '.join(streams)}); one samza-kinesis query reads one stream: import with "
                              "stream='<name>' once per stream")
        else:
            stream = streams[0]
        self.set_option(STREAM_NAME_OPTION, stream, "task.inputs")
        sys_prefix = f"systems.{system}."
        stream_prefix = f"systems.{system}.streams.{stream}."

        region_key = next((k for k in (stream_prefix + "aws.region", sys_prefix + "aws.region")
                           if self.props.get(k, "").strip()), None)
        kcl: dict[str, tuple[str, str]] = {}
        for prefix in (sys_prefix + "aws.kcl.", stream_prefix + "aws.kcl."):  # stream scope overrides
            for key in self.keys_with(prefix):
                kcl[key[len(prefix):]] = (self.props[key].strip(), key)
                self.used.add(key)
        if "RegionName" in kcl:
            region_key = kcl.pop("RegionName")[1]
        if region_key:
            self.used.add(region_key)
            self.set_option(REGION_OPTION, self.props[region_key].strip(), self.name(region_key))
        for key in (stream_prefix + "aws.region", sys_prefix + "aws.region"):
            if key in self.props and key != region_key:
                self.ignore(key, f"overridden by {self.name(region_key)}" if region_key else "empty value")

        access_key, secret_key = stream_prefix + "aws.accessKey", stream_prefix + "aws.secretKey"
        access, secret = self.get(access_key), self.get(secret_key)
        if access and secret:
            self.set_option(ACCESS_KEY_ID_OPTION, access, self.name(access_key))
            self.set_option(SECRET_KEY_OPTION, secret, self.name(secret_key))
        else:
            for key in (access_key, secret_key):
                if key in self.props:
                    self.reject(key, "aws.accessKey and aws.secretKey go together; with one missing, boto3's default "
                                     "credential chain is used (Samza falls back to the default chain too)")

        endpoints = {"KinesisEndpoint": ENDPOINT_URL_OPTION, "DynamoDBEndpoint": DYNAMODB_ENDPOINT_URL_OPTION}
        for setting, option in endpoints.items():
            if setting in kcl:
                value, key = kcl.pop(setting)
                url = value if re.match(r"^https?://", value) else f"https://{value}"
                self.set_option(option, url, self.name(key))
        table_value = kcl.pop("TableName", None)
        if table_value and table_value[0]:
            table, table_source = table_value[0], self.name(table_value[1])
        else:
            samza_name = self.props.get(_SAMZA_JOB_NAME_KEY, "").strip() or self.props.get("app.name", "").strip()
            samza_id = (self.props.get("job.id", "").strip() if self.props.get(_SAMZA_JOB_NAME_KEY, "").strip()
                        else self.props.get("app.id", "").strip()) or "1"
            table, table_source = f"{samza_name}-{samza_id}-{stream}", "job.name, job.id (Samza's default table)"
            self.notes.append(f"no aws.kcl.TableName: Samza's KCL worker used its default lease table "
                              f"'{table}' (<job.name>-<job.id>-<stream>)")
        self.set_option(KCL_LEASE_TABLE_OPTION, table, table_source)
        self.set_option(STARTING_POSITION_OPTION, "kcl", table_source)
        self.soft.add(STARTING_POSITION_OPTION)
        if not (table_value and table_value[0]):
            self.soft.add(KCL_LEASE_TABLE_OPTION)
        initial = kcl.pop("InitialPositionInStream", None)
        initial_text = initial[0].upper() if initial else "LATEST"
        if initial:
            self.ignore(initial[1], "used by KCL only for shards without a lease; see the notes")
        self.notes.append(
            f"Samza's Kinesis consumer keeps its progress only in the KCL lease table '{table}': "
            "startingPosition=kcl resumes right after its checkpoints (the table must exist; for a job that never "
            "ran use TRIM_HORIZON or LATEST instead), and kcl.leaseTable keeps mirroring committed positions into "
            f"it. Shards without a lease start at TRIM_HORIZON here (KCL: InitialPositionInStream={initial_text})."
            " Stop the Samza job before starting the query")
        for _setting, (_, key) in sorted(kcl.items()):
            self.ignore(key, "KCL worker tuning: samza-kinesis reads shards itself (see maxRecordsPerShard, "
                             "maxFetchTimePerShard)")

        for key in self.keys_with(sys_prefix):
            if key in self.used:
                continue
            prop = key[len(sys_prefix):]
            if prop.startswith("aws.clientConfig."):
                self.ignore(key, "AWS SDK for Java client setting; boto3 takes proxies from HTTPS_PROXY and its "
                                 "own configuration")
            elif (prop.startswith(f"streams.{stream}.") and prop.endswith(".samza.offset.default")) or (
                    prop in ("samza.offset.default", "default.stream.samza.offset.default")):
                self.ignore(key, "Samza's Kinesis consumer ignores Samza checkpoints and offset defaults: the KCL "
                                 "lease table (and InitialPositionInStream) decide, as startingPosition=kcl here")
            elif prop.startswith(f"streams.{stream}."):
                self.ignore(key, "Samza stream setting with no bearing on what is read")
            elif prop.startswith("streams."):
                self.ignore(key, "stream is not an input of this query")
            else:
                self.ignore(key, "Samza system setting with no bearing on what is read")

        for stream_id in self._stream_ids(system, [stream]):
            for key in self.keys_with(f"streams.{stream_id}."):
                self.ignore(key, "Samza stream setting: samza-kinesis takes the stream from task.inputs, its start "
                                 "from the KCL lease table")

        grouper = self.get(_GROUPER_KEY)
        if grouper and grouper.rsplit(".", 1)[-1] not in ("AllSspToSingleTaskGrouperFactory",
                                                          "AllSspToSingleTaskGrouper"):
            raise self.fail(_GROUPER_KEY, f"{grouper!r}: Samza's Kinesis consumer works only with "
                                          "AllSspToSingleTaskGrouperFactory; samza-kinesis maps shards onto tasks "
                                          "itself (options tasks, assignment)")
        if grouper:
            self.ignore(_GROUPER_KEY, "required by Samza's Kinesis consumer; samza-kinesis maps shards onto task "
                                      "slots itself (options tasks, assignment)")
        for key in (_EXPANSION_KEY, _MAPPER_KEY):
            if key in self.props:
                self.ignore(key, "Kafka partition expansion setting: Kinesis resharding follows shard lineage")
        if "job.container.count" in self.props:
            self.ignore("job.container.count", "Samza containers (KCL workers): samza-kinesis runs one task per "
                                               "open shard by default; set the option tasks to bound it")

    # ---- keys shared by both ----------------------------------------------------------------------------
    def _common(self, kind: str) -> None:
        elasticity = self.get("job.elasticity.factor")
        if elasticity is not None:
            if elasticity not in ("", "1"):
                raise self.fail("job.elasticity.factor", f"{elasticity}: Samza splits every task into key buckets "
                                                         "('Partition 0 0', ...); here a task is whole partitions. "
                                                         "Remove the key (or set it to 1)")
            self.ignore("job.elasticity.factor", "1 is Samza's default: no key buckets, as here")
        matcher = self.get("job.systemstreampartition.matcher.class")
        if matcher:
            raise self.fail("job.systemstreampartition.matcher.class",
                            "Samza then reads only the matching partitions; this importer does not translate "
                            f"matchers. Use the option '{ASSIGN_OPTION}' (JSON topic -> partitions) instead")
        for key in self.keys_with("job.systemstreampartition.matcher."):
            if key not in self.used:
                self.ignore(key, "matcher configuration without job.systemstreampartition.matcher.class")
        enabled = self.get("job.startpoint.enabled")
        if enabled is not None:
            if enabled.lower() == "false":
                self.reject("job.startpoint.enabled", "Startpoints are always on here; they only act when someone "
                                                      "writes one (API or CLI)")
            else:
                self.ignore("job.startpoint.enabled", "Startpoints are always on here, as in Samza by default")
        for key in ("startpoint.metadata.store.factory", "metadata.store.factory"):
            if key in self.props:
                self.reject(key, "Samza's metadata store (coordinator stream) is not read: set the option "
                                 "metadata.store; Startpoints, the job model and the checkpoint mirror live there")

    def _native(self, kind: str) -> None:
        native = _KAFKA_NATIVE if kind == KAFKA_FORMAT else _KINESIS_NATIVE
        other = _KINESIS_NATIVE - _KAFKA_NATIVE if kind == KAFKA_FORMAT else _KAFKA_NATIVE - _KINESIS_NATIVE
        by_lower = {n.lower(): n for n in native}
        other_lower = {n.lower() for n in other}
        for key in sorted(self.props):
            if key in self.used:
                continue
            lower = key.lower()
            option = by_lower.get(lower)
            if option is None and kind == KAFKA_FORMAT and lower.startswith("kafka."):
                option = lower
            if option is None:
                if lower in other_lower or (kind == KINESIS_FORMAT and lower.startswith("kafka.")):
                    self.ignore(key, f"an option of the other source, not of {kind}")
                continue
            value = self.props[key].strip()
            self.used.add(key)
            if option in self.soft and self.options.get(option) != value:
                self.notes.append(f"{self.name(key)}={value} (an option of {kind} in the file) replaces "
                                  f"{option}={self.options[option]} derived from {self.derived_from[option]}")
                self.set_option(option, value, self.name(key))
                continue
            if option in self.options and self.options[option] != value:
                raise ConfigError(f"{self.name(key)}={value!r} contradicts {option}={self.options[option]!r} "
                                  f"derived from {self.derived_from[option]}: remove one of them")
            for group in _EXCLUSIVE:
                if option in group:
                    clash = [o for o in group if o != option and o in self.options]
                    if clash:
                        raise ConfigError(f"{self.name(key)} and {clash[0]} (derived from "
                                          f"{self.derived_from[clash[0]]}) exclude each other: remove one")
            if option not in self.options:
                self.set_option(option, value, self.name(key))
                self.notes.append(f"{self.name(key)} is an option of {kind}: passed through")

    def _leftovers(self, system: str) -> None:
        for key in sorted(self.props):
            if key in self.used:
                continue
            if key.startswith("systems."):
                other = key.split(".")[1]
                if other != system:
                    self.ignore(key, f"system '{other}' is not read by this query (an output, or unused)")
                    continue
            if key.startswith("streams."):
                self.ignore(key, "stream is not an input of this query (an output, or unused)")
                continue
            if key in _IGNORED_EXACT:
                self.ignore(key, _IGNORED_EXACT[key])
                continue
            why = next((w for p, w in _IGNORED_PREFIXES if key.startswith(p)), None)
            if why is not None:
                self.ignore(key, why)
            else:
                self.ignore(key, "not recognised by the importer: check that it does not change what the job "
                                 "reads")
