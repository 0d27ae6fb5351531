"""Errors raised by the Kafka system package, and its catalogue: every user's error samza-kafka raises is built by a
function here, its message starting with its condition (docs/errors.md lists them; core/errors.py has the rule).
A samza-kafka option a message names comes in as an argument (``..._option``: its name, from ``kafka/options.py``),
like the starting strategies' option fields: ``kafka/options.py`` imports modules that raise from here, so this
module cannot import it.

One class, :class:`KafkaSourceError`, so callers can tell a clear, intended Kafka failure (missing topic, data
loss, a broker that does not answer within the timeout) apart from a bug.  Messages name the operation, the
topics / partitions / offsets at fault and, where it helps, the option that changes the behaviour.  They never
contain client configuration values other than ``bootstrap.servers`` (SASL passwords and keys live there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import (
    ConfigError,
    DataLossError,
    FormatVersionError,
    MetadataStoreError,
    OffsetFormatError,
    PartitionExpansionError,
    SamzaSourceError,
    StartpointFormatError,
)
from ..options.common import FAIL_ON_DATA_LOSS, JOB_NAME
from ..options.errors import INVALID_OPTION

if TYPE_CHECKING:
    from ..core.model import SystemStreamPartition, TaskName

__all__ = ["JaasError", "KafkaDataLossError", "KafkaSourceError"]

DATA_LOSS = "SAMZA_KAFKA_DATA_LOSS"
OFFSET_PAST_LOG_END = "SAMZA_KAFKA_OFFSET_PAST_LOG_END"
STARTING_OFFSET_BELOW_LOG_START = "SAMZA_KAFKA_STARTING_OFFSET_BELOW_LOG_START"
PARTITION_GONE = "SAMZA_KAFKA_PARTITION_GONE"
TOPIC_RECREATED = "SAMZA_KAFKA_TOPIC_RECREATED"
TOPIC_NOT_FOUND = "SAMZA_KAFKA_TOPIC_NOT_FOUND"
TOPIC_LEFT_JOB = "SAMZA_KAFKA_TOPIC_LEFT_JOB"
STORED_JOB_MODEL_NOT_RESTORABLE = "SAMZA_KAFKA_STORED_JOB_MODEL_NOT_RESTORABLE"
CLIENT_NOT_CREATED = "SAMZA_KAFKA_CLIENT_NOT_CREATED"
AUTHENTICATION_FAILED = "SAMZA_KAFKA_AUTHENTICATION_FAILED"
TLS_BROKER_NOT_TRUSTED = "SAMZA_KAFKA_TLS_BROKER_NOT_TRUSTED"
TLS_CLIENT_CERTIFICATE_REFUSED = "SAMZA_KAFKA_TLS_CLIENT_CERTIFICATE_REFUSED"
TLS_HANDSHAKE_FAILED = "SAMZA_KAFKA_TLS_HANDSHAKE_FAILED"
TLS_KEY_UNREADABLE = "SAMZA_KAFKA_TLS_KEY_UNREADABLE"
PLAINTEXT_ON_TLS_LISTENER = "SAMZA_KAFKA_PLAINTEXT_ON_TLS_LISTENER"
TOPIC_READ_NOT_AUTHORIZED = "SAMZA_KAFKA_TOPIC_READ_NOT_AUTHORIZED"
OPERATION_FAILED = "SAMZA_KAFKA_OPERATION_FAILED"
OPERATION_TIMED_OUT = "SAMZA_KAFKA_OPERATION_TIMED_OUT"
GROUP_HAS_ACTIVE_MEMBERS = "SAMZA_KAFKA_GROUP_HAS_ACTIVE_MEMBERS"
CONSUMER_FAILED = "SAMZA_KAFKA_CONSUMER_FAILED"
WATERMARKS_UNAVAILABLE = "SAMZA_KAFKA_WATERMARKS_UNAVAILABLE"
OUT_OF_RANGE_REPEATED = "SAMZA_KAFKA_OUT_OF_RANGE_REPEATED"
POLL_TIMED_OUT = "SAMZA_KAFKA_POLL_TIMED_OUT"
RECORD_TOO_LARGE = "SAMZA_KAFKA_RECORD_TOO_LARGE"
HEADER_KEY_NOT_UTF8 = "SAMZA_KAFKA_HEADER_KEY_NOT_UTF8"
NATIVE_READER_UNAVAILABLE = "SAMZA_KAFKA_NATIVE_READER_UNAVAILABLE"
JAAS_CONFIG_INVALID = "SAMZA_KAFKA_JAAS_CONFIG_INVALID"
STARTPOINT_INVALID = "SAMZA_KAFKA_STARTPOINT_INVALID"
OFFSET_INVALID = "SAMZA_KAFKA_OFFSET_INVALID"
OFFSET_VERSION_UNKNOWN = "SAMZA_KAFKA_OFFSET_VERSION_UNKNOWN"
STORED_JOB_MODEL_UNREADABLE = "SAMZA_KAFKA_STORED_JOB_MODEL_UNREADABLE"


class KafkaSourceError(SamzaSourceError):
    """A Kafka operation failed or timed out; the message names the operation and the topics involved."""


class KafkaDataLossError(KafkaSourceError, DataLossError):
    """Records the query should have read are gone (deleted, aged out, topic re-created) and
    ``failOnDataLoss`` is true. A :class:`DataLossError` like the planner's, so ``except DataLossError`` catches
    a loss whether the driver or an executor found it."""


class JaasError(KafkaSourceError, ValueError):
    """A ``sasl.jaas.config`` line that does not parse; the message never holds the line (it has a password)."""


# ---- data loss ------------------------------------------------------------------------------------------------
_STOPS = "The query stops so nothing is skipped silently."


def read_data_loss(what: str) -> KafkaDataLossError:
    """An executor found records of its planned range gone (``what`` names task, partition, offsets and why)."""
    return KafkaDataLossError(what + f". Set the option '{FAIL_ON_DATA_LOSS.name}' to 'false' to skip lost "
                                     "records with a warning instead.", condition=DATA_LOSS)


def planned_data_loss(described: str, advice: str) -> DataLossError:
    """The planner found the position to read next below the log start (``described``, ``advice``: the loss)."""
    return DataLossError(f"{described}. {_STOPS} {advice}", condition=DATA_LOSS)


def offset_past_log_end(described: str, advice: str) -> DataLossError:
    """The position to read next is past the end of the log: re-created, truncated, or an edited offset."""
    return DataLossError(f"{described}. {_STOPS} {advice}", condition=OFFSET_PAST_LOG_END)


def starting_offset_below_log_start(option: str, ssp: SystemStreamPartition, wanted: int, low: int,
                                    loss: str) -> DataLossError:
    """A ``startingOffsets`` entry below the log start, with ``failOnDataLoss`` true."""
    return DataLossError(
        f"option '{option}' asks to start {ssp} at offset {wanted}, below its log start "
        f"{low}: {loss}. {_STOPS} To start at the earliest "
        f"available offset, give -2 (earliest) for this partition; or set {FAIL_ON_DATA_LOSS.name}=false to "
        f"go on from offset {low} with the loss logged and counted in the progress (latestOffset[\"dataLoss\"])",
        condition=STARTING_OFFSET_BELOW_LOG_START)


def partition_gone(ssp: SystemStreamPartition, task: TaskName) -> DataLossError:
    """A partition of the job model the broker no longer reports, with ``failOnDataLoss`` true."""
    return DataLossError(
        f"{ssp} (task {task}) is in the job model but the broker no longer reports it "
        "(partition or topic deleted?). Check the topic; to go on without it, restart with "
        f"{FAIL_ON_DATA_LOSS.name}=false", condition=PARTITION_GONE)


def topic_recreated(topic: str, ids: tuple[str, str]) -> DataLossError:
    """``topic``'s ID changed from ``ids[0]`` (the checkpoint's) to ``ids[1]``: deleted and re-created."""
    return DataLossError(
        f"topic '{topic}' was deleted and re-created: its topic ID is {ids[1]}, the checkpoint's positions belong "
        f"to topic ID {ids[0]}. Records of the old topic the query had not read are gone, and its positions mean "
        "nothing in the new one. The query stops so nothing is skipped silently. To read the new topic from its "
        f"start with the loss reported, restart with {FAIL_ON_DATA_LOSS.name}=false; or write a Startpoint for "
        "each of its partitions to choose where to begin", condition=TOPIC_RECREATED)


# ---- topics and the job model ---------------------------------------------------------------------------------
def topics_not_found(missing: list[str], where: str, *, subscribe_option: str, assign_option: str,
                     drop_topics_option: str) -> KafkaSourceError:
    """Topics named in ``subscribe`` / ``assign`` that the cluster does not list: a misspelt name, or a topic deleted
    under a job that read it, which leaves only through ``dropTopics``."""
    names = ",".join(missing)
    return KafkaSourceError(
        f"Kafka topic(s) {', '.join(repr(t) for t in missing)} not found {where}; "
        f"check the topic names in '{subscribe_option}' / '{assign_option}' and that the topics exist (on a cluster "
        f"with ACLs, a topic the query's principal may not DESCRIBE looks absent too: grant DESCRIBE and READ on "
        f"it, docs/security.md). If a topic "
        f"was deleted on purpose and this job read it, remove it from '{subscribe_option}' / '{assign_option}' "
        f"and let it go with the option '{drop_topics_option}' (its positions and the tasks holding only it are "
        f"forgotten, every other topic keeps its tasks): add the line .option('{drop_topics_option}', '{names}')",
        condition=TOPIC_NOT_FOUND)


def _regroup_hint(job_name: str, reset_option: str) -> str:
    return (f" This query starts from the job model stored for {JOB_NAME.name}={job_name}; to "
            f"regroup from the current partitions instead (new tasks, state per task lost), set "
            f"{reset_option}=true.")


def topics_left_job(refused: list[str], counts: dict[str, int], job_name: str, stored_model: bool, *,
                    subscribe_option: str, subscribe_pattern_option: str, assign_option: str,
                    drop_topics_option: str, reset_option: str) -> PartitionExpansionError:
    """Topics of the job model no longer read, and not named in ``dropTopics``."""
    return PartitionExpansionError(
        f"topic(s) {', '.join(f'{t!r} ({counts[t]} partitions)' for t in refused)} are in the job model of "
        f"{JOB_NAME.name}={job_name} but no longer read: deleted, or no longer matched by "
        f"'{subscribe_option}' / '{subscribe_pattern_option}' / '{assign_option}'. Fixed tasks keep every "
        "topic's tasks, so a topic leaves only when you say so: to drop it (its positions and the tasks "
        "holding only it are forgotten; every other topic keeps its tasks and positions, the checkpoint is "
        "kept) add it to "
        f"the option '{drop_topics_option}', e.g. .option('{drop_topics_option}', '{','.join(refused)}'). "
        "If it was deleted by mistake, re-create it with the same partition count (a re-created topic is "
        f"data loss: see {FAIL_ON_DATA_LOSS.name})."
        + (_regroup_hint(job_name, reset_option) if stored_model else ""), condition=TOPIC_LEFT_JOB)


def assigned_partition_missing(topic: str, partition: int, count: int, *, assign_option: str) -> ConfigError:
    """The option ``assign`` names a partition the topic does not have."""
    return ConfigError(f"option '{assign_option}' names partition {partition} of topic '{topic}', which has only "
                       f"{count} partitions (0..{count - 1})")


def stored_job_model_unreadable(err: SamzaSourceError, job_name: str, *, reset_option: str) -> SamzaSourceError:
    """The job model stored for this job cannot be read: a store that cannot be read stays a
    :class:`MetadataStoreError`, a value that cannot be parsed a user's error of its own."""
    kind = MetadataStoreError if isinstance(err, MetadataStoreError) else SamzaSourceError
    return kind(f"the job model stored for {JOB_NAME.name}={job_name} cannot be read ({err.detail}); set "
                f"{reset_option}=true to replace it with a new one", condition=STORED_JOB_MODEL_UNREADABLE)


