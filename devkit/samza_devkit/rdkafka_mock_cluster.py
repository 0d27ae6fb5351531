"""librdkafka's own mock Kafka cluster, driven through ctypes: the second broker the development broker is compared
with (the broker benchmark, the differential tests). Test tooling only.

librdkafka ships it in the library confluent-kafka's wheel bundles (``rd_kafka_mock_cluster_new``), so nothing is
installed for it; it cannot describe topics, add partitions or answer timestamp lookups, which is why the
project has a broker of its own.
"""

from __future__ import annotations

import ctypes
import glob
from pathlib import Path

import confluent_kafka as ck

__all__ = ["RdkafkaMockCluster"]


def _librdkafka() -> ctypes.CDLL:
    """The librdkafka that confluent-kafka itself loaded (bundled in the wheel), or the system one."""
    pkg_dir = Path(ck.__file__).resolve().parent
    candidates = sorted(glob.glob(str(pkg_dir.parent / "confluent_kafka.libs" / "librdkafka*.so*")))
    candidates += sorted(glob.glob(str(pkg_dir / ".dylibs" / "librdkafka*.dylib")))
    candidates += ["librdkafka.so.1", "librdkafka.dylib"]
    last_error: OSError | None = None
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            last_error = exc
            continue
        if hasattr(lib, "rd_kafka_mock_cluster_new"):
            return lib
    raise RuntimeError(f"no librdkafka with the mock cluster API found ({last_error})")


class RdkafkaMockCluster:
    """librdkafka's mock Kafka cluster (``rd_kafka_mock_cluster_new``), reachable at ``bootstrap_servers``.

    The mock cluster runs on librdkafka's own threads (no GIL).  Its topics must be created with
    :meth:`create_topic` (the mock does not implement the CreateTopics API); it has no timestamp index
    (``offsets_for_times`` answers -1) and cannot add partitions.
    """

    def __init__(self, num_brokers: int = 1):
        lib = _librdkafka()
        vp = ctypes.c_void_p
        lib.rd_kafka_conf_new.restype = vp
        lib.rd_kafka_conf_set.argtypes = [vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.rd_kafka_new.restype = vp
        lib.rd_kafka_new.argtypes = [ctypes.c_int, vp, ctypes.c_char_p, ctypes.c_size_t]
        lib.rd_kafka_destroy.argtypes = [vp]
        lib.rd_kafka_mock_cluster_new.restype = vp
        lib.rd_kafka_mock_cluster_new.argtypes = [vp, ctypes.c_int]
        lib.rd_kafka_mock_cluster_destroy.argtypes = [vp]
        lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [vp]
        lib.rd_kafka_mock_topic_create.argtypes = [vp, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        lib.rd_kafka_mock_set_controller_id.argtypes = [vp, ctypes.c_int32]
        self._lib = lib
        errstr = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        # The handle only owns the cluster: keep it quiet (it has no bootstrap servers of its own).
        lib.rd_kafka_conf_set(conf, b"log_level", b"0", errstr, len(errstr))
        self._rk = lib.rd_kafka_new(0, conf, errstr, len(errstr))  # RD_KAFKA_PRODUCER
        if not self._rk:
            raise RuntimeError(f"rd_kafka_new failed: {errstr.value.decode()}")
        self._mc = lib.rd_kafka_mock_cluster_new(self._rk, num_brokers)
        if not self._mc:
            lib.rd_kafka_destroy(self._rk)
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        # Brokers are numbered from 1 but the mock reports controller id 0 (no such broker) unless told.
        lib.rd_kafka_mock_set_controller_id(self._mc, 1)
        self.bootstrap_servers = lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        err = self._lib.rd_kafka_mock_topic_create(self._mc, name.encode(), partitions, replication_factor)
        if err != 0:
            raise RuntimeError(f"rd_kafka_mock_topic_create({name!r}) failed: {ck.KafkaError(err)}")

    def close(self) -> None:
        if self._mc:
            self._lib.rd_kafka_mock_cluster_destroy(self._mc)
            self._mc = None
        if self._rk:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None

    def __enter__(self) -> RdkafkaMockCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
