"""``startingOffsets`` that resume where another consumer of the same Kafka topics stopped.

Two readers, both for the first run of a samza-kafka query (a new Spark checkpoint location):

- :func:`starting_offsets_from_samza_checkpoint`: the text Samza's ``checkpoint-tool.sh`` prints for a job
  (its Kafka checkpoint topic is not read directly); each checkpointed offset becomes ``offset + 1``.
- :func:`starting_offsets_from_spark_checkpoint`: the offset log of a query of Spark's built-in Kafka source,
  read through :class:`~spark_samza_source.samza_config.offset_log.OffsetLog` (the package's one reader of
  ``<checkpoint>/offsets/``, shared with the operator CLI).

Users call them (``docs/migration.md``, "Resume where the Samza job stopped" and "Resume where the Spark query
stopped"); the package re-exports both. Errors are ``ConfigError`` naming the line, file or batch at fault.
"""

from __future__ import annotations

import json
import os
import re

from ..core.errors import CheckpointDirError
from ..options.secrets import redact_uri, scrub_secrets
from . import errors
from .offset_log import OffsetLog

__all__ = ["starting_offsets_from_samza_checkpoint", "starting_offsets_from_spark_checkpoint"]

_SAMZA_CHECKPOINT_LINE = re.compile(
    r"tasknames\.(?P<task>.+)\.systems\.(?P<system>[^.\s]+)\.streams\.(?P<stream>.+)\.partitions\."
    r"(?P<partition>[0-9]+)\s*[=:]\s*(?P<offset>\S+)\s*$"
)


def starting_offsets_from_samza_checkpoint(text: str, *, system: str | None = None) -> str:
    """``startingOffsets`` JSON that resumes where a Samza job's Kafka checkpoint stands.

    ``text``: the lines Samza's ``checkpoint-tool.sh`` prints for a job (or a ``--new-offsets`` file), each
    holding ``tasknames.<task>.systems.<system>.streams.<topic>.partitions.<p> = <offset>``; other lines are
    skipped. Samza checkpoints the last *processed* offset and resumes after it, so each offset becomes
    ``offset + 1``. An SSP in several tasks (broadcast) resumes at the smallest. ``system`` picks one system
    when the checkpoint spans several. Use the result for a *new* query (no Spark checkpoint yet).
    """
    found: dict[tuple[str, str, int], int] = {}
    systems: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), 1):
        match = _SAMZA_CHECKPOINT_LINE.search(line)
        if not match:
            continue
        if system is not None and match["system"] != system:
            continue
        try:
            offset = int(match["offset"])
            if offset < 0:
                raise ValueError
        except ValueError:
            ssp = f"{match['system']}.{match['stream']}#{match['partition']}"
            raise errors.checkpoint_offset_invalid(lineno, match["offset"], ssp) from None
        systems.add(match["system"])
        key = (match["system"], match["stream"], int(match["partition"]))
        found[key] = min(found.get(key, offset + 1), offset + 1)
    if not found:
        raise errors.checkpoint_empty(system)
    if len(systems) > 1:
        raise errors.checkpoint_spans_systems(sorted(systems))
    out: dict[str, dict[str, int]] = {}
    for (_, stream, partition), offset in sorted(found.items()):
        out.setdefault(stream, {})[str(partition)] = offset
    return json.dumps(out, separators=(",", ":"))


def starting_offsets_from_spark_checkpoint(checkpoint_location: str | os.PathLike[str], *, source: int = 0) -> str:
    """``startingOffsets`` JSON that resumes where a query of Spark's built-in Kafka source stands.

    Reads the checkpoint's offset log (``offsets/<n>``: ``v1``, the batch metadata, then one offset per source)
    at the newest batch ``n`` that has a commit marker (``commits/<n>``): the end of the last completed batch,
    where Spark itself would resume. The Kafka source's offset, ``{"topic": {"0": next offset}}``, is exactly the
    ``startingOffsets`` JSON. ``source``: the index of the Kafka source when the query has several. A local
    path, a ``file:`` URI, or another URI ``pyarrow.fs`` opens (``s3://``...), read as the CLI reads it.
    """
    root = os.fspath(checkpoint_location)
    where = redact_uri(root)  # what errors show: an s3:// location may carry KEY:SECRET@
    try:
        log = OffsetLog(root)
        batch = log.last_committed_batch()
    except CheckpointDirError as err:
        raise errors.spark_checkpoint_unreadable(where, err) from None
    except OSError as err:
        raise errors.spark_checkpoint_unlistable(where, scrub_secrets(str(err.strerror or err), root)) from None
    if batch is None:
        raise errors.no_committed_batch(where)
    path = log.path(batch)
    try:
        lines = log.source_lines(batch)
    except CheckpointDirError as err:  # unreadable, or not "v1", metadata, one line per source
        raise errors.offset_entry_unusable(err) from None
    if len(lines) <= source:
        raise errors.no_source(path, source)
    raw = lines[source].strip()
    try:
        parsed = json.loads(raw)
        if not isinstance(parsed, dict) or not parsed:
            raise ValueError
        out: dict[str, dict[str, int]] = {}
        for topic, parts in sorted(parsed.items()):
            if not isinstance(parts, dict) or not parts:
                raise ValueError
            out[str(topic)] = {}
            for partition, offset in sorted(parts.items(), key=lambda kv: int(kv[0])):
                if not str(partition).isdigit() or not isinstance(offset, int) or isinstance(offset, bool) \
                        or offset < 0:
                    raise ValueError
                out[str(topic)][str(int(partition))] = offset
    except ValueError:
        raise errors.not_a_kafka_offset(path, source, batch, raw) from None
    return json.dumps(out, separators=(",", ":"))