def stored_job_model_not_restorable(err: PartitionExpansionError, job_name: str, *,
                                    reset_option: str) -> PartitionExpansionError:
    """The stored job model cannot carry on with the current partitions (``err`` says why)."""
    return PartitionExpansionError(f"{err.detail}{_regroup_hint(job_name, reset_option)}",
                                   condition=err.condition or STORED_JOB_MODEL_NOT_RESTORABLE)


# ---- the clients ----------------------------------------------------------------------------------------------
def admin_client_not_created(where: str, why: str) -> KafkaSourceError:
    return KafkaSourceError(f"cannot create a Kafka admin client {where}: {why}", condition=CLIENT_NOT_CREATED)


def consumer_not_created(bootstrap_servers: str, why: object) -> KafkaSourceError:
    return KafkaSourceError(f"cannot create a Kafka consumer (bootstrap servers {bootstrap_servers}): {why}",
                            condition=CLIENT_NOT_CREATED)


def authentication_failed(where: str, why: str, *, token_provider_option: str) -> KafkaSourceError:
    return KafkaSourceError(
        f"Kafka authentication failed {where}: {why}. Check the options kafka.security.protocol, "
        f"kafka.sasl.mechanism and the credentials (kafka.sasl.username / kafka.sasl.password, or the "
        f"token of '{token_provider_option}')", condition=AUTHENTICATION_FAILED)


