"""Samza's Kafka system (``KafkaSystemFactory``) translated into ``samza-kafka`` options.

``task.inputs`` and RegExTopicGenerator rewriters -> ``subscribe`` / ``subscribePattern``;
``systems.<s>.consumer.*`` -> ``kafka.*`` (Java client settings translated by ``kafka/java_client.py``, as for a
query's options: JAAS lines, key stores, renamed keys; what has no librdkafka equivalent rejected with the reason;
``group.id`` -> ``kafka.group.id``); ``samza.offset.default`` at system, default-stream and stream level ->
``startingOffsets``; the SSP grouper factory, input expansion and partition mapper -> ``grouper`` /
``expansion.algorithm``; ``task.broadcast.inputs`` rewritten to the source's system name ``kafka``. Stream flags
that would change what is read (``samza.reset.offset``, ``samza.bootstrap``, ``samza.broadcast``) are a ``ConfigError``.

Callers: ``importer.py`` registers :data:`KAFKA` and ``common.Translation.run`` calls :func:`translate` when
the chosen system is a Kafka system. Option names are the constants of ``kafka/options.py`` and
``options/``.
"""

from __future__ import annotations

import json
import re

from ..core.broadcast import format_broadcast_inputs
from ..core.grouping import SAMZA_GROUPER_FACTORIES, FixedTasksGrouper
from ..core.model import SystemStreamPartition
from ..kafka.java_client import translate_java_settings
from ..kafka.options import (
    ASSIGN,
    BOOTSTRAP_SERVERS,
    COMMIT_OFFSETS_TO_KAFKA,
    DROP_TOPICS,
    EXPANSION_ORDERING,
    EXPANSION_SETTLE,
    GROUP_ID_PREFIX,
    INCLUDE_HEADERS,
    JOB_MODEL_RESET,
    KAFKA_GROUP_ID,
    MAX_OFFSETS_PER_TRIGGER,
    MAX_ROWS_PER_ARROW_BATCH,
    MAX_TRIGGER_DELAY,
    MIN_OFFSETS_PER_TRIGGER,
    MIN_PARTITIONS,
    OAUTHBEARER_TOKEN_PROVIDER,
    POLL_TIMEOUT,
    READ_PATH,
    STARTING_OFFSETS,
    STARTING_OFFSETS_BY_TIMESTAMP,
    STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY,
    STARTING_TIMESTAMP,
    SUBSCRIBE,
    SUBSCRIBE_PATTERN,
)
from ..options.common import (
    BROADCAST,
    COPARTITION,
    EXPANSION_ALGORITHM,
    FAIL_ON_DATA_LOSS,
    GROUPER,
    JOB_LEASE_TTL,
    METADATA_STORE,
    RETRY_TIMEOUT,
    STARTPOINT_POLL_INTERVAL,
    STARTPOINT_TTL,
)
from . import errors
from .common import (
    EXPANSION_KEY,
    GROUPER_KEY,
    KAFKA_FORMAT,
    MAPPER_KEY,
    SAMZA_BROADCAST_KEY,
    Inputs,
    Patterns,
    SystemTranslation,
    Translation,
)

__all__ = ["KAFKA", "NATIVE_OPTIONS", "translate"]

_SAMZA_PREFIX = "org.apache.samza."
_HASH_MAPPER_FACTORIES = {
    "hashsystemstreampartitionmapperfactory", "hashsystemstreampartitionmapper", "defaultpartitionexpansionalgorithm",
}
_ALGORITHM_KEY = "job.systemstreampartition.expansion.algorithm"  # SEP-5's name for the same choice

# Options of the source itself, passed through verbatim when a file carries them.
NATIVE_OPTIONS = frozenset({
    SUBSCRIBE.name, SUBSCRIBE_PATTERN.name, ASSIGN.name, METADATA_STORE.name, GROUPER.name,
    EXPANSION_ALGORITHM.name, EXPANSION_ORDERING.name, EXPANSION_SETTLE.name, JOB_MODEL_RESET.name,
    COPARTITION.name, STARTING_OFFSETS.name, STARTING_TIMESTAMP.name, STARTING_OFFSETS_BY_TIMESTAMP.name,
    STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY.name, MAX_OFFSETS_PER_TRIGGER.name, MIN_OFFSETS_PER_TRIGGER.name,
    MAX_TRIGGER_DELAY.name, FAIL_ON_DATA_LOSS.name, INCLUDE_HEADERS.name, STARTPOINT_TTL.name,
    STARTPOINT_POLL_INTERVAL.name, COMMIT_OFFSETS_TO_KAFKA.name, MAX_ROWS_PER_ARROW_BATCH.name,
    POLL_TIMEOUT.name, JOB_LEASE_TTL.name, *JOB_LEASE_TTL.deprecated, RETRY_TIMEOUT.name, DROP_TOPICS.name,
    GROUP_ID_PREFIX.name, READ_PATH.name, MIN_PARTITIONS.name,
})
_EXCLUSIVE = ((SUBSCRIBE.name, SUBSCRIBE_PATTERN.name, ASSIGN.name),
              (STARTING_OFFSETS.name, STARTING_TIMESTAMP.name, STARTING_OFFSETS_BY_TIMESTAMP.name))

