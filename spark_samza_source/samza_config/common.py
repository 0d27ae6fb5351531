"""The part of a Samza ``job.properties`` translation every system shares, and the bookkeeping behind it.

:class:`Translation` holds the configuration being translated and where each key went (``options`` with the
keys they came from, ``notes``, ``rejected``, ``ignored``). Its :meth:`~Translation.run` does the steps every
Samza job has: ``job.name``/``job.id``, ``task.inputs`` and config rewriters, broadcast inputs, which system
the query reads and its type, then hands over to that system's :class:`SystemTranslation` (``kafka.py``,
``kinesis.py``), then the keys both systems share (elasticity, SSP matchers, startpoints, metadata store), the
sources' own options written into the file, and everything left over (Samza runtime keys, with the reason).

Callers: ``importer.py`` creates one per ``import_mapping`` call; ``kafka.py`` and ``kinesis.py`` record
through its bookkeeping methods (``get``, ``ignore``, ``reject``, ``fail``, ``invalid``, ``set_option``) and read
``stream_ids``. Every option name is a constant of the option spec (``options/``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ..core.broadcast import parse_broadcast_inputs
from ..core.errors import ConfigError
from ..core.model import SystemStreamPartition
from ..core.store import validate_job_name
from ..kafka.options import ASSIGN, SUBSCRIBE_PATTERN
from ..options.common import BROADCAST, JOB_NAME, METADATA_STORE
from ..options.secrets import displayed
from ..options.values import shown
from . import errors
from .report import PropertiesImport

__all__ = ["KAFKA_FORMAT", "KINESIS_FORMAT", "SystemTranslation", "Translation"]

KAFKA_FORMAT = "samza-kafka"
KINESIS_FORMAT = "samza-kinesis"

_KAFKA_FACTORY = "KafkaSystemFactory"
_KINESIS_FACTORY = "KinesisSystemFactory"

GROUPER_KEY = "job.systemstreampartition.grouper.factory"
EXPANSION_KEY = "job.systemstreampartition.input.expansion.enabled"
MAPPER_KEY = "job.system.stream.partition.mapper.factory"
# Samza properties whose names the sources' options carry over unchanged (so they are the same constants)
SAMZA_JOB_NAME_KEY = JOB_NAME.name
SAMZA_BROADCAST_KEY = BROADCAST.name

#: system -> input streams (file order); system -> [(regex, rewriter key)] from RegExTopicGenerator
Inputs = dict[str, list[str]]
Patterns = dict[str, list[tuple[str, str]]]


@dataclass(frozen=True)
class SystemTranslation:
    """One system's part of the translation, as ``kafka.py`` and ``kinesis.py`` define it."""

    format: str  # the source it translates for: PropertiesImport.format, spark.readStream.format(...)
    native_options: frozenset[str]  # the source's own options, passed through when a file carries them
    #: (translation, system, inputs, patterns, broadcast inputs): the system's keys -> options
    translate: Callable[[Translation, str, Inputs, Patterns, list[SystemStreamPartition]], None]
    passthrough_prefix: str | None = None  # options under this prefix pass through too (``kafka.``)
    exclusive: tuple[tuple[str, ...], ...] = ()  # groups of options of which a configuration may set one


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
    "job.coordinator.monitor-input-regex.frequency.ms": f"{SUBSCRIBE_PATTERN.name} is re-evaluated at every trigger",
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


