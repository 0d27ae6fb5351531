"""Errors for offsets Spark hands a source from the query's checkpoint that the source cannot use.

Spark passes the offset's JSON, never the checkpoint location or the batch number, so the messages say which
file of ``<checkpoint>/offsets/`` it is by the call it came to (each file there is "v1", a line of Spark's
metadata, then one line per source: the source's offset). PySpark's streaming source runner decodes that line
with ``json.loads`` before calling the reader; ``pyspark_compat.install_offset_json_guard`` makes a line that is not
JSON fail with the same kind of error. Used by ``source/stream_reader.py`` for both sources.
"""

from __future__ import annotations

from ..core.errors import OffsetFormatError
from ..options.common import JOB_NAME

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


def offset_problem(source: str, role: OffsetRole, problem: str, file: str | None = None) -> OffsetFormatError:
    """The error for an offset ``source`` cannot use: what it is, where it is (``file`` when the offset told), the
    fix."""
    what, where = role
    if file is not None:
        where = f"{file} in the checkpoint location ({where})"
    return OffsetFormatError(
        f"{source} cannot use {what} that Spark read from the query's checkpoint: {problem}. It is in {where}, "
        "on the line after Spark's metadata line. Spark does not tell the source the checkpoint location or the "
        "batch number, so check that file: restore it from a backup, or remove that batch's files from "
        "<checkpoint>/offsets/ and <checkpoint>/commits/ so the batch is planned again; or start a new checkpoint "
        f"location (the job model and startpoints are kept in the metadata store for the same {JOB_NAME.name})"
    )