# ---- TLS: causes librdkafka reports at once and retrying cannot cure (kafka/security_failures.py finds them) -------
def tls_broker_not_trusted(where: str, why: str) -> KafkaSourceError:
    """The broker's certificate failed verification: an unknown CA or a host name it does not name (librdkafka's
    message is the same for both)."""
    return KafkaSourceError(
        f"the broker's TLS certificate could not be verified {where}: {why}. Either it is not signed by the CA "
        "given in kafka.ssl.ca.location or kafka.ssl.ca.pem (give the CA that signed the brokers' certificates), or "
        "the host name in kafka.bootstrap.servers (or a broker's advertised name) is not one its certificate names "
        "(use a name it lists; kafka.ssl.endpoint.identification.algorithm=none turns the name check off)",
        condition=TLS_BROKER_NOT_TRUSTED)


def tls_client_certificate_refused(where: str, why: str) -> KafkaSourceError:
    """The broker ended the handshake with an alert about the client's certificate."""
    return KafkaSourceError(
        f"the broker refused this client's TLS certificate {where}: {why}. The certificate in "
        "kafka.ssl.certificate.location or kafka.ssl.certificate.pem has expired, is not yet valid, or is not "
        "signed by a CA the broker trusts (or the broker requires one and none is given): renew it, with its key "
        "(kafka.ssl.key.location or kafka.ssl.key.pem)", condition=TLS_CLIENT_CERTIFICATE_REFUSED)