class Translation:
    """One Samza configuration being translated: its keys, the options so far, and where every key went."""

    def __init__(self, mapping: Mapping[str, str], *, system: str | None, stream: str | None,
                 partition_counts: Mapping[str, int] | None) -> None:
        self.props: dict[str, str] = {}
        self.original: dict[str, str] = {}
        for key, value in mapping.items():
            key = str(key).strip()
            name = key[len("sensitive."):] if key.startswith("sensitive.") else key
            if name in self.props:
                raise errors.key_set_twice(self.original[name], key)
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
        """The error for ``key``, which asks for something no translation keeps (``why``: what, and the way out)."""
        return errors.key_unsupported(self.name(key), why)

    def invalid(self, key: str, why: str) -> ConfigError:
        """The error for ``key``, whose value is malformed or lacks a key it needs (``why``)."""
        return errors.key_invalid(self.name(key), why)

    def set_option(self, option: str, value: str, source: str) -> None:
        self.options[option] = value
        self.derived_from[option] = source

    # ---- the run ----------------------------------------------------------------------------------------
    def run(self, systems: Mapping[str, SystemTranslation]) -> PropertiesImport:
        """Translate the whole configuration; ``systems``: the translations by format."""
        job_name = self.job_name()
        inputs, patterns = self.inputs()
        broadcast = self.broadcast()
        system = self.choose_system(inputs, patterns, broadcast)
        kind = self.system_type(system)
        self.set_option(JOB_NAME.name, job_name, SAMZA_JOB_NAME_KEY)
        systems[kind].translate(self, system, inputs, patterns, broadcast)
        self.common_keys()
        self.native_options(systems[kind], [s for k, s in systems.items() if k != kind])
        self.leftovers(system)
        return PropertiesImport(kind, system, dict(self.options), self.notes, dict(sorted(self.rejected.items())),
                                dict(sorted(self.ignored.items())))

    def job_name(self) -> str:
        name_key = SAMZA_JOB_NAME_KEY if self.props.get(SAMZA_JOB_NAME_KEY, "").strip() else "app.name"
        name = self.get(name_key)
        if not name:
            raise errors.job_name_missing(SAMZA_JOB_NAME_KEY)
        id_key = "job.id" if name_key == SAMZA_JOB_NAME_KEY else "app.id"
        job_id = self.get(id_key) or "1"
        for other in ("app.name", "app.id") if name_key == SAMZA_JOB_NAME_KEY else ("job.id",):
            if other in self.props:
                self.ignore(other, f"{name_key} and {id_key} name the job")
        folded = name if job_id == "1" else f"{name}-{job_id}"
        try:
            validate_job_name(folded)
        except ConfigError as err:
            raise errors.job_name_invalid(self.name(name_key), self.name(id_key), err) from None
        if job_id != "1":
            self.notes.append(f"{id_key}={job_id} is folded into {JOB_NAME.name} '{folded}' (Samza identifies a "
                              f"job by {name_key} and {id_key}; id 1, the default, is left out)")
        return folded

    def inputs(self) -> tuple[Inputs, Patterns]:
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
                    raise self.invalid("task.inputs", f"entry {entry!r} is not 'system.stream' (e.g. kafka.orders)")
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
                regex, topic_system = self.get(regex_key), self.get(system_key)
                if not regex or not topic_system:
                    raise self.invalid(class_key, f"RegExTopicGenerator needs {regex_key} and {system_key}")
                try:
                    re.compile(regex)
                except re.error as err:
                    raise self.invalid(regex_key, f"{regex!r} is not a regular expression Python accepts ({err})") \
                        from None
                patterns.setdefault(topic_system, []).append((regex, regex_key))
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
            raise errors.inputs_missing()
        return inputs, patterns

    def broadcast(self) -> list[SystemStreamPartition]:
        raw = self.get(SAMZA_BROADCAST_KEY)
        if not raw:
            return []
        return parse_broadcast_inputs(raw)

    def choose_system(self, inputs, patterns, broadcast) -> str:
        systems = list(dict.fromkeys([*inputs, *patterns]))
        if self.want_system is not None:
            if self.want_system not in systems:
                raise errors.system_not_an_input(self.want_system, systems)
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
            raise errors.several_systems(described)
        else:
            system = systems[0]
        others = sorted({b.system for b in broadcast} - {system})
        if others:
            raise self.fail(SAMZA_BROADCAST_KEY, f"names system(s) {', '.join(others)}, but this query reads "
                                                     f"system '{system}': a broadcast input must come from the same "
                                                     "system as the other inputs")
        return system

    def _describe_type(self, system: str) -> str:
        try:
            return self.system_type(system, quiet=True)
        except ConfigError:
            return "unknown type"

    def system_type(self, system: str, quiet: bool = False) -> str:
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
        raise errors.system_type_unknown(factory_key, prefix, _KAFKA_FACTORY, _KINESIS_FACTORY)

    # ---- stream properties ------------------------------------------------------------------------------
    def stream_ids(self, system: str, streams: Iterable[str]) -> dict[str, str]:
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

    # ---- keys shared by both ----------------------------------------------------------------------------
    def common_keys(self) -> None:
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
                            f"matchers. Use the option '{ASSIGN.name}' (JSON topic -> partitions) instead")
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
                                 f"{METADATA_STORE.name}; Startpoints, the job model and the checkpoint mirror live "
                                 "there")

    def native_options(self, translation: SystemTranslation, others: Iterable[SystemTranslation]) -> None:
        """Options of the source itself written into the file: passed through, or a contradiction."""
        kind = translation.format
        others = list(others)
        by_lower = {n.lower(): n for n in translation.native_options}
        other_lower = {n.lower() for o in others for n in o.native_options if n not in translation.native_options}
        other_prefixes = tuple(o.passthrough_prefix for o in others if o.passthrough_prefix)
        for key in sorted(self.props):
            if key in self.used:
                continue
            lower = key.lower()
            option = by_lower.get(lower)
            prefix = translation.passthrough_prefix
            if option is None and prefix and lower.startswith(prefix):
                option = lower
            if option is None:
                if lower in other_lower or lower.startswith(other_prefixes):
                    self.ignore(key, f"an option of the other source, not of {kind}")
                continue
            value = self.props[key].strip()
            self.used.add(key)
            if option in self.soft and self.options.get(option) != value:
                self.notes.append(f"{self.name(key)}={_plain(option, value)} (an option of {kind} in the file) "
                                  f"replaces {option}={_plain(option, self.options[option])} derived from "
                                  f"{self.derived_from[option]}")
                self.set_option(option, value, self.name(key))
                continue
            if option in self.options and self.options[option] != value:
                raise errors.option_contradicts(f"{self.name(key)}={shown(option, value)}",
                                                f"{option}={shown(option, self.options[option])}",
                                                self.derived_from[option])
            for group in translation.exclusive:
                if option in group:
                    clash = [o for o in group if o != option and o in self.options]
                    if clash:
                        raise errors.options_exclude_each_other(self.name(key), clash[0],
                                                                self.derived_from[clash[0]])
            if option not in self.options:
                self.set_option(option, value, self.name(key))
                self.notes.append(f"{self.name(key)} is an option of {kind}: passed through")

    def leftovers(self, system: str) -> None:
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


def _plain(option: str, value: str) -> str:
    """A value as a note shows it: as written, or ``***`` for a secret option."""
    return displayed(option, value)
