"""Samza's Kinesis system (``KinesisSystemFactory``) translated into ``samza-kinesis`` options.

One ``task.inputs`` stream of the system -> ``streamName`` (one query reads one stream: ``stream=`` picks it);
``aws.region`` / ``aws.kcl.RegionName`` -> ``region``; ``aws.accessKey`` + ``aws.secretKey`` -> the static
credentials; the KCL endpoints -> ``endpointUrl`` / ``dynamodbEndpointUrl``; ``aws.kcl.TableName`` (or Samza's
default ``<job.name>-<job.id>-<stream>``) -> ``kcl.leaseTable`` with ``startingPosition=kcl``, since Samza's
Kinesis consumer keeps its progress only in the KCL lease table. Other KCL tuning, AWS client settings and
Kafka-only keys (groupers other than AllSspToSingleTask, expansion, mappers) are reported.

Callers: ``importer.py`` registers :data:`KINESIS` and ``common.Translation.run`` calls :func:`translate` when
the chosen system is a Kinesis system. Option names are the constants of ``kinesis/options.py`` and
``source/options.py``.
"""

from __future__ import annotations

import re

from ..core.errors import ConfigError
from ..core.model import SystemStreamPartition
from ..spec.common import (
    FAIL_ON_DATA_LOSS_OPTION,
    JOB_OWNERSHIP_TTL_OPTION,
    METADATA_STORE_OPTION,
    RETRY_TIMEOUT_OPTION,
    STARTPOINT_POLL_INTERVAL_OPTION,
    STARTPOINT_TTL_OPTION,
)
from ..spec.kinesis import (
    ACCESS_KEY_ID_OPTION,
    ASSIGNMENT_OPTION,
    DESCRIBE_SHARD_INTERVAL_OPTION,
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
    STS_ENDPOINT_URL_OPTION,
    TASKS_OPTION,
)
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
    STREAM_NAME_OPTION, REGION_OPTION, ENDPOINT_URL_OPTION, DYNAMODB_ENDPOINT_URL_OPTION, ACCESS_KEY_ID_OPTION,
    SECRET_KEY_OPTION, SESSION_TOKEN_OPTION, ROLE_ARN_OPTION, ROLE_SESSION_NAME_OPTION, METADATA_STORE_OPTION,
    TASKS_OPTION, ASSIGNMENT_OPTION, STARTING_POSITION_OPTION, MAX_RECORDS_PER_SHARD_OPTION,
    MAX_FETCH_TIME_PER_SHARD_OPTION, KCL_LEASE_TABLE_OPTION, FAIL_ON_DATA_LOSS_OPTION, STARTPOINT_TTL_OPTION,
    STARTPOINT_POLL_INTERVAL_OPTION, JOB_OWNERSHIP_TTL_OPTION, RETRY_TIMEOUT_OPTION, STS_ENDPOINT_URL_OPTION,
    DESCRIBE_SHARD_INTERVAL_OPTION,
})


