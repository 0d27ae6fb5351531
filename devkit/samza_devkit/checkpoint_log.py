"""Spark's checkpoint read back by the fault-injection tests, and an exactly-once oracle built on it.

- ``offset_log(checkpoint)`` / ``committed_batches(checkpoint)``: Spark's offset and commit logs, parsed;
- ``startpoint_rebases(log)``: the startpoints the raw offset JSON records as applied;
- ``cursor_walk(log, batches, topic)``: an oracle independent of the source's offset code (no ``KafkaOffset``): a
  cursor per partition walked over the rows each batch delivered, moved only by the rebases the raw offset JSON
  records (as ``benchmarks/soak.py``'s checker). Reading the JSON directly, rather than through the product's
  parser, keeps a bug in that parser from hiding the loss or duplication it causes.
"""

from __future__ import annotations

import json
from pathlib import Path


def _batch_files(directory: Path) -> dict[int, Path]:
    if not directory.is_dir():
        return {}
    return {int(p.name): p for p in directory.iterdir() if p.name.isdigit()}


def offset_log(checkpoint: str | Path, source: int = 0) -> dict[int, dict]:
    """{batch id: the source's end offset JSON} from ``<checkpoint>/offsets/<n>`` (v1, metadata, a line per source)."""
    out = {}
    for batch, path in sorted(_batch_files(Path(checkpoint) / "offsets").items()):
        lines = path.read_text().splitlines()
        if len(lines) < 3 + source:
            continue  # being written
        out[batch] = json.loads(lines[2 + source])
    return out


def committed_batches(checkpoint: str | Path) -> set[int]:
    return set(_batch_files(Path(checkpoint) / "commits"))


def cursor_walk(log: dict[int, dict], batches: list[tuple[int, list]], topic: str, start: int = 0) -> list[str]:
    """Violations of exactly-once delivery, found without the source's own offset code.

    A cursor per partition starts at ``start``; in batch order, a rebase the raw offset JSON records for the
    partition (a startpoint applied in that batch, a new partition) moves it to the recorded position; the rows
    the batch delivered for the partition must then be exactly the next offsets from the cursor, contiguous; the
    cursor moves past them and must then equal the batch's end position in the raw JSON (the lowest over tasks).
    """
    cursor: dict[int, int] = {}
    out = []
    for batch_id, rows in batches:
        raw = log.get(batch_id)
        if raw is None:
            out.append(f"batch {batch_id}: delivered but not in the offset log")
            continue
        ends: dict[int, int] = {}
        for by_ssp in raw["positions"].values():
            for key, end in by_ssp.items():
                stream, partition = key.split(".", 1)[1].rsplit(".", 1)
                if stream == topic:
                    ends[int(partition)] = min(end, ends.get(int(partition), end))
        for by_ssp in raw.get("rebases", {}).values():
            for key, rebase in by_ssp.items():
                stream, partition = key.split(".", 1)[1].rsplit(".", 1)
                if stream == topic:
                    cursor[int(partition)] = rebase["position"]
        got: dict[int, list[int]] = {}
        for r in rows:
            got.setdefault(r.partition, []).append(r.offset)
        for partition in sorted(set(ends) | set(got)):
            here = cursor.get(partition, start)
            offsets = sorted(got.get(partition, []))
            if offsets != list(range(here, here + len(offsets))):
                out.append(f"batch {batch_id} partition {partition}: cursor {here}, delivered "
                           f"{offsets[:3]}..{offsets[-3:]} ({len(offsets)} rows)")
            cursor[partition] = here + len(offsets)
            if partition in ends and ends[partition] != cursor[partition]:
                out.append(f"batch {batch_id} partition {partition}: the offset log ends at {ends[partition]}, "
                           f"the delivered rows at {cursor[partition]}")
    return out


def startpoint_rebases(log: dict[int, dict]) -> list[tuple[int, str, str, int, int]]:
    """Every applied startpoint: (batch, task, SSP key, position, creation timestamp), in batch order."""
    out = []
    for batch, offset in sorted(log.items()):
        for task, by_ssp in offset.get("rebases", {}).items():
            for key, rebase in by_ssp.items():
                if rebase["reason"] == "startpoint":
                    out.append((batch, task, key, rebase["position"], rebase["creationTimestamp"]))
    return out


def batch_figures(query, checkpoint: str | Path) -> list[dict]:
    """Per micro-batch of ``query`` (its recent progress): rows, the driver's phases (``durationMs``) and the bytes
    of the batch's entry in Spark's offset log under ``checkpoint``."""
    offsets = Path(checkpoint) / "offsets"
    out = []
    for p in query.recentProgress:
        entry = offsets / str(p["batchId"])
        out.append({"batch": p["batchId"], "rows": p["numInputRows"], "durationMs": p["durationMs"],
                    "offsetLogBytes": entry.stat().st_size if entry.exists() else None})
    return out
