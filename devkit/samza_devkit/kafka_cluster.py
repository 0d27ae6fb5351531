"""A replicated Apache Kafka cluster for tests: three KRaft nodes, each broker and controller in one JVM.

Why three combined nodes and not three brokers beside one controller: a quorum of three controllers survives the
loss of any one node, so every node can be killed, stopped or cut off in turn (a rolling restart) without the
cluster losing its metadata; a lone controller would be a node no test may touch. Combined, it is three JVMs
instead of four. Measured on a 2-core test machine at a load of about 5: the three nodes are ready about 26 s after
they are launched together (formatting included), each holds about 190-210 MB resident with a 384 MB heap
(``heap_mb``), a SIGKILLed leader's partitions had a new leader about 6-9 s later with a 6 s
``broker.session.timeout.ms`` (4 s now) and a restarted node is back in sync about 12 s after its start.

Settings beside the single node's (``samza_devkit.apache_kafka``): internal topics (``__consumer_offsets``, the
transaction log) and new topics replicated 3 with ``min.insync.replicas=2``, as production clusters run; the
settings operators lower to fail over faster, lowered: a replica leaves the in-sync set after
``replica.lag.time.max.ms`` (4 s here instead of 30 s) so the tests that cut a follower off wait seconds, not half
a minute; a node is fenced (its leaderships moved) 4 s after its last heartbeat (``broker.session.timeout.ms``,
heartbeats every 500 ms: a controlled shutdown also advances at each answer); preferred leaders come back within
5 s.

Where :func:`samza_devkit.netlab.available` says namespaces can be made, each node runs in a network namespace of
its own (``netlab``: a host per node on a bridge, its own address, fixed ports 9092 for clients and 9093 for the
controllers), so :meth:`KafkaCluster.cut` can isolate a node from the other nodes and from every client in the root
namespace, and :meth:`KafkaCluster.heal` bring it back. Elsewhere the nodes run on loopback ports and ``cut``
raises :class:`CutUnsupported` naming why (tests that cut skip with that reason).

Handles: per node ``kill`` (SIGKILL), ``stop`` (SIGTERM: Kafka's controlled shutdown moves its leaderships away
first), ``start`` (same data, same address); for the cluster ``leader_of``, ``isr``, ``replicas``, ``reassign``
(Kafka's own ``kafka-reassign-partitions`` tool: confluent-kafka has no AlterPartitionReassignments),
``wait_until_in_sync``, ``wait_for_leader``, ``create_topic``, ``active_controller``, ``transaction_coordinator``,
``start_node_soon`` (a restart overlapping the test's own waits). Every wait asks the cluster; none sleeps a fixed time.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from . import netlab
from .apache_kafka import _SETTINGS, ApacheKafkaBroker, _cluster_id, _free_ports
from .waits import wait_until

__all__ = ["CutUnsupported", "KafkaCluster", "KafkaNode"]

_CLIENT_PORT, _CONTROLLER_PORT = 9092, 9093
#: what a replicated cluster changes of the single node's settings (Kafka's defaults in brackets)
_CLUSTER_SETTINGS = {
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",  # the group coordinator moves with the node that leads its partition
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "3",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "replica.lag.time.max.ms": "4000",  # [30000] a cut follower leaves the ISR within seconds
    "controlled.shutdown.enable": "true",
    "leader.imbalance.check.interval.seconds": "5",  # [300] preferred leaders come back soon after a restart
    "num.replica.fetchers": "1",
    "controller.quorum.election.timeout.ms": "1000",  # [1000]
    "broker.session.timeout.ms": "4000",  # [9000] a killed node is fenced (its leaderships moved) sooner
    # [2000] a session of four heartbeats; a controlled shutdown also moves on at each heartbeat's answer
    "broker.heartbeat.interval.ms": "500",
}


class CutUnsupported(RuntimeError):
    """The nodes run on loopback (no network namespaces here): there is no link to cut."""


class KafkaNode(ApacheKafkaBroker):
    """One node of a :class:`KafkaCluster`: an :class:`ApacheKafkaBroker` whose ports, quorum and cluster ID the
    cluster chose, started inside its host's network namespace when there is one."""

    def __init__(self, cluster: KafkaCluster, node_id: int, home: Path, host: str, ports: dict[str, int],
                 namespace_host: str | None, heap_mb: int, config: dict[str, str]):
        super().__init__(home, heap_mb=heap_mb, host=host, config=config)
        self.node_id = node_id
        self.namespace_host = namespace_host  # the netlab host it runs in (None: the root namespace)
        self._cluster = cluster
        self._planned_ports = dict(ports)

    def _choose_ports(self) -> dict[str, int]:
        return dict(self._planned_ports)

    def _settings(self) -> dict[str, str]:
        return {**_SETTINGS, **_CLUSTER_SETTINGS, "node.id": str(self.node_id)}

    def _controller_host(self) -> str:
        return self.host

    def _quorum_voters(self) -> str:
        return self._cluster.quorum_voters

    def _launch_prefix(self) -> list[str]:
        lab = self._cluster.lab
        return lab.in_host(self.namespace_host, []) if lab is not None else []

    def _new_cluster_id(self) -> str:
        return self._cluster.cluster_id

    def _wait_until_ready(self) -> None:
        """The node answers (the single node's probe) and its own metadata lists it: registered and unfenced."""
        super()._wait_until_ready()
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.plaintext_bootstrap_servers, "logger": _quiet()})
        wait_until(lambda: self.node_id in admin.list_topics(timeout=5).brokers, self.start_timeout,
                   f"node {self.node_id} unfenced in its own metadata")


