"""Positions in a Kinesis shard, shared by the planner (pure), the reader (boto3) and the offset JSON.

A ``ShardPosition`` says where reading a shard starts (or where it ended). It maps one-to-one onto a
``GetShardIterator`` request, except ``SHARD_END`` (drained: nothing more will ever be read) and the
sub-sequence number, which lets a batch end *inside* a KPL-aggregated record and the next one resume at the
following sub-record, neither losing nor repeating any.

JSON form (deterministic, sorted keys): ``{"type": "TRIM_HORIZON"}``, ``{"type": "AT_TIMESTAMP",
"timestampMs": 1700000000000}``, ``{"type": "AT_SEQUENCE_NUMBER", "sequence": "4960..."}``,
``{"type": "AFTER_SEQUENCE_NUMBER", "sequence": "4960...", "sub": -1}``, ``{"type": "SHARD_END"}``.
``sub = -1`` means after the whole record; ``sub = n >= 0`` means after sub-record ``n`` of an aggregated
record (reading resumes at that record, skipping sub-records ``0..n``). No boto3 here: this module is pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import InternalError
from . import errors

TRIM_HORIZON = "TRIM_HORIZON"
AT_TIMESTAMP = "AT_TIMESTAMP"
AT_SEQUENCE_NUMBER = "AT_SEQUENCE_NUMBER"
AFTER_SEQUENCE_NUMBER = "AFTER_SEQUENCE_NUMBER"
SHARD_END = "SHARD_END"
POSITION_TYPES = (TRIM_HORIZON, AT_TIMESTAMP, AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER, SHARD_END)
EVERY_SUB = 1 << 62  # "after every sub-record" when ordering sub-sequence numbers


@dataclass(frozen=True, order=True)
class ShardPosition:
    type: str
    sequence: str | None = None
    sub: int = -1
    timestamp_ms: int | None = None

    def __post_init__(self) -> None:
        if self.type not in POSITION_TYPES:
            raise errors.position_invalid(f"unknown shard position type {self.type!r}; expected one of "
                                          f"{POSITION_TYPES}")
        needs_seq = self.type in (AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER)
        if needs_seq and not (isinstance(self.sequence, str) and self.sequence.isascii() and self.sequence.isdigit()):
            raise errors.position_invalid(f"{self.type} needs a decimal sequence number, got {self.sequence!r:.80}")
        if self.type == AT_TIMESTAMP and not (isinstance(self.timestamp_ms, int) and self.timestamp_ms >= 0):
            raise errors.position_invalid(f"AT_TIMESTAMP needs timestampMs >= 0, got {self.timestamp_ms!r:.80}")
        if not isinstance(self.sub, int) or isinstance(self.sub, bool) or self.sub < -1:
            raise errors.position_invalid(f"sub-sequence number must be an int >= -1, got {self.sub!r:.80}")

    # ---- constructors ----------------------------------------------------------------------------------
    @classmethod
    def trim_horizon(cls) -> ShardPosition:
        return cls(TRIM_HORIZON)

    @classmethod
    def at_timestamp(cls, timestamp_ms: int) -> ShardPosition:
        return cls(AT_TIMESTAMP, timestamp_ms=timestamp_ms)

    @classmethod
    def at_sequence(cls, sequence: str) -> ShardPosition:
        return cls(AT_SEQUENCE_NUMBER, sequence=sequence)

    @classmethod
    def after_sequence(cls, sequence: str, sub: int = -1) -> ShardPosition:
        return cls(AFTER_SEQUENCE_NUMBER, sequence=sequence, sub=sub)

    @classmethod
    def shard_end(cls) -> ShardPosition:
        return cls(SHARD_END)

    @property
    def is_shard_end(self) -> bool:
        return self.type == SHARD_END

    def sequence_order(self) -> tuple[int, int]:
        """(sequence, sub) sort key of an AT / AFTER_SEQUENCE_NUMBER position in its shard: AT(S) sorts before
        every sub-record of S, AFTER(S, -1) after all of them."""
        if self.sequence is None:
            raise InternalError(f"{self} has no sequence number to order by")
        if self.type == AT_SEQUENCE_NUMBER:
            return int(self.sequence), -1
        return int(self.sequence), EVERY_SUB if self.sub < 0 else self.sub

    # ---- JSON --------------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.sequence is not None:
            out["sequence"] = self.sequence
        if self.type == AFTER_SEQUENCE_NUMBER:
            out["sub"] = self.sub
        if self.timestamp_ms is not None:
            out["timestampMs"] = self.timestamp_ms
        out["type"] = self.type
        return dict(sorted(out.items()))

    @classmethod
    def from_json(cls, value: Any) -> ShardPosition:
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            raise errors.position_invalid(f"a shard position must be an object with a 'type', got {value!r:.120}")
        extra = set(value) - {"type", "sequence", "sub", "timestampMs"}
        if extra:
            raise errors.position_invalid(f"unknown shard position fields {sorted(extra)} in {value!r:.120}")
        sub = value.get("sub", -1)
        return cls(value["type"], value.get("sequence"), sub, value.get("timestampMs"))

    def __str__(self) -> str:
        if self.type == AFTER_SEQUENCE_NUMBER:
            return f"after {self.sequence}" + (f" sub {self.sub}" if self.sub >= 0 else "")
        if self.type == AT_SEQUENCE_NUMBER:
            return f"at {self.sequence}"
        if self.type == AT_TIMESTAMP:
            return f"at timestamp {self.timestamp_ms}"
        return self.type
