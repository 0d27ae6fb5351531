"""Pure planning of filter pushdown for batch reads: which of Spark's filters let a read skip work, and how.

Spark hands a Python batch reader the conjuncts of a query's ``WHERE`` (``DataSourceReader.pushFilters``, with
``spark.sql.python.filterPushdown.enabled``) and re-evaluates every filter the reader returns. A pushed filter
must never change the result, only the work, so each kind is used only where skipping is exact:

- equality / ``IN`` on a column whose value is fixed per unit read (``topic``, ``partition``, ``task``,
  ``shardId``) prunes whole units: exact, so the filter is fully handled (not returned);
- comparisons and equality on ``offset`` cut Kafka offset ranges: exact, fully handled (``IN`` on offsets only
  narrows to its min..max and is returned);
- ``timestamp >=`` / ``>`` / ``=`` give the first millisecond that can match: the system starts each unit at its
  first record at or after it (Kafka ``offsetsForTimes``, Kinesis ``AT_TIMESTAMP``), which skips only records that
  cannot match; records further on may still be earlier (Kafka ``CreateTime`` is not ordered), so the filter is
  returned for Spark to apply. Upper bounds on timestamps are not used for the same reason: a later record may
  carry an earlier time.

Everything else is returned untouched. No I/O here: the system planners turn a :class:`PushedFilters` into
offsets or positions.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PushedFilters", "push_filters", "timestamp_micros"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


@dataclass(frozen=True)
class PushedFilters:
    """What the pushed filters allow a batch read to skip.

    ``values``: column -> the only values a row may have there (a unit read whose value is not listed is skipped).
    ``min_timestamp_ms``: no record before its unit's first record at or after this time can match.
    ``offset_from`` / ``offset_until``: only offsets in ``[offset_from, offset_until)`` can match.
    ``handled``: the filters fully applied by the read (Spark need not evaluate them again).
    """

    values: Mapping[str, frozenset] = field(default_factory=dict)
    min_timestamp_ms: int | None = None
    offset_from: int | None = None
    offset_until: int | None = None
    handled: tuple[Any, ...] = ()

    def allows(self, column: str, value: Any) -> bool:
        """Whether a unit whose ``column`` is ``value`` can hold matching rows."""
        allowed = self.values.get(column)
        return allowed is None or value in allowed

    @property
    def empty(self) -> bool:
        """Nothing can match (contradictory filters, e.g. ``topic = 'a' AND topic = 'b'``)."""
        return any(not v for v in self.values.values()) or (
            self.offset_from is not None and self.offset_until is not None and self.offset_from >= self.offset_until)

    def describe(self) -> str:
        """For logs and ``explain``-like messages: what was pushed."""
        parts = [f"{c} in {sorted(v, key=str)}" for c, v in sorted(self.values.items())]
        if self.min_timestamp_ms is not None:
            parts.append(f"timestamp >= {self.min_timestamp_ms} ms")
        if self.offset_from is not None:
            parts.append(f"offset >= {self.offset_from}")
        if self.offset_until is not None:
            parts.append(f"offset < {self.offset_until}")
        return ", ".join(parts) if parts else "none"


def timestamp_micros(value: Any) -> int | None:
    """Microseconds since the epoch of a filter's timestamp value (a timezone-aware ``datetime``), else None.

    A naive datetime has no defined instant (its zone is not known here), so it is not used.
    """
    if isinstance(value, _dt.datetime) and value.tzinfo is not None:
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return None


def push_filters(
    filters: Sequence[Any],
    *,
    value_columns: Mapping[str, type],
    timestamp_column: str,
    offset_column: str | None = None,
) -> tuple[PushedFilters, list[Any]]:
    """Split Spark's filters into what the read uses and what Spark must still apply (returned, same objects).

    ``value_columns``: columns fixed per unit read -> the Python type of their values (``partition``: int);
    ``timestamp_column`` narrows starts; ``offset_column`` (Kafka) cuts ranges.
    """
    values: dict[str, frozenset] = {}
    min_ts: int | None = None
    lo: int | None = None
    hi: int | None = None
    handled: list[Any] = []
    unhandled: list[Any] = []

    def column(f: Any) -> str | None:
        attr = getattr(f, "attribute", None)
        return attr[0] if isinstance(attr, tuple) and len(attr) == 1 else None

    for f in filters:
        col = column(f)
        kind = type(f).__name__  # pyspark.sql.datasource's filter classes, by name: core/ imports no pyspark
        if col is not None and col in value_columns and kind in ("EqualTo", "In"):
            wanted = _typed(f.value if kind == "In" else (f.value,), value_columns[col])
            if wanted is None:
                unhandled.append(f)
                continue
            values[col] = values[col] & wanted if col in values else wanted
            handled.append(f)
        elif col == timestamp_column and kind in ("GreaterThanOrEqual", "GreaterThan", "EqualTo"):
            micros = timestamp_micros(f.value)
            if micros is not None:
                first_ms = micros // 1000 + 1 if kind == "GreaterThan" else -(-micros // 1000)
                min_ts = first_ms if min_ts is None else max(min_ts, first_ms)
            unhandled.append(f)  # narrows the start only; Spark still filters
        elif offset_column is not None and col == offset_column and _is_int(getattr(f, "value", None)) and \
                kind in _OFFSET_BOUNDS:
            start, end = _OFFSET_BOUNDS[kind](f.value)
            if start is not None:
                lo = start if lo is None else max(lo, start)
            if end is not None:
                hi = end if hi is None else min(hi, end)
            handled.append(f)
        elif offset_column is not None and col == offset_column and kind == "In" and f.value and \
                all(_is_int(v) for v in f.value):
            lo = min(f.value) if lo is None else max(lo, min(f.value))
            hi = max(f.value) + 1 if hi is None else min(hi, max(f.value) + 1)
            unhandled.append(f)
        else:
            unhandled.append(f)
    if lo is not None:
        lo = max(lo, 0)
    if hi is not None:
        hi = max(hi, 0)
    return PushedFilters(values, min_ts, lo, hi, tuple(handled)), unhandled


#: filter class name -> offset value -> the range [start, end) it keeps (None: unbounded)
_OFFSET_BOUNDS = {
    "EqualTo": lambda v: (v, v + 1),
    "GreaterThan": lambda v: (v + 1, None),
    "GreaterThanOrEqual": lambda v: (v, None),
    "LessThan": lambda v: (None, v),
    "LessThanOrEqual": lambda v: (None, v + 1),
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _typed(wanted: Iterable[Any], kind: type) -> frozenset | None:
    """The values of an equality / ``IN`` as the column's type; None when one cannot be compared exactly."""
    out = set()
    for v in wanted:
        if v is None:
            continue  # ``col = NULL`` / ``IN (NULL)`` is never true: such a value admits no unit
        if kind is int and not _is_int(v) or kind is str and not isinstance(v, str):
            return None
        out.add(v)
    return frozenset(out)