def tls_handshake_failed(where: str, why: str) -> KafkaSourceError:
    return KafkaSourceError(
        f"the TLS handshake with the broker failed {where}: {why}. Check kafka.security.protocol (SSL or SASL_SSL "
        "for a TLS listener) and the kafka.ssl.* options", condition=TLS_HANDSHAKE_FAILED)


def tls_key_unreadable(where: str, why: str) -> KafkaSourceError:
    """librdkafka could not load the client's private key: a wrong password, or not a PEM key."""
    return KafkaSourceError(
        f"the client's TLS private key cannot be read {where}: {why}. Check kafka.ssl.key.password (the password of "
        "an encrypted key) and that kafka.ssl.key.location or kafka.ssl.key.pem is the PEM key of the certificate",
        condition=TLS_KEY_UNREADABLE)


def plaintext_on_tls_listener(where: str, protocol: str) -> KafkaSourceError:
    """Every connection was closed before the broker answered its first request, with a client not speaking TLS."""
    return KafkaSourceError(
        f"the broker closed every connection before answering {where} while kafka.security.protocol is {protocol}: "
        "the listener most likely expects TLS. Set kafka.security.protocol to SSL (or SASL_SSL with SASL) and "
        "kafka.ssl.ca.location or kafka.ssl.ca.pem", condition=PLAINTEXT_ON_TLS_LISTENER)


def operation_failed(what: str, where: str, why: str) -> KafkaSourceError:
    """A Kafka admin operation failed with an error retrying cannot help."""
    return KafkaSourceError(f"Kafka operation '{what}' failed {where}: {why}", condition=OPERATION_FAILED)


def operation_timed_out(what: str, timeout_s: float, option: str | None, where: str, last: str) -> KafkaSourceError:
    """A Kafka admin operation still failing (``last``) when its timeout (``option``) ran out."""
    named = f" (option '{option}'; raise it to ride out longer outages)" if option else ""
    return KafkaSourceError(
        f"Kafka operation '{what}' did not complete within {timeout_s:g} s{named} {where}"
        + (f": {last}" if last else "")
        + ". Is the cluster reachable from the driver?", condition=OPERATION_TIMED_OUT)


def group_has_active_members(group_id: str, where: str, *, group_id_option: str,
                             group_id_prefix_option: str) -> KafkaSourceError:
    return KafkaSourceError(
        f"consumer group '{group_id}' has active members {where}: Kafka takes offsets from outside a group "
        "only while it is empty. Another consumer uses this group id; give this query a group of its own "
        f"(option '{group_id_option}' or '{group_id_prefix_option}')", condition=GROUP_HAS_ACTIVE_MEMBERS)


