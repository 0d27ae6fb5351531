"""Read a Structured Streaming query's checkpoint (``<checkpointLocation>/offsets/<batch>``) without Spark.

The one reader of Spark's offset log in the package. Each ``offsets/<n>`` file is ``v1``, one line of batch
metadata JSON, then one line per source of the query: the source's offset JSON exactly as ``latestOffset``
returned it (``-`` for a source without one); ``commits/<n>`` marks batch ``n`` completed. For samza-kinesis the
Spark offset is the source of truth of the job model (which shard sits in which slot of which task); for
samza-kafka the offset carries the same job model the driver mirrors into the metadata store.

Callers: ``samza_config.checkpoints.starting_offsets_from_spark_checkpoint`` (Spark's Kafka source offsets of
the last committed batch) and the operator CLI (``ops/cli/commands/``: ``jobmodel show`` and ``lag`` with
``--checkpoint``). Local paths and ``file:`` URIs are read directly; other URIs (``s3://``, ``abfs://`` ...)
through ``pyarrow.fs``, which the package depends on anyway. It imports neither pyspark nor a client library.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from ..core.errors import SamzaSourceError
from ..options.secrets import redact_uri, scrub_secrets
from . import errors

__all__ = ["OffsetLog", "SourceOffset"]

T = TypeVar("T")


@dataclass(frozen=True)
class SourceOffset:
    """One source's offset in one offset-log file: Spark's batch id, the source's index, the parsed offset."""

    batch_id: int
    source_index: int
    offset: Any


class OffsetLog:
    """The ``offsets/`` directory (and the ``commits/`` beside it) of one checkpoint location."""

    def __init__(self, location: str) -> None:
        # Shown in every error: without the credentials an s3:// location may carry (s3://KEY:SECRET@bucket/...).
        self.location = redact_uri(location)
        if "://" in location and not location.startswith("file:"):
            from pyarrow import fs

            try:
                self._fs, root = fs.FileSystem.from_uri(location)
            except Exception as err:  # noqa: BLE001 - pyarrow raises several types for bad URIs
                raise errors.location_unopenable(self.location, scrub_secrets(str(err), location)) from None
            self._root = root.rstrip("/")
        else:
            path = urllib.parse.unquote(urllib.parse.urlsplit(location).path) if location.startswith("file:") \
                else location
            self._fs = None
            self._root = os.path.abspath(os.path.expanduser(path))
        self._dir = self._join(self._root, "offsets")

    def _join(self, directory: str, name: str) -> str:
        return f"{directory}/{name}" if self._fs is not None else os.path.join(directory, name)

    # ---- files ---------------------------------------------------------------------------------------------
    def listing(self, directory: str) -> list[int]:
        """Batch ids with a file in ``directory`` (``offsets`` or ``commits``), ascending; ``OSError`` (e.g.
        ``FileNotFoundError``) when the directory cannot be listed."""
        path = self._join(self._root, directory)
        if self._fs is None:
            names = os.listdir(path)
        else:
            from pyarrow import fs

            names = [i.base_name for i in self._fs.get_file_info(fs.FileSelector(path))]
        return sorted(int(n) for n in names if n.isascii() and n.isdigit())

    def last_committed_batch(self) -> int | None:
        """The newest batch with an offset file and a commit marker (``commits/<n>``), where Spark itself resumes;
        None when no batch completed. ``OSError`` when ``offsets/`` or ``commits/`` cannot be listed."""
        committed = sorted(self.listing("commits"), reverse=True)
        logged = set(self.listing("offsets"))
        return next((n for n in committed if n in logged), None)

    def batch_ids(self) -> list[int]:
        """Batch ids with an offset file, ascending."""
        try:
            return self.listing("offsets")
        except FileNotFoundError:
            raise errors.offsets_dir_missing(self.location) from None
        except OSError as err:
            raise errors.offsets_dir_unlistable(self._dir, err) from None

    def path(self, batch_id: int) -> str:
        """The offset file of one batch."""
        return self._join(self._dir, str(batch_id))

    def _read(self, batch_id: int) -> str:
        path = self.path(batch_id)
        try:
            if self._fs is None:
                with open(path, encoding="utf-8") as f:
                    return f.read()
            with self._fs.open_input_stream(path) as f:
                return f.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise errors.offset_file_unreadable(path, err) from None

    def source_lines(self, batch_id: int) -> list[str]:
        """The per-source offset lines of one batch (``-`` where a source has none)."""
        lines = self._read(batch_id).splitlines()
        if len(lines) < 3 or not lines[0].startswith("v"):
            raise errors.offset_entry_invalid(batch_id, self.location)
        return lines[2:]

    # ---- parsed offsets ------------------------------------------------------------------------------------
    def offsets(self, parse: Callable[[str], T], *, newest_first: bool = True,
                limit: int | None = None) -> Iterator[SourceOffset]:
        """Every source offset that ``parse`` accepts (it raises ``SamzaSourceError``/``ValueError`` otherwise),
        newest batch first by default; at most ``limit`` offset files are read."""
        ids = self.batch_ids()
        if newest_first:
            ids.reverse()
        if limit is not None:
            ids = ids[:limit]
        for batch_id in ids:
            for index, line in enumerate(self.source_lines(batch_id)):
                if line.strip() in ("", "-"):
                    continue
                try:
                    parsed = parse(line)
                except (SamzaSourceError, ValueError):
                    continue
                yield SourceOffset(batch_id, index, parsed)

    def latest(self, parse: Callable[[str], T], accept: Callable[[T], bool] = lambda _: True) -> SourceOffset:
        """The newest offset that ``parse`` accepts and ``accept`` approves."""
        for found in self.offsets(parse):
            if accept(found.offset):
                return found
        raise errors.no_source_offset(self.location, _describe(self.batch_ids()))


def _describe(ids: list[int]) -> str:
    if not ids:
        return "none"
    return f"{ids[0]}..{ids[-1]}" if len(ids) > 1 else str(ids[0])
