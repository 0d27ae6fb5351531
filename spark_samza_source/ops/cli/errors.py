"""The command-line tool's own errors, and its catalogue: a command that cannot do its job (exit status 1) and a
combination of arguments that makes no sense (exit status 2, with usage). Every user's error ``ops/cli/`` raises is
built by a function here, its message starting with its condition (``SAMZA_CLI_...``: docs/errors.md lists them;
core/errors.py has the rule). ``samza-source`` prints the message after ``error:``, so the condition comes first
there too. The product's errors are in ``core/errors.py`` and each system's ``errors.py``; an error of theirs
reaches the user with its own condition.

A message names the job by ``where`` (job and store, the store URI redacted) and never a credential: the CLI also
scrubs every line it prints."""

from __future__ import annotations

from ...core.errors import ConfigError, SamzaSourceError

STORE_MISSING = "SAMZA_CLI_STORE_MISSING"
SELECTOR_INVALID = "SAMZA_CLI_SELECTOR_INVALID"
SELECTOR_TOO_WIDE = "SAMZA_CLI_SELECTOR_TOO_WIDE"
LAG_FLAGS_INVALID = "SAMZA_CLI_LAG_FLAGS_INVALID"
CONSUMER_AMBIGUOUS = "SAMZA_CLI_CONSUMER_AMBIGUOUS"
CONSUMER_NOT_FOUND = "SAMZA_CLI_CONSUMER_NOT_FOUND"
KINESIS_CALL_FAILED = "SAMZA_CLI_KINESIS_CALL_FAILED"
NO_COMMITTED_POSITIONS = "SAMZA_CLI_NO_COMMITTED_POSITIONS"
NO_JOB_MODEL = "SAMZA_CLI_NO_JOB_MODEL"
NO_OFFSET_IN_CHECKPOINT = "SAMZA_CLI_NO_OFFSET_IN_CHECKPOINT"
TOPIC_NOT_IN_JOB_MODEL = "SAMZA_CLI_TOPIC_NOT_IN_JOB_MODEL"
SHARD_HAS_NO_SLOT = "SAMZA_CLI_SHARD_HAS_NO_SLOT"
SHARD_NOT_IN_TASK = "SAMZA_CLI_SHARD_NOT_IN_TASK"
NO_SLOT_WITH_SHARDS = "SAMZA_CLI_NO_SLOT_WITH_SHARDS"
SLOT_OVERLOADED = "SAMZA_CLI_SLOT_OVERLOADED"


class CommandError(SamzaSourceError):
    """The command could not do its job (exit status 1)."""


class UsageError(SamzaSourceError):
    """A combination of arguments that argparse accepted but that makes no sense; exits 2 with usage."""


# ---- usage: the checks argparse cannot express (parser.validate) ----------------------------------------------
def store_missing(env_var: str) -> UsageError:
    return UsageError(f"--store is required (or set ${env_var})", condition=STORE_MISSING)


def store_or_job_invalid(err: ConfigError) -> UsageError:
    """The store URI or job name ``open_store`` refused: a usage problem, with the refusal's own condition."""
    return UsageError(err.detail, condition=err.condition)


def kafka_and_kinesis_selected() -> UsageError:
    return UsageError("give either --topic/--partition (Kafka) or --stream with --shard/--slot (Kinesis), not both",
                      condition=SELECTOR_INVALID)


def nothing_selected() -> UsageError:
    return UsageError("name the partition: --topic T --partition P (Kafka) or --stream S --shard ID|--slot N "
                      "(Kinesis)", condition=SELECTOR_INVALID)


def partition_without_topic() -> UsageError:
    return UsageError("--partition needs --topic", condition=SELECTOR_INVALID)


def topic_without_partition() -> UsageError:
    return UsageError("--topic needs --partition", condition=SELECTOR_INVALID)


def checkpoint_without_shard() -> UsageError:
    return UsageError("--checkpoint is only used with --stream --shard (Kinesis)", condition=SELECTOR_INVALID)


def shard_or_slot_without_stream() -> UsageError:
    return UsageError("--shard/--slot need --stream", condition=SELECTOR_INVALID)


def stream_needs_shard_or_slot() -> UsageError:
    return UsageError("--stream needs exactly one of --shard ID or --slot N", condition=SELECTOR_INVALID)


def every_slot_needs_checkpoint() -> UsageError:
    return UsageError("--stream without --shard or --slot (a startpoint for every slot of the stream) needs "
                      "--checkpoint DIR, the query's checkpointLocation, whose latest offset lists the slots",
                      condition=SELECTOR_INVALID)


def shard_needs_checkpoint() -> UsageError:
    return UsageError("--shard needs --checkpoint DIR (the query's checkpointLocation) to find the shard's slot "
                      "in the job model; or give --slot N", condition=SELECTOR_INVALID)


def every_with_one_position(needs: str, each: str) -> UsageError:
    """``startpoint set`` for every ``each`` (partition or slot) with an offset or sequence number, which
    positions one; ``needs``: the flag the selection lacks."""
    return UsageError(f"{needs} with --offset/--sequence: one offset or sequence number positions one {each}; "
                      f"name the {each}, or use --timestamp, --oldest or --upcoming for every {each}",
                      condition=SELECTOR_TOO_WIDE)


