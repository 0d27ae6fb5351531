"""Glue between the wire and kafka-python 3.0.12's generated protocol classes.

kafka-python generates one request and one response class per API from Kafka's own JSON message
schemas (``kafka/protocol/schemas/resources``), including flexible versions (compact strings and
arrays, tagged fields).  This module only adds what a *server* needs on top of them: parse a request
header, decode a request body for the version the client chose, and encode a response with the
right response-header version.  No request or response body is encoded by hand here.
"""

from __future__ import annotations

import struct
import warnings
from dataclasses import dataclass

with warnings.catch_warnings():
    # kafka-python 3.0.12 loads its JSON schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.protocol.admin as _admin
    import kafka.protocol.consumer as _consumer
    import kafka.protocol.metadata as _metadata
    import kafka.protocol.producer as _producer
    import kafka.protocol.sasl as _sasl
    from kafka.protocol.api_message import ApiMessage

__all__ = [
    "ApiError",
    "MalformedRequest",
    "RequestHeader",
    "REQUEST_CLASSES",
    "RESPONSE_CLASSES",
    "decode_request",
    "encode_response",
    "parse_request_header",
]

# Kafka error codes used by the broker (org.apache.kafka.common.protocol.Errors).
class ApiError:
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    MESSAGE_TOO_LARGE = 10
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    OPERATION_NOT_ATTEMPTED = 55
    PRODUCER_FENCED = 90
    INVALID_TIMESTAMP = 32
    UNKNOWN_PRODUCER_ID = 59
    INVALID_RECORD = 87
    UNKNOWN_TOPIC_ID = 100
    INCONSISTENT_TOPIC_ID = 103
    GROUP_ID_NOT_FOUND = 69
    SASL_AUTHENTICATION_FAILED = 58
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_SASL_MECHANISM = 33


class MalformedRequest(Exception):
    """The frame cannot be parsed: the connection that sent it is closed."""


def _collect() -> tuple[dict[int, type], dict[int, type]]:
    requests: dict[int, type] = {}
    responses: dict[int, type] = {}
    for mod in (_admin, _consumer, _metadata, _producer, _sasl):
        for name in mod.__all__:
            cls = getattr(mod, name)
            if isinstance(cls, type) and issubclass(cls, ApiMessage) and cls._json is not None:
                (requests if cls.is_request() else responses)[cls.API_KEY] = cls
    return requests, responses


REQUEST_CLASSES, RESPONSE_CLASSES = _collect()

_HEADER = struct.Struct(">hhih")


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int  # where the request body starts in the frame


def _read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 28:
            raise MalformedRequest("bad unsigned varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def parse_request_header(frame: memoryview, flexible: bool | None = None) -> RequestHeader:
    """Request header v1 (or v2 when ``flexible``; None: decide from the API's schema).

    Header v2 only adds tagged fields after the client id; the client id itself stays a
    non-compact nullable string in every version (the one quirk of KIP-482).
    """
    if len(frame) < _HEADER.size:
        raise MalformedRequest("frame shorter than a request header")
    api_key, api_version, correlation_id, cid_len = _HEADER.unpack_from(frame, 0)
    pos = _HEADER.size
    client_id = None
    if cid_len >= 0:
        if pos + cid_len > len(frame):
            raise MalformedRequest("client id overruns the frame")
        client_id = bytes(frame[pos:pos + cid_len]).decode("utf-8", "replace")
        pos += cid_len
    elif cid_len != -1:
        raise MalformedRequest("bad client id length")
    if flexible is None:
        cls = REQUEST_CLASSES.get(api_key)
        flexible = bool(cls is not None and api_version >= 0 and cls.flexible_version_q(api_version))
    if flexible:
        count, pos = _read_uvarint(frame, pos)
        for _ in range(count):
            _tag, pos = _read_uvarint(frame, pos)
            size, pos = _read_uvarint(frame, pos)
            pos += size
            if pos > len(frame):
                raise MalformedRequest("tagged field overruns the frame")
    return RequestHeader(api_key, api_version, correlation_id, client_id, pos)


def decode_request(frame: memoryview, header: RequestHeader) -> ApiMessage:
    """Decode the body of ``frame`` with the generated class for ``header``'s API and version."""
    cls = REQUEST_CLASSES[header.api_key]
    version = header.api_version
    flexible = cls.flexible_version_q(version)
    decode = cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible, data_class=cls)
    try:
        request, end = decode(frame, header.body_offset)
    except MalformedRequest:
        raise
    except Exception as exc:  # struct.error, UnicodeDecodeError, IndexError, ValueError ...
        raise MalformedRequest(f"cannot decode {cls.__name__} v{version}: {exc!r}") from exc
    if end > len(frame):
        # The generated decoder slices bytes without bounds checks: an overrun means a lie
        # about a length somewhere in the body.
        raise MalformedRequest(f"{cls.__name__} v{version} overruns its frame")
    request._version = version
    return request


def encode_response(response: ApiMessage, correlation_id: int) -> bytes:
    """Frame (size prefix), response header (v0, or v1 for flexible versions; ApiVersions
    always v0) and body, all written by kafka-python's generated encoder."""
    response.with_header(correlation_id=correlation_id)
    return response.encode(header=True, framed=True)
