"""Errors for offsets Spark hands a source from the query's checkpoint that the source cannot use.

Spark passes the offset's JSON, never the checkpoint location or the batch number, so the messages say which
file of ``<checkpoint>/offsets/`` it is by the call it came to (each file there is "v1", a line of Spark's
metadata, then one line per source: the source's offset). PySpark's streaming source runner decodes that line
with ``json.loads`` before calling the reader; :func:`install_offset_json_guard` makes a line that is not JSON
fail with the same kind of error. Used by ``source/stream_reader.py`` for both sources.
"""

from __future__ import annotations

import sys

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
_BY_RUNNER_FUNCTION = {
    "latest_offset_func": LATEST_START,
    "latest_offset_admission_control_func": LATEST_START,
    "partitions_func": PARTITIONS_START,  # its second offset (the end) is told apart below
    "commit_func": COMMIT_END,
}


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


class _OffsetJson:
    """Stands in for the ``json`` module inside PySpark's streaming source runner (see
    :func:`install_offset_json_guard`): offsets that are not JSON fail with this source's error."""

    def __init__(self, real, source: str) -> None:
        self._real = real
        self._source = source

    def __getattr__(self, name: str):
        return getattr(self._real, name)

    def loads(self, text, *args, **kwargs):
        try:
            return self._real.loads(text, *args, **kwargs)
        except (ValueError, RecursionError) as err:
            caller = sys._getframe(1)
            role = _BY_RUNNER_FUNCTION.get(caller.f_code.co_name)
            if role is None:
                raise
            if role is PARTITIONS_START and "start_offset" in caller.f_locals:
                role = PARTITIONS_END
            raise offset_problem(self._source, role, f"it is not valid JSON ({err!s:.200})") from None


def install_offset_json_guard(source: str) -> None:
    """In PySpark's streaming source runner, parse the offsets Spark hands the source through :class:`_OffsetJson`.

    The runner decodes each offset with ``json.loads`` *before* calling ``latestOffset`` / ``partitions`` /
    ``commit``; a hand-edited or damaged offset file would otherwise fail with a bare ``JSONDecodeError``
    naming no file. Only done inside that runner process (its module is ``__main__`` there; one runner serves one
    source), and only when it still has the layout this was written against (PySpark 4.2 / 4.3: a module-level
    ``json`` and the functions named in ``_BY_RUNNER_FUNCTION``); anywhere else nothing changes.
    """
    runner = sys.modules.get("__main__")
    spec = getattr(runner, "__spec__", None)
    if getattr(spec, "name", None) != "pyspark.sql.streaming.python_streaming_source_runner":
        return
    current = getattr(runner, "json", None)
    if current is None or isinstance(current, _OffsetJson) or not hasattr(runner, "partitions_func"):
        return
    runner.json = _OffsetJson(current, source)
