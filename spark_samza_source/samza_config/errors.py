"""Errors of the Samza configuration importer, and its catalogue: every user's error ``samza_config/`` raises is
built by a function here, its message starting with its condition (docs/errors.md lists them; core/errors.py has
the rule).

The classes are the shared ones: a key, value, file or checkpoint text the importer cannot translate is a
``ConfigError`` (what the importer's callers catch), a Spark checkpoint location the offset log cannot read a
``CheckpointDirError`` (the operator CLI reads it too). Conditions name what a user of the importer would search
for: ``SAMZA_CONFIG_...`` for the Samza configuration and checkpoint text, ``SAMZA_SPARK_CHECKPOINT_...`` for a
Spark checkpoint location. A message names the Samza key or file at fault and never a value of a secret option.
"""

from __future__ import annotations

from ..core.errors import CheckpointDirError, ConfigError

FILE_UNREADABLE = "SAMZA_CONFIG_FILE_UNREADABLE"
SYNTAX_INVALID = "SAMZA_CONFIG_SYNTAX_INVALID"
KEY_SET_TWICE = "SAMZA_CONFIG_KEY_SET_TWICE"
KEY_INVALID = "SAMZA_CONFIG_KEY_INVALID"
KEY_UNSUPPORTED = "SAMZA_CONFIG_KEY_UNSUPPORTED"
JOB_NAME_MISSING = "SAMZA_CONFIG_JOB_NAME_MISSING"
JOB_NAME_INVALID = "SAMZA_CONFIG_JOB_NAME_INVALID"
INPUTS_MISSING = "SAMZA_CONFIG_INPUTS_MISSING"
INPUT_NOT_FOUND = "SAMZA_CONFIG_INPUT_NOT_FOUND"
SEVERAL_SYSTEMS = "SAMZA_CONFIG_SEVERAL_SYSTEMS"
SEVERAL_STREAMS = "SAMZA_CONFIG_SEVERAL_STREAMS"
SYSTEM_TYPE_UNKNOWN = "SAMZA_CONFIG_SYSTEM_TYPE_UNKNOWN"
OPTION_CONFLICT = "SAMZA_CONFIG_OPTION_CONFLICT"
OFFSET_DEFAULTS_DIFFER = "SAMZA_CONFIG_OFFSET_DEFAULTS_DIFFER"
CHECKPOINT_LINE_INVALID = "SAMZA_CONFIG_CHECKPOINT_LINE_INVALID"
CHECKPOINT_EMPTY = "SAMZA_CONFIG_CHECKPOINT_EMPTY"
SPARK_CHECKPOINT_UNREADABLE = "SAMZA_SPARK_CHECKPOINT_UNREADABLE"
SPARK_CHECKPOINT_NO_OFFSETS = "SAMZA_SPARK_CHECKPOINT_NO_OFFSETS"
SPARK_CHECKPOINT_NO_COMMITTED_BATCH = "SAMZA_SPARK_CHECKPOINT_NO_COMMITTED_BATCH"
SPARK_CHECKPOINT_ENTRY_INVALID = "SAMZA_SPARK_CHECKPOINT_ENTRY_INVALID"
SPARK_CHECKPOINT_NO_SOURCE_OFFSET = "SAMZA_SPARK_CHECKPOINT_NO_SOURCE_OFFSET"
SPARK_CHECKPOINT_NOT_KAFKA_OFFSET = "SAMZA_SPARK_CHECKPOINT_NOT_KAFKA_OFFSET"


# ---- the properties file --------------------------------------------------------------------------------------
def file_unreadable(path: str, why: object) -> ConfigError:
    return ConfigError(f"cannot read Samza properties file {path!r}: {why}", condition=FILE_UNREADABLE)


def escape_invalid(lineno: int, escape: str) -> ConfigError:
    return ConfigError(f"Samza properties line {lineno}: malformed \\uXXXX escape {escape!r}",
                       condition=SYNTAX_INVALID)


def in_file(path: str, err: ConfigError) -> ConfigError:
    """``err`` raised while translating the file at ``path``: the same error (its condition kept), naming the file."""
    return ConfigError(f"{path}: {err.detail}", condition=err.condition)


# ---- keys -----------------------------------------------------------------------------------------------------
def key_set_twice(first: str, second: str) -> ConfigError:
    """A key set both plainly and as ``sensitive.<key>``."""
    return ConfigError(f"both {first!r} and {second!r} are set: keep one of them", condition=KEY_SET_TWICE)


def key_invalid(key: str, why: str) -> ConfigError:
    """``key``'s value is malformed, or a key it needs is missing (``why`` says which)."""
    return ConfigError(f"{key}: {why}", condition=KEY_INVALID)