def every_with_task(needs: str, each: str) -> UsageError:
    return UsageError(f"{needs} with --task: a task-specific startpoint is for one {each}",
                      condition=SELECTOR_TOO_WIDE)


def lag_system_unclear() -> UsageError:
    return UsageError("give exactly one of --bootstrap HOST:PORT (Kafka) or --stream S (Kinesis)",
                      condition=LAG_FLAGS_INVALID)


def kinesis_flag_with_bootstrap(flag: str) -> UsageError:
    return UsageError(f"{flag} is for Kinesis (--stream), not with --bootstrap", condition=LAG_FLAGS_INVALID)


def kafka_property_with_stream() -> UsageError:
    return UsageError("-X/--kafka-property is for Kafka (--bootstrap), not with --stream", condition=LAG_FLAGS_INVALID)


# ---- stream consumers -----------------------------------------------------------------------------------------
def consumer_ambiguous(name: str, streams: list[str]) -> UsageError:
    return UsageError(f"consumer {name!r} is recorded for several streams ({', '.join(streams)}): name one with "
                      "--stream", condition=CONSUMER_AMBIGUOUS)


def consumer_not_found(where: str, name: str, stream: str | None) -> CommandError:
    return CommandError(f"{where} has no stream consumer named {name!r}"
                        + (f" on stream {stream!r}" if stream else "")
                        + " ('samza-source consumers list' shows them)", condition=CONSUMER_NOT_FOUND)


def kinesis_call_failed(call: str, arn: str, err: object) -> CommandError:
    """Kinesis refused ``call`` (DescribeStreamConsumer, DeregisterStreamConsumer) on the consumer ``arn``."""
    return CommandError(f"{call} of {arn} failed: {err}", condition=KINESIS_CALL_FAILED)


# ---- what the store or the checkpoint holds -------------------------------------------------------------------
def no_committed_positions(where: str) -> CommandError:
    return CommandError(f"no committed positions mirrored for {where}: the query has not committed a "
                        "batch yet (Spark commits a batch when it plans the next one)",
                        condition=NO_COMMITTED_POSITIONS)


def no_job_model(where: str) -> CommandError:
    """``jobmodel show`` without ``--checkpoint`` found no job model in the store."""
    return CommandError(
        f"no job model stored for {where}: the samza-kafka driver writes it when the query plans "
        "its first batch (check --store and --job); samza-kinesis keeps its job model only in the Spark "
        "offset: pass --checkpoint DIR", condition=NO_JOB_MODEL)


def no_job_model_for_topic(where: str, topic: str) -> CommandError:
    """``startpoint set --topic T`` (every partition) found no job model to list T's partitions from."""
    return CommandError(f"no job model is stored for {where}, so the partitions of topic "
                        f"{topic!r} are not known: the query has not planned a batch yet (or --store / "
                        "--job are wrong); give --partition P for each partition", condition=NO_JOB_MODEL)


def no_offset_in_checkpoint(location: str) -> CommandError:
    return CommandError(f"no samza-kafka or samza-kinesis offset in the checkpoint location {location}",
                        condition=NO_OFFSET_IN_CHECKPOINT)


def topic_not_in_job_model(topic: str, where: str, topics: list[str]) -> CommandError:
    return CommandError(f"topic {topic!r} is not in the current job model of {where} (its topics: "
                        f"{', '.join(topics) or 'none'}); give --partition P to store a startpoint anyway",
                        condition=TOPIC_NOT_IN_JOB_MODEL)


def shard_has_no_slot(shard: str, stream: str, batch_id: int, location: str, why: str, mapped: str) -> CommandError:
    """``shard`` has no slot in the job model of Spark batch ``batch_id`` (``why``; ``mapped``: the shards that
    have one)."""
    return CommandError(
        f"shard {shard} of stream {stream!r} has no slot in the job model of Spark batch "
        f"{batch_id} in {location}: {why}. Shards with a slot: {mapped}", condition=SHARD_HAS_NO_SLOT)


def shard_not_in_task(shard: str, shard_task: object, slot: int, task: object) -> CommandError:
    return CommandError(f"shard {shard} is in task {shard_task} (slot {slot}), not in {task}",
                        condition=SHARD_NOT_IN_TASK)


def no_slot_with_shards(stream: str, batch_id: int, location: str) -> CommandError:
    return CommandError(f"no slot of stream {stream!r} holds a shard in Spark batch {batch_id} of {location}",
                        condition=NO_SLOT_WITH_SHARDS)


def slot_overloaded(slot: int, shards: list[str]) -> CommandError:
    """A sequence number for a slot that holds several shards."""
    return CommandError(
        f"slot {slot} holds shards {', '.join(shards)} (an overloaded slot): one "
        "sequence number cannot position them all; use --timestamp, --oldest or --upcoming",
        condition=SLOT_OVERLOADED)
