"""Options of the ``samza-kinesis`` source. Parsed once on the driver when the query starts.

Names follow the AWS connector where the meaning is the same (``streamName``, ``region``, ``endpointUrl``,
``startingPosition``, ``awsAccessKeyId``/``awsSecretKey``, ``roleArn``, ``failOnDataLoss``). Credentials are
kept only to build clients; ``describe()`` and every error leave them out.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError
from ..source import options as shared_options
from ..source.job_options import JobOptions
from ..source.option_names import OptionNames, check_option_names, option_constants, option_prefixes
from ..source.option_parser import Options, json_object
from ..source.options import (
    FAIL_ON_DATA_LOSS_OPTION,
    JOB_NAME_OPTION,
    MAX_RECORDS_PER_PARTITION_OPTION,
    METADATA_STORE_OPTION,
    MIN_PARTITIONS_OPTION,
    RETRY_TIMEOUT_OPTION,
)
from .positions import PositionFormatError, ShardPosition

if TYPE_CHECKING:
    from .starting import StartingPosition

# Per shard per batch, as AWS's Kinesis connector (maxFetchRecordsPerShard 100000). Rows go to Spark after every
# GetRecords page, so a task holds one page (<= 10,000 records), never a whole batch.
DEFAULT_MAX_RECORDS_PER_SHARD = 100_000
#: How long one task reads one shard per batch (option maxFetchTimePerShard); the reader's default too.
DEFAULT_MAX_FETCH_TIME_MS = 10_000

log = logging.getLogger(__name__)

SYSTEM = "kinesis"

# Option names only samza-kinesis has (the shared ones: source/options.py), the AWS connector's where they match.
STREAM_NAME_OPTION = "streamName"
REGION_OPTION = "region"
ENDPOINT_URL_OPTION = "endpointUrl"
DYNAMODB_ENDPOINT_URL_OPTION = "dynamodbEndpointUrl"
ACCESS_KEY_ID_OPTION = "awsAccessKeyId"
SECRET_KEY_OPTION = "awsSecretKey"
SESSION_TOKEN_OPTION = "sessionToken"
ROLE_ARN_OPTION = "roleArn"
ROLE_SESSION_NAME_OPTION = "roleSessionName"
TASKS_OPTION = "tasks"
ASSIGNMENT_OPTION = "assignment"
STARTING_POSITION_OPTION = "startingPosition"
MAX_RECORDS_PER_SHARD_OPTION = "maxRecordsPerShard"
MAX_FETCH_TIME_PER_SHARD_OPTION = "maxFetchTimePerShard"
KCL_LEASE_TABLE_OPTION = "kcl.leaseTable"
#: the STS endpoint used to assume ``roleArn`` (default: boto3's for the region)
STS_ENDPOINT_URL_OPTION = "stsEndpointUrl"
#: the least time between two ListShards calls of the driver's plans (default 0: every micro-batch lists)
DESCRIBE_SHARD_INTERVAL_OPTION = "describeShardInterval"
#: batch-only (``spark.read``): where a batch read stops. A streaming read refuses it.
ENDING_POSITION_OPTION = "endingPosition"
BATCH_ONLY_OPTIONS = (ENDING_POSITION_OPTION,)
#: ``startingPosition`` words (upper-cased; ``EARLIEST`` means ``TRIM_HORIZON``; anything else is per-shard JSON)
LATEST, TRIM_HORIZON, AT_TIMESTAMP, KCL = "LATEST", "TRIM_HORIZON", "AT_TIMESTAMP", "KCL"

# ---- AWS's spark-sql-kinesis-connector (format ``aws-kinesis``): its names, accepted for the same meanings -------
AWS_STREAM_NAME_OPTION = "kinesis.streamName"
AWS_REGION_OPTION = "kinesis.region"
AWS_KINESIS_REGION_OPTION = "kinesis.kinesisRegion"
AWS_ENDPOINT_URL_OPTION = "kinesis.endpointUrl"
AWS_STARTING_POSITION_OPTION = "kinesis.startingPosition"
AWS_MAX_FETCH_RECORDS_PER_SHARD_OPTION = "kinesis.maxFetchRecordsPerShard"
AWS_MAX_FETCH_TIME_PER_SHARD_SEC_OPTION = "kinesis.maxFetchTimePerShardSec"
AWS_FAIL_ON_DATA_LOSS_OPTION = "kinesis.failOnDataLoss"
AWS_STS_ROLE_ARN_OPTION = "kinesis.stsRoleArn"
AWS_STS_SESSION_NAME_OPTION = "kinesis.stsSessionName"
AWS_STS_ENDPOINT_URL_OPTION = "kinesis.stsEndpointUrl"
AWS_DESCRIBE_SHARD_INTERVAL_OPTION = "kinesis.describeShardInterval"
AWS_ACCESS_KEY_ID_OPTION = "kinesis.awsAccessKeyId"
AWS_SECRET_KEY_OPTION = "kinesis.awsSecretKey"
AWS_SESSION_TOKEN_OPTION = "kinesis.sessionToken"
#: ``GetRecords`` (what samza-kinesis does) is accepted; ``SubscribeToShard`` (enhanced fan-out) is refused
AWS_CONSUMER_TYPE_OPTION = "kinesis.consumerType"
AWS_GET_RECORDS_CONSUMER = "GetRecords"
#: the AWS connector's name -> ours; giving both (or two names of one option) is an error
AWS_CONNECTOR_ALIASES = {
    AWS_STREAM_NAME_OPTION: STREAM_NAME_OPTION,
    AWS_REGION_OPTION: REGION_OPTION,
    AWS_KINESIS_REGION_OPTION: REGION_OPTION,
    AWS_ENDPOINT_URL_OPTION: ENDPOINT_URL_OPTION,
    AWS_STARTING_POSITION_OPTION: STARTING_POSITION_OPTION,
    AWS_MAX_FETCH_RECORDS_PER_SHARD_OPTION: MAX_RECORDS_PER_SHARD_OPTION,
    AWS_MAX_FETCH_TIME_PER_SHARD_SEC_OPTION: MAX_FETCH_TIME_PER_SHARD_OPTION,
    AWS_FAIL_ON_DATA_LOSS_OPTION: FAIL_ON_DATA_LOSS_OPTION,
    AWS_STS_ROLE_ARN_OPTION: ROLE_ARN_OPTION,
    AWS_STS_SESSION_NAME_OPTION: ROLE_SESSION_NAME_OPTION,
    AWS_STS_ENDPOINT_URL_OPTION: STS_ENDPOINT_URL_OPTION,
    AWS_DESCRIBE_SHARD_INTERVAL_OPTION: DESCRIBE_SHARD_INTERVAL_OPTION,
    AWS_ACCESS_KEY_ID_OPTION: ACCESS_KEY_ID_OPTION,
    AWS_SECRET_KEY_OPTION: SECRET_KEY_OPTION,
    AWS_SESSION_TOKEN_OPTION: SESSION_TOKEN_OPTION,
}

# Options Spark's or AWS's sources have that samza-kinesis deliberately does not: refused with the reason.
AWS_CONSUMER_NAME_OPTION = "kinesis.consumerName"
AWS_METADATA_COMMITTER_TYPE_OPTION = "kinesis.metadataCommitterType"
AWS_METADATA_PATH_OPTION = "kinesis.metadataPath"
AWS_DYNAMODB_TABLE_NAME_OPTION = "kinesis.dynamodb.tableName"
AWS_MIN_BATCHES_TO_RETAIN_OPTION = "kinesis.minBatchesToRetain"
AWS_CHECK_NEW_RECORD_THREADS_OPTION = "kinesis.checkNewRecordThreads"
AWS_CREDENTIAL_PROVIDER_CLASS_OPTION = "kinesis.credentialProviderClass"
AWS_CREDENTIAL_PROVIDER_PARAM_OPTION = "kinesis.credentialProviderParam"
AWS_SUBSCRIBE_TO_SHARD_TIMEOUT_OPTION = "kinesis.subscribeToShard.timeoutSec"
AWS_SUBSCRIBE_TO_SHARD_RETRIES_OPTION = "kinesis.subscribeToShard.maxRetries"
AWS_RECORDS_PER_FETCH_OPTION = "kinesis.getRecords.numberOfRecordsPerFetch"
AWS_FETCH_INTERVAL_OPTION = "kinesis.getRecords.fetchIntervalMs"
AWS_RETRY_OPTIONS = tuple(f"kinesis.{kind}{what}" for kind in ("metadata", "client")
                          for what in ("NumRetries", "RetryIntervalsMs", "MaxRetryIntervalMs"))
AWS_INTERNAL_OPTIONS = tuple(f"kinesis.internal.{what}" for what in (
    "avoidEmptyBatches", "dataQueueCapacity", "maxDataQueueEmptyCount", "dataQueueWaitTimeoutSec",
    "maintenanceTaskIntervalSec"))
AWS_PROXY_OPTIONS = ("proxyAddress", "proxyPort", "proxyUsername", "proxyPassword")
_NO_EFO = ("enhanced fan-out (SubscribeToShard) is not supported yet: samza-kinesis reads with GetRecords, whose "
           "throughput every consumer of a shard shares")
_EFO = f"{_NO_EFO}; remove the option"
_ONE_TASK = (f"a Spark input partition is one Samza task, which reads its shards in order, so a shard is never "
             f"split across Spark tasks; for more parallelism set '{TASKS_OPTION}' (up to one task per shard), add "
             "shards, or repartition() the DataFrame after load(); remove the option")
_OWN_METADATA = (f"samza-kinesis keeps its batch ends, startpoints and checkpoint mirror in '{METADATA_STORE_OPTION}' "
                 f"(e.g. dynamodb://table?region=...), and can mirror checkpoints to a KCL lease table with "
                 f"'{KCL_LEASE_TABLE_OPTION}'; use those instead")
_RETRIES = (f"calls to AWS are retried with backoff for a time rather than a count; set '{RETRY_TIMEOUT_OPTION}' "
            "(default 60s) instead")
REFUSED_OPTIONS = {
    MIN_PARTITIONS_OPTION: _ONE_TASK,
    MAX_RECORDS_PER_PARTITION_OPTION: _ONE_TASK,
    AWS_CONSUMER_NAME_OPTION: _EFO,
    AWS_SUBSCRIBE_TO_SHARD_TIMEOUT_OPTION: _EFO,
    AWS_SUBSCRIBE_TO_SHARD_RETRIES_OPTION: _EFO,
    AWS_METADATA_COMMITTER_TYPE_OPTION: _OWN_METADATA,
    AWS_METADATA_PATH_OPTION: _OWN_METADATA,
    AWS_DYNAMODB_TABLE_NAME_OPTION: _OWN_METADATA,
    AWS_MIN_BATCHES_TO_RETAIN_OPTION: "the source's metadata is cleaned up as batches commit (Spark's own "
    "spark.sql.streaming.minBatchesToRetain governs the checkpoint); remove the option",
    AWS_CHECK_NEW_RECORD_THREADS_OPTION: "the driver does not probe shards for new records; each micro-batch reads "
    f"to what is there, bounded by '{MAX_RECORDS_PER_SHARD_OPTION}' and '{MAX_FETCH_TIME_PER_SHARD_OPTION}'; remove "
    "the option",
    AWS_CREDENTIAL_PROVIDER_CLASS_OPTION: "Java credential providers do not exist in Python: use "
    f"'{ACCESS_KEY_ID_OPTION}'/'{SECRET_KEY_OPTION}', '{ROLE_ARN_OPTION}', or boto3's default chain (environment, "
    "profile, instance or pod role)",
    AWS_CREDENTIAL_PROVIDER_PARAM_OPTION: "Java credential providers do not exist in Python: use "
    f"'{ACCESS_KEY_ID_OPTION}'/'{SECRET_KEY_OPTION}', '{ROLE_ARN_OPTION}', or boto3's default chain",
    AWS_RECORDS_PER_FETCH_OPTION: "GetRecords pages are fetched at their maximum size (10,000 records) back to "
    f"back; bound a batch with '{MAX_RECORDS_PER_SHARD_OPTION}' / '{MAX_FETCH_TIME_PER_SHARD_OPTION}' instead",
    AWS_FETCH_INTERVAL_OPTION: "GetRecords pages are fetched back to back, backing off only when Kinesis throttles; "
    f"bound a batch with '{MAX_RECORDS_PER_SHARD_OPTION}' / '{MAX_FETCH_TIME_PER_SHARD_OPTION}' instead",
    **{name: _RETRIES for name in AWS_RETRY_OPTIONS},
    **{name: "internal settings of the AWS connector's record queue, which samza-kinesis does not have; remove the "
       "option" for name in AWS_INTERNAL_OPTIONS},
    **{name: "boto3 uses the HTTPS_PROXY / HTTP_PROXY environment variables: set them for the driver and the "
       "executors (e.g. spark.executorEnv.HTTPS_PROXY) and remove the option" for name in AWS_PROXY_OPTIONS},
}


def option_names() -> OptionNames:
    """The names samza-kinesis knows: every ``*_OPTION`` of this module and ``source/options.py`` (collected when
    asked, so a name added there is known), the AWS connector's aliases, the ``testing.`` namespace, and the
    refused names."""
    import sys

    module = sys.modules[__name__]
    return OptionNames(source="samza-kinesis", known=option_constants(shared_options, module),
                       prefixes=option_prefixes(shared_options, module), refused=REFUSED_OPTIONS)


def resolve_aliases(raw: Any) -> dict[str, str]:
    """The options with each AWS connector name replaced by ours (``kinesis.streamName`` -> ``streamName``).

    An option given under two names (ours and the AWS connector's, or ``kinesis.region`` and
    ``kinesis.kinesisRegion``) is an error naming both: which one was meant cannot be told. The AWS connector's
    ``kinesis.maxFetchTimePerShardSec`` counts seconds; ``kinesis.consumerType`` may only be ``GetRecords``."""
    given = {str(k).lower(): ("" if v is None else str(v)) for k, v in dict(raw).items()}
    out = dict(given)
    consumer_type = out.pop(AWS_CONSUMER_TYPE_OPTION.lower(), None)
    if consumer_type is not None and consumer_type.strip().lower() != AWS_GET_RECORDS_CONSUMER.lower():
        raise ConfigError(f"option '{AWS_CONSUMER_TYPE_OPTION}' {consumer_type!r} is not supported: {_NO_EFO}; "
                          f"set it to '{AWS_GET_RECORDS_CONSUMER}' or remove it")
    spelled = {}
    for alias, ours in AWS_CONNECTOR_ALIASES.items():
        if alias.lower() not in out:
            continue
        value = out.pop(alias.lower())
        target = ours.lower()
        if target in out:
            other = spelled.get(target, ours)
            raise ConfigError(f"options '{alias}' and '{other}' both set '{ours}' (the AWS connector's name and "
                              "ours, or two of the AWS connector's names); give only one of them")
        if alias == AWS_MAX_FETCH_TIME_PER_SHARD_SEC_OPTION:
            if not value.strip().isdigit() or int(value) < 1:
                raise ConfigError(f"option '{alias}' must be a whole number of seconds (>= 1), got {value!r}; or "
                                  f"use '{MAX_FETCH_TIME_PER_SHARD_OPTION}' with a duration such as '10s'")
            value = f"{int(value)}s"
        out[target] = value
        spelled[target] = alias
    return out


_STREAM_RE = re.compile(r"^[a-zA-Z0-9_.-]{1,128}$")


@dataclass(frozen=True, repr=False)
class KinesisSourceOptions(JobOptions):
    stream: str
    region: str | None
    endpoint_url: str | None
    dynamodb_endpoint_url: str | None
    access_key_id: str | None
    secret_key: str | None
    session_token: str | None
    role_arn: str | None
    role_session_name: str
    sts_endpoint_url: str | None
    tasks: int | None
    assignment: str
    starting: StartingPosition  # where a query without a checkpoint starts (starting.py); Startpoints override it
    max_records_per_shard: int
    max_fetch_time_ms: int
    describe_shard_interval_ms: int
    kcl_lease_table: str | None

    def __repr__(self) -> str:  # never show credentials, even in a debugger or a pickled-object dump
        return f"KinesisSourceOptions({self.describe()})"

    def describe(self) -> str:
        from ..metadata import redact_uri

        where = self.endpoint_url or self.region or "default region"
        return (f"samza-kinesis {JOB_NAME_OPTION}={self.job_name} stream={self.stream} ({where}) "
                f"tasks={self.tasks or 'auto'} assignment={self.assignment} store={redact_uri(self.metadata_store)}")

    def client_settings(self) -> dict[str, Any]:
        """Everything needed to build boto3 clients (on the driver and on executors)."""
        return {
            "region": self.region,
            "endpoint_url": self.endpoint_url,
            "dynamodb_endpoint_url": self.dynamodb_endpoint_url,
            "access_key_id": self.access_key_id,
            "secret_key": self.secret_key,
            "session_token": self.session_token,
            "role_arn": self.role_arn,
            "role_session_name": self.role_session_name,
            "sts_endpoint_url": self.sts_endpoint_url,
            "retry_timeout_s": self.retry_timeout_ms / 1000.0,
        }

    @classmethod
    def parse(cls, raw: Any) -> KinesisSourceOptions:
        check_option_names(dict(raw), option_names())
        opts = Options(resolve_aliases(raw))
        stream = opts.string(STREAM_NAME_OPTION, required=True, hint="the Kinesis data stream to read, e.g. "
                             f".option('{STREAM_NAME_OPTION}', 'clicks') (or the AWS connector's "
                             f"'{AWS_STREAM_NAME_OPTION}')")
        if not _STREAM_RE.match(stream):
            raise ConfigError(f"option 'streamName' {stream!r} is not a valid Kinesis stream name "
                              "(1-128 characters from letters, digits, '_', '.', '-')")
        endpoint = opts.string(ENDPOINT_URL_OPTION)
        if endpoint is not None and not re.match(r"^https?://", endpoint):
            raise ConfigError(f"option 'endpointUrl' must start with http:// or https://, got {endpoint!r}")
        access_key = opts.string(ACCESS_KEY_ID_OPTION)
        secret = opts.string(SECRET_KEY_OPTION)
        if (access_key is None) != (secret is None):
            raise ConfigError("options 'awsAccessKeyId' and 'awsSecretKey' go together: set both or neither "
                              "(neither uses boto3's default credential chain)")
        common = JobOptions.parse_common(opts, job_name_example="clicks-etl",
                                         store_holds="startpoints, batch ends and checkpoint mirror")
        return cls(
            **common,
            stream=stream,
            region=opts.string(REGION_OPTION),
            endpoint_url=endpoint,
            dynamodb_endpoint_url=opts.string(DYNAMODB_ENDPOINT_URL_OPTION, endpoint),
            access_key_id=access_key,
            secret_key=secret,
            session_token=opts.string(SESSION_TOKEN_OPTION),
            role_arn=opts.string(ROLE_ARN_OPTION),
            role_session_name=opts.string(ROLE_SESSION_NAME_OPTION, f"samza-{common['job_name']}")[:64],
            sts_endpoint_url=opts.string(STS_ENDPOINT_URL_OPTION),
            tasks=opts.integer(TASKS_OPTION, None, minimum=1),
            assignment=opts.choice(ASSIGNMENT_OPTION, "lineage", ("lineage", "balanced")),
            starting=_parse_starting(opts.string(STARTING_POSITION_OPTION)),
            max_records_per_shard=opts.integer(MAX_RECORDS_PER_SHARD_OPTION, DEFAULT_MAX_RECORDS_PER_SHARD, minimum=1),
            max_fetch_time_ms=opts.duration_ms(MAX_FETCH_TIME_PER_SHARD_OPTION, DEFAULT_MAX_FETCH_TIME_MS,
                                               minimum_ms=100),
            kcl_lease_table=opts.string(KCL_LEASE_TABLE_OPTION),
            describe_shard_interval_ms=opts.duration_ms(DESCRIBE_SHARD_INTERVAL_OPTION, 0),
        )


def _parse_starting(value: str | None) -> StartingPosition:
    # starting.py names this option in its messages: imported here, so neither module imports the other on load
    from .starting import DEFAULT_STARTING_POSITION, AtTimestamp, KclCheckpoints, Latest, PerShard, TrimHorizon

    if value is None:
        return DEFAULT_STARTING_POSITION
    text = value.strip()
    upper = text.upper()
    if upper == LATEST:
        return Latest()
    if upper in (TRIM_HORIZON, "EARLIEST"):
        return TrimHorizon()
    if upper == KCL:
        return KclCheckpoints()
    if upper.startswith(AT_TIMESTAMP):
        return AtTimestamp(at_timestamp_ms(STARTING_POSITION_OPTION, value))
    if text.startswith("{"):
        try:
            parsed = json_object(text)
            per_shard = {}
            for shard, pos in parsed.items():
                if isinstance(pos, str):
                    pos = {"type": pos.upper()}
                per_shard[str(shard)] = ShardPosition.from_json(pos)
        except (ValueError, PositionFormatError, RecursionError) as err:
            raise ConfigError(
                f"option 'startingPosition' per-shard JSON is invalid ({err}); expected e.g. "
                '{"shardId-000000000000": "TRIM_HORIZON", "shardId-000000000001": '
                '{"type": "AFTER_SEQUENCE_NUMBER", "sequence": "4960...", "sub": -1}}'
            ) from None
        return PerShard(per_shard)
    raise ConfigError(
        f"option 'startingPosition' must be LATEST, TRIM_HORIZON, AT_TIMESTAMP:<ISO-8601>, kcl, or per-shard JSON; "
        f"got {value!r}"
    )


def at_timestamp_ms(option: str, value: str) -> int:
    """The epoch milliseconds of an ``AT_TIMESTAMP:<ISO-8601 with a zone>`` position given as option ``option``
    (``startingPosition``, ``endingPosition``); a ConfigError naming the option and an example otherwise."""
    stamp = value.strip()[len(AT_TIMESTAMP):].lstrip(":= ").strip()
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        if when.tzinfo is None:
            raise ValueError("no time zone")
    except ValueError:
        raise ConfigError(f"option '{option}' {value!r}: AT_TIMESTAMP needs an ISO-8601 time with a zone, e.g. "
                          "AT_TIMESTAMP:2026-11-22T08:00:00Z") from None
    return int(when.timestamp() * 1000)
