"""Where the next micro-batch starts, for a Spark that does not say (PySpark 4.0 and 4.1).

From 4.2 Spark hands a source the start of the next batch (``latestOffset(start, limit)``). 4.0 and 4.1 call
``latestOffset()`` with nothing, so a source that bounds its batches itself (``maxOffsetsPerTrigger``) must know
where the next batch starts from what Spark did tell it, in the order their engine (``MicroBatchExecution``) calls:

- a new checkpoint: ``latestOffset()`` comes first and ``initialOffset()`` only once that batch is planned, so the
  first plan starts from the source's own initial offset (which ``initialOffset()`` must then return unchanged);
- a restart: before anything else Spark tells the source the newest offset of its offset log
  (``setLatestSeenOffset``, which PySpark forwards as ``partitions(newest, newest)``); a batch planned but never
  committed is then run again with its logged ends (``partitions(start, end)``), and the next batch starts at the
  newest end whichever it was;
- a batch Spark ran: ``partitions(start, end)``; the next starts at ``end``;
- a plan returned to Spark: Spark logs any offset other than the last one as the end of a new batch, and the next
  batch starts there (the same offset: no batch, the start stays).

So the start is always known except before the first ``latestOffset()`` of a run on a new checkpoint, and a plan
made from the initial offset is checked against the first batch Spark runs: a Spark that asked for the latest
offset before saying where its checkpoint stands (on 4.0 and 4.1 only ``Trigger.AvailableNow`` with
``spark.sql.streaming.triggerAvailableNowWrapper.enabled=true`` does) fails instead of reading from the wrong place.

Offsets are the JSON values Spark stores; compared as canonical text, since Spark compares them as strings. Pure:
no Spark, no I/O.
"""

from __future__ import annotations

import json
from typing import Any

from . import errors

__all__ = ["AVAILABLE_NOW_WRAPPER", "NextBatchStart", "canonical"]

#: the Spark setting under which 4.0 and 4.1 plan before saying where the checkpoint stands
AVAILABLE_NOW_WRAPPER = "spark.sql.streaming.triggerAvailableNowWrapper.enabled"


def canonical(offset: Any) -> str:
    """An offset's JSON with sorted keys: equal offsets, equal text."""
    return json.dumps(offset, sort_keys=True, separators=(",", ":"))


class NextBatchStart:
    """Follows Spark's calls to know where the next batch starts (see the module docstring)."""

    def __init__(self) -> None:
        self._next: Any = None
        #: the initial offset a plan started from, until Spark's first batch confirms it (canonical text)
        self._assumed_initial: str | None = None

    @property
    def start(self) -> Any:
        """The start of the next batch, or None before Spark said anything (a new checkpoint)."""
        return self._next

    def planned(self, start: Any, end: Any, *, from_initial: bool = False) -> None:
        """A plan ``start`` -> ``end`` was returned to Spark (``from_initial``: ``start`` is the source's own initial
        offset, Spark having said nothing yet)."""
        if from_initial:
            self._assumed_initial = canonical(start)
        self._next = end

    def spark_ran(self, start: Any, end: Any, *, source: str) -> None:
        """Spark runs the batch ``start`` -> ``end`` (``start == end``: Spark says where its checkpoint stands)."""
        if self._assumed_initial is not None:
            assumed, self._assumed_initial = self._assumed_initial, None
            if canonical(start) != assumed:
                raise errors.batch_start_unknown(source, AVAILABLE_NOW_WRAPPER)
        self._next = end
