"""Broker state and one handler per Kafka API.

Each handler takes the decoded request (a kafka-python generated class instance, whose fields are
those of the version the client chose) and returns a response instance of the same version, or None
when no response is due (Produce with acks=0).  Fetch is a coroutine: it long-polls.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import re
import shutil
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from kafka.protocol.admin import (
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteRecordsResponse,
    DeleteTopicsResponse,
    DescribeClusterResponse,
    DescribeConfigsResponse,
    DescribeGroupsResponse,
    ListGroupsResponse,
)
from kafka.protocol.consumer import (
    FetchResponse,
    ListOffsetsResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    OffsetForLeaderEpochResponse,
)
from kafka.protocol.metadata import ApiVersionsResponse, FindCoordinatorResponse, MetadataResponse
from kafka.protocol.producer import InitProducerIdResponse, ProduceResponse

from .compaction import compact_partition, is_compacted, keyless_record_error
from .log import BatchError, GroupStore, PartitionLog, TopicState, atomic_write_json, crc32c_is_fast, parse_batches
from .protocol import REQUEST_CLASSES, ApiError
from .transactions import TransactionCoordinator

__all__ = ["CLUSTER_ID", "NODE_ID", "SUPPORTED_APIS", "BrokerState"]

log = logging.getLogger("spark_samza_source.kafka_broker")

NODE_ID = 0
CLUSTER_ID = "samza-devbroker-0000001"  # fixed, 22+ chars like a real base64 cluster id
LEADER_EPOCH = 0

# api key -> (min version, max version) advertised in ApiVersions. Only these are served; anything
# else (unknown key, or a version outside the range) closes the connection, as Kafka does.
# The minimums are those of kafka-python's (Kafka 4.x) schemas.
SUPPORTED_APIS: dict[int, tuple[int, int]] = {
    0: (3, 13),   # Produce
    1: (4, 18),   # Fetch
    2: (1, 11),   # ListOffsets
    3: (0, 13),   # Metadata
    8: (2, 10),   # OffsetCommit
    9: (1, 10),   # OffsetFetch
    10: (0, 6),   # FindCoordinator
    18: (0, 4),   # ApiVersions
    19: (2, 7),   # CreateTopics
    20: (1, 6),   # DeleteTopics
    21: (0, 2),   # DeleteRecords
    22: (0, 5),   # InitProducerId
    23: (2, 4),   # OffsetForLeaderEpoch
    32: (1, 4),   # DescribeConfigs
    37: (0, 3),   # CreatePartitions
    60: (0, 1),   # DescribeCluster
}
SUPPORTED_APIS.update({15: (0, 6), 16: (0, 5)})  # DescribeGroups, ListGroups: offsets-only groups, for the group tools
SUPPORTED_APIS.update({17: (1, 1), 36: (0, 2)})  # SaslHandshake, SaslAuthenticate: served by server.py (sasl.py)
# Transactions (transactions.py): AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, up to the versions
# before KIP-890's transaction version 2 (which moves partition registration into Produce)
SUPPORTED_APIS.update({24: (0, 3), 25: (0, 3), 26: (0, 3), 28: (0, 3)})
for _key, (_lo, _hi) in SUPPORTED_APIS.items():  # never advertise past what kafka-python can decode
    assert _hi <= REQUEST_CLASSES[_key].max_version, _key

_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")

# Kafka's topic-level configs and their defaults (the broker defaults of a stock Kafka 3.x/4.x).
TOPIC_CONFIG_DEFAULTS: dict[str, str] = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000",
    "flush.messages": "9223372036854775807",
    "flush.ms": "9223372036854775807",
    "follower.replication.throttled.replicas": "",
    "index.interval.bytes": "4096",
    "leader.replication.throttled.replicas": "",
    "local.retention.bytes": "-2",
    "local.retention.ms": "-2",
    "max.compaction.lag.ms": "9223372036854775807",
    "max.message.bytes": "1048588",
    "message.downconversion.enable": "true",
    "message.format.version": "3.0-IV1",
    "message.timestamp.after.max.ms": "9223372036854775807",
    "message.timestamp.before.max.ms": "9223372036854775807",
    "message.timestamp.difference.max.ms": "9223372036854775807",
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5",
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1",
    "preallocate": "false",
    "remote.storage.enable": "false",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.index.bytes": "10485760",
    "segment.jitter.ms": "0",
    "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
}
_ENUM_CONFIGS = {
    "message.timestamp.type": ("CreateTime", "LogAppendTime"),
    "compression.type": ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
}
_BOOL_CONFIGS = {"message.downconversion.enable", "preallocate", "remote.storage.enable",
                 "unclean.leader.election.enable"}
_STRING_CONFIGS = {"follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
                   "message.format.version"}


def _config_value_problem(key: str, value: str) -> str | None:
    """Kafka's ConfigDef type checks, for the configs this broker knows."""
    if key in _ENUM_CONFIGS:
        allowed = _ENUM_CONFIGS[key]
        return None if value in allowed else "String must be one of: " + ", ".join(allowed)
    if key == "cleanup.policy":
        parts = [p.strip() for p in value.split(",")]
        return None if parts and all(p in ("delete", "compact") for p in parts) else \
            "[" + value + "] must be a subset of [compact, delete]"
    if key in _BOOL_CONFIGS:
        return None if value.lower() in ("true", "false") else "Expected value to be either true or false"
    if key in _STRING_CONFIGS:
        return None
    if key == "min.cleanable.dirty.ratio":
        try:
            return None if 0.0 <= float(value) <= 1.0 else "Value must be between 0 and 1"
        except ValueError:
            return "Not a number of type DOUBLE"
    try:
        number = int(value.strip())
    except ValueError:
        return "Not a number of type LONG"
    if number < -2 or (number < 0 and key in ("max.message.bytes", "segment.bytes", "index.interval.bytes",
                                               "min.insync.replicas", "segment.index.bytes")):
        return "Value must be at least 0"
    return None


_INT_CONFIGS = {"max.message.bytes", "index.interval.bytes", "min.insync.replicas", "segment.bytes",
                "segment.index.bytes"}