class KafkaCluster:
    """Three (``size``) Apache Kafka nodes replicating each other; see the module docstring.

    ``KafkaCluster(root).start()`` ... ``close()``, or a context manager. ``use_namespaces=False`` asks for loopback
    even where namespaces could be made."""

    def __init__(self, root: str | Path | None = None, *, size: int = 3, heap_mb: int = 384,
                 config: dict[str, str] | None = None, use_namespaces: bool = True):
        self._owns_root = root is None
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="samza-kafka-cluster-"))
        self.cluster_id = _cluster_id()
        self.fallback = netlab.available() if use_namespaces else "loopback asked for (use_namespaces=False)"
        self.lab = netlab.NetLab.create([f"k{i}" for i in range(1, size + 1)], services=1) \
            if self.fallback is None else None
        self.nodes: dict[int, KafkaNode] = {}
        for node_id in range(1, size + 1):
            if self.lab is not None:
                host_name = f"k{node_id}"
                host = self.lab.address(host_name)
                ports = {"PLAINTEXT": _CLIENT_PORT, "CONTROLLER": _CONTROLLER_PORT}
            else:
                host_name, host = None, "127.0.0.1"
                ports = _free_ports(["PLAINTEXT", "CONTROLLER"], host)
            self.nodes[node_id] = KafkaNode(self, node_id, self.root / f"node{node_id}", host, ports, host_name,
                                            heap_mb, dict(config or {}))
        self.quorum_voters = ",".join(f"{n.node_id}@{n.host}:{n._planned_ports['CONTROLLER']}"
                                      for n in self.nodes.values())
        self._admin = None

    # ------------------------------------------------------------------------------ lifecycle
    def start(self) -> KafkaCluster:
        """Start every node at once (a controller quorum needs two of three to elect a leader, so one node alone
        cannot become ready) and return when each is ready and the internal topics can be created."""
        try:
            with concurrent.futures.ThreadPoolExecutor(len(self.nodes)) as pool:
                for done in [pool.submit(node.start) for node in self.nodes.values()]:
                    done.result()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        for node in self.nodes.values():
            with contextlib.suppress(Exception):
                node.kill()
        if self.lab is not None:
            self.lab.close()
            self.lab = None
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------------------ addresses
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{n.host}:{n._planned_ports['PLAINTEXT']}" for n in self.nodes.values())

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[node_id]

    def live_nodes(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.running]

    # ------------------------------------------------------------------------------ faults
    def kill(self, node_id: int) -> None:
        self.nodes[node_id].kill()

    def stop(self, node_id: int) -> None:
        self.nodes[node_id].stop()

    def start_node(self, node_id: int) -> None:
        self.nodes[node_id].start()

    def start_node_soon(self, node_id: int) -> concurrent.futures.Future:
        """Start ``node_id`` from a thread while the caller goes on (its JVM start overlaps the test's own waits);
        the future's ``result()`` is the ready node, or raises what the start raised."""
        return _STARTER.submit(self.nodes[node_id].start)

    def cut(self, node_id: int, from_nodes: Iterable[int] | None = None, from_clients: bool = True) -> None:
        """Node ``node_id`` loses its links (both ways) to ``from_nodes`` (default: every other node) and, with
        ``from_clients``, to the root namespace, where the tests and their Spark driver run."""
        lab = self._lab_for_cut()
        me = self.nodes[node_id]
        for other in self._others(node_id, from_nodes):
            lab.cut(me.namespace_host, self.nodes[other].host)
            lab.cut(self.nodes[other].namespace_host, me.host)
        if from_clients:
            for address in lab.service_addresses:
                lab.cut(me.namespace_host, address)

    def heal(self, node_id: int | None = None) -> None:
        """Every cut of ``node_id`` (None: every cut of the cluster) undone."""
        lab = self._lab_for_cut()
        if node_id is None:
            lab.heal_all()
            return
        me = self.nodes[node_id]
        for host, address in list(lab._cuts):
            if host == me.namespace_host or address == me.host:
                lab.heal(host, address)

    def _others(self, node_id: int, chosen: Iterable[int] | None) -> list[int]:
        return [i for i in (chosen if chosen is not None else self.nodes) if i != node_id]

    def _lab_for_cut(self) -> netlab.NetLab:
        if self.lab is None:
            raise CutUnsupported(f"the Kafka nodes run on loopback, so no link can be cut: {self.fallback}")
        return self.lab

    # ------------------------------------------------------------------------------ metadata
    def admin(self):
        """An AdminClient on every live node (made anew when asked: a node that came back is in its list again)."""
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap_servers, "logger": _quiet(),
                            "socket.connection.setup.timeout.ms": "3000", "socket.timeout.ms": "5000"})

    def partitions(self, topic: str) -> dict[int, dict]:
        """``{partition: {"leader": id or None, "replicas": [...], "isr": [...]}}`` as the metadata shows now."""
        md = self.admin().list_topics(topic, timeout=10).topics[topic]
        if md.error is not None:
            raise RuntimeError(f"metadata of {topic}: {md.error}")
        return {p: {"leader": pm.leader if pm.leader >= 0 else None, "replicas": list(pm.replicas),
                    "isr": sorted(pm.isrs)} for p, pm in sorted(md.partitions.items())}

    def leader_of(self, topic: str, partition: int) -> int | None:
        return self.partitions(topic)[partition]["leader"]

    def isr(self, topic: str, partition: int) -> list[int]:
        return self.partitions(topic)[partition]["isr"]

    def replicas(self, topic: str, partition: int) -> list[int]:
        return self.partitions(topic)[partition]["replicas"]

    def active_controller(self) -> int:
        """The node id of the controllers' quorum leader, from Kafka's ``kafka-metadata-quorum describe --status``
        (the DescribeCluster answer names a random broker in KRaft, not the active controller)."""
        out = self.run_tool("org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server",
                            self.bootstrap_servers, "describe", "--status").stdout
        for line in out.splitlines():
            name, _, value = line.partition(":")
            if name.strip() == "LeaderId":
                return int(value)
        raise RuntimeError(f"no LeaderId in kafka-metadata-quorum's answer: {out[-500:]}")

    def transaction_coordinator(self, transactional_id: str) -> int:
        """The node coordinating ``transactional_id``: the leader of its partition of ``__transaction_state``,
        ``abs(hashCode) % partitions`` as Kafka's TransactionStateManager.partitionFor computes it (confluent-kafka
        has no DescribeTransactions). The topic exists once a first transactional producer initialised."""
        partitions = len(self.partitions("__transaction_state"))
        return self.leader_of("__transaction_state", _java_abs(_java_string_hash(transactional_id)) % partitions)

    def wait_for_leader(self, topic: str, partition: int, *, not_on: Iterable[int] = (), timeout: float = 60):
        """The partition's leader once it has one that is not in ``not_on`` (a node just lost)."""
        excluded = set(not_on)

        def leader():
            with contextlib.suppress(Exception):
                found = self.leader_of(topic, partition)
                return found if found is not None and found not in excluded else None
            return None

        return wait_until(leader, timeout, f"a leader of {topic}[{partition}] other than {sorted(excluded)}")

    def wait_until_in_sync(self, topics: Iterable[str], timeout: float = 90) -> None:
        """Every partition of ``topics`` has a leader and every replica in its ISR (a restarted node caught up)."""
        topics = list(topics)

        def lagging():
            out = {}
            for topic in topics:
                try:
                    parts = self.partitions(topic)
                except Exception as exc:  # noqa: BLE001 - metadata not answered yet: ask again
                    return {topic: str(exc)}
                out.update({f"{topic}[{p}]": d for p, d in parts.items()
                            if d["leader"] is None or sorted(d["replicas"]) != d["isr"]})
            return out

        wait_until(lambda: not lagging(), timeout, f"every replica of {', '.join(topics)} in sync", seen=lagging)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     config: dict[str, str] | None = None, replicas: list[list[int]] | None = None) -> str:
        """Create ``name`` and return once every partition has a leader and every replica is in sync.
        ``replicas``: the node ids of each partition's replicas (the first preferred), instead of a count."""
        from confluent_kafka.admin import NewTopic

        if replicas is not None:
            # Kafka's own kafka-topics: confluent-kafka 2.16 refuses every NewTopic with a replica assignment
            # locally ("a default partition count and a replica assignment are mutually exclusive", even at -1)
            args = ["--bootstrap-server", self.bootstrap_servers, "--create", "--topic", name,
                    "--replica-assignment", ",".join(":".join(map(str, r)) for r in replicas)]
            for key, value in (config or {}).items():
                args += ["--config", f"{key}={value}"]
            self.run_tool("org.apache.kafka.tools.TopicCommand", *args)
            partitions = len(replicas)
        else:
            admin = self.admin()  # kept referenced: a collected AdminClient fails its pending futures (_DESTROY)
            admin.create_topics([NewTopic(name, partitions, replication_factor, config=config or {})],
                                operation_timeout=30)[name].result(60)
        wait_until(lambda: _count(self, name) == partitions, 60, f"{partitions} partitions of {name} in metadata")
        self.wait_until_in_sync([name])
        return name

    def elect_unclean(self, topic: str, partition: int, *, not_on: Iterable[int] = (), timeout: float = 60) -> int:
        """Ask the controller for an unclean leader election of ``topic[partition]`` (a replica out of the ISR may
        become leader, its log cut back to what it had) instead of waiting for its periodic one, until a node not
        in ``not_on`` (the dead leader, which the metadata names until it is fenced) leads; that node."""
        from confluent_kafka import ElectionType, TopicPartition

        excluded = set(not_on)

        def elected():
            admin = self.admin()  # kept referenced while its future runs (a collected client fails it)
            with contextlib.suppress(Exception):  # refused until a replica is up to elect: ask again
                admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition(topic, partition)]).result(10)
            with contextlib.suppress(Exception):
                leader = self.leader_of(topic, partition)
                return leader if leader is not None and leader not in excluded else None
            return None

        return wait_until(elected, timeout, f"an unclean election of {topic}[{partition}]", interval=0.5)

    def reassign(self, topic: str, replicas: dict[int, list[int]], timeout: float = 120) -> None:
        """Move partitions of ``topic`` to ``replicas`` (partition -> node ids, the first preferred) with Kafka's
        ``kafka-reassign-partitions`` and return when the move is complete (no replica still adding/removing)."""
        plan = {"version": 1, "partitions": [{"topic": topic, "partition": p, "replicas": r}
                                             for p, r in sorted(replicas.items())]}
        path = self.root / f"reassign-{topic}-{time.monotonic_ns()}.json"
        path.write_text(json.dumps(plan))
        tool = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
        node = self.nodes[self.live_nodes()[0]]
        node.run_tool(tool, "--bootstrap-server", self.bootstrap_servers, "--reassignment-json-file", str(path),
                      "--execute")

        def done():
            out = node.run_tool(tool, "--bootstrap-server", self.bootstrap_servers, "--reassignment-json-file",
                                str(path), "--verify").stdout
            return "is still in progress" not in out and out

        wait_until(done, timeout, f"the reassignment of {topic} complete", interval=1)
        wait_until(lambda: all(self.replicas(topic, p) == r for p, r in replicas.items()), 30,
                   f"{topic}'s replicas as reassigned")

    def run_tool(self, main_class: str, *args: str, timeout: float = 120.0):
        return self.nodes[self.live_nodes()[0]].run_tool(main_class, *args, timeout=timeout)

    def log_paths(self) -> list[Path]:
        return [n.log_path for n in self.nodes.values()]


def _java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (31-based over UTF-16 code units, as a signed 32-bit int)."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _java_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: Integer.MIN_VALUE maps to 0 (Java's own Math.abs would leave it negative)."""
    return 0 if n == -(1 << 31) else abs(n)


_STARTER = concurrent.futures.ThreadPoolExecutor(3, thread_name_prefix="kafka-cluster-starter")


def _count(cluster: KafkaCluster, topic: str) -> int:
    with contextlib.suppress(Exception):
        return len(cluster.partitions(topic))
    return 0


def _quiet():
    from .apache_kafka import _QUIET

    return _QUIET
