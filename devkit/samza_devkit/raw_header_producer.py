"""Produce records whose header keys are arbitrary bytes (an embedded NUL, invalid UTF-8), through librdkafka's C
API called with ctypes: confluent-kafka's producer takes header keys as ``str`` and passes them NUL-terminated, so
it can send neither. For the reader tests of such keys; the librdkafka is the one the native reader loads."""

from __future__ import annotations

import ctypes

from spark_samza_source.kafka.executor.native_reader import _librdkafka_candidates

__all__ = ["produce_raw_headers"]

_PRODUCER = 0
_VTYPE_END, _VTYPE_TOPIC, _VTYPE_PARTITION, _VTYPE_VALUE, _VTYPE_MSGFLAGS, _VTYPE_HEADERS = 0, 1, 3, 4, 7, 10
_MSG_F_COPY = 2


def _librdkafka() -> ctypes.CDLL:
    for path in _librdkafka_candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name, restype in (("rd_kafka_conf_new", ctypes.c_void_p), ("rd_kafka_new", ctypes.c_void_p),
                              ("rd_kafka_headers_new", ctypes.c_void_p), ("rd_kafka_err2str", ctypes.c_char_p)):
            getattr(lib, name).restype = restype
        lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.c_size_t]
        lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.rd_kafka_headers_new.argtypes = [ctypes.c_size_t]
        lib.rd_kafka_header_add.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ssize_t, ctypes.c_char_p,
                                            ctypes.c_ssize_t]
        lib.rd_kafka_flush.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_err2str.argtypes = [ctypes.c_int]
        return lib
    raise RuntimeError("no loadable librdkafka")


def produce_raw_headers(bootstrap: str, topic: str, partition: int,
                        records: list[tuple[bytes, list[tuple[bytes, bytes | None]]]]) -> None:
    """Produce ``(value, [(header key bytes, header value or None), ...])`` records to ``topic[partition]`` and
    wait until all are delivered (raises on a failure)."""
    lib = _librdkafka()
    err = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    for key, value in (("bootstrap.servers", bootstrap), ("acks", "all")):
        if lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), err, 512) != 0:
            raise RuntimeError(f"librdkafka refused {key}: {err.value.decode()}")
    rk = lib.rd_kafka_new(_PRODUCER, conf, err, 512)
    if not rk:
        raise RuntimeError(f"cannot create a librdkafka producer: {err.value.decode()}")
    try:
        for value, headers in records:
            hdrs = lib.rd_kafka_headers_new(len(headers))
            for name, hvalue in headers:
                lib.rd_kafka_header_add(hdrs, name, len(name), hvalue, -1 if hvalue is None else len(hvalue))
            code = lib.rd_kafka_producev(
                ctypes.c_void_p(rk), ctypes.c_int(_VTYPE_TOPIC), ctypes.c_char_p(topic.encode()),
                ctypes.c_int(_VTYPE_PARTITION), ctypes.c_int32(partition),
                ctypes.c_int(_VTYPE_VALUE), ctypes.c_char_p(value), ctypes.c_size_t(len(value)),
                ctypes.c_int(_VTYPE_MSGFLAGS), ctypes.c_int(_MSG_F_COPY),
                ctypes.c_int(_VTYPE_HEADERS), ctypes.c_void_p(hdrs), ctypes.c_int(_VTYPE_END))
            if code != 0:
                lib.rd_kafka_headers_destroy(ctypes.c_void_p(hdrs))
                raise RuntimeError(f"produce failed: {lib.rd_kafka_err2str(code).decode()}")
        if lib.rd_kafka_flush(rk, 30_000) != 0:
            raise RuntimeError("records not delivered within 30 s")
    finally:
        lib.rd_kafka_destroy(ctypes.c_void_p(rk))