def _config_type(key: str) -> int:
    """DescribeConfigs v3+ ConfigType: BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6, LIST 7."""
    if key in _BOOL_CONFIGS:
        return 1
    if key in ("cleanup.policy", "follower.replication.throttled.replicas",
               "leader.replication.throttled.replicas"):
        return 7
    if key in _ENUM_CONFIGS or key in _STRING_CONFIGS:
        return 2
    if key == "min.cleanable.dirty.ratio":
        return 6
    return 3 if key in _INT_CONFIGS else 5


# DescribeConfigs config sources
_SOURCE_TOPIC = 1
_SOURCE_DEFAULT = 5
_RESOURCE_TOPIC = 2
_RESOURCE_BROKER = 4

_PRODUCER_STATE_BATCHES = 5  # Kafka keeps the last 5 batches per producer for duplicate detection


@dataclass
class _ProducerState:
    epoch: int
    # (first sequence, last sequence, base offset) of the most recent batches
    batches: deque = field(default_factory=lambda: deque(maxlen=_PRODUCER_STATE_BATCHES))


class BrokerState:
    """Everything the broker knows; only touched from the event loop thread."""

    def __init__(self, data_dir: Path, host: str, port: int, *, fsync: bool = False,
                 auto_create_topics: bool = False, default_partitions: int = 1):
        self.data_dir = Path(data_dir)
        self.host = host
        self.port = port
        self.fsync = fsync
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.topics_dir = self.data_dir / "topics"
        self.topics_dir.mkdir(parents=True, exist_ok=True)
        # records served by Fetch responses, by topic (whole batches, as a real broker serves them): lets tests
        # compare the records a client fetched, e.g. a batch read with and without filter pushdown
        self.fetched_records: collections.Counter[str] = collections.Counter()
        self.topics: dict[str, TopicState] = {}
        self.topics_by_id: dict[uuid.UUID, TopicState] = {}
        for meta in sorted(self.topics_dir.glob("*/topic.json")):
            topic = TopicState.load(meta.parent, fsync)
            self._register(topic)
            for i, p in enumerate(topic.partitions):
                if p.recovered_bytes_cut:
                    log.warning("%s-%d: cut %d torn bytes from the log tail", topic.name, i,
                                p.recovered_bytes_cut)
        self.trash_dir = self.data_dir / "trash"  # deleted topics go here first (atomic rename)
        shutil.rmtree(self.trash_dir, ignore_errors=True)
        self.trash_dir.mkdir(parents=True, exist_ok=True)
        self.groups = GroupStore(self.data_dir / "groups", fsync=fsync)
        self._pid_path = self.data_dir / "producer-ids.json"
        self.next_producer_id = 1000
        if self._pid_path.exists():
            import json

            self.next_producer_id = int(json.loads(self._pid_path.read_text())["next"])
        self.producers: dict[tuple[str, int, int], _ProducerState] = {}
        for topic in self.topics.values():  # idempotence survives restarts, as Kafka's snapshots do
            for i, plog in enumerate(topic.partitions):
                for pid, epoch, first, last, base in plog.recent_producer_batches(64):
                    st = self.producers.get((topic.name, i, pid))
                    if st is None or st.epoch != epoch:
                        st = self.producers[(topic.name, i, pid)] = _ProducerState(epoch=epoch)
                    st.batches.append((first, last, base))
        self.txns = TransactionCoordinator(self, self.data_dir, self._new_producer_id)

    def set_producer_epoch(self, topic: str, partition: int, producer_id: int, epoch: int) -> None:
        """A transaction marker of ``epoch`` was written: older epochs of the producer are fenced here."""
        state = self.producers.get((topic, partition, producer_id))
        if state is None or state.epoch < epoch:
            self.producers[(topic, partition, producer_id)] = _ProducerState(epoch=epoch)

    def _register(self, topic: TopicState) -> None:
        self.topics[topic.name] = topic
        self.topics_by_id[topic.topic_id] = topic

    def close(self) -> None:
        for topic in self.topics.values():
            topic.close()

    # ------------------------------------------------------------------------------- topics
    def validate_topic_request(self, name: str, partitions: int, replication: int,
                               configs: dict[str, str | None]) -> tuple[int, str | None, dict[str, str]]:
        if not name or not _TOPIC_NAME.match(name) or name in (".", ".."):
            return ApiError.INVALID_TOPIC_EXCEPTION, f"Topic name '{name}' is illegal", {}
        if name in self.topics:
            return ApiError.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.", {}
        collision = name.replace(".", "_")
        for existing in self.topics:
            if existing.replace(".", "_") == collision:
                return (ApiError.INVALID_TOPIC_EXCEPTION,
                        f"Topic '{name}' collides with existing topic: {existing}", {})
        if partitions == 0 or partitions < -1:
            return ApiError.INVALID_PARTITIONS, "Number of partitions must be larger than 0.", {}
        if replication == 0 or replication < -1:
            return ApiError.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.", {}
        if replication > 1:
            return (ApiError.INVALID_REPLICATION_FACTOR,
                    f"Unable to replicate the partition {replication} time(s): "
                    "The target replication factor of 1 cannot be reached because only 1 broker(s) "
                    "are registered.", {})
        clean: dict[str, str] = {}
        for key, value in configs.items():
            if key not in TOPIC_CONFIG_DEFAULTS:
                return ApiError.INVALID_CONFIG, f"Unknown topic config name: {key}", {}
            if value is None:
                continue
            problem = _config_value_problem(key, value)
            if problem:
                return ApiError.INVALID_CONFIG, f"Invalid value {value} for configuration {key}: {problem}", {}
            clean[key] = value
        return ApiError.NONE, None, clean

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> TopicState:
        code, msg, clean = self.validate_topic_request(name, partitions, 1, dict(configs or {}))
        if code:
            raise ValueError(msg)
        topic = TopicState.create(self.topics_dir, name, partitions if partitions > 0 else
                                  self.default_partitions, clean, self.fsync)
        self._register(topic)
        log.info("created topic %s with %d partition(s) %s", name, len(topic.partitions), clean)
        return topic

    def delete_topic(self, topic: TopicState) -> None:
        del self.topics[topic.name]
        del self.topics_by_id[topic.topic_id]
        for i, p in enumerate(topic.partitions):
            self._wake(p)
            for key in [k for k in self.producers if k[0] == topic.name and k[1] == i]:
                del self.producers[key]
        self.txns.forget_topic(topic.name)
        topic.close()
        graveyard = self.trash_dir / uuid.uuid4().hex
        topic.dir.rename(graveyard)
        shutil.rmtree(graveyard, ignore_errors=True)
        self.groups.forget_topic(topic.name)
        log.info("deleted topic %s", topic.name)

    def _partition(self, topic_name: str, partition: int) -> PartitionLog | None:
        topic = self.topics.get(topic_name)
        if topic is None or not 0 <= partition < len(topic.partitions):
            return None
        return topic.partitions[partition]

    @staticmethod
    def _wake(plog: PartitionLog) -> None:
        if plog.waiters:
            for fut in plog.waiters:
                if not fut.done():
                    fut.set_result(None)
            plog.waiters.clear()

    # ------------------------------------------------------------------------------- ApiVersions
    def api_versions(self, header, request):
        version = header.api_version
        return ApiVersionsResponse(
            version=version, error_code=0, throttle_time_ms=0,
            api_keys=[ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                      for k, (lo, hi) in sorted(SUPPORTED_APIS.items())],
        )

    def api_versions_unsupported(self) -> ApiVersionsResponse:
        """What Kafka answers to an ApiVersions version it does not know: a v0 body with
        UNSUPPORTED_VERSION and its ApiVersions range, so the client can retry with a lower version."""
        lo, hi = SUPPORTED_APIS[18]
        return ApiVersionsResponse(
            version=0, error_code=ApiError.UNSUPPORTED_VERSION,
            api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, min_version=lo, max_version=hi)],
        )

    # ------------------------------------------------------------------------------- Metadata
    def _broker_list(self, cls):
        return [cls(node_id=NODE_ID, host=self.host, port=self.port, rack=None)]

    def metadata(self, header, request):
        version = header.api_version
        R = MetadataResponse
        T = R.MetadataResponseTopic
        P = T.MetadataResponsePartition
        wanted = request.topics
        if version == 0 and not wanted:
            wanted = None  # v0: an empty list means all topics
        allow_auto = request.allow_auto_topic_creation if version >= 4 else True
        out = []
        if wanted is None:
            selected = [(t.name, t) for t in sorted(self.topics.values(), key=lambda t: t.name)]
        else:
            selected = []
            for req in wanted:
                name = req.name
                topic_id = req.topic_id if version >= 10 else None
                if name is None and topic_id is not None and topic_id.int != 0:
                    topic = self.topics_by_id.get(topic_id)
                    selected.append((None, topic) if topic else (("id", topic_id), None))
                    continue
                topic = self.topics.get(name)
                if topic is None and self.auto_create_topics and allow_auto and name and \
                        self.validate_topic_request(name, -1, -1, {})[0] == ApiError.NONE:
                    topic = self.create_topic(name, self.default_partitions)
                selected.append((name, topic))
        for name, topic in selected:
            if topic is None:
                if isinstance(name, tuple):  # unknown topic id
                    out.append(T(error_code=ApiError.UNKNOWN_TOPIC_ID, name=None, topic_id=name[1],
                                 is_internal=False, partitions=[]))
                else:
                    code = (ApiError.INVALID_TOPIC_EXCEPTION if not name or not _TOPIC_NAME.match(name)
                            else ApiError.UNKNOWN_TOPIC_OR_PARTITION)
                    out.append(T(error_code=code, name=name, topic_id=uuid.UUID(int=0),
                                 is_internal=False, partitions=[]))
                continue
            out.append(T(
                error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=False,
                partitions=[P(error_code=0, partition_index=i, leader_id=NODE_ID, leader_epoch=LEADER_EPOCH,
                              replica_nodes=[NODE_ID], isr_nodes=[NODE_ID], offline_replicas=[])
                            for i in range(len(topic.partitions))],
            ))
        return R(version=version, throttle_time_ms=0, brokers=self._broker_list(R.MetadataResponseBroker),
                 cluster_id=CLUSTER_ID, controller_id=NODE_ID, topics=out, error_code=0)

    def describe_cluster(self, header, request):
        R = DescribeClusterResponse
        return R(version=header.api_version, throttle_time_ms=0, error_code=0, error_message=None,
                 endpoint_type=1, cluster_id=CLUSTER_ID, controller_id=NODE_ID,
                 brokers=[R.DescribeClusterBroker(broker_id=NODE_ID, host=self.host, port=self.port,
                                                  rack=None, is_fenced=False)])

    # ------------------------------------------------------------------------------- topic admin
    def create_topics(self, header, request):
        version = header.api_version
        R = CreateTopicsResponse
        T = R.CreatableTopicResult
        C = T.CreatableTopicConfigs
        results = []
        seen: dict[str, int] = {}
        for t in request.topics:
            seen[t.name] = seen.get(t.name, 0) + 1
        for t in request.topics:
            configs = {c.name: c.value for c in t.configs}
            if seen[t.name] > 1:
                code, msg, clean = ApiError.INVALID_REQUEST, f"Duplicate topic name {t.name}", {}
            elif t.assignments:
                code, msg, clean = self.validate_topic_request(t.name, len(t.assignments), 1, configs)
                if code == 0 and any(a.broker_ids != [NODE_ID] for a in t.assignments):
                    code, msg = ApiError.INVALID_REPLICA_ASSIGNMENT, "Only broker 0 exists."
            else:
                code, msg, clean = self.validate_topic_request(t.name, t.num_partitions,
                                                               t.replication_factor, configs)
            partitions = len(t.assignments) if t.assignments else (
                t.num_partitions if t.num_partitions > 0 else self.default_partitions)
            topic_id = uuid.UUID(int=0)
            if code == 0 and not request.validate_only:
                topic_id = self.create_topic(t.name, partitions, clean).topic_id
            res = T(name=t.name, topic_id=topic_id, error_code=code, error_message=msg,
                    num_partitions=partitions if code == 0 else -1,
                    replication_factor=1 if code == 0 else -1,
                    configs=[C(name=k, value=v, read_only=False,
                               config_source=_SOURCE_TOPIC if k in clean else _SOURCE_DEFAULT,
                               is_sensitive=False)
                             for k, v in sorted({**TOPIC_CONFIG_DEFAULTS, **clean}.items())]
                    if code == 0 else None)
            results.append(res)
        return R(version=version, throttle_time_ms=0, topics=results)

    def delete_topics(self, header, request):
        version = header.api_version
        R = DeleteTopicsResponse
        D = R.DeletableTopicResult
        results = []
        if version >= 6:
            wanted = [(t.name, t.topic_id) for t in request.topics]
        else:
            wanted = [(n, None) for n in request.topic_names]
        for name, topic_id in wanted:
            topic = None
            if name is not None:
                topic = self.topics.get(name)
            elif topic_id is not None and topic_id.int != 0:
                topic = self.topics_by_id.get(topic_id)
            if topic is None:
                code = ApiError.UNKNOWN_TOPIC_ID if name is None else ApiError.UNKNOWN_TOPIC_OR_PARTITION
                results.append(D(name=name, topic_id=topic_id or uuid.UUID(int=0), error_code=code,
                                 error_message="This server does not host this topic."))
                continue
            results.append(D(name=topic.name, topic_id=topic.topic_id, error_code=0, error_message=None))
            self.delete_topic(topic)
        return R(version=version, throttle_time_ms=0, responses=results)

    def create_partitions(self, header, request):
        R = CreatePartitionsResponse
        results = []
        for t in request.topics:
            topic = self.topics.get(t.name)
            code, msg = ApiError.NONE, None
            if topic is None:
                code, msg = ApiError.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic."
            elif t.count <= len(topic.partitions):
                code = ApiError.INVALID_PARTITIONS
                msg = (f"Topic currently has {len(topic.partitions)} partitions, which is higher than "
                       f"the requested {t.count}." if t.count < len(topic.partitions) else
                       f"Topic already has {t.count} partitions.")
            elif t.assignments is not None and (
                    len(t.assignments) != t.count - len(topic.partitions)
                    or any(a.broker_ids != [NODE_ID] for a in t.assignments)):
                code, msg = ApiError.INVALID_REPLICA_ASSIGNMENT, "Invalid replica assignment (only broker 0)."
            if code == 0 and not request.validate_only:
                topic.set_partition_count(t.count)
                log.info("topic %s now has %d partitions", topic.name, t.count)
            results.append(R.CreatePartitionsTopicResult(name=t.name, error_code=code, error_message=msg))
        return R(version=header.api_version, throttle_time_ms=0, results=results)

    def describe_configs(self, header, request):
        version = header.api_version
        R = DescribeConfigsResponse
        Res = R.DescribeConfigsResult
        C = Res.DescribeConfigsResourceResult
        results = []
        for res in request.resources:
            if res.resource_type == _RESOURCE_TOPIC:
                topic = self.topics.get(res.resource_name)
                if topic is None:
                    results.append(Res(error_code=ApiError.UNKNOWN_TOPIC_OR_PARTITION,
                                       error_message="This server does not host this topic.",
                                       resource_type=res.resource_type, resource_name=res.resource_name,
                                       configs=[]))
                    continue
                values = {**TOPIC_CONFIG_DEFAULTS, **topic.configs}
                explicit = topic.configs
            elif res.resource_type == _RESOURCE_BROKER and res.resource_name in ("", str(NODE_ID)):
                values = {"broker.id": str(NODE_ID), "auto.create.topics.enable":
                          str(self.auto_create_topics).lower(), "num.partitions": str(self.default_partitions)}
                explicit = {}
            else:
                results.append(Res(error_code=ApiError.INVALID_REQUEST,
                                   error_message="Only topic and broker resources are supported.",
                                   resource_type=res.resource_type, resource_name=res.resource_name,
                                   configs=[]))
                continue
            keys = res.configuration_keys
            configs = []
            for k in sorted(values):
                if keys is not None and k not in keys:
                    continue
                source = _SOURCE_TOPIC if k in explicit else _SOURCE_DEFAULT
                configs.append(C(name=k, value=values[k], read_only=False, config_source=source,
                                 is_default=k not in explicit, is_sensitive=False,
                                 synonyms=[C.DescribeConfigsSynonym(name=k, value=values[k], source=source)]
                                 if request.include_synonyms else [],
                                 config_type=_config_type(k) if res.resource_type == _RESOURCE_TOPIC else 0,
                                 documentation=None))
            results.append(Res(error_code=0, error_message=None, resource_type=res.resource_type,
                               resource_name=res.resource_name, configs=configs))
        return R(version=version, throttle_time_ms=0, results=results)

    # ------------------------------------------------------------------------------- Produce
    def init_producer_id(self, header, request):
        R = InitProducerIdResponse
        version = header.api_version
        if request.transactional_id is not None:
            return self.txns.init_producer_id(header, request)
        if version >= 3 and request.producer_id >= 0:
            # KIP-360 epoch bump for an existing idempotent producer.
            pid, epoch = request.producer_id, request.producer_epoch + 1
            if epoch > 32767:
                pid, epoch = self._new_producer_id(), 0
        else:
            pid, epoch = self._new_producer_id(), 0
        return R(version=version, throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=epoch)

    def _new_producer_id(self) -> int:
        pid = self.next_producer_id
        self.next_producer_id += 1
        atomic_write_json(self._pid_path, {"next": self.next_producer_id})
        return pid

    def _check_sequence(self, topic: str, partition: int, batches, records: bytes):
        """Idempotent producer checks. Returns (error, duplicate base offset or None, state update)."""
        from .log import BATCH_HEADER

        start = batches[0][0]
        (_b, _l, _e, _m, _c, _a, delta, _f, _t, pid, pepoch, seq, _n) = BATCH_HEADER.unpack_from(records, start)
        if pid < 0:
            return ApiError.NONE, None, None
        if len(batches) != 1:
            return ApiError.INVALID_RECORD, None, None
        key = (topic, partition, pid)
        state = self.producers.get(key)
        last_seq = (seq + delta) % 2**31
        if state is not None:
            if pepoch < state.epoch:
                return ApiError.INVALID_PRODUCER_EPOCH, None, None
            if pepoch == state.epoch:
                for first, last, base in state.batches:
                    if first == seq and last == last_seq:
                        return ApiError.NONE, base, None  # duplicate of a recent batch: same answer
                expected = (state.batches[-1][1] + 1) % 2**31 if state.batches else 0
                if seq != expected:
                    return ApiError.OUT_OF_ORDER_SEQUENCE_NUMBER, None, None
            elif seq != 0:
                return ApiError.OUT_OF_ORDER_SEQUENCE_NUMBER, None, None
        return ApiError.NONE, None, (key, pepoch, seq, last_seq)

    def produce(self, header, request):
        version = header.api_version
        acks = request.acks
        R = ProduceResponse
        T = R.TopicProduceResponse
        P = T.PartitionProduceResponse
        now = int(time.time() * 1000)
        responses = []
        for td in request.topic_data:
            if version >= 13:
                topic = self.topics_by_id.get(td.topic_id)
                unknown = ApiError.UNKNOWN_TOPIC_ID
            else:
                topic = self.topics.get(td.name)
                unknown = ApiError.UNKNOWN_TOPIC_OR_PARTITION
            parts = []
            for pd in td.partition_data:
                idx = pd.index
                if acks not in (0, 1, -1):
                    parts.append(P(index=idx, error_code=ApiError.INVALID_REQUIRED_ACKS, base_offset=-1,
                                   log_append_time_ms=-1, log_start_offset=-1, record_errors=[]))
                    continue
                if topic is None or not 0 <= idx < len(topic.partitions):
                    parts.append(P(index=idx, error_code=unknown, base_offset=-1, log_append_time_ms=-1,
                                   log_start_offset=-1, record_errors=[]))
                    continue
                plog = topic.partitions[idx]
                records = pd.records or b""
                try:
                    batches = parse_batches(records, verify_crc=crc32c_is_fast)
                    max_size = topic.max_message_bytes
                    if any(size > max_size for _s, size, _d, _t in batches):
                        raise BatchError(ApiError.MESSAGE_TOO_LARGE,
                                         f"record batch larger than max.message.bytes ({max_size})")
                    keyless = is_compacted(topic.configs) and keyless_record_error(records, batches)
                except BatchError as exc:
                    parts.append(P(index=idx, error_code=exc.code, base_offset=-1, log_append_time_ms=-1,
                                   log_start_offset=plog.log_start_offset, record_errors=[],
                                   error_message=str(exc)))
                    continue
                if keyless:
                    parts.append(self._keyless_rejected(P, idx, plog, f"{topic.name}-{idx}", *keyless))
                    continue
                code, dup_base, pstate = self._check_sequence(topic.name, idx, batches, records)
                if not code and dup_base is None:
                    code = self.txns.check_produce(topic.name, idx, records, batches[0][0])
                if code:
                    parts.append(P(index=idx, error_code=code, base_offset=-1, log_append_time_ms=-1,
                                   log_start_offset=plog.log_start_offset, record_errors=[]))
                    continue
                if dup_base is not None:
                    parts.append(P(index=idx, error_code=0, base_offset=dup_base, log_append_time_ms=-1,
                                   log_start_offset=plog.log_start_offset, record_errors=[]))
                    continue
                base, append_time = plog.append(records, batches, now if topic.log_append_time else None)
                self.txns.on_append(topic.name, idx, plog, records, batches[0][0], base)
                if pstate is not None:
                    key, pepoch, first_seq, last_seq = pstate
                    st = self.producers.get(key)
                    if st is None or st.epoch != pepoch:
                        st = self.producers[key] = _ProducerState(epoch=pepoch)
                    st.batches.append((first_seq, last_seq, base))
                self._wake(plog)
                parts.append(P(index=idx, error_code=0, base_offset=base, log_append_time_ms=append_time,
                               log_start_offset=plog.log_start_offset, record_errors=[]))
            responses.append(T(name=td.name, topic_id=td.topic_id, partition_responses=parts))
        if acks == 0:
            return None
        return R(version=version, responses=responses, throttle_time_ms=0)

    @staticmethod
    def _keyless_rejected(P, idx: int, plog: PartitionLog, where: str, record_index: int, message: str):
        """Kafka's answer to a record without a key for a compacted topic: INVALID_RECORD, with a record error."""
        message = f"{message} in topic partition {where}."
        return P(index=idx, error_code=ApiError.INVALID_RECORD, base_offset=-1, log_append_time_ms=-1,
                 log_start_offset=plog.log_start_offset, error_message=(
                     "One or more records have been rejected due to 1 record errors in total, and only showing the "
                     f"first three errors at most: [RecordError(batchIndex={record_index}, message='{message}')]"),
                 record_errors=[P.BatchIndexAndErrorMessage(batch_index=record_index,
                                                            batch_index_error_message=message)])

    # ------------------------------------------------------------------------------- compaction
    def compact(self, topic_name: str, now_ms: int | None = None) -> dict[int, dict[str, int]]:
        """One compaction pass over every partition of a compacted topic (compaction.py): partition -> counts."""
        topic = self.topics.get(topic_name)
        if topic is None:
            raise ValueError(f"unknown topic {topic_name!r}")
        if not is_compacted(topic.configs):
            raise ValueError(f"topic {topic_name!r} has cleanup.policy="
                             f"{topic.configs.get('cleanup.policy', 'delete')!r}: only compacted topics are compacted")
        retention = int(topic.configs.get("delete.retention.ms", TOPIC_CONFIG_DEFAULTS["delete.retention.ms"]))
        out = {}
        for i, plog in enumerate(topic.partitions):
            out[i] = compact_partition(plog, retention, now_ms).as_dict()
            self._wake(plog)  # a long-polling fetch re-reads the new files
        log.info("compacted %s: %s", topic_name, out)
        return out

    def compact_all(self) -> None:
        """A background pass: every compacted topic."""
        for name, topic in list(self.topics.items()):
            if is_compacted(topic.configs):
                self.compact(name)

    # ------------------------------------------------------------------------------- Fetch
    def _fetch_once(self, request, version):
        """One pass over the requested partitions: (response topics, bytes, any error)."""
        R = FetchResponse
        T = R.FetchableTopicResponse
        P = T.PartitionData
        remaining = request.max_bytes if version >= 3 else 2**31 - 1
        if remaining <= 0:
            remaining = 2**31 - 1
        total = 0
        error = False
        out = []
        read_committed = version >= 4 and request.isolation_level == 1
        for ft in request.topics:
            if version >= 13:
                topic = self.topics_by_id.get(ft.topic_id)
                unknown = ApiError.UNKNOWN_TOPIC_ID
            else:
                topic = self.topics.get(ft.topic)
                unknown = ApiError.UNKNOWN_TOPIC_OR_PARTITION
            parts = []
            for fp in ft.partitions:
                idx = fp.partition
                if topic is None or not 0 <= idx < len(topic.partitions):
                    error = True
                    parts.append(P(partition_index=idx, error_code=unknown, high_watermark=-1,
                                   last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                                   preferred_read_replica=-1, records=b""))
                    continue
                plog = topic.partitions[idx]
                hw = plog.high_watermark
                lso = plog.log_start_offset
                stable = self.txns.last_stable_offset(topic.name, idx, hw)
                offset = fp.fetch_offset
                if offset < lso or offset > hw:
                    error = True
                    parts.append(P(partition_index=idx, error_code=ApiError.OFFSET_OUT_OF_RANGE,
                                   high_watermark=hw, last_stable_offset=stable, log_start_offset=lso,
                                   aborted_transactions=None, preferred_read_replica=-1, records=b""))
                    continue
                limit = min(fp.partition_max_bytes, remaining)
                # read_committed: nothing at or past the last stable offset, and the aborted transactions
                # of the range so the client can drop their records
                data = plog.read(offset, max(limit, 0), min_one=(total == 0),
                                 end_offset=stable if read_committed else None)
                total += len(data)
                remaining -= len(data)
                aborted = self._aborted_transactions(topic.name, idx, offset, stable, P) if read_committed else None
                parts.append(P(partition_index=idx, error_code=0, high_watermark=hw, last_stable_offset=stable,
                               log_start_offset=lso, aborted_transactions=aborted, preferred_read_replica=-1,
                               records=data))
            out.append(T(topic=ft.topic, topic_id=ft.topic_id, partitions=parts))
        return out, total, error

    def _aborted_transactions(self, topic: str, partition: int, start: int, end: int, P) -> list:
        txns = self.txns.partition(topic, partition)
        return [P.AbortedTransaction(producer_id=pid, first_offset=first)
                for pid, first in (txns.aborted_between(start, end) if txns else [])]

    async def fetch(self, header, request):
        version = header.api_version
        out, total, error = self._fetch_once(request, version)
        if not error and total < max(request.min_bytes, 1) and request.max_wait_ms > 0:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + request.max_wait_ms / 1000.0
            while True:
                timeout = deadline - loop.time()
                if timeout <= 0:
                    break
                fut = loop.create_future()
                plogs = []
                for ft in request.topics:
                    topic = (self.topics_by_id.get(ft.topic_id) if version >= 13
                             else self.topics.get(ft.topic))
                    if topic is None:
                        continue
                    for fp in ft.partitions:
                        if 0 <= fp.partition < len(topic.partitions):
                            plogs.append(topic.partitions[fp.partition])
                for plog in plogs:
                    plog.waiters.add(fut)
                try:
                    await asyncio.wait_for(fut, timeout)
                except TimeoutError:
                    pass
                finally:
                    for plog in plogs:
                        plog.waiters.discard(fut)
                out, total, error = self._fetch_once(request, version)
                if error or total >= max(request.min_bytes, 1):
                    break
        self._count_fetched(out)
        return FetchResponse(version=version, throttle_time_ms=0, error_code=0, session_id=0, responses=out)

    def _count_fetched(self, out) -> None:
        """Add the records of the batches in a Fetch response to ``fetched_records`` (from the batch headers)."""
        from .log import BATCH_HEADER

        for t in out:
            name = t.topic or getattr(self.topics_by_id.get(t.topic_id), "name", "?")
            for p in t.partitions:
                data, pos = p.records or b"", 0
                while pos + BATCH_HEADER.size <= len(data):
                    fields = BATCH_HEADER.unpack_from(data, pos)
                    self.fetched_records[name] += fields[-1]
                    pos += fields[1] + 12  # length counts from after base offset (8) + length (4)

    # ------------------------------------------------------------------------------- offsets
    def list_offsets(self, header, request):
        version = header.api_version
        R = ListOffsetsResponse
        T = R.ListOffsetsTopicResponse
        P = T.ListOffsetsPartitionResponse
        topics = []
        for t in request.topics:
            topic = self.topics.get(t.name)
            parts = []
            for p in t.partitions:
                plog = None if topic is None or not 0 <= p.partition_index < len(topic.partitions) \
                    else topic.partitions[p.partition_index]
                if plog is None:
                    parts.append(P(partition_index=p.partition_index,
                                   error_code=ApiError.UNKNOWN_TOPIC_OR_PARTITION, timestamp=-1, offset=-1,
                                   leader_epoch=-1))
                    continue
                ts = p.timestamp
                if ts == -1 and version >= 2 and request.isolation_level == 1:  # latest committed: the LSO
                    offset, found_ts = self.txns.last_stable_offset(t.name, p.partition_index,
                                                                    plog.high_watermark), -1
                elif ts == -1:  # latest
                    offset, found_ts = plog.high_watermark, -1
                elif ts in (-2, -4):  # earliest, earliest-local
                    offset, found_ts = plog.log_start_offset, -1
                elif ts == -3:  # max timestamp (KIP-734)
                    offset, found_ts = plog.max_timestamp_offset()
                elif ts == -5:  # latest tiered: nothing is tiered here
                    offset, found_ts = -1, -1
                elif ts < 0:
                    parts.append(P(partition_index=p.partition_index, error_code=ApiError.INVALID_REQUEST,
                                   timestamp=-1, offset=-1, leader_epoch=-1))
                    continue
                else:
                    offset, found_ts = plog.offset_for_timestamp(ts)
                parts.append(P(partition_index=p.partition_index, error_code=0, timestamp=found_ts,
                               offset=offset, leader_epoch=LEADER_EPOCH if offset >= 0 else -1))
            topics.append(T(name=t.name, partitions=parts))
        return R(version=version, throttle_time_ms=0, topics=topics)

    def offset_for_leader_epoch(self, header, request):
        R = OffsetForLeaderEpochResponse
        T = R.OffsetForLeaderTopicResult
        P = T.EpochEndOffset
        topics = []
        for t in request.topics:
            topic = self.topics.get(t.topic)
            parts = []
            for p in t.partitions:
                plog = None if topic is None or not 0 <= p.partition < len(topic.partitions) \
                    else topic.partitions[p.partition]
                if plog is None:
                    parts.append(P(error_code=ApiError.UNKNOWN_TOPIC_OR_PARTITION, partition=p.partition,
                                   leader_epoch=-1, end_offset=-1))
                elif p.leader_epoch > LEADER_EPOCH:
                    # An epoch this log never had: unknown (Kafka answers UNDEFINED_EPOCH/-1 offsets).
                    parts.append(P(error_code=0, partition=p.partition, leader_epoch=-1, end_offset=-1))
                else:
                    parts.append(P(error_code=0, partition=p.partition, leader_epoch=LEADER_EPOCH,
                                   end_offset=plog.high_watermark))
            topics.append(T(topic=t.topic, partitions=parts))
        return R(version=header.api_version, throttle_time_ms=0, topics=topics)

    def delete_records(self, header, request):
        R = DeleteRecordsResponse
        T = R.DeleteRecordsTopicResult
        P = T.DeleteRecordsPartitionResult
        topics = []
        for t in request.topics:
            topic = self.topics.get(t.name)
            parts = []
            for p in t.partitions:
                plog = None if topic is None or not 0 <= p.partition_index < len(topic.partitions) \
                    else topic.partitions[p.partition_index]
                if plog is None:
                    parts.append(P(partition_index=p.partition_index, low_watermark=-1,
                                   error_code=ApiError.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                if _compact_only(topic.configs):  # as Kafka: records go from a compact-only log by compaction alone
                    parts.append(P(partition_index=p.partition_index, low_watermark=-1,
                                   error_code=ApiError.POLICY_VIOLATION))
                    continue
                offset = plog.high_watermark if p.offset == -1 else p.offset
                if offset < 0 or offset > plog.high_watermark:
                    parts.append(P(partition_index=p.partition_index, low_watermark=-1,
                                   error_code=ApiError.OFFSET_OUT_OF_RANGE))
                    continue
                low = plog.delete_records(offset)
                parts.append(P(partition_index=p.partition_index, low_watermark=low, error_code=0))
            topics.append(T(name=t.name, partitions=parts))
        return R(version=header.api_version, throttle_time_ms=0, topics=topics)

    # ------------------------------------------------------------------------------- transactions
    def add_partitions_to_txn(self, header, request):
        return self.txns.add_partitions_to_txn(header, request)

    def add_offsets_to_txn(self, header, request):
        return self.txns.add_offsets_to_txn(header, request)

    def txn_offset_commit(self, header, request):
        return self.txns.txn_offset_commit(header, request)

    def end_txn(self, header, request):
        return self.txns.end_txn(header, request)

    # ------------------------------------------------------------------------------- groups
    def find_coordinator(self, header, request):
        """Consumer groups (key type 0) and transactions (1) are coordinated by this broker; share groups
        (2) are not supported, so their coordinator is not available."""
        version = header.api_version
        R = FindCoordinatorResponse
        key_type = request.key_type if version >= 1 else 0
        ours = key_type in (0, 1)
        error = ApiError.NONE if ours else ApiError.COORDINATOR_NOT_AVAILABLE
        message = None if ours else "The dev broker has no share coordinator."
        node, host, port = (NODE_ID, self.host, self.port) if ours else (-1, "", -1)
        if version >= 4:
            coords = [R.Coordinator(key=k, node_id=node, host=host, port=port, error_code=error,
                                    error_message=message) for k in request.coordinator_keys]
            return R(version=version, throttle_time_ms=0, coordinators=coords)
        return R(version=version, throttle_time_ms=0, error_code=error, error_message=message, node_id=node,
                 host=host, port=port)

    def offset_commit(self, header, request):
        version = header.api_version
        R = OffsetCommitResponse
        T = R.OffsetCommitResponseTopic
        P = T.OffsetCommitResponsePartition
        group_error = ApiError.NONE
        if not request.group_id:
            group_error = ApiError.INVALID_GROUP_ID
        elif request.member_id:
            group_error = ApiError.UNKNOWN_MEMBER_ID  # no group membership: only simple consumers
        elif request.group_id in self.groups.members:
            # Kafka takes a commit from outside the group (generation -1, no member id, e.g. AdminClient's
            # alter_consumer_group_offsets) only while the group is Empty
            group_error = ApiError.UNKNOWN_MEMBER_ID
        elif request.generation_id_or_member_epoch not in (-1,):
            group_error = ApiError.ILLEGAL_GENERATION
        commits = {}
        topics = []
        for t in request.topics:
            topic = self.topics_by_id.get(t.topic_id) if version >= 10 else self.topics.get(t.name)
            parts = []
            for p in t.partitions:
                code = group_error
                if not code and (topic is None or not 0 <= p.partition_index < len(topic.partitions)):
                    code = ApiError.UNKNOWN_TOPIC_ID if version >= 10 else ApiError.UNKNOWN_TOPIC_OR_PARTITION
                if not code:
                    commits[(topic.name, p.partition_index)] = (
                        p.committed_offset, p.committed_leader_epoch, p.committed_metadata)
                parts.append(P(partition_index=p.partition_index, error_code=code))
            topics.append(T(name=t.name, topic_id=t.topic_id, partitions=parts))
        if commits:
            self.groups.commit(request.group_id, commits)
        return R(version=version, throttle_time_ms=0, topics=topics)

    def _group_offsets(self, group: str, topics, by_id: bool):
        """[(name, topic_id, [(partition, offset, epoch, metadata, error)])] for a fetch request."""
        stored = self.groups.fetch(group)
        result = []
        if topics is None:
            by_topic: dict[str, list] = {}
            for (t, p), (o, e, m) in sorted(stored.items()):
                by_topic.setdefault(t, []).append((p, o, e, m, 0))
            for t, parts in by_topic.items():
                topic = self.topics.get(t)
                result.append((t, topic.topic_id if topic else uuid.UUID(int=0), parts))
            return result
        for t in topics:
            if by_id:
                topic = self.topics_by_id.get(t.topic_id)
                name = topic.name if topic else None
            else:
                name = t.name
                topic = self.topics.get(name)
            parts = []
            for p in t.partition_indexes:
                if by_id and topic is None:
                    parts.append((p, -1, -1, "", ApiError.UNKNOWN_TOPIC_ID))
                    continue
                o, e, m = stored.get((name, p), (-1, -1, ""))
                parts.append((p, o, e, m, 0))
            result.append((name, t.topic_id if by_id else (topic.topic_id if topic else uuid.UUID(int=0)),
                           parts))
        return result

    def offset_fetch(self, header, request):
        version = header.api_version
        R = OffsetFetchResponse
        if version <= 7:
            T = R.OffsetFetchResponseTopic
            P = T.OffsetFetchResponsePartition
            topics = [
                T(name=name, partitions=[P(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                           metadata=m, error_code=err) for p, o, e, m, err in parts])
                for name, _tid, parts in self._group_offsets(request.group_id, request.topics, False)
            ]
            return R(version=version, throttle_time_ms=0, topics=topics, error_code=0)
        G = R.OffsetFetchResponseGroup
        T = G.OffsetFetchResponseTopics
        P = T.OffsetFetchResponsePartitions
        groups = []
        for g in request.groups:
            topics = [
                T(name=name, topic_id=tid, partitions=[P(partition_index=p, committed_offset=o,
                                                         committed_leader_epoch=e, metadata=m,
                                                         error_code=err) for p, o, e, m, err in parts])
                for name, tid, parts in self._group_offsets(g.group_id, g.topics, version >= 10)
            ]
            groups.append(G(group_id=g.group_id, topics=topics, error_code=0))
        return R(version=version, throttle_time_ms=0, groups=groups)

    # ------------------------------------------------------------------------------------------- group listing
    # Groups here only ever hold committed offsets (no membership): Kafka shows such a classic group as
    # state "Empty" with protocol type "" (kafka-consumer-groups --list / --describe see them the same way), and
    # a group whose offsets are all gone (its topics deleted) as not existing.
    # A group a test marked as in use (KafkaDevBroker.occupy_group) shows as Kafka shows a running consumer's
    # group: Stable, protocol type "consumer", its one member.
    def _existing_groups(self) -> list[str]:
        return sorted({g for g, offsets in self.groups.groups.items() if offsets} | set(self.groups.members))

    def _group_state(self, group: str) -> tuple[str, str]:
        """(state, protocol type) of an existing group."""
        return ("Stable", "consumer") if group in self.groups.members else ("Empty", "")

    def list_groups(self, header, request):
        version = header.api_version
        R = ListGroupsResponse
        states = {s.lower() for s in (request.states_filter or [])} if version >= 4 else set()
        types = {t.lower() for t in (request.types_filter or [])} if version >= 5 else set()
        listed = []
        for group in self._existing_groups():
            state, protocol_type = self._group_state(group)
            if states and state.lower() not in states or types and "classic" not in types:
                continue
            listed.append(R.ListedGroup(group_id=group, protocol_type=protocol_type, group_state=state,
                                        group_type="classic"))
        return R(version=version, throttle_time_ms=0, error_code=0, groups=listed)

    def describe_groups(self, header, request):
        version = header.api_version
        R = DescribeGroupsResponse
        G = R.DescribedGroup
        existing = set(self._existing_groups())
        described = []
        for group in request.groups:
            if group in existing:
                state, protocol_type = self._group_state(group)
                members = [G.DescribedGroupMember(
                    member_id=self.groups.members[group], group_instance_id=None, client_id="consumer",
                    client_host="/127.0.0.1", member_metadata=b"", member_assignment=b"")
                ] if group in self.groups.members else []
                described.append(G(error_code=0, error_message=None, group_id=group, group_state=state,
                                   protocol_type=protocol_type, protocol_data="range" if members else "",
                                   members=members))
            elif not group:
                described.append(G(error_code=ApiError.INVALID_GROUP_ID, error_message=None, group_id=group,
                                   group_state="", protocol_type="", protocol_data="", members=[]))
            elif version >= 6:  # KIP-1043: v6 answers GROUP_ID_NOT_FOUND where older versions said "Dead"
                described.append(G(error_code=ApiError.GROUP_ID_NOT_FOUND, error_message=f"Group {group} not found.",
                                   group_id=group, group_state="Dead", protocol_type="", protocol_data="",
                                   members=[]))
            else:
                described.append(G(error_code=0, error_message=None, group_id=group, group_state="Dead",
                                   protocol_type="", protocol_data="", members=[]))
        return R(version=version, throttle_time_ms=0, groups=described)


HANDLER_NAMES: dict[int, str] = {
    0: "produce", 1: "fetch", 2: "list_offsets", 3: "metadata", 8: "offset_commit", 9: "offset_fetch",
    10: "find_coordinator", 18: "api_versions", 19: "create_topics", 20: "delete_topics",
    21: "delete_records", 22: "init_producer_id", 23: "offset_for_leader_epoch", 32: "describe_configs",
    37: "create_partitions", 60: "describe_cluster",
}
HANDLER_NAMES.update({15: "describe_groups", 16: "list_groups"})  # group listing
HANDLER_NAMES.update({17: "sasl_handshake", 36: "sasl_authenticate"})  # the server answers these (sasl.py)
HANDLER_NAMES.update({24: "add_partitions_to_txn", 25: "add_offsets_to_txn", 26: "end_txn", 28: "txn_offset_commit"})
assert set(HANDLER_NAMES) == set(SUPPORTED_APIS)


def _compact_only(configs: dict[str, str]) -> bool:
    """``cleanup.policy=compact`` without ``delete``: Kafka refuses DeleteRecords there (POLICY_VIOLATION)."""
    return [p.strip() for p in configs.get("cleanup.policy", "delete").split(",")] == ["compact"]