def isolation_level_invalid(level: str) -> KafkaSourceError:
    return KafkaSourceError(
        f"option 'kafka.isolation.level' must be read_uncommitted or read_committed, got {level!r}",
        condition=INVALID_OPTION)


def jaas_config_invalid(expected: str) -> JaasError:
    """A ``sasl.jaas.config`` line that does not parse; ``expected`` says what was expected, never the line."""
    return JaasError(expected, condition=JAAS_CONFIG_INVALID)


# ---- the executors' reads -------------------------------------------------------------------------------------
def topic_read_not_authorized(task: str, label: str, text: str) -> KafkaSourceError:
    """The broker answered a fetch with TOPIC_AUTHORIZATION_FAILED: an ACL, which retrying cannot change."""
    return KafkaSourceError(
        f"task {task!r}: the broker does not let this query's principal read {label} ({text}): grant it READ on the "
        "topic (docs/security.md, Kafka ACLs: READ and DESCRIBE on each topic read)",
        condition=TOPIC_READ_NOT_AUTHORIZED)


def consumer_failed(task: str, text: str) -> KafkaSourceError:
    return KafkaSourceError(f"Kafka consumer failed in task {task!r}: {text}", condition=CONSUMER_FAILED)


def watermarks_unavailable(task: str, label: str, err: object) -> KafkaSourceError:
    return KafkaSourceError(f"task {task!r}: cannot read the log start/end offsets of {label} "
                            f"to check for data loss: {err}", condition=WATERMARKS_UNAVAILABLE)


def out_of_range_repeated(task: str, label: str, offset: int, low: int, high: int) -> KafkaSourceError:
    return KafkaSourceError(
        f"task {task!r}: the broker keeps answering 'offset out of range' for {label} at "
        f"offset {offset} although the log holds offsets {low}..{high - 1}", condition=OUT_OF_RANGE_REPEATED)


def poll_timed_out(task: str, timeout_s: float, pending: list[str], last_error: str | None, *,
                   poll_timeout_option: str) -> KafkaSourceError:
    """No record for the poll timeout: the error naming what was still to read (``pending``)."""
    return KafkaSourceError(
        f"task {task!r}: no Kafka record received for {timeout_s:g} s "
        f"(option '{poll_timeout_option}'); still to read: {', '.join(pending)}"
        + (f"; last consumer error: {last_error}" if last_error else "")
        + ". Is the broker reachable from the executors?", condition=POLL_TIMED_OUT)


def record_too_large(task: str, label: str, offset: int, column: str, size: int, limit: int) -> KafkaSourceError:
    """The record at ``offset`` of ``label`` does not fit in one Arrow batch: its ``column`` alone holds ``size``
    bytes, more than ``limit``."""
    return KafkaSourceError(
        f"task {task!r}: the record at offset {offset} of {label} cannot be read: it has {size} bytes in the "
        f"{column} column, more than one Arrow batch column holds ({limit} bytes, Arrow's 32-bit offsets), so no "
        f"batch can carry it. "
        f"Nothing in this source can split a record: write it smaller (or as several records), or skip it with a "
        f"startpoint at offset {offset + 1} for {label}.", condition=RECORD_TOO_LARGE)


def header_key_not_utf8(task: str, offset: int, label: str, *, read_path_option: str,
                        include_headers_option: str) -> KafkaSourceError:
    return KafkaSourceError(
        f"task {task!r}: the record at offset {offset} of {label} has a header "
        f"key that is not valid UTF-8, which the Python read path (confluent-kafka) cannot decode. To read it: "
        f"use the native read path (option '{read_path_option}' 'auto' or 'native' where it is built), which "
        f"replaces invalid bytes with U+FFFD, or leave headers out (option '{include_headers_option}' false)",
        condition=HEADER_KEY_NOT_UTF8)


def _native_how_to_fix(read_path_option: str) -> str:
    return (
        "reinstall spark-samza-source from the platform wheel for this OS and CPU (a manylinux wheel: "
        "docs/deployment.md, 'Which wheel'), not the pure py3-none-any one (or run `make setup` where a C "
        "compiler exists), and confluent-kafka from its wheel, or set the option "
        f"'{read_path_option}' to 'auto' or 'python'")


