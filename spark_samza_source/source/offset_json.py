"""Errors for offsets Spark hands a source from the query's checkpoint that the source cannot use.

Spark passes the offset's JSON, never the checkpoint location or the batch number, so the messages say which
file of ``<checkpoint>/offsets/`` it is by the call it came to (each file there is "v1", a line of Spark's
metadata, then one line per source: the source's offset). PySpark's streaming source runner decodes that line
with ``json.loads`` before calling the reader; ``pyspark_compat.install_offset_json_guard`` makes a line that is not
JSON fail with the same kind of error. Used by ``source/stream_reader.py`` for both sources.
"""

from __future__ import annotations

from ..core import errors
from ..core.errors import OffsetFormatError

#: (which offset, in which file of <checkpoint>/offsets/)
OffsetRole = tuple[str, str]

LATEST_START: OffsetRole = ("the start offset of the next batch (latestOffset)",
                            "the newest batch file in <checkpoint>/offsets/ (the highest number)")
PARTITIONS_START: OffsetRole = ("the start offset of the batch being planned (partitions)",
                                "the batch file before the newest in <checkpoint>/offsets/ (on a restart: the second "
                                "highest number)")
PARTITIONS_END: OffsetRole = ("the end offset of the batch being planned (partitions)",
                              "the newest batch file in <checkpoint>/offsets/ (the highest number)")
COMMIT_END: OffsetRole = ("the end offset of the batch being committed (commit)",
                          "a batch file in <checkpoint>/offsets/ whose number is also in <checkpoint>/commits/ (the "
                          "highest)")


def offset_problem(source: str, role: OffsetRole, problem: str, file: str | None = None,
                   condition: str | None = None) -> OffsetFormatError:
    """The error for an offset ``source`` cannot use: what it is, where it is (``file`` when the offset told), the
    fix; ``condition``: that of the error that found the problem (the system's own), kept for the user to search."""
    what, where = role
    if file is not None:
        where = f"{file} in the checkpoint location ({where})"
    return errors.offset_unusable(source, what, where, problem, condition)