def key_unsupported(key: str, why: str) -> ConfigError:
    """``key`` asks for something no translation keeps without changing what is read (``why``: what, and the
    way out)."""
    return ConfigError(f"{key}: {why}", condition=KEY_UNSUPPORTED)


def job_name_missing(key: str) -> ConfigError:
    return ConfigError(f"{key} is required: it names the job's startpoints, job model and checkpoint mirror in the "
                       "metadata store (Samza's app.name is accepted too)", condition=JOB_NAME_MISSING)


def job_name_invalid(name_key: str, id_key: str, err: ConfigError) -> ConfigError:
    """The job name folded from ``name_key`` and ``id_key`` is not one the metadata store takes (``err``)."""
    return ConfigError(f"{name_key}/{id_key}: {err.detail}", condition=JOB_NAME_INVALID)


# ---- inputs and systems ---------------------------------------------------------------------------------------
def inputs_missing() -> ConfigError:
    return ConfigError("task.inputs is missing or empty: name the input streams as system.stream, e.g. "
                       "task.inputs=kafka.orders,kafka.payments", condition=INPUTS_MISSING)


def system_not_an_input(system: str, systems: list[str]) -> ConfigError:
    """The argument ``system=`` names a system without an input."""
    return ConfigError(f"system={system!r} has no input in task.inputs (systems with inputs: "
                       f"{', '.join(systems)})", condition=INPUT_NOT_FOUND)


def stream_not_an_input(stream: str, system: str, streams: list[str]) -> ConfigError:
    """The argument ``stream=`` names a stream that is not an input of the Kinesis system read."""
    return ConfigError(f"stream={stream!r} is not an input of system '{system}' ({', '.join(streams)})",
                       condition=INPUT_NOT_FOUND)


def several_systems(described: str) -> ConfigError:
    """``task.inputs`` reads several systems (``described``: each with its type and inputs)."""
    return ConfigError(
        f"task.inputs reads from several systems ({described}). One query reads one system: import with "
        "system='<name>' once per system and combine the streams in Spark (union or join)",
        condition=SEVERAL_SYSTEMS)


def several_kinesis_streams(system: str, streams: list[str]) -> ConfigError:
    return ConfigError(f"task.inputs names {len(streams)} Kinesis streams of system '{system}' "
                       f"({', '.join(streams)}); one samza-kinesis query reads one stream: import with "
                       "stream='<name>' once per stream", condition=SEVERAL_STREAMS)


def system_type_unknown(factory_key: str, prefix: str, kafka_factory: str, kinesis_factory: str) -> ConfigError:
    """No ``samza.factory`` for the system read, and its keys fit Kafka and Kinesis alike (or neither)."""
    return ConfigError(f"{factory_key} is not set and the keys under {prefix}* do not tell Kafka from Kinesis: "
                       f"set it to org.apache.samza.system.kafka.{kafka_factory} or "
                       f"org.apache.samza.system.kinesis.{kinesis_factory}", condition=SYSTEM_TYPE_UNKNOWN)


# ---- the sources' options -------------------------------------------------------------------------------------
def option_contradicts(written: str, derived: str, sources: str) -> ConfigError:
    """An option of the source written into the file (``written``: key=value, a secret shown as ``***``)
    contradicts the value ``derived`` from the Samza keys ``sources``."""
    return ConfigError(f"{written} contradicts {derived} derived from {sources}: remove one of them",
                       condition=OPTION_CONFLICT)


def options_exclude_each_other(key: str, other: str, sources: str) -> ConfigError:
    return ConfigError(f"{key} and {other} (derived from {sources}) exclude each other: remove one",
                       condition=OPTION_CONFLICT)


def offset_defaults_differ_with_regex(listing: str, option: str) -> ConfigError:
    """``samza.offset.default`` differs between inputs, some of them matched by a regex."""
    return ConfigError(f"samza.offset.default differs between inputs ({listing}) and some inputs come from a "
                       f"regex: {option} cannot express that. Make the values agree or read the "
                       "streams in separate queries", condition=OFFSET_DEFAULTS_DIFFER)


def offset_defaults_differ_without_counts(listing: str, option: str, missing: list[str]) -> ConfigError:
    """``samza.offset.default`` differs between topics, and the partition counts of ``missing`` were not given."""
    return ConfigError(
        f"samza.offset.default differs between inputs ({listing}). {option} can express that only "
        f"per partition: pass partition_counts={{topic: current partition count}} for "
        f"{', '.join(missing)}, make the values agree, or read the topics in separate queries",
        condition=OFFSET_DEFAULTS_DIFFER)