def native_reader_unavailable(why: object, *, asked: bool, read_path_option: str) -> KafkaSourceError:
    """The native reader cannot run here; ``asked``: the option ``readPath`` is ``native``."""
    opening = (f"option '{read_path_option}' is 'native' but the native Kafka reader cannot run here" if asked
               else "the native Kafka reader cannot run here")
    return KafkaSourceError(f"{opening}: {why}. To fix: {_native_how_to_fix(read_path_option)}",
                            condition=NATIVE_READER_UNAVAILABLE)


# ---- startpoints and offsets ----------------------------------------------------------------------------------
def startpoint_invalid(problem: str, ssp: SystemStreamPartition) -> StartpointFormatError:
    return StartpointFormatError(f"{problem} (for {ssp})", condition=STARTPOINT_INVALID)


def offset_invalid(problem: str) -> OffsetFormatError:
    """An offset from the checkpoint that samza-kafka cannot read (``problem``: what is wrong with it); the
    stream reader quotes it in the error naming the offset file."""
    return OffsetFormatError(problem, condition=OFFSET_INVALID)


def offset_version_unknown(version: int, known: int) -> FormatVersionError:
    return FormatVersionError(
        f"offset format version {version} is newer than this release understands "
        f"({known}); upgrade spark-samza-source on the driver", condition=OFFSET_VERSION_UNKNOWN)


# ---- options checked where they are used ------------------------------------------------------------------------
def token_provider_not_dotted(path: str, *, option: str) -> ConfigError:
    return ConfigError(f"option '{option}' must be a dotted path 'package.module.function', got {path!r}")


def token_provider_not_importable(module_name: str, err: ImportError, *, option: str) -> ConfigError:
    return ConfigError(f"option '{option}': cannot import module {module_name!r} ({err}); install it on the driver "
                       "and every executor (e.g. --py-files)")


def token_provider_not_callable(module_name: str, attr: str, *, option: str) -> ConfigError:
    return ConfigError(f"option '{option}': {module_name!r} has no callable {attr!r}; name a function taking the "
                       "sasl.oauthbearer.config string")


def msk_iam_region_missing(*, config_option: str) -> ConfigError:
    """Amazon MSK IAM signing needs an AWS region, and neither ``config_option`` nor the environment names one."""
    return ConfigError(f"Amazon MSK IAM: no AWS region; set {config_option} to 'aws_region=<region>' "
                       "(or AWS_REGION in the environment of the driver and executors)")


def bounded_read_partitions_unreported(missing: list[SystemStreamPartition]) -> ConfigError:
    """Partitions of a batch read's job model that the broker no longer reports (deleted partitions or topics)."""
    return ConfigError(f"the broker reports no offsets for {', '.join(map(str, missing[:5]))}",
                       condition=PARTITION_GONE)


def bounded_read_starts_after_ends(backwards: list[str]) -> ConfigError:
    return ConfigError("the batch read's starting options begin after its ending options in "
                       f"{'; '.join(backwards[:5])}. Give a start at or before the end for each partition")


def broadcast_partition_missing(system: str, topic: str, partition: int, count: int, *,
                                broadcast_option: str) -> ConfigError:
    return ConfigError(f"option '{broadcast_option}' names {system}.{topic}#{partition}, but topic '{topic}' has "
                       f"{count} partitions")


def starting_offsets_beyond_log_end(option: str, beyond: list[str]) -> ConfigError:
    return ConfigError(
        f"option '{option}' names offsets beyond the end of their partition's log, where "
        f"nothing can be read: {'; '.join(beyond)}. The log end is the next offset to be written; give an "
        "offset up to it, or -1 for latest, -2 for earliest")


def no_record_at_timestamp(ts: int, ssp: SystemStreamPartition, *, strategy_option: str,
                           latest: str) -> ConfigError:
    return ConfigError(
        f"no record at or after timestamp {ts} in {ssp}; the starting timestamp option cannot "
        f"be honoured. Use an earlier timestamp, or set {strategy_option}={latest} to start "
        "such partitions at the end")


def starting_partitions_not_read(option: str, problems: list[str], specified: str, assigned: str) -> ConfigError:
    """A per-partition starting option names partitions the query does not read (``specified`` / ``assigned``:
    the JSON Spark's message also shows)."""
    return ConfigError(
        f"option '{option}' names partitions this query does not read: {'; '.join(problems)}. "
        f"Specified: {specified} Assigned: {assigned}. Name only subscribed "
        "topics and existing partitions (partitions not named start at latest)")