# systems.<s>.consumer.<key>: Java consumer keys that mean something else here. Security settings, Java-only
# settings and renamed ones are translated by kafka/java_client.py, as for a query's kafka.* options.
_CONSUMER_REJECTED = {
    "auto.offset.reset": "in Samza it silently resets a position that fell out of range; here "
                         f"{FAIL_ON_DATA_LOSS.name} (default true) fails the query naming the lost range, false "
                         "continues from the earliest available offset. Where a new query starts is "
                         f"{STARTING_OFFSETS.name} (from samza.offset.default)",
    "enable.auto.commit": "offsets are tracked in Spark's checkpoint; Kafka auto-commit is refused by the source",
    "auto.commit.enable": "offsets are tracked in Spark's checkpoint; Kafka auto-commit is refused by the source",
    "key.deserializer": "keys are always returned as binary; decode them in Spark",
    "value.deserializer": "values are always returned as binary; decode them in Spark",
    "partition.assignment.strategy": "the source assigns partitions itself (no consumer-group rebalancing)",
}


def translate(tr: Translation, system: str, inputs: Inputs, patterns: Patterns,
              broadcast: list[SystemStreamPartition]) -> None:
    """The Kafka system's keys -> ``samza-kafka`` options (see the module documentation)."""
    topics = list(inputs.get(system, []))
    regexes = patterns.get(system, [])
    if regexes:
        alternatives = [re.escape(t) for t in topics] + [regex for regex, _ in regexes]
        pattern = alternatives[0] if len(alternatives) == 1 else "|".join(f"(?:{a})" for a in alternatives)
        tr.set_option(SUBSCRIBE_PATTERN.name, pattern, ", ".join(["task.inputs"] * bool(topics)
                                                             + [k for _, k in regexes]))
        tr.notes.append(f"RegExTopicGenerator input(s) become {SUBSCRIBE_PATTERN.name} (matched against whole topic "
                        "names, as Samza does); it is re-evaluated at every trigger and topics that start "
                        "matching later are read from earliest (Samza needs a restart and uses "
                        "samza.offset.default). Python's regex syntax must accept the pattern")
    else:
        tr.set_option(SUBSCRIBE.name, ",".join(topics), "task.inputs")
    _consumer(tr, system)
    _system_keys(tr, system)
    broadcast_topics = [t for t in dict.fromkeys(b.stream for b in broadcast) if t not in topics]
    stream_props = _stream_props(tr, system, topics + broadcast_topics)
    for stream, props in stream_props.items():
        _check_stream_semantics(tr, props, stream)
    _offsets(tr, system, topics + broadcast_topics, stream_props, regexes)
    _grouper(tr)
    if broadcast:
        renamed = [SystemStreamPartition("kafka", b.stream, b.partition) for b in broadcast]
        tr.set_option(BROADCAST.name, format_broadcast_inputs(renamed), SAMZA_BROADCAST_KEY)
        if system != "kafka":
            tr.notes.append(f"{SAMZA_BROADCAST_KEY}: system '{system}' is written as 'kafka', the system "
                            "name of every SSP of the samza-kafka source")
    if system != "kafka":
        tr.notes.append(f"the Samza system '{system}' is called 'kafka' here: SSPs, task names of "
                        "GroupBySystemStreamPartition and Startpoint keys say 'kafka'")
    if BOOTSTRAP_SERVERS.name not in tr.options and BOOTSTRAP_SERVERS.name not in {
            k.lower() for k in tr.props}:
        tr.notes.append(f"systems.{system}.consumer.bootstrap.servers is not set: add the option "
                        f"{BOOTSTRAP_SERVERS.name}")