def translate(tr: Translation, system: str, inputs: Inputs, patterns: Patterns,
              broadcast: list[SystemStreamPartition]) -> None:
    """The Kinesis system's keys -> ``samza-kinesis`` options (see the module documentation)."""
    if patterns.get(system):
        raise tr.fail(patterns[system][0][1], "RegExTopicGenerator lists Kafka topics; it cannot select "
                                              "Kinesis streams")
    if broadcast:
        raise tr.fail(SAMZA_BROADCAST_KEY, "Kinesis streams cannot be broadcast (in Samza neither); "
                                           "samza-kinesis has no broadcast inputs")
    streams = inputs[system]
    if tr.want_stream is not None:
        if tr.want_stream not in streams:
            raise ConfigError(f"stream={tr.want_stream!r} is not an input of system '{system}' "
                              f"({', '.join(streams)})")
        for other in streams:
            if other != tr.want_stream:
                tr.ignored[f"task.inputs ({system}.{other})"] = (
                    f"one samza-kinesis query reads one stream: import again with stream='{other}'")
        stream = tr.want_stream
    elif len(streams) > 1:
        raise ConfigError(f"task.inputs names {len(streams)} Kinesis streams of system '{system}' "
                          f"({', '.join(streams)}); one samza-kinesis query reads one stream: import with "
                          "stream='<name>' once per stream")
    else:
        stream = streams[0]
    tr.set_option(STREAM_NAME_OPTION, stream, "task.inputs")
    sys_prefix = f"systems.{system}."
    stream_prefix = f"systems.{system}.streams.{stream}."

    region_key = next((k for k in (stream_prefix + "aws.region", sys_prefix + "aws.region")
                       if tr.props.get(k, "").strip()), None)
    kcl: dict[str, tuple[str, str]] = {}
    for prefix in (sys_prefix + "aws.kcl.", stream_prefix + "aws.kcl."):  # stream scope overrides
        for key in tr.keys_with(prefix):
            kcl[key[len(prefix):]] = (tr.props[key].strip(), key)
            tr.used.add(key)
    if "RegionName" in kcl:
        region_key = kcl.pop("RegionName")[1]
    if region_key:
        tr.used.add(region_key)
        tr.set_option(REGION_OPTION, tr.props[region_key].strip(), tr.name(region_key))
    for key in (stream_prefix + "aws.region", sys_prefix + "aws.region"):
        if key in tr.props and key != region_key:
            tr.ignore(key, f"overridden by {tr.name(region_key)}" if region_key else "empty value")

    access_key, secret_key = stream_prefix + "aws.accessKey", stream_prefix + "aws.secretKey"
    access, secret = tr.get(access_key), tr.get(secret_key)
    if access and secret:
        tr.set_option(ACCESS_KEY_ID_OPTION, access, tr.name(access_key))
        tr.set_option(SECRET_KEY_OPTION, secret, tr.name(secret_key))
    else:
        for key in (access_key, secret_key):
            if key in tr.props:
                tr.reject(key, "aws.accessKey and aws.secretKey go together; with one missing, boto3's default "
                               "credential chain is used (Samza falls back to the default chain too)")

    endpoints = {"KinesisEndpoint": ENDPOINT_URL_OPTION, "DynamoDBEndpoint": DYNAMODB_ENDPOINT_URL_OPTION}
    for setting, option in endpoints.items():
        if setting in kcl:
            value, key = kcl.pop(setting)
            url = value if re.match(r"^https?://", value) else f"https://{value}"
            tr.set_option(option, url, tr.name(key))
    table_value = kcl.pop("TableName", None)
    if table_value and table_value[0]:
        table, table_source = table_value[0], tr.name(table_value[1])
    else:
        samza_name = tr.props.get(SAMZA_JOB_NAME_KEY, "").strip() or tr.props.get("app.name", "").strip()
        samza_id = (tr.props.get("job.id", "").strip() if tr.props.get(SAMZA_JOB_NAME_KEY, "").strip()
                    else tr.props.get("app.id", "").strip()) or "1"
        table = f"{samza_name}-{samza_id}-{stream}"
        table_source = f"{SAMZA_JOB_NAME_KEY}, job.id (Samza's default table)"
        tr.notes.append(f"no aws.kcl.TableName: Samza's KCL worker used its default lease table "
                        f"'{table}' (<{SAMZA_JOB_NAME_KEY}>-<job.id>-<stream>)")
    tr.set_option(KCL_LEASE_TABLE_OPTION, table, table_source)
    tr.set_option(STARTING_POSITION_OPTION, "kcl", table_source)
    tr.soft.add(STARTING_POSITION_OPTION)
    if not (table_value and table_value[0]):
        tr.soft.add(KCL_LEASE_TABLE_OPTION)
    initial = kcl.pop("InitialPositionInStream", None)
    initial_text = initial[0].upper() if initial else "LATEST"
    if initial:
        tr.ignore(initial[1], "used by KCL only for shards without a lease; see the notes")
    tr.notes.append(
        f"Samza's Kinesis consumer keeps its progress only in the KCL lease table '{table}': "
        f"{STARTING_POSITION_OPTION}=kcl resumes right after its checkpoints (the table must exist; for a job that "
        f"never ran use TRIM_HORIZON or LATEST instead), and {KCL_LEASE_TABLE_OPTION} keeps mirroring committed "
        "positions into it. Shards without a lease start at TRIM_HORIZON here (KCL: "
        f"InitialPositionInStream={initial_text}). Stop the Samza job before starting the query")
    for _setting, (_, key) in sorted(kcl.items()):
        tr.ignore(key, f"KCL worker tuning: samza-kinesis reads shards itself (see {MAX_RECORDS_PER_SHARD_OPTION}, "
                       f"{MAX_FETCH_TIME_PER_SHARD_OPTION})")

    for key in tr.keys_with(sys_prefix):
        if key in tr.used:
            continue
        prop = key[len(sys_prefix):]
        if prop.startswith("aws.clientConfig."):
            tr.ignore(key, "AWS SDK for Java client setting; boto3 takes proxies from HTTPS_PROXY and its "
                           "own configuration")
        elif (prop.startswith(f"streams.{stream}.") and prop.endswith(".samza.offset.default")) or (
                prop in ("samza.offset.default", "default.stream.samza.offset.default")):
            tr.ignore(key, "Samza's Kinesis consumer ignores Samza checkpoints and offset defaults: the KCL "
                           f"lease table (and InitialPositionInStream) decide, as {STARTING_POSITION_OPTION}=kcl "
                           "here")
        elif prop.startswith(f"streams.{stream}."):
            tr.ignore(key, "Samza stream setting with no bearing on what is read")
        elif prop.startswith("streams."):
            tr.ignore(key, "stream is not an input of this query")
        else:
            tr.ignore(key, "Samza system setting with no bearing on what is read")

    for stream_id in tr.stream_ids(system, [stream]):
        for key in tr.keys_with(f"streams.{stream_id}."):
            tr.ignore(key, "Samza stream setting: samza-kinesis takes the stream from task.inputs, its start "
                           "from the KCL lease table")

    grouper = tr.get(GROUPER_KEY)
    if grouper and grouper.rsplit(".", 1)[-1] not in ("AllSspToSingleTaskGrouperFactory",
                                                      "AllSspToSingleTaskGrouper"):
        raise tr.fail(GROUPER_KEY, f"{grouper!r}: Samza's Kinesis consumer works only with "
                                   "AllSspToSingleTaskGrouperFactory; samza-kinesis maps shards onto tasks "
                                   f"itself (options {TASKS_OPTION}, {ASSIGNMENT_OPTION})")
    if grouper:
        tr.ignore(GROUPER_KEY, "required by Samza's Kinesis consumer; samza-kinesis maps shards onto task "
                               f"slots itself (options {TASKS_OPTION}, {ASSIGNMENT_OPTION})")
    for key in (EXPANSION_KEY, MAPPER_KEY):
        if key in tr.props:
            tr.ignore(key, "Kafka partition expansion setting: Kinesis resharding follows shard lineage")
    if "job.container.count" in tr.props:
        tr.ignore("job.container.count", "Samza containers (KCL workers): samza-kinesis runs one task per "
                                         f"open shard by default; set the option {TASKS_OPTION} to bound it")


KINESIS = SystemTranslation(KINESIS_FORMAT, NATIVE_OPTIONS, translate)
