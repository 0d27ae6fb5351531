"""Errors raised by the Kinesis system package.

One base class, :class:`KinesisSourceError`, so callers can tell a clear, intended Kinesis failure (a missing
stream, lost data, throttling that does not end, a lease another worker holds) apart from a bug.  Messages name
the operation, the stream, the shard and the positions at fault, and where the stream lives (region, endpoint).
They never contain credentials: access keys, secret keys and session tokens are scrubbed from any text that comes
back from botocore (see :func:`spark_samza_source.kinesis.client.AwsClientSettings.scrub`): a caller passes
botocore's words to the functions here already scrubbed.

This module is also the package's *catalogue*: every user's error samza-kinesis raises is built by a function here,
its message starting with its condition (docs/errors.md lists them; core/errors.py has the rule). A samza-kinesis
option a message names comes in as an argument (``..._option``: its name, from ``kinesis/options.py``), because
``kinesis/options.py`` imports modules that raise from here, so this module cannot import it; the shared options
(``failOnDataLoss``, ``endpoint.retryTimeout``, ``metadata.store``) are imported from ``options/common.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import (
    ConfigError,
    DataLossError,
    FormatVersionError,
    InternalError,
    MetadataStoreError,
    OffsetFormatError,
    SamzaSourceError,
)
from ..options.common import FAIL_ON_DATA_LOSS, METADATA_STORE, RETRY_TIMEOUT
from ..options.errors import INVALID_OPTION

if TYPE_CHECKING:
    from ..core.model import SystemStreamPartition, TaskName
    from .positions import ShardPosition

__all__ = [
    "KinesisSourceError",
    "KinesisStreamNotFoundError",
    "KinesisDataLossError",
    "KinesisThrottledError",
    "KclLeaseConflictError",
    "KinesisPlanError",
    "MapperError",
    "JobModelTooLargeError",
    "AttemptPassedRecordedEndError",
    "UnreachableStoreError",
    "ThrottledAtDeadlineError",
    "PositionFormatError",
]

ENDPOINT_UNREACHABLE = "SAMZA_KINESIS_ENDPOINT_UNREACHABLE"
THROTTLED = "SAMZA_KINESIS_THROTTLED"
OPERATION_FAILED = "SAMZA_KINESIS_OPERATION_FAILED"
CLIENT_NOT_CREATED = "SAMZA_KINESIS_CLIENT_NOT_CREATED"
STREAM_NOT_FOUND = "SAMZA_KINESIS_STREAM_NOT_FOUND"
STREAM_NOT_ACTIVE = "SAMZA_KINESIS_STREAM_NOT_ACTIVE"
CONSUMER_NOT_ACTIVE = "SAMZA_KINESIS_CONSUMER_NOT_ACTIVE"
CONSUMER_LIMIT_REACHED = "SAMZA_KINESIS_CONSUMER_LIMIT_REACHED"
CONSUMER_NOT_REGISTERED = "SAMZA_KINESIS_CONSUMER_NOT_REGISTERED"
DATA_LOSS = "SAMZA_KINESIS_DATA_LOSS"
STREAM_RECREATED = "SAMZA_KINESIS_STREAM_RECREATED"
RECORDED_END_NOT_REACHED = "SAMZA_KINESIS_RECORDED_END_NOT_REACHED"
ATTEMPT_PASSED_RECORDED_END = "SAMZA_KINESIS_ATTEMPT_PASSED_RECORDED_END"
BATCH_END_INVALID = "SAMZA_KINESIS_BATCH_END_INVALID"
BATCH_END_REMOVED = "SAMZA_KINESIS_BATCH_END_REMOVED"
STORE_NOT_SHARED = "SAMZA_KINESIS_STORE_NOT_SHARED"
KCL_LEASE_TABLE_FAILED = "SAMZA_KINESIS_KCL_LEASE_TABLE_FAILED"
KCL_LEASE_TABLE_INVALID = "SAMZA_KINESIS_KCL_LEASE_TABLE_INVALID"
KCL_CHECKPOINT_UNREADABLE = "SAMZA_KINESIS_KCL_CHECKPOINT_UNREADABLE"
KCL_LEASE_CONFLICT = "SAMZA_KINESIS_KCL_LEASE_CONFLICT"
JOB_MODEL_TOO_LARGE = "SAMZA_KINESIS_JOB_MODEL_TOO_LARGE"
STARTPOINT_INVALID = "SAMZA_KINESIS_STARTPOINT_INVALID"
POSITION_INVALID = "SAMZA_KINESIS_POSITION_INVALID"
OFFSET_INVALID = "SAMZA_KINESIS_OFFSET_INVALID"
FORMAT_VERSION_UNKNOWN = "SAMZA_KINESIS_FORMAT_VERSION_UNKNOWN"
SHARD_TASKS_INVALID = "SAMZA_KINESIS_SHARD_TASKS_INVALID"


class KinesisSourceError(SamzaSourceError):
    """A Kinesis (or KCL lease table) operation failed; the message names the operation, stream and shard."""


class KinesisStreamNotFoundError(KinesisSourceError):
    """The stream (or one of its shards) does not exist at the endpoint / in the region the client talks to."""


class KinesisDataLossError(KinesisSourceError, DataLossError):
    """Records the query should read are gone (older than the stream's retention, shard expired) and
    ``failOnDataLoss`` is true, or a retried attempt cannot reproduce the end an earlier attempt recorded. A
    :class:`DataLossError` like the planner's, so ``except DataLossError`` catches a loss whether the driver or an
    executor found it."""


class KinesisThrottledError(KinesisSourceError):
    """Kinesis kept answering ``ProvisionedThroughputExceededException`` / ``LimitExceededException`` (or an
    iterator kept expiring) beyond the bounded number of retries."""


class KclLeaseConflictError(KinesisSourceError):
    """A KCL lease changed under us (its ``leaseCounter`` moved since we last wrote it, or another owner holds it
    and take-over is disabled): some other worker is using the lease table, so we did not overwrite it."""


class KinesisPlanError(InternalError):
    """The recorded ends of a batch do not fit the offset that planned it (a shard missing or unexpected), or the
    planner was handed something that is not a listing, a position or a startpoint; a bug, never the user's."""


class MapperError(InternalError):
    """The mapper was asked something inconsistent (bad counts, a slot out of range, unknown assignment): the
    planner's bug, never the user's (a damaged offset that asks it is reported by the offset parser as damaged)."""


class JobModelTooLargeError(KinesisSourceError):
    """The job model would have more tasks or slots than a Spark query (or a Samza partition id) can hold: the
    option ``tasks``, or a stream's shard count, is too large."""


class AttemptPassedRecordedEndError(KinesisSourceError):
    """Another attempt of the batch recorded an end before this one, which had already handed out rows past it.

    Raised to fail the attempt: Spark discards its rows and the retry reads exactly to ``winner``.
    """

    def __init__(self, message: str, winner: ShardPosition, *, condition: str | None = None) -> None:
        super().__init__(message, condition=condition)
        self.winner = winner


class UnreachableStoreError(KinesisSourceError):
    """The executor's view of a local ``file:`` metadata store is not the driver's."""


class ThrottledAtDeadlineError(KinesisThrottledError):
    """Still throttled when the caller's deadline came (the shard reader: ``maxFetchTimePerShard``)."""


class PositionFormatError(KinesisSourceError, ValueError):
    """A stored or supplied Kinesis shard position is malformed."""


# ---- calls to the endpoint ------------------------------------------------------------------------------------
def endpoint_unreachable(what: str, where: str, why: str, tried: str = "") -> KinesisSourceError:
    """An AWS endpoint that did not answer: what was asked (``what``), of which endpoint (``where``), for how long
    (``tried``), and botocore's words (``why``)."""
    return KinesisSourceError(f"{what}: no answer from the Kinesis endpoint ({where}){tried}: {why}. "
                              f"Check that the endpoint is reachable from this machine, or raise the option "
                              f"'{RETRY_TIMEOUT.name}' to ride out longer outages", condition=ENDPOINT_UNREACHABLE)


def throttled(what: str, retries: int, where: str, why: str) -> KinesisThrottledError:
    return KinesisThrottledError(f"{what}: still throttled after {retries} retries ({where}): {why}",
                                 condition=THROTTLED)


def throttled_at_deadline(what: str, attempts: int, where: str, why: str) -> ThrottledAtDeadlineError:
    """Still throttled when the time given to the call ran out (the reader then ends its batch where it stands)."""
    return ThrottledAtDeadlineError(f"{what}: still throttled at the end of the time given to it "
                                    f"({attempts} attempts, {where}): {why}", condition=THROTTLED)


def kept_throttled(what: str, code: str, retries: int, where: str, hint: str = "") -> KinesisThrottledError:
    """A read that kept failing with the throttling error ``code`` through its ``retries``."""
    return KinesisThrottledError(f"{what} kept failing with {code} ({retries} retries, {where}){hint}",
                                 condition=THROTTLED)


def operation_failed(what: str, where: str, why: str, hint: str = "") -> KinesisSourceError:
    """A Kinesis call failed with an error retrying cannot help (``why``: Kinesis' answer)."""
    return KinesisSourceError(f"{what} failed ({where}){hint}: {why}", condition=OPERATION_FAILED)


# ---- the AWS client settings ----------------------------------------------------------------------------------
def credentials_half_given() -> ConfigError:
    return ConfigError("AWS credentials: give both the access key id and the secret key, or neither "
                       "(neither uses boto3's default credential chain)")


def max_attempts_invalid(value: object) -> ConfigError:
    return ConfigError(f"AWS client max_attempts must be an integer from 1 to 20, got {value!r}")


def client_timeout_invalid(name: str, value: object) -> ConfigError:
    return ConfigError(f"AWS client {name} must be a positive number of seconds, got {value!r}")


def client_settings_unknown(unknown: list[str], known: list[str]) -> ConfigError:
    return ConfigError(f"unknown AWS client settings {unknown}; known: {known}")


def role_not_assumed(role_arn: str | None, described: str, why: str) -> ConfigError:
    """STS refused the role (``described``: the settings without secrets; ``why`` scrubbed)."""
    return ConfigError(f"cannot assume role {role_arn} ({described}): {why}", condition=CLIENT_NOT_CREATED)


def client_not_created(service: str, described: str, why: str) -> ConfigError:
    return ConfigError(f"cannot create a {service} client ({described}): {why}", condition=CLIENT_NOT_CREATED)


# ---- streams, shards and stream consumers ---------------------------------------------------------------------
def stream_not_found(stream: str, shard_id: str | None, where: str, why: str, *, stream_option: str,
                     region_option: str, endpoint_option: str) -> KinesisStreamNotFoundError:
    """The stream, or its shard ``shard_id``, is not at the endpoint ``where``."""
    subject = f"shard {shard_id} of stream {stream!r}" if shard_id else f"stream {stream!r}"
    hint = ("the shard may have expired (closed shards disappear once the stream's retention period has passed)"
            if shard_id else
            f"check the options '{stream_option}' and '{region_option}' / '{endpoint_option}'")
    return KinesisStreamNotFoundError(f"Kinesis {subject} not found ({where}): {hint}. Kinesis said: {why}",
                                      condition=STREAM_NOT_FOUND)


def stream_not_active(stream: str, where: str, why: str) -> KinesisSourceError:
    return KinesisSourceError(f"Kinesis stream {stream!r} is not ACTIVE yet (being created or deleted?) ({where}): "
                              f"{why}", condition=STREAM_NOT_ACTIVE)


def consumer_not_active(name: str, stream: str, consumer: tuple[str, str], timeout_s: float, where: str, *,
                        consumer_name_option: str) -> KinesisSourceError:
    """The stream consumer ``name`` (``consumer``: its ARN and status) did not become ACTIVE in time."""
    arn, status = consumer
    return KinesisSourceError(
        f"stream consumer {name!r} of stream {stream!r} ({arn}) is {status}, not "
        f"ACTIVE, after {timeout_s:g} s ({where}); if it is being deregistered, wait until "
        f"it is gone and restart, or choose another '{consumer_name_option}'", condition=CONSUMER_NOT_ACTIVE)


def consumer_limit_reached(what: str, where: str, why: str, *, consumer_name_option: str) -> KinesisSourceError:
    return KinesisSourceError(
        f"{what}: the stream has as many consumers as AWS allows (20), or registrations come too fast "
        f"({where}); deregister one with 'samza-source consumers deregister' or reuse "
        f"an existing '{consumer_name_option}': {why}", condition=CONSUMER_LIMIT_REACHED)


def consumer_not_registered(name: str, stream: str, where: str) -> KinesisSourceError:
    return KinesisSourceError(f"stream consumer {name!r} of stream {stream!r} is not registered ({where})",
                              condition=CONSUMER_NOT_REGISTERED)


# ---- data loss ------------------------------------------------------------------------------------------------
def read_data_loss(what: str) -> KinesisDataLossError:
    """A task found records of its read gone (``what`` names task, shard, positions and why)."""
    return KinesisDataLossError(what + f". Set the option '{FAIL_ON_DATA_LOSS.name}' to 'false' to skip lost "
                                       "records with a warning instead.", condition=DATA_LOSS)


def planned_data_loss(stream: str, described: str) -> DataLossError:
    """The planner found a shard gone before it was read to its end (``described``: the shard and why)."""
    return DataLossError(
        f"samza-kinesis stream {stream}: {described}. The query stops so nothing is "
        f"skipped silently; to continue without it restart with {FAIL_ON_DATA_LOSS.name}=false", condition=DATA_LOSS)


def closed_shard_without_children(stream: str, shard_id: str, ending_sequence: str | None,
                                  waited_ms: int) -> DataLossError:
    """A drained closed shard that ListShards has listed without any child for ``waited_ms``."""
    return DataLossError(
        f"samza-kinesis stream {stream}: {describe_childless(shard_id, ending_sequence, waited_ms)}. The query "
        f"stops so nothing is skipped silently; to continue without those records restart with "
        f"{FAIL_ON_DATA_LOSS.name}=false", condition=DATA_LOSS)


def describe_childless(shard_id: str, ending_sequence: str | None, waited_ms: int) -> str:
    return (f"shard {shard_id} is closed (ending sequence number {ending_sequence}) and was read to its end, but "
            f"ListShards has named no child of it for {waited_ms / 1000:.0f} s: the records of its hash keys written "
            "since it closed are in shards this query cannot see")


def stream_recreated(what: str) -> KinesisDataLossError:
    """The stream was deleted and re-created under its name (``what``: both incarnations and where it was found)."""
    return KinesisDataLossError(
        f"{what}. The query stops so nothing is skipped silently. To fix: restart with "
        f"{FAIL_ON_DATA_LOSS.name}=false to read the new stream from TRIM_HORIZON (the loss is logged and "
        "reported in the progress), or start a new checkpoint location", condition=STREAM_RECREATED)


def recorded_end_not_reached(what: str, why: str, hint: str = "") -> KinesisDataLossError:
    """A retried attempt cannot re-read its shard exactly to the end an earlier attempt recorded (``what``: task,
    shard, start, recorded end and where the read got to)."""
    return KinesisDataLossError(f"{what}: {why}{hint}", condition=RECORDED_END_NOT_REACHED)


def attempt_passed_recorded_end(what: str, winner: ShardPosition) -> AttemptPassedRecordedEndError:
    """This attempt handed out rows past the end another attempt recorded first (``winner``)."""
    return AttemptPassedRecordedEndError(
        f"{what}; it fails so that "
        "Spark discards its rows, and the retry reads exactly to the recorded end (this happens only when "
        "two attempts of one batch run at once, e.g. with speculative execution)", winner,
        condition=ATTEMPT_PASSED_RECORDED_END)


# ---- the batch ends in the metadata store ---------------------------------------------------------------------
def recorded_end_invalid(task: str, end: ShardPosition, shard_id: str) -> KinesisSourceError:
    return KinesisSourceError(f"task {task!r}: a recorded batch end must be AFTER_SEQUENCE_NUMBER or "
                              f"SHARD_END (or the start itself), got {end} for shard {shard_id}",
                              condition=BATCH_END_INVALID)


def stored_batch_end_invalid(uri: str, key: str, err: object, value: object, repair: str) -> MetadataStoreError:
    """The batch end stored under ``key`` (a namespace and key) is damaged or cannot be read as a position: a
    guess would read another range than the batch's first attempt."""
    shown = "" if value is None else f": {value!r:.200}"
    return MetadataStoreError(f"metadata store {uri}: the batch end under {key} (kind: batch ends) is not valid "
                              f"({err}){shown}. Repair: {repair}", condition=BATCH_END_INVALID)


def batch_end_removed(uri: str, batch: int, shard_id: str) -> MetadataStoreError:
    return MetadataStoreError(f"metadata store {uri}: the end of batch {batch} for shard {shard_id} "
                              "was recorded by another attempt and then removed (cleanup of a batch that is "
                              "still running?)", condition=BATCH_END_REMOVED)


def store_not_shared(uri: str, host: str, job_name: str) -> UnreachableStoreError:
    """An executor's local ``file:`` store lacks the driver's job lease: not the driver's directory."""
    return UnreachableStoreError(
        f"option '{METADATA_STORE.name}' is a local directory ({uri}) that this executor (host "
        f"{host}) does not share with the driver: the driver's job lease for job '{job_name}' "
        "is not in it here. samza-kinesis executors record where each batch ended in the metadata store and the "
        "driver plans the next batch from it, so a file: store (including the default 'samza-metadata', relative "
        "to each process's working directory) works only in local mode (master local[N]) or on a filesystem every "
        "node mounts at the same absolute path. Fix: set metadata.store to dynamodb://TABLE?region=REGION or "
        "s3://BUCKET/PREFIX (or an absolute path on shared storage), e.g. "
        ".option('metadata.store', 'dynamodb://samza-metadata?region=eu-west-1')", condition=STORE_NOT_SHARED)


# ---- the KCL lease table --------------------------------------------------------------------------------------
def lease_table_failed(what: str, where: str, why: str) -> KinesisSourceError:
    return KinesisSourceError(f"KCL lease table: {what} failed ({where}): {why}", condition=KCL_LEASE_TABLE_FAILED)


def lease_table_not_active(where: str, status: object, timeout_s: float) -> KinesisSourceError:
    return KinesisSourceError(f"KCL lease table: {where} is still {status} after {timeout_s:.0f} s",
                              condition=KCL_LEASE_TABLE_FAILED)


def lease_table_not_kcl(where: str, keys: list[tuple[str, str]], key: str) -> KinesisSourceError:
    return KinesisSourceError(f"KCL lease table: {where} has key schema {keys}, not the KCL's "
                              f"[('{key}', 'HASH')]: it is not a KCL lease table", condition=KCL_LEASE_TABLE_INVALID)


def lease_table_of_several_streams(where: str, streams: list[str]) -> KinesisSourceError:
    return KinesisSourceError(f"KCL lease table {where} holds leases of several streams "
                              f"({streams}): say which stream to read", condition=KCL_LEASE_TABLE_INVALID)


def kcl_timestamp_unknown(shard_id: str) -> KinesisSourceError:
    return KinesisSourceError(
        f"the KCL lease of shard {shard_id} is checkpointed at AT_TIMESTAMP, but the lease table does not "
        "say which timestamp (the KCL keeps it in its configuration): pass the application's "
        "initial-position timestamp (at_timestamp_ms)", condition=KCL_CHECKPOINT_UNREADABLE)


def kcl_checkpoint_invalid(shard_id: str, checkpoint: str, sentinels: object) -> KinesisSourceError:
    return KinesisSourceError(f"the KCL lease of shard {shard_id} has checkpoint {checkpoint!r:.80}, which is "
                              f"neither a sequence number nor one of {sentinels}", condition=KCL_CHECKPOINT_UNREADABLE)


def kcl_lease_row_damaged(where: str, lease_key: str, what: str, repair: str, *,
                          lease_table_option: str) -> KinesisSourceError:
    """A lease row a query was to start from cannot be read (the damaged-record rule: fail)."""
    return KinesisSourceError(
        f"KCL lease table ({where}, option '{lease_table_option}'): the lease row {lease_key!r:.200} is damaged: "
        f"{what}. The query does not start from a checkpoint it cannot read. Repair: {repair}",
        condition=KCL_CHECKPOINT_UNREADABLE)


def kcl_lease_conflict(where: str, conflicts: list[str], *, lease_table_option: str) -> KclLeaseConflictError:
    """Leases another worker is using (``conflicts``: each shard and why), left as they are."""
    return KclLeaseConflictError(
        f"KCL lease table ({where}): did not overwrite {len(conflicts)} lease(s) another worker is "
        f"using: {', '.join(conflicts)}. Stop any KCL application that uses this table (or point "
        f"'{lease_table_option}' at another one), then restart the query; the other leases were "
        "written.", condition=KCL_LEASE_CONFLICT)


# ---- where a query starts -------------------------------------------------------------------------------------
def kcl_lease_table_not_set(*, starting_position_option: str, lease_table_option: str) -> SamzaSourceError:
    return SamzaSourceError(
        f"option '{starting_position_option}' is 'kcl' but '{lease_table_option}' is not set: name the "
        f"KCL application's DynamoDB lease table, e.g. .option('{lease_table_option}', 'my-kcl-app')",
        condition=INVALID_OPTION)


def starting_shards_unknown(option: str, unknown: list[str], stream: str, known: str) -> ConfigError:
    """The per-shard starting position names shards ``ListShards`` does not list (``known``: those it lists)."""
    return ConfigError(
        f"option '{option}' names shard(s) {', '.join(repr(u) for u in unknown[:20])} that stream {stream!r} "
        f"does not have (ListShards lists: {known}). Fix the shard id(s) (they look like shardId-000000000000); "
        "a closed shard disappears once the stream's retention period has passed")


_READ_FROM_THIS_SHARD = ("Use a sequence number read from this shard (the sequenceNumber column of a row whose "
                         "shardId is this shard)")


def starting_sequence_outside_shard(option: str, shard_id: str, stream: str, position: ShardPosition,
                                    span: str) -> ConfigError:
    """A per-shard starting sequence number outside the shard's ``SequenceNumberRange`` (``span``)."""
    return ConfigError(
        f"option '{option}': shard {shard_id} of stream {stream!r} starts {position}, but that sequence number "
        f"does not belong to the shard (its SequenceNumberRange is {span}). {_READ_FROM_THIS_SHARD}")


def starting_sequence_refused(option: str, shard_id: str, stream: str, position: ShardPosition,
                              why: str) -> ConfigError:
    """Kinesis refused a per-shard starting sequence number for its shard (``why``: its answer, scrubbed)."""
    return ConfigError(
        f"option '{option}': shard {shard_id} of stream {stream!r} starts "
        f"{position}, but Kinesis refuses that sequence number for this shard ({why}). {_READ_FROM_THIS_SHARD}")


def timestamp_in_future(what: str, when: str, now: str) -> ConfigError:
    """A start AT_TIMESTAMP ``when`` later than ``now`` (both ISO 8601; ``what``: the option that asks it)."""
    return ConfigError(
        f"{what}: AT_TIMESTAMP {when} is in the future (now {now}); Kinesis refuses "
        "iterators later than its clock. Use a time in the past, or LATEST to read what arrives from the "
        "query's start")


def startpoint_sequence_for_several_shards(ssp: SystemStreamPartition, task: TaskName,
                                           shards: list[str]) -> SamzaSourceError:
    return SamzaSourceError(
        f"a StartpointSpecific names one sequence number but {ssp} in {task} holds shards "
        f"{', '.join(shards)}; use a Timestamp/Oldest/Upcoming startpoint for this slot", condition=STARTPOINT_INVALID)


# ---- the job model, positions and offsets ---------------------------------------------------------------------
def job_model_too_large(num_tasks: int, slots_per_task: int, max_tasks: int, max_slots: int) -> JobModelTooLargeError:
    return JobModelTooLargeError(f"{num_tasks} tasks x {slots_per_task} slots is too large: at most {max_tasks} tasks "
                                 f"and {max_slots} slots in all", condition=JOB_MODEL_TOO_LARGE)


def position_invalid(problem: str) -> PositionFormatError:
    """A shard position (stored, or from an option or a startpoint) that is not one (``problem``: why)."""
    return PositionFormatError(problem, condition=POSITION_INVALID)


def offset_invalid(problem: str) -> OffsetFormatError:
    """An offset from the checkpoint that samza-kinesis cannot read (``problem``: what is wrong with it); the
    stream reader quotes it in the error naming the offset file."""
    return OffsetFormatError(problem, condition=OFFSET_INVALID)


def offset_version_unknown(version: int, known: int) -> FormatVersionError:
    return FormatVersionError(
        f"samza-kinesis offset format version {version} is newer than this release understands "
        f"({known}); upgrade spark-samza-source on the driver", condition=FORMAT_VERSION_UNKNOWN)


def shard_tasks_invalid(where: str, problem: str, repair: str) -> SamzaSourceError:
    """The shard -> task record under ``where`` is damaged: a batch read regrouping instead would put records in
    other tasks than the streaming query did."""
    return SamzaSourceError(f"{where} (kind: shard tasks) is damaged: {problem}. A batch read will not make tasks "
                            f"of its own in its place (its task column would differ from the streaming query's). "
                            f"Repair: {repair}", condition=SHARD_TASKS_INVALID)


def shard_tasks_version_unknown(where: str, version: int, known: int) -> FormatVersionError:
    """The shard -> task record under ``where`` was written by a newer release."""
    return FormatVersionError(f"{where} has format {version}, newer than this release reads "
                              f"({known}): upgrade spark-samza-source", condition=FORMAT_VERSION_UNKNOWN)