def _consumer(tr: Translation, system: str) -> None:
    prefix = f"systems.{system}.consumer."
    passed: dict[str, str] = {}  # consumer property -> value, for the Java client translation
    keys: dict[str, str] = {}  # consumer property -> its key in the file
    for key in tr.keys_with(prefix):
        prop = key[len(prefix):]
        value = tr.props[key].strip()
        tr.used.add(key)
        if prop.startswith("zookeeper.") or prop == "zk.connect":
            tr.reject(key, "a ZooKeeper setting of old Kafka clients; librdkafka connects through "
                           "bootstrap.servers only")
        elif prop in _CONSUMER_REJECTED:
            tr.reject(key, _CONSUMER_REJECTED[prop])
        elif prop == "group.id" and value:
            tr.set_option(KAFKA_GROUP_ID.name, value, tr.name(key))
            tr.notes.append(f"{tr.name(key)} -> {KAFKA_GROUP_ID.name}: the source assigns partitions itself; "
                            f"the group only receives the committed positions ({COMMIT_OFFSETS_TO_KAFKA.name}) "
                            "and must not be used by running consumers")
        elif not value and prop != "ssl.endpoint.identification.algorithm":
            tr.ignore(key, "empty value")
        else:
            passed[prop], keys[prop] = value, key
    translated = translate_java_settings(passed, token_provider_option=OAUTHBEARER_TOKEN_PROVIDER.name)
    for prop, why in translated.rejected.items():
        tr.reject(keys[prop], why)
    for prop, value in translated.conf.items():
        origin = translated.derived_from.get(prop, prop)
        tr.set_option(f"kafka.{prop}", value, tr.name(keys[origin]))
        if origin != prop:
            tr.notes.append(f"{tr.name(keys[origin])} -> kafka.{prop} (librdkafka's name)")
    if BOOTSTRAP_SERVERS.name not in tr.options:
        producer = f"systems.{system}.producer.bootstrap.servers"
        if tr.props.get(producer, "").strip():
            tr.set_option(BOOTSTRAP_SERVERS.name, tr.props[producer].strip(), producer)
            tr.used.add(producer)
            tr.notes.append(f"{BOOTSTRAP_SERVERS.name} is taken from {producer} (no consumer setting)")


def _system_keys(tr: Translation, system: str) -> None:
    prefix = f"systems.{system}."
    for key in tr.keys_with(prefix):
        if key in tr.used:
            continue
        prop = key[len(prefix):]
        if prop.startswith("producer."):
            tr.ignore(key, "producer setting: the source only reads")
        elif prop in ("samza.key.serde", "samza.msg.serde"):
            tr.ignore(key, "Samza serde: the source returns raw bytes; decode with Spark functions")
        elif prop.startswith("samza.fetch.threshold"):
            tr.ignore(key, f"Samza's consumer buffer: bound batches with {MAX_OFFSETS_PER_TRIGGER.name}")
        elif prop == "samza.offset.default" or prop == "default.stream.samza.offset.default":
            pass  # read in _offsets
        elif prop.startswith("default.stream."):
            _check_stream_semantics(tr, {prop[len("default.stream."):]: (tr.props[key].strip(), key)},
                                       f"every stream of {system}")
        elif prop.startswith("streams."):
            pass  # read in _stream_props
        else:
            tr.ignore(key, "Samza system setting with no bearing on what is read")


def _offset_value(tr: Translation, value: str, key: str) -> str:
    lowered = value.lower()
    if lowered not in ("oldest", "upcoming"):
        raise tr.invalid(key, f"samza.offset.default must be 'oldest' or 'upcoming', got {value!r}")
    return lowered


