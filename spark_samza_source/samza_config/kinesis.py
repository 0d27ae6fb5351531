"""Samza's Kinesis system (``KinesisSystemFactory``) translated into ``samza-kinesis`` options.

One ``task.inputs`` stream of the system -> ``streamName`` (one query reads one stream: ``stream=`` picks it);
``aws.region`` / ``aws.kcl.RegionName`` -> ``region``; ``aws.accessKey`` + ``aws.secretKey`` -> the static
credentials; the KCL endpoints -> ``endpointUrl`` / ``dynamodbEndpointUrl``; ``aws.kcl.TableName`` (or Samza's
default ``<job.name>-<job.id>-<stream>``) -> ``kcl.leaseTable`` with ``startingPosition=kcl``, since Samza's
Kinesis consumer keeps its progress only in the KCL lease table. Other KCL tuning, AWS client settings and
Kafka-only keys (groupers other than AllSspToSingleTask, expansion, mappers) are reported.

Callers: ``importer.py`` registers :data:`KINESIS` and ``common.Translation.run`` calls :func:`translate` when
the chosen system is a Kinesis system. Option names are the constants of ``kinesis/options.py`` and
``options/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.model import SystemStreamPartition
from ..kinesis.options import (
    ACCESS_KEY_ID,
    ASSIGNMENT,
    CONSUMER_NAME,
    CONSUMER_TYPE,
    DESCRIBE_SHARD_INTERVAL,
    DYNAMODB_ENDPOINT_URL,
    ENDPOINT_URL,
    KCL_LEASE_TABLE,
    MAX_FETCH_TIME_PER_SHARD,
    MAX_RECORDS_PER_SHARD,
    MIN_PARTITIONS,
    REGION,
    ROLE_ARN,
    ROLE_SESSION_NAME,
    SECRET_KEY,
    SESSION_TOKEN,
    STARTING_POSITION,
    STREAM_NAME,
    STS_ENDPOINT_URL,
    TASKS,
)
from ..options.common import (
    FAIL_ON_DATA_LOSS,
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
    KINESIS_FORMAT,
    MAPPER_KEY,
    SAMZA_BROADCAST_KEY,
    SAMZA_JOB_NAME_KEY,
    Inputs,
    Patterns,
    SystemTranslation,
    Translation,
)

__all__ = ["KINESIS", "NATIVE_OPTIONS", "translate"]

# Options of the source itself, passed through verbatim when a file carries them.
NATIVE_OPTIONS = frozenset({
    STREAM_NAME.name, REGION.name, ENDPOINT_URL.name, DYNAMODB_ENDPOINT_URL.name, ACCESS_KEY_ID.name,
    SECRET_KEY.name, SESSION_TOKEN.name, ROLE_ARN.name, ROLE_SESSION_NAME.name, METADATA_STORE.name,
    TASKS.name, ASSIGNMENT.name, STARTING_POSITION.name, MAX_RECORDS_PER_SHARD.name,
    MAX_FETCH_TIME_PER_SHARD.name, KCL_LEASE_TABLE.name, FAIL_ON_DATA_LOSS.name, STARTPOINT_TTL.name,
    STARTPOINT_POLL_INTERVAL.name, JOB_LEASE_TTL.name, *JOB_LEASE_TTL.deprecated, RETRY_TIMEOUT.name,
    STS_ENDPOINT_URL.name,
    DESCRIBE_SHARD_INTERVAL.name, CONSUMER_TYPE.name, CONSUMER_NAME.name, MIN_PARTITIONS.name,
})


@dataclass(frozen=True)
class _Scope:
    """The Kinesis system and the one stream of it a translation reads; the prefixes of their keys."""

    system: str
    stream: str

    @property
    def system_prefix(self) -> str:
        return f"systems.{self.system}."

    @property
    def stream_prefix(self) -> str:
        return f"systems.{self.system}.streams.{self.stream}."


def translate(tr: Translation, system: str, inputs: Inputs, patterns: Patterns,
              broadcast: list[SystemStreamPartition]) -> None:
    """The Kinesis system's keys -> ``samza-kinesis`` options (see the module documentation)."""
    refuse_kafka_only_inputs(tr, system, patterns, broadcast)
    scope = _Scope(system, chosen_stream(tr, system, inputs[system]))
    tr.set_option(STREAM_NAME.name, scope.stream, "task.inputs")
    kcl = kcl_settings(tr, scope)
    translate_region(tr, scope, kcl)
    translate_credentials(tr, scope)
    translate_endpoints(tr, kcl)
    table = translate_lease_table(tr, scope, kcl)
    note_kcl_start(tr, table, kcl)
    ignore_system_keys(tr, scope)
    for stream_id in tr.stream_ids(system, [scope.stream]):
        for key in tr.keys_with(f"streams.{stream_id}."):
            tr.ignore(key, "Samza stream setting: samza-kinesis takes the stream from task.inputs, its start "
                           "from the KCL lease table")
    translate_grouping(tr)


