"""Every option of the ``samza-kinesis`` source, in one place: what it is called (and the AWS connector's names it
is also accepted under), what it takes, its default and what it means (the entries and :data:`KINESIS`), how the
values become the source's types (:class:`KinesisSourceOptions`), and what only a batch read takes
(:class:`KinesisBoundedOptions`).

To add an option: declare it here (name, kind, description, default; the AWS connector's name as an alias if it has
one), add it to :data:`KINESIS`, read it into :class:`KinesisSourceOptions` with ``ENTRY.read(opts)``, then
regenerate ``docs/options.md`` (``make options-doc``).

Parsed once on the driver when the query starts. Credentials are kept only to build clients; ``describe()`` and
every error leave them out.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..core.errors import ConfigError
from ..metadata import redact_uri
from ..options.common import (
    FAIL_ON_DATA_LOSS,
    JOB_NAME,
    JOB_OPTIONS,
    MAX_RECORDS_PER_PARTITION_OPTION,
    METADATA_STORE,
    MIN_PARTITIONS_OPTION,
    RETRY_TIMEOUT,
    TESTING,
)
from ..options.option import Count, Duration, OneOf, Option, OptionNames, OptionSpec, Text, format_duration
from ..options.values import Options, json_object
from ..source.job_options import JobOptions
from .errors import PositionFormatError
from .positions import ShardPosition
from .starting import AtTimestamp, KclCheckpoints, PerShard, StartingPosition, TrimHorizon
from .starting import Latest as LatestPosition

__all__ = ["BOUNDED_ONLY_OPTIONS", "DEFAULT_MAX_FETCH_TIME_MS", "DEFAULT_MAX_RECORDS_PER_SHARD",
           "DEFAULT_STARTING_POSITION", "KINESIS", "KinesisBoundedOptions", "KinesisEnding", "KinesisSourceOptions",
           "at_timestamp_ms", "option_names", "resolve_aliases"]

log = logging.getLogger(__name__)

SOURCE = "samza-kinesis"

#: ``startingPosition`` / ``endingPosition`` words (upper-cased; ``EARLIEST`` means ``TRIM_HORIZON``; anything else
#: is per-shard JSON)
LATEST, TRIM_HORIZON, AT_TIMESTAMP, KCL = "LATEST", "TRIM_HORIZON", "AT_TIMESTAMP", "KCL"
#: ``assignment``: a new shard joins its parent's task, or the least-loaded one (KCL style)
LINEAGE, BALANCED = "lineage", "balanced"
#: ``consumerType``: ``GetRecords`` polling, or enhanced fan-out through a registered stream consumer
GET_RECORDS_CONSUMER, SUBSCRIBE_TO_SHARD_CONSUMER = "GetRecords", "SubscribeToShard"

# ---- what is read, and how clients reach it -----------------------------------------------------------------------
STREAM_NAME = Option(
    "streamName", Text("stream name"),
    "the Kinesis data stream to read",
    default_doc="required", aliases=("kinesis.streamName",))
REGION = Option(
    "region", Text("AWS region"),
    "the stream's region",
    default_doc="boto3's default", aliases=("kinesis.region", "kinesis.kinesisRegion"))
ENDPOINT_URL = Option(
    "endpointUrl", Text("http(s) URL"),
    "the Kinesis endpoint (a VPC endpoint, an emulator)",
    default_doc="boto3's", aliases=("kinesis.endpointUrl",))
DYNAMODB_ENDPOINT_URL = Option(
    "dynamodbEndpointUrl", Text("http(s) URL"),
    "the DynamoDB endpoint of the `kcl.leaseTable` mirror",
    default_doc="`endpointUrl`'s value")
ACCESS_KEY_ID = Option(
    "awsAccessKeyId", Text("access key id"),
    "static credentials, with `awsSecretKey` (and `sessionToken`)",
    default_doc="boto3's default chain", aliases=("kinesis.awsAccessKeyId",))
SECRET_KEY = Option(
    "awsSecretKey", Text("secret key"),
    "the secret of `awsAccessKeyId`",
    default_doc="boto3's default chain", aliases=("kinesis.awsSecretKey",))
SESSION_TOKEN = Option(
    "sessionToken", Text("session token"),
    "the session token of temporary credentials",
    aliases=("kinesis.sessionToken",))
ROLE_ARN = Option(
    "roleArn", Text("IAM role ARN"),
    "a role assumed (through STS) for every call",
    aliases=("kinesis.stsRoleArn",))
ROLE_SESSION_NAME = Option(
    "roleSessionName", Text("session name (at most 64 characters kept)"),
    "the session name `roleArn` is assumed with",
    default_doc="`samza-<job.name>`", aliases=("kinesis.stsSessionName",))
STS_ENDPOINT_URL = Option(
    "stsEndpointUrl", Text("http(s) URL"),
    "the STS endpoint `roleArn` is assumed through",
    default_doc="boto3's for the region", aliases=("kinesis.stsEndpointUrl",))
CONSUMER_TYPE = Option(
    "consumerType", OneOf((GET_RECORDS_CONSUMER, SUBSCRIBE_TO_SHARD_CONSUMER)),
    "how tasks read shards: `GetRecords` polling (shares each shard's 5 reads/s and 2 MB/s with every other reader) "
    "or enhanced fan-out, `SubscribeToShard` (a registered consumer with its own 2 MB/s per shard; needs "
    "`consumerName`). Positions, tasks and guarantees are the same; a checkpoint may switch between them",
    default=GET_RECORDS_CONSUMER, aliases=("kinesis.consumerType",))
CONSUMER_NAME = Option(
    "consumerName", Text("stream consumer name (1-128 of letters, digits, `_`, `.`, `-`)"),
    "the stream consumer enhanced fan-out reads through: registered when absent, reused when present, never "
    "deregistered by the source (`samza-source consumers` lists and deregisters them)",
    default_doc="required with `SubscribeToShard`", aliases=("kinesis.consumerName",))

# ---- tasks ---------------------------------------------------------------------------------------------------------
TASKS = Option(
    "tasks", Count(minimum=1),
    "Spark input partitions (Samza tasks); at most one per shard is useful",
    default_doc="open shards at the first job model")
#: Spark's name (samza-kafka has it too): a task's shards spread over several Spark input partitions, never a shard
#: cut (core/split.py); a parent and its child are never readable in one batch (lineage), so any split keeps order
MIN_PARTITIONS = Option(
    MIN_PARTITIONS_OPTION, Count(minimum=1),
    "a micro-batch (or a batch read) is read by at least this many Spark partitions where it holds enough readable "
    "shards: a task's shards are spread over several Spark partitions (the `task` column stays the task), one shard "
    "never cut; a batch read keeps a shard with its parents and children, parents read first",
    default_doc="one Spark partition per task")
ASSIGNMENT = Option(
    "assignment", OneOf((LINEAGE, BALANCED)),
    "`lineage`: a child shard joins its parent's task (keys keep their task); `balanced`: the least-loaded task",
    default=LINEAGE)

# ---- where a query starts, and how much a micro-batch reads ------------------------------------------------------
STARTING_POSITION = Option(
    "startingPosition", Text("`LATEST`, `TRIM_HORIZON`, `AT_TIMESTAMP:<ISO-8601>`, `kcl` or per-shard JSON"),
    "where a new checkpoint starts (`kcl`: after a KCL lease table's checkpoints); Startpoints re-position later. "
    "Per-shard JSON: every shard named must exist and its sequence numbers belong to it; shards not named start at "
    "`LATEST`, except descendants of a named shard, which start at `TRIM_HORIZON`",
    default=LATEST, default_doc="`LATEST` (batch: `TRIM_HORIZON`)", aliases=("kinesis.startingPosition",))
#: AWS's Kinesis connector's maxFetchRecordsPerShard default. Rows go to Spark after every GetRecords page, so a
#: task holds one page (<= 10,000 records), never a whole batch.
MAX_RECORDS_PER_SHARD = Option(
    "maxRecordsPerShard", Count(minimum=1),
    "records per shard per micro-batch",
    default=100_000, aliases=("kinesis.maxFetchRecordsPerShard",))
#: the AWS connector's ``kinesis.maxFetchTimePerShardSec`` counts seconds: ``kinesis/options.py`` converts it
AWS_MAX_FETCH_TIME_PER_SHARD_SEC_OPTION = "kinesis.maxFetchTimePerShardSec"
MAX_FETCH_TIME_PER_SHARD = Option(
    "maxFetchTimePerShard", Duration(minimum_ms=100),
    "how long one task reads one shard per micro-batch (the AWS connector's name counts whole seconds)",
    default=10_000, aliases=(AWS_MAX_FETCH_TIME_PER_SHARD_SEC_OPTION,))
DESCRIBE_SHARD_INTERVAL = Option(
    "describeShardInterval", Duration(),
    "the least time between two ListShards calls of the driver (`0`: every micro-batch lists)",
    default=0, aliases=("kinesis.describeShardInterval",))
KCL_LEASE_TABLE = Option(
    "kcl.leaseTable", Text("DynamoDB table"),
    "mirror committed checkpoints into a KCL-compatible DynamoDB lease table (`leaseKey`, `checkpoint`/"
    "`SHARD_END`, `checkpointSubSequenceNumber`, `leaseCounter`, `leaseOwner`, `parentShardId`)",
    default_doc="off")

# ---- batch reads (spark.read) --------------------------------------------------------------------------------------
ENDING_POSITION = Option(
    "endingPosition", Text("`LATEST`, `AT_TIMESTAMP:<ISO-8601>` or per-shard JSON"),
    "where a batch read ends (`LATEST`: fixed to the time the read is planned)",
    default=LATEST, bounded_only=True)

# ---- refused: what Spark's or the AWS connector's sources have and this one deliberately does not ------------------
_ONE_TASK = ("a shard's records of a batch are read by one Spark task in order, so a shard is never split across "
             f"Spark tasks; for more parallelism set '{MIN_PARTITIONS.name}' (a task's shards spread over several "
             f"Spark partitions), '{TASKS.name}' on a new job (up to one task per shard), or repartition() the "
             "DataFrame after load(); remove the option")
_OWN_METADATA = (f"samza-kinesis keeps its batch ends, startpoints and checkpoint mirror in '{METADATA_STORE.name}' "
                 f"(e.g. dynamodb://table?region=...), and can mirror checkpoints to a KCL lease table with "
                 f"'{KCL_LEASE_TABLE.name}'; use those instead")
_RETRIES = (f"calls to AWS are retried with backoff for a time rather than a count; set '{RETRY_TIMEOUT.name}' "
            f"(default {format_duration(RETRY_TIMEOUT.default)}) instead")
_BOUND = f"bound a batch with '{MAX_RECORDS_PER_SHARD.name}' / '{MAX_FETCH_TIME_PER_SHARD.name}' instead"
_JAVA_CREDENTIALS = (f"Java credential providers do not exist in Python: use '{ACCESS_KEY_ID.name}'/"
                     f"'{SECRET_KEY.name}', '{ROLE_ARN.name}', or boto3's default chain")
_KAFKA_ONLY = (f"samza-kinesis maps shards to tasks itself, keeping a child shard in its parent's task; set "
               f"'{TASKS.name}' and '{ASSIGNMENT.name}' instead; remove the option")
AWS_RETRY_OPTIONS = tuple(f"kinesis.{kind}{what}" for kind in ("metadata", "client")
                          for what in ("NumRetries", "RetryIntervalsMs", "MaxRetryIntervalMs"))
AWS_INTERNAL_OPTIONS = tuple(f"kinesis.internal.{what}" for what in (
    "avoidEmptyBatches", "dataQueueCapacity", "maxDataQueueEmptyCount", "dataQueueWaitTimeoutSec",
    "maintenanceTaskIntervalSec"))
AWS_PROXY_OPTIONS = ("proxyAddress", "proxyPort", "proxyUsername", "proxyPassword")
#: the job-model options of the Kafka source (``common.GROUPING_OPTIONS``)
KAFKA_GROUPING_OPTIONS = ("grouper", "expansion.algorithm", "task.broadcast.inputs", "copartition")
REFUSED = {
    MAX_RECORDS_PER_PARTITION_OPTION: _ONE_TASK,
    "kinesis.subscribeToShard.timeoutSec": "a subscription is read for at most the batch's "
    f"'{MAX_FETCH_TIME_PER_SHARD.name}' and renewed within it when it ends; remove the option",
    "kinesis.subscribeToShard.maxRetries": _RETRIES,
    "kinesis.metadataCommitterType": _OWN_METADATA,
    "kinesis.metadataPath": _OWN_METADATA,
    "kinesis.dynamodb.tableName": _OWN_METADATA,
    "kinesis.minBatchesToRetain": "the source's metadata is cleaned up as batches commit (Spark's own "
    "spark.sql.streaming.minBatchesToRetain governs the checkpoint); remove the option",
    "kinesis.checkNewRecordThreads": "the driver does not probe shards for new records; each micro-batch reads "
    f"to what is there, bounded by '{MAX_RECORDS_PER_SHARD.name}' and '{MAX_FETCH_TIME_PER_SHARD.name}'; remove "
    "the option",
    "kinesis.credentialProviderClass": f"{_JAVA_CREDENTIALS} (environment, profile, instance or pod role)",
    "kinesis.credentialProviderParam": _JAVA_CREDENTIALS,
    "kinesis.getRecords.numberOfRecordsPerFetch": "GetRecords pages are fetched at their maximum size (10,000 "
    f"records) back to back; {_BOUND}",
    "kinesis.getRecords.fetchIntervalMs": "GetRecords pages are fetched back to back, backing off only when Kinesis "
    f"throttles; {_BOUND}",
    **{name: _RETRIES for name in AWS_RETRY_OPTIONS},
    **{name: "internal settings of the AWS connector's record queue, which samza-kinesis does not have; remove the "
       "option" for name in AWS_INTERNAL_OPTIONS},
    **{name: "boto3 uses the HTTPS_PROXY / HTTP_PROXY environment variables: set them for the driver and the "
       "executors (e.g. spark.executorEnv.HTTPS_PROXY) and remove the option" for name in AWS_PROXY_OPTIONS},
    **{name: _KAFKA_ONLY for name in KAFKA_GROUPING_OPTIONS},
}

KINESIS = OptionSpec(
    source=SOURCE,
    options=(
        STREAM_NAME, REGION, ENDPOINT_URL, DYNAMODB_ENDPOINT_URL, ACCESS_KEY_ID, SECRET_KEY, SESSION_TOKEN,
        ROLE_ARN, ROLE_SESSION_NAME, STS_ENDPOINT_URL, CONSUMER_TYPE, CONSUMER_NAME,
        *(FAIL_ON_DATA_LOSS.with_aliases("kinesis.failOnDataLoss") if o is FAIL_ON_DATA_LOSS else o
          for o in JOB_OPTIONS),
        TASKS, ASSIGNMENT, MIN_PARTITIONS, STARTING_POSITION, MAX_RECORDS_PER_SHARD, MAX_FETCH_TIME_PER_SHARD,
        DESCRIBE_SHARD_INTERVAL, KCL_LEASE_TABLE, ENDING_POSITION,
    ),
    namespaces=(TESTING,),
    refused=REFUSED,
)

# the names, for messages (f"option '{STARTING_POSITION.name}' ...")
AWS_STREAM_NAME_OPTION = STREAM_NAME.aliases[0]
BOUNDED_ONLY_OPTIONS = KINESIS.bounded_only()
#: the AWS connector's name -> ours; giving both (or two names of one option) is an error
AWS_CONNECTOR_ALIASES = KINESIS.aliases()

#: the defaults code uses without parsing options: the executors' shard reader called without options (its tests,
#: the benchmarks), and where a query starts when ``startingPosition`` is not set
DEFAULT_MAX_RECORDS_PER_SHARD: int = MAX_RECORDS_PER_SHARD.default
DEFAULT_MAX_FETCH_TIME_MS: int = MAX_FETCH_TIME_PER_SHARD.default
DEFAULT_STARTING_POSITION: StartingPosition = LatestPosition() if STARTING_POSITION.default == LATEST else TrimHorizon()


# ---- the options, read -----------------------------------------------------------------------------------------------
#: the system name of samza-kinesis SSPs
SYSTEM = "kinesis"


def option_names() -> OptionNames:
    """The names samza-kinesis knows (the AWS connector's aliases included), its namespaces and its refused names,
    from its spec (read when asked, so an entry added to the spec is known without further change)."""
    return KINESIS.names()


def resolve_aliases(raw: Any) -> dict[str, str]:
    """The options with each AWS connector name replaced by ours (``kinesis.streamName`` -> ``streamName``).

    An option given under two names (ours and the AWS connector's, or ``kinesis.region`` and
    ``kinesis.kinesisRegion``) is an error naming both: which one was meant cannot be told. The AWS connector's
    ``kinesis.maxFetchTimePerShardSec`` counts seconds."""
    given = {str(k).lower(): ("" if v is None else str(v)) for k, v in dict(raw).items()}
    out = dict(given)
    spelled: dict[str, str] = {}
    for alias, ours in KINESIS.aliases().items():
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
                                  f"use '{MAX_FETCH_TIME_PER_SHARD.name}' with a duration such as '10s'")
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
    min_partitions: int | None  # minPartitions: a task's shards spread over Spark partitions (core/split.py)
    starting: StartingPosition  # where a query without a checkpoint starts (starting.py); Startpoints override it
    max_records_per_shard: int
    max_fetch_time_ms: int
    describe_shard_interval_ms: int
    kcl_lease_table: str | None
    consumer_name: str | None = None  # enhanced fan-out (consumerType=SubscribeToShard) through this consumer

    @property
    def fan_out(self) -> bool:
        return self.consumer_name is not None

    def __repr__(self) -> str:  # never show credentials, even in a debugger or a pickled-object dump
        return f"KinesisSourceOptions({self.describe()})"

    def describe(self) -> str:
        where = self.endpoint_url or self.region or "default region"
        return (f"samza-kinesis {JOB_NAME.name}={self.job_name} stream={self.stream} ({where}) "
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
        KINESIS.check_names(dict(raw))
        opts = Options(resolve_aliases(raw))
        stream = opts.string(STREAM_NAME.name, required=True, hint="the Kinesis data stream to read, e.g. "
                             f".option('{STREAM_NAME.name}', 'clicks') (or the AWS connector's "
                             f"'{AWS_STREAM_NAME_OPTION}')")
        assert stream is not None  # required: absent, it raised
        if not _STREAM_RE.match(stream):
            raise ConfigError(f"option '{STREAM_NAME.name}' {stream!r} is not a valid Kinesis stream name "
                              "(1-128 characters from letters, digits, '_', '.', '-')")
        endpoint = ENDPOINT_URL.read(opts)
        if endpoint is not None and not re.match(r"^https?://", endpoint):
            raise ConfigError(f"option '{ENDPOINT_URL.name}' must start with http:// or https://, got {endpoint!r}")
        access_key = ACCESS_KEY_ID.read(opts)
        secret = SECRET_KEY.read(opts)
        if (access_key is None) != (secret is None):
            raise ConfigError(f"options '{ACCESS_KEY_ID.name}' and '{SECRET_KEY.name}' go together: set both "
                              "or neither (neither uses boto3's default credential chain)")
        common = JobOptions.parse_common(opts, job_name_example="clicks-etl",
                                         store_holds="startpoints, batch ends and checkpoint mirror")
        return cls(
            **common,
            stream=stream,
            region=REGION.read(opts),
            endpoint_url=endpoint,
            dynamodb_endpoint_url=opts.string(DYNAMODB_ENDPOINT_URL.name, endpoint),
            access_key_id=access_key,
            secret_key=secret,
            session_token=SESSION_TOKEN.read(opts),
            role_arn=ROLE_ARN.read(opts),
            role_session_name=(opts.string(ROLE_SESSION_NAME.name) or f"samza-{common['job_name']}")[:64],
            sts_endpoint_url=STS_ENDPOINT_URL.read(opts),
            tasks=TASKS.read(opts),
            min_partitions=MIN_PARTITIONS.read(opts),
            assignment=ASSIGNMENT.read(opts),
            starting=_parse_starting(STARTING_POSITION.read(opts)),
            max_records_per_shard=MAX_RECORDS_PER_SHARD.read(opts),
            max_fetch_time_ms=MAX_FETCH_TIME_PER_SHARD.read(opts),
            kcl_lease_table=KCL_LEASE_TABLE.read(opts),
            describe_shard_interval_ms=DESCRIBE_SHARD_INTERVAL.read(opts),
            consumer_name=_parse_consumer(opts),
        )


_CONSUMER_RE = re.compile(r"^[a-zA-Z0-9_.-]{1,128}$")


def _parse_consumer(opts: Options) -> str | None:
    """The stream consumer to read through with enhanced fan-out; None for ``GetRecords`` polling."""
    name = CONSUMER_NAME.read(opts)
    if CONSUMER_TYPE.read(opts) != SUBSCRIBE_TO_SHARD_CONSUMER:
        if name is not None:
            raise ConfigError(f"option '{CONSUMER_NAME.name}' is set but '{CONSUMER_TYPE.name}' is "
                              f"{GET_RECORDS_CONSUMER!r} (polling, which uses no consumer): set "
                              f"'{CONSUMER_TYPE.name}' to '{SUBSCRIBE_TO_SHARD_CONSUMER}' or remove it")
        return None
    if name is None:
        raise ConfigError(f"option '{CONSUMER_NAME.name}' is required with {CONSUMER_TYPE.name}="
                          f"{SUBSCRIBE_TO_SHARD_CONSUMER}: the name of the stream consumer enhanced fan-out "
                          f"reads through (registered if absent), e.g. .option('{CONSUMER_NAME.name}', "
                          "'clicks-etl') (or the AWS connector's 'kinesis.consumerName')")
    if not _CONSUMER_RE.match(name):
        raise ConfigError(f"option '{CONSUMER_NAME.name}' {name!r} is not a valid stream consumer name (1-128 "
                          "characters from letters, digits, '_', '.', '-')")
    return name


def _parse_starting(value: str | None) -> StartingPosition:
    if value is None:
        return DEFAULT_STARTING_POSITION
    text = value.strip()
    upper = text.upper()
    if upper == LATEST:
        return LatestPosition()
    if upper in (TRIM_HORIZON, "EARLIEST"):
        return TrimHorizon()
    if upper == KCL:
        return KclCheckpoints()
    if upper.startswith(AT_TIMESTAMP):
        return AtTimestamp(at_timestamp_ms(STARTING_POSITION.name, value), option=STARTING_POSITION.name)
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
                f"option '{STARTING_POSITION.name}' per-shard JSON is invalid ({getattr(err, 'detail', err)}); "
                "expected e.g. "
                '{"shardId-000000000000": "TRIM_HORIZON", "shardId-000000000001": '
                '{"type": "AFTER_SEQUENCE_NUMBER", "sequence": "4960...", "sub": -1}}'
            ) from None
        return PerShard(per_shard, option=STARTING_POSITION.name)
    raise ConfigError(
        f"option '{STARTING_POSITION.name}' must be LATEST, TRIM_HORIZON, AT_TIMESTAMP:<ISO-8601>, kcl, or per-shard "
        f"JSON; got {value!r}"
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


# ---- a batch read (spark.read) ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KinesisEnding:
    """Where a batch read ends: at the time it is planned (``until_ms`` None, ``per_shard`` empty), at a time
    (``until_ms``: records that arrived before it), or per shard (shard id -> last sequence number read; shards
    not named end at the planning time)."""

    until_ms: int | None = None
    per_shard: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class KinesisBoundedOptions:
    source: KinesisSourceOptions
    ending: KinesisEnding
    #: ``job.name`` was given: take the tasks of the job's streaming query from its metadata store
    use_stored_job_model: bool = False

    def __repr__(self) -> str:  # never the credentials
        return f"KinesisBoundedOptions({self.source.describe()}, ending={self.ending!r})"

    @classmethod
    def parse(cls, raw: Any, use_stored_job_model: bool = False) -> KinesisBoundedOptions:
        source = KinesisSourceOptions.parse(raw)
        opts = Options(raw)
        if not opts.has(STARTING_POSITION.name):
            source = dataclasses.replace(source, starting=TrimHorizon())
        return cls(source, _parse_ending(opts.string(ENDING_POSITION.name)), use_stored_job_model)


def _parse_ending(value: str | None) -> KinesisEnding:
    if value is None or value.strip().upper() == LATEST:
        return KinesisEnding()
    text = value.strip()
    if text.upper().startswith(AT_TIMESTAMP):
        return KinesisEnding(until_ms=at_timestamp_ms(ENDING_POSITION.name, value))
    if text.startswith("{"):
        try:
            per: dict[str, str] = {}
            for shard, end in json_object(text).items():
                if not isinstance(end, str) or not (end.isdigit() or end.upper() == LATEST):
                    raise ValueError
                if end.isdigit():
                    per[str(shard)] = end
        except (ValueError, RecursionError):
            raise ConfigError(
                f"option '{ENDING_POSITION.name}' per-shard JSON must map shard ids to a sequence number (the "
                f"last record read) or \"LATEST\", e.g. {{\"shardId-000000000000\": \"4960...\"}}; got {value!r}"
            ) from None
        return KinesisEnding(per_shard=per)
    raise ConfigError(f"option '{ENDING_POSITION.name}' must be LATEST, AT_TIMESTAMP:<ISO-8601> or per-shard JSON; "
                      f"got {value!r}")
