"""Plain-text rendering for ``samza-source``: aligned tables and readable times. No third-party dependency."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ...core.errors import InternalError

__all__ = ["cell", "iso_ms", "render_table"]

#: what an empty or unknown cell shows
MISSING = "-"


def iso_ms(epoch_ms: int | None) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds (``2023-11-14T22:13:20.000Z``); ``-`` for None."""
    if epoch_ms is None:
        return MISSING
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


def cell(value: Any) -> str:
    """The text of one table cell: None -> ``-``, containers -> compact JSON, everything else ``str``."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, gap: int = 2) -> str:
    """An aligned text table: a header row, a rule of dashes, then the rows.

    A column whose values are all numbers (None allowed) is right-aligned, any other column left-aligned; the
    last column carries no trailing spaces. Every row must have as many cells as there are headers: the commands
    build the rows and the headers together, so a ragged row is a bug here (:class:`InternalError`).
    """
    for row in rows:
        if len(row) != len(headers):
            raise InternalError(f"table row has {len(row)} cells, expected {len(headers)}: {row!r:.200}")
    texts = [[cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in texts:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))
    right = [bool(rows) and all(_numeric(row[i]) or row[i] is None for row in rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(widths[i]) if right[i] else v.ljust(widths[i]) for i, v in enumerate(values)]
        return (" " * gap).join(parts).rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out.extend(line(row) for row in texts)
    return "\n".join(out)