# ---- a Samza checkpoint (checkpoint-tool.sh text) -------------------------------------------------------------
def checkpoint_offset_invalid(lineno: int, offset: str, ssp: str) -> ConfigError:
    return ConfigError(f"Samza checkpoint line {lineno}: offset {offset!r} of {ssp} is not a Kafka offset "
                       "(a whole number >= 0)", condition=CHECKPOINT_LINE_INVALID)


def checkpoint_empty(system: str | None) -> ConfigError:
    return ConfigError("no Samza checkpoint line (tasknames.<task>.systems.<system>.streams.<topic>.partitions."
                       f"<p> = <offset>){f' of system {system!r}' if system else ''} found",
                       condition=CHECKPOINT_EMPTY)


def checkpoint_spans_systems(systems: list[str]) -> ConfigError:
    return ConfigError(f"the checkpoint spans systems {', '.join(systems)}: pass system='<name>'",
                       condition=SEVERAL_SYSTEMS)


# ---- a Spark checkpoint location ------------------------------------------------------------------------------
def location_unopenable(location: str, err: object) -> CheckpointDirError:
    """``pyarrow.fs`` cannot open the URI ``location``."""
    return CheckpointDirError(f"cannot open checkpoint location {location!r}: {err}",
                              condition=SPARK_CHECKPOINT_UNREADABLE)


def offsets_dir_missing(location: str) -> CheckpointDirError:
    return CheckpointDirError(
        f"{location!r} has no offsets/ directory: is it the query's checkpointLocation, and has the "
        "query run at least one batch?", condition=SPARK_CHECKPOINT_NO_OFFSETS)


def offsets_dir_unlistable(directory: str, err: OSError) -> CheckpointDirError:
    return CheckpointDirError(f"cannot list {directory!r}: {err}", condition=SPARK_CHECKPOINT_UNREADABLE)


def offset_file_unreadable(path: str, err: Exception) -> CheckpointDirError:
    return CheckpointDirError(f"cannot read offset file {path!r}: {err}", condition=SPARK_CHECKPOINT_UNREADABLE)


def offset_entry_invalid(batch_id: int, location: str) -> CheckpointDirError:
    return CheckpointDirError(
        f"offset file {batch_id} in {location!r} is not a Spark offset log entry "
        "(expected a version line, a metadata line and one line per source)", condition=SPARK_CHECKPOINT_ENTRY_INVALID)


def no_source_offset(location: str, batches: str) -> CheckpointDirError:
    """No offset file of ``location`` (``batches``: the ids it holds) has an offset of the expected source."""
    return CheckpointDirError(
        f"no offset of the expected source in {location!r} (offsets/ holds batches "
        f"{batches}): is it the checkpointLocation of this job's query?", condition=SPARK_CHECKPOINT_NO_SOURCE_OFFSET)


def spark_checkpoint_unreadable(root: str, err: CheckpointDirError) -> ConfigError:
    """The offset log of ``root`` cannot be opened (``err``), for ``starting_offsets_from_spark_checkpoint``."""
    return ConfigError(f"{root} is not a readable Spark checkpoint ({err.detail})",
                       condition=err.condition or SPARK_CHECKPOINT_UNREADABLE)


def spark_checkpoint_unlistable(root: str, why: object) -> ConfigError:
    return ConfigError(f"{root} is not a readable Spark checkpoint ({why}): expected the "
                       "directories offsets/ and commits/", condition=SPARK_CHECKPOINT_UNREADABLE)


def no_committed_batch(root: str) -> ConfigError:
    return ConfigError(f"{root}: no committed batch in the checkpoint: nothing to resume from",
                       condition=SPARK_CHECKPOINT_NO_COMMITTED_BATCH)


def offset_entry_unusable(err: CheckpointDirError) -> ConfigError:
    """The committed batch's offset file cannot be read or is not an offset log entry (``err``)."""
    return ConfigError(err.detail, condition=err.condition or SPARK_CHECKPOINT_UNREADABLE)


def no_source(path: str, source: int) -> ConfigError:
    return ConfigError(f"{path} is not a Spark offset log entry with a source #{source}",
                       condition=SPARK_CHECKPOINT_NO_SOURCE_OFFSET)


def not_a_kafka_offset(path: str, source: int, batch: int, raw: str) -> ConfigError:
    return ConfigError(f"{path}: source #{source} of batch {batch} is not a Kafka source offset "
                       f'({{"topic": {{"0": offset}}}}): {raw[:200]!r}', condition=SPARK_CHECKPOINT_NOT_KAFKA_OFFSET)