def _offsets(tr: Translation, system, topics, stream_props, regexes) -> None:
    fallback: tuple[str, str] | None = None
    for key in (f"systems.{system}.default.stream.samza.offset.default", f"systems.{system}.samza.offset.default"):
        value = tr.get(key)
        if value and fallback is None:
            fallback = (_offset_value(tr, value, key), key)
        elif value and fallback is not None:
            tr.ignore(key, f"overridden by {tr.name(fallback[1])}")
        elif key in tr.props:
            tr.ignore(key, "empty value")
    per_topic: dict[str, tuple[str, str | None]] = {}
    for topic in topics:
        own = stream_props.get(topic, {}).get("samza.offset.default")
        if own:
            per_topic[topic] = (_offset_value(tr, own[0], own[1]), own[1])
        else:
            per_topic[topic] = fallback or ("upcoming", None)
    for regex, regex_key in regexes:
        inherited_key = regex_key.rsplit(".", 1)[0] + ".config.samza.offset.default"
        inherited = tr.props.get(inherited_key, "").strip()
        label = f"topics matching {regex!r}"
        per_topic[label] = ((_offset_value(tr, inherited, inherited_key), inherited_key) if inherited
                            else fallback or ("upcoming", None))
        for key in tr.keys_with(regex_key.rsplit(".", 1)[0] + ".config."):
            if key != inherited_key:
                prop = key[len(regex_key.rsplit(".", 1)[0] + ".config."):]
                _check_stream_semantics(tr, {prop: (tr.props[key].strip(), key)}, label)
    configured = [k for _, k in per_topic.values() if k is not None]
    if not configured:
        tr.notes.append("no samza.offset.default: Samza's default 'upcoming' is this source's default "
                        f"{STARTING_OFFSETS.name}=latest (for a query without a checkpoint)")
        return
    values = {v for v, _ in per_topic.values()}
    sources = ", ".join(dict.fromkeys(tr.name(k) for k in configured))
    if len(values) == 1:
        value = values.pop()
        tr.set_option(STARTING_OFFSETS.name, "earliest" if value == "oldest" else "latest", sources)
        tr.notes.append(f"samza.offset.default={value} -> {STARTING_OFFSETS.name}="
                        f"{tr.options[STARTING_OFFSETS.name]}: it applies to a query without a Spark "
                        "checkpoint; Startpoints override it, partitions added later start at earliest")
        return
    listing = "; ".join(f"{t}: {v} ({tr.name(k) if k else 'Samza default'})" for t, (v, k) in per_topic.items())
    if regexes:
        raise errors.offset_defaults_differ_with_regex(listing, STARTING_OFFSETS.name)
    oldest = [t for t, (v, _) in per_topic.items() if v == "oldest"]
    missing = [t for t in oldest if not isinstance(tr.partition_counts.get(t), int)
               or tr.partition_counts[t] < 1]
    if missing:
        raise errors.offset_defaults_differ_without_counts(listing, STARTING_OFFSETS.name, missing)
    per_partition = {t: {str(p): -2 for p in range(tr.partition_counts[t])} for t in oldest}
    tr.set_option(STARTING_OFFSETS.name, json.dumps(per_partition, sort_keys=True, separators=(",", ":")),
                  sources)
    tr.notes.append(f"per-topic samza.offset.default ({listing}) -> per-partition {STARTING_OFFSETS.name} (-2 = "
                    "earliest; topics not listed start at latest) from the partition counts given")


def _grouper(tr: Translation) -> None:
    factory = tr.get(GROUPER_KEY)
    expansion_raw = tr.get(EXPANSION_KEY)
    expansion = True
    if expansion_raw is not None:
        if expansion_raw.lower() not in ("true", "false"):
            raise tr.invalid(EXPANSION_KEY, f"must be true or false, got {expansion_raw!r}")
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
            raise tr.fail(GROUPER_KEY, f"{factory!r} is not a grouper this project implements (it knows "
                                       f"{', '.join(SAMZA_GROUPER_FACTORIES)}). A custom Java grouper "
                                       "cannot run here: write it in Python as a subclass of "
                                       "spark_samza_source.core.grouping.SspGrouper and set the option "
                                       f"'{GROUPER.name}' to its dotted path")
    else:
        grouper_cls = SAMZA_GROUPER_FACTORIES["GroupByPartitionFactory"]
    fixed = issubclass(grouper_cls, FixedTasksGrouper)
    if factory or not expansion:
        chosen = (grouper_cls.base.name if issubclass(grouper_cls, FixedTasksGrouper) and not expansion
                  else grouper_cls.name)
        source = ", ".join(tr.name(k) for k in (GROUPER_KEY, EXPANSION_KEY) if k in tr.props)
        tr.set_option(GROUPER.name, chosen, source)
        if fixed and not expansion:
            tr.notes.append(f"{tr.name(EXPANSION_KEY)}=false: Samza does not keep tasks fixed when a "
                            f"stream grows, so {GROUPER.name}={chosen}: new partitions get tasks of their own "
                            "(the task set changes)")
        elif not fixed:
            tr.notes.append(f"{factory} -> {GROUPER.name}={chosen}: one task 'Task-0' holds every partition "
                            "(Samza names it Task-<processorId>)")
    if issubclass(grouper_cls, FixedTasksGrouper) and expansion and not any(k.startswith("stores.") for k in tr.props):
        tr.notes.append("Samza keeps tasks fixed across partition expansion only for jobs with persistent "
                        "stores; this source always does (identical until a stream grows). Set "
                        f"{GROUPER.name}={grouper_cls.base.name} for Samza's stateless behaviour")
    for key in (MAPPER_KEY, _ALGORITHM_KEY):
        mapper = tr.get(key)
        if not mapper:
            continue
        simple = mapper.rsplit(".", 1)[-1].lower()
        if simple in _HASH_MAPPER_FACTORIES:
            if fixed and expansion:
                tr.set_option(EXPANSION_ALGORITHM.name, "default", tr.name(key))
            else:
                tr.ignore(key, "the expansion algorithm only applies to fixed-task groupers")
        elif fixed and expansion:
            raise tr.fail(key, f"{mapper!r} is a custom expansion algorithm; a Java class cannot run "
                               "here: write it in Python as a subclass of spark_samza_source.core."
                               "expansion.PartitionExpansionAlgorithm and set the option "
                               f"'{EXPANSION_ALGORITHM.name}' to its dotted path")
        else:
            tr.ignore(key, "the expansion algorithm only applies to fixed-task groupers")


