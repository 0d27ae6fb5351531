"""AWS event-stream messages (``application/vnd.amazon.eventstream``) for the devkit's kinesis-mock bridge.

Decoding is botocore's (:class:`botocore.eventstream.EventStreamBuffer`, which checks both CRCs); this module adds
what botocore does not have: an encoder, and a splitter that keeps each message's original bytes so the bridge can
pass a message it does not change through byte for byte.

A message (AWS's "Event stream encoding" reference; botocore's ``eventstream.py`` decodes the same layout)::

    total length (uint32) | headers length (uint32) | prelude CRC32 (of the 8 bytes before it)
    headers | payload | message CRC32 (of everything before it)

all integers big-endian; total length counts the whole message (12-byte prelude, headers, payload, 4-byte CRC).
A header is ``name length (uint8) | name (UTF-8) | value type (uint8) | value``; the bridge writes only strings
(type 7: ``length (uint16) | UTF-8 bytes``), which is all Kinesis's ``:message-type``, ``:event-type``,
``:exception-type`` and ``:content-type`` headers use.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from botocore.eventstream import EventStreamBuffer

__all__ = ["RawMessage", "MessageSplitter", "encode_message", "event_message", "exception_message"]

_PRELUDE = struct.Struct(">II")
_CRC = struct.Struct(">I")
_STRING_TYPE = 7
_PRELUDE_WITH_CRC = _PRELUDE.size + _CRC.size


def _crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _encode_headers(headers: dict[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        name_bytes, value_bytes = name.encode("utf-8"), value.encode("utf-8")
        if len(name_bytes) > 255 or len(value_bytes) > 0xFFFF:
            raise ValueError(f"event-stream header {name!r} is too long to encode")
        out += struct.pack(">B", len(name_bytes)) + name_bytes
        out += struct.pack(">BH", _STRING_TYPE, len(value_bytes)) + value_bytes
    return bytes(out)


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message with string ``headers`` (in this order) and ``payload``."""
    encoded_headers = _encode_headers(headers)
    total = _PRELUDE_WITH_CRC + len(encoded_headers) + len(payload) + _CRC.size
    prelude = _PRELUDE.pack(total, len(encoded_headers))
    body = prelude + _CRC.pack(_crc32(prelude)) + encoded_headers + payload
    return body + _CRC.pack(_crc32(body))


def event_message(event_type: str, payload: dict) -> bytes:
    """An ``event`` message of ``event_type`` with a JSON payload (as Kinesis sends them)."""
    headers = {":message-type": "event", ":event-type": event_type, ":content-type": "application/json"}
    return encode_message(headers, json.dumps(payload, separators=(",", ":")).encode("utf-8"))


def exception_message(exception_type: str, message: str) -> bytes:
    """An ``exception`` message (an error inside the stream, e.g. ``ResourceInUseException``)."""
    headers = {":message-type": "exception", ":exception-type": exception_type, ":content-type": "application/json"}
    return encode_message(headers, json.dumps({"message": message}).encode("utf-8"))


@dataclass(frozen=True)
class RawMessage:
    """A decoded message with its original bytes."""

    raw: bytes
    headers: dict[str, object]
    payload: bytes

    @property
    def message_type(self) -> str | None:
        return self.headers.get(":message-type")  # type: ignore[return-value]

    @property
    def event_type(self) -> str | None:
        return self.headers.get(":event-type")  # type: ignore[return-value]


class MessageSplitter:
    """Feed it bytes as they arrive (``add``); iterate to get the whole messages received so far."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def add(self, data: bytes) -> None:
        self._pending += data

    def __iter__(self) -> Iterator[RawMessage]:
        while len(self._pending) >= _PRELUDE.size:
            total, _ = _PRELUDE.unpack_from(self._pending)
            if len(self._pending) < total:
                return
            raw = bytes(self._pending[:total])
            del self._pending[:total]
            decoder = EventStreamBuffer()  # validates the lengths and both CRCs
            decoder.add_data(raw)
            message = next(iter(decoder))
            yield RawMessage(raw, dict(message.headers), message.payload)