def refuse_kafka_only_inputs(tr: Translation, system: str, patterns: Patterns,
                             broadcast: list[SystemStreamPartition]) -> None:
    """Topic patterns and broadcast inputs have no Kinesis meaning: refuse them rather than drop them."""
    if patterns.get(system):
        raise tr.fail(patterns[system][0][1], "RegExTopicGenerator lists Kafka topics; it cannot select "
                                              "Kinesis streams")
    if broadcast:
        raise tr.fail(SAMZA_BROADCAST_KEY, "Kinesis streams cannot be broadcast (in Samza neither); "
                                           "samza-kinesis has no broadcast inputs")


def chosen_stream(tr: Translation, system: str, streams: list[str]) -> str:
    """The one stream of ``system`` the query reads: ``stream=`` when given (the others reported), else the only
    input; several inputs without ``stream=`` are refused, since one query reads one stream."""
    if tr.want_stream is None:
        if len(streams) > 1:
            raise errors.several_kinesis_streams(system, streams)
        return streams[0]
    if tr.want_stream not in streams:
        raise errors.stream_not_an_input(tr.want_stream, system, streams)
    for other in streams:
        if other != tr.want_stream:
            tr.ignored[f"task.inputs ({system}.{other})"] = (
                f"one samza-kinesis query reads one stream: import again with stream='{other}'")
    return tr.want_stream


def kcl_settings(tr: Translation, scope: _Scope) -> dict[str, tuple[str, str]]:
    """The ``aws.kcl.*`` settings of the system and the stream (the stream's win): setting -> (value, key)."""
    kcl: dict[str, tuple[str, str]] = {}
    for prefix in (scope.system_prefix + "aws.kcl.", scope.stream_prefix + "aws.kcl."):  # stream scope overrides
        for key in tr.keys_with(prefix):
            kcl[key[len(prefix):]] = (tr.props[key].strip(), key)
            tr.used.add(key)
    return kcl


def translate_region(tr: Translation, scope: _Scope, kcl: dict[str, tuple[str, str]]) -> None:
    """``aws.kcl.RegionName``, else the stream's ``aws.region``, else the system's -> ``region``."""
    candidates = (scope.stream_prefix + "aws.region", scope.system_prefix + "aws.region")
    region_key = next((k for k in candidates if tr.props.get(k, "").strip()), None)
    if "RegionName" in kcl:
        region_key = kcl.pop("RegionName")[1]
    if region_key:
        tr.used.add(region_key)
        tr.set_option(REGION.name, tr.props[region_key].strip(), tr.name(region_key))
    for key in candidates:
        if key in tr.props and key != region_key:
            tr.ignore(key, f"overridden by {tr.name(region_key)}" if region_key else "empty value")


def translate_credentials(tr: Translation, scope: _Scope) -> None:
    """The stream's ``aws.accessKey`` + ``aws.secretKey`` -> static credentials, only as a pair."""
    access_key, secret_key = scope.stream_prefix + "aws.accessKey", scope.stream_prefix + "aws.secretKey"
    access, secret = tr.get(access_key), tr.get(secret_key)
    if access and secret:
        tr.set_option(ACCESS_KEY_ID.name, access, tr.name(access_key))
        tr.set_option(SECRET_KEY.name, secret, tr.name(secret_key))
        return
    for key in (access_key, secret_key):
        if key in tr.props:
            tr.reject(key, "aws.accessKey and aws.secretKey go together; with one missing, boto3's default "
                           "credential chain is used (Samza falls back to the default chain too)")


def translate_endpoints(tr: Translation, kcl: dict[str, tuple[str, str]]) -> None:
    """KCL's Kinesis and DynamoDB endpoints -> URLs (KCL takes bare host names: https is assumed)."""
    endpoints = {"KinesisEndpoint": ENDPOINT_URL.name, "DynamoDBEndpoint": DYNAMODB_ENDPOINT_URL.name}
    for setting, option in endpoints.items():
        if setting in kcl:
            value, key = kcl.pop(setting)
            url = value if re.match(r"^https?://", value) else f"https://{value}"
            tr.set_option(option, url, tr.name(key))