def _stream_props(tr: Translation, system: str, streams: list[str]) -> dict[str, dict[str, tuple[str, str]]]:
    """stream -> {property: (value, key)} merged as Samza does: streams.<id> > systems.<s>.streams.<t>."""
    out: dict[str, dict[str, tuple[str, str]]] = {s: {} for s in streams}
    prefix = f"systems.{system}.streams."
    by_length = sorted(streams, key=len, reverse=True)  # "orders.v2" before "orders"
    for key in tr.keys_with(prefix):
        rest = key[len(prefix):]
        stream = next((s for s in by_length if rest.startswith(s + ".")), None)
        if stream is None:
            tr.ignore(key, f"stream is not an input of this query (an output, or unused): "
                           f"{rest.split('.', 1)[0]!r}")
            continue
        tr.used.add(key)
        out[stream][rest[len(stream) + 1:]] = (tr.props[key].strip(), key)
    for stream_id, physical in tr.stream_ids(system, streams).items():
        for key in tr.keys_with(f"streams.{stream_id}."):
            tr.used.add(key)
            prop = key[len(f"streams.{stream_id}."):]
            if prop in ("samza.system", "samza.physical.name"):
                continue
            out[physical][prop] = (tr.props[key].strip(), key)
    return out


def _check_stream_semantics(tr: Translation, props: dict[str, tuple[str, str]], stream: str) -> None:
    """Stream properties whose loss would change results, and the harmless ones."""
    for prop, (value, key) in props.items():
        if prop == "samza.reset.offset":
            if value.lower() == "true":
                raise tr.fail(key, f"Samza ignores the checkpoint of '{stream}' at every start and begins at "
                                   "samza.offset.default; this source always resumes from the Spark "
                                   "checkpoint. Write a Startpoint (StartpointOldest / StartpointUpcoming) "
                                   "before a start to re-position, or remove the key")
            tr.ignore(key, "false is Samza's default: resume from the checkpoint, as here")
        elif prop == "samza.bootstrap":
            if value.lower() == "true":
                raise tr.fail(key, f"'{stream}' is a bootstrap stream in Samza (read to its end before any "
                                   "other input); this source has no bootstrap ordering. Load it as a static "
                                   "DataFrame or a separate query first, or remove the key")
            tr.ignore(key, "not a bootstrap stream: nothing to do")
        elif prop == "samza.broadcast":
            if value.lower() == "true":
                raise tr.fail(key, f"'{stream}' is broadcast in Samza (every partition to every task); list "
                                   f"its partitions in {SAMZA_BROADCAST_KEY} (e.g. kafka.config#[0-3])")
            tr.ignore(key, "not broadcast: nothing to do")
        elif prop == "samza.priority":
            tr.ignore(key, "Samza's message chooser priority: a micro-batch reads every input of a task "
                           "up to the batch end, so there is no priority between inputs")
        elif prop in ("samza.key.serde", "samza.msg.serde"):
            tr.ignore(key, "Samza serde: the source returns raw bytes; decode with Spark functions")
        elif prop == "samza.offset.default":
            pass  # read by the caller
        elif prop.startswith("consumer."):
            if prop == "consumer.auto.offset.reset":
                tr.reject(key, _CONSUMER_REJECTED["auto.offset.reset"])
            else:
                tr.reject(key, "per-stream consumer settings are not supported: one librdkafka "
                               "configuration (kafka.*) serves every topic of the query")
        elif prop.startswith("samza."):
            tr.ignore(key, "Samza stream setting with no bearing on what is read")
        else:
            tr.ignore(key, "a stream property Samza uses to create the stream (e.g. topic configs): the "
                           "source never creates streams")


KAFKA = SystemTranslation(KAFKA_FORMAT, NATIVE_OPTIONS, translate, passthrough_prefix="kafka.", exclusive=_EXCLUSIVE)