def translate_lease_table(tr: Translation, scope: _Scope, kcl: dict[str, tuple[str, str]]) -> str:
    """``aws.kcl.TableName`` (else Samza's default ``<job.name>-<job.id>-<stream>``) -> ``kcl.leaseTable`` with
    ``startingPosition=kcl``: the lease table is the only place Samza's Kinesis consumer keeps its progress.
    Returns the table's name. A default name is a guess, so both options stay soft (the caller may override)."""
    table_value = kcl.pop("TableName", None)
    named = bool(table_value and table_value[0])
    if table_value and table_value[0]:  # named
        table, table_source = table_value[0], tr.name(table_value[1])
    else:
        samza_name = tr.props.get(SAMZA_JOB_NAME_KEY, "").strip() or tr.props.get("app.name", "").strip()
        samza_id = (tr.props.get("job.id", "").strip() if tr.props.get(SAMZA_JOB_NAME_KEY, "").strip()
                    else tr.props.get("app.id", "").strip()) or "1"
        table = f"{samza_name}-{samza_id}-{scope.stream}"
        table_source = f"{SAMZA_JOB_NAME_KEY}, job.id (Samza's default table)"
        tr.notes.append(f"no aws.kcl.TableName: Samza's KCL worker used its default lease table "
                        f"'{table}' (<{SAMZA_JOB_NAME_KEY}>-<job.id>-<stream>)")
    tr.set_option(KCL_LEASE_TABLE.name, table, table_source)
    tr.set_option(STARTING_POSITION.name, "kcl", table_source)
    tr.soft.add(STARTING_POSITION.name)
    if not named:
        tr.soft.add(KCL_LEASE_TABLE.name)
    return table


def note_kcl_start(tr: Translation, table: str, kcl: dict[str, tuple[str, str]]) -> None:
    """Explain where the query starts (after the KCL checkpoints); report KCL's own start and worker tuning."""
    initial = kcl.pop("InitialPositionInStream", None)
    initial_text = initial[0].upper() if initial else "LATEST"
    if initial:
        tr.ignore(initial[1], "used by KCL only for shards without a lease; see the notes")
    tr.notes.append(
        f"Samza's Kinesis consumer keeps its progress only in the KCL lease table '{table}': "
        f"{STARTING_POSITION.name}=kcl resumes right after its checkpoints (the table must exist; for a job that "
        f"never ran use TRIM_HORIZON or LATEST instead), and {KCL_LEASE_TABLE.name} keeps mirroring committed "
        "positions into it. Shards without a lease start at TRIM_HORIZON here (KCL: "
        f"InitialPositionInStream={initial_text}). Stop the Samza job before starting the query")
    for _setting, (_, key) in sorted(kcl.items()):
        tr.ignore(key, f"KCL worker tuning: samza-kinesis reads shards itself (see {MAX_RECORDS_PER_SHARD.name}, "
                       f"{MAX_FETCH_TIME_PER_SHARD.name})")


def ignore_system_keys(tr: Translation, scope: _Scope) -> None:
    """Report every key of the system not translated above, with why it does not matter here."""
    for key in tr.keys_with(scope.system_prefix):
        if key not in tr.used:
            tr.ignore(key, _why_system_key_ignored(key[len(scope.system_prefix):], scope.stream))


def _why_system_key_ignored(prop: str, stream: str) -> str:
    if prop.startswith("aws.clientConfig."):
        return "AWS SDK for Java client setting; boto3 takes proxies from HTTPS_PROXY and its own configuration"
    if (prop.startswith(f"streams.{stream}.") and prop.endswith(".samza.offset.default")) or (
            prop in ("samza.offset.default", "default.stream.samza.offset.default")):
        return ("Samza's Kinesis consumer ignores Samza checkpoints and offset defaults: the KCL lease table (and "
                f"InitialPositionInStream) decide, as {STARTING_POSITION.name}=kcl here")
    if prop.startswith(f"streams.{stream}."):
        return "Samza stream setting with no bearing on what is read"
    if prop.startswith("streams."):
        return "stream is not an input of this query"
    return "Samza system setting with no bearing on what is read"


def translate_grouping(tr: Translation) -> None:
    """Samza's Kinesis consumer needs AllSspToSingleTask; anything else is refused. Expansion settings and the
    container count are Kafka's or KCL's concern and only reported."""
    grouper = tr.get(GROUPER_KEY)
    if grouper and grouper.rsplit(".", 1)[-1] not in ("AllSspToSingleTaskGrouperFactory",
                                                      "AllSspToSingleTaskGrouper"):
        raise tr.fail(GROUPER_KEY, f"{grouper!r}: Samza's Kinesis consumer works only with "
                                   "AllSspToSingleTaskGrouperFactory; samza-kinesis maps shards onto tasks "
                                   f"itself (options {TASKS.name}, {ASSIGNMENT.name})")
    if grouper:
        tr.ignore(GROUPER_KEY, "required by Samza's Kinesis consumer; samza-kinesis maps shards onto task "
                               f"slots itself (options {TASKS.name}, {ASSIGNMENT.name})")
    for key in (EXPANSION_KEY, MAPPER_KEY):
        if key in tr.props:
            tr.ignore(key, "Kafka partition expansion setting: Kinesis resharding follows shard lineage")
    if "job.container.count" in tr.props:
        tr.ignore("job.container.count", "Samza containers (KCL workers): samza-kinesis runs one task per "
                                         f"open shard by default; set the option {TASKS.name} to bound it")


KINESIS = SystemTranslation(KINESIS_FORMAT, NATIVE_OPTIONS, translate)
