"""Every reliance on PySpark's private behaviour, in one place, with the PySpark versions it was checked against.

- The versions (``SUPPORTED_PYSPARK``: 4.0 to 4.3), checked when a query is defined (``load()``): outside them
  :func:`check_spark_version` refuses to run; a PySpark older than 4.0, which has no Python data source API at
  all, is refused as soon as the package is imported (:func:`refuse_pyspark_without_data_sources`).
- Admission control (``latestOffset(start, limit)``, read limits, ``Trigger.AvailableNow`` in bounded batches):
  4.2 and later (:data:`ADMISSION_CONTROL`, :func:`has_admission_control`). 4.0 and 4.1 call ``latestOffset()``
  with nothing and run ``Trigger.AvailableNow`` as one batch; the stream reader then bounds batches itself
  (``source/stream_reader.py``, ``core/next_batch.py``). ``SupportsTriggerAvailableNow`` is imported from here: on
  4.0 and 4.1 it is an empty stand-in (nothing calls ``prepareForTriggerAvailableNow`` there).
- The Arrow schema a reader's batches must have (:func:`spark_arrow_schema`: ``to_arrow_schema`` changed its
  parameters in 4.2).
- The streaming source runner's ``json`` module and function names (:func:`install_offset_json_guard`), so an
  offset file that is not JSON fails naming the file; in that runner, a layout other than the one below fails
  loudly instead of silently losing the guard.
- The filter-pushdown worker's module name, found on the call stack (:func:`called_for_filter_pushdown`; 4.0 has
  no filter pushdown for Python data sources, so the check is simply never true there).

``tests/unit/source/test_pyspark_compat.py`` checks each against the installed PySpark, so an upgrade that
changes one fails there first.

The wheel does not pin PySpark (its ``spark`` extra does), so that installing it on a platform that provides Spark
keeps that platform's Spark; the check below is what stops a Spark the package was never run on from failing
later in a way nobody can trace back to the version. The range is what ``make test`` (4.3) and ``make compat``
(4.0, 4.1, 4.2, 4.3) run; docs/deployment.md, "Compatibility", says what passed.
"""

from __future__ import annotations

import re
import sys
from types import FrameType

from ..core import errors
from ..core.errors import UnsupportedSparkError
from .offset_json import COMMIT_END, LATEST_START, PARTITIONS_END, PARTITIONS_START, offset_problem

__all__ = [
    "ADMISSION_CONTROL", "PUSHDOWN_WORKER", "RUNNER", "SUPPORTED_PYSPARK", "SupportsTriggerAvailableNow",
    "called_for_filter_pushdown", "check_spark_version", "has_admission_control", "has_filter_pushdown",
    "install_offset_json_guard", "refuse_pyspark_without_data_sources", "runner_layout_missing",
    "spark_arrow_schema",
]

#: [lowest, first unsupported) (major, minor) of PySpark; the ``spark`` extra in pyproject.toml says the same
SUPPORTED_PYSPARK = ((4, 0), (4, 4))
#: the first PySpark whose Python sources have admission control (read limits, Trigger.AvailableNow)
ADMISSION_CONTROL = (4, 2)


def supported_range() -> str:
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_PYSPARK
    return f">={lo_major}.{lo_minor},<{hi_major}.{hi_minor}"


def _running_version() -> str:
    import pyspark

    return pyspark.__version__


def _major_minor(version: str) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _unsupported(version: str) -> UnsupportedSparkError:
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_PYSPARK
    return errors.spark_unsupported(
        f"this Spark runs PySpark {version}, but spark-samza-source supports PySpark {supported_range()} (4.0 to "
        f"{hi_major}.{hi_minor - 1}, the versions its tests run on; Python data sources exist since 4.0). Run the "
        f"query on a Spark in that range: a platform runtime with Spark {lo_major}.{lo_minor} to "
        f"{hi_major}.{hi_minor - 1}, or in a virtualenv pip install 'pyspark{supported_range()}'")


def check_spark_version(version: str | None = None) -> None:
    """Raise :class:`UnsupportedSparkError` naming ``version`` (default: the running PySpark's) and the range."""
    if version is None:
        version = _running_version()
    found = _major_minor(version)
    if found is not None and SUPPORTED_PYSPARK[0] <= found < SUPPORTED_PYSPARK[1]:
        return
    raise _unsupported(version)


def refuse_pyspark_without_data_sources(version: str | None = None) -> None:
    """Raise :class:`UnsupportedSparkError` for a PySpark older than 4.0 (``version``: default the installed one).

    Called on import, before anything imports ``pyspark.sql.datasource``, which such a PySpark lacks: the error
    names the version instead of an ``ImportError``. No PySpark at all is left to the import that needs it, and a
    newer one than the range to ``load()`` (Spark imports every installed ``pyspark_*`` module to find data sources,
    and a module failing there would hide every other Python data source too).
    """
    if version is None:
        try:
            version = _running_version()
        except ImportError:
            return
    found = _major_minor(version)
    if found is not None and found < SUPPORTED_PYSPARK[0]:
        raise _unsupported(version)


def has_admission_control(version: str | None = None) -> bool:
    """Whether ``version`` (default: the running PySpark) gives Python sources admission control."""
    found = _major_minor(version if version is not None else _running_version())
    return found is not None and found >= ADMISSION_CONTROL


def spark_arrow_schema(schema):
    """The Arrow schema PySpark expects a Python data source's ``RecordBatch``es to have for ``schema``.

    4.2+ (whose reader checks it exactly, SPARK-55583) builds it with ``to_arrow_schema(schema, timezone="UTC")``;
    4.0 and 4.1's ``to_arrow_schema`` has no ``timezone`` and gives timestamps UTC by default (``timestamp_utc``),
    which is the same schema.
    """
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema)


try:
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # PySpark 4.0 / 4.1: no admission control, Trigger.AvailableNow is one batch

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in for PySpark 4.2's mixin: 4.0 and 4.1 never call ``prepareForTriggerAvailableNow``."""


#: PySpark's streaming source runner: the module the Python worker of a streaming data source runs as ``__main__``
RUNNER = "pyspark.sql.streaming.python_streaming_source_runner"
_BY_RUNNER_FUNCTION = {
    "latest_offset_func": LATEST_START,
    "latest_offset_admission_control_func": LATEST_START,
    "partitions_func": PARTITIONS_START,  # its second offset (the end) is told apart below
    "commit_func": COMMIT_END,
}
#: what the runner must have for the guard (``latest_offset_admission_control_func`` is newer than some runners)
_REQUIRED = ("json", "latest_offset_func", "partitions_func", "commit_func")


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
    source), and only when it still has the layout this was written against (PySpark 4.0 to 4.3: a module-level
    ``json`` and the functions named in ``_REQUIRED``); anywhere else nothing changes. In that runner with another
    layout it raises :class:`UnsupportedSparkError` rather than lose the guard silently.
    """
    runner = sys.modules.get("__main__")
    spec = getattr(runner, "__spec__", None)
    if runner is None or getattr(spec, "name", None) != RUNNER:
        return
    current = getattr(runner, "json", None)
    if isinstance(current, _OffsetJson):
        return
    missing = runner_layout_missing(runner)
    if missing:
        raise errors.spark_unsupported(
            f"PySpark's streaming source runner ({RUNNER}) no longer has {', '.join(missing)}, which "
            f"spark-samza-source relies on (checked against PySpark {supported_range()}). Use a Spark in that range")
    runner.json = _OffsetJson(current, source)  # type: ignore[attr-defined]  # the runner module's global


def runner_layout_missing(runner) -> list[str]:
    """What of the layout :func:`install_offset_json_guard` relies on ``runner`` lacks (empty: all there)."""
    return [name for name in _REQUIRED if not hasattr(runner, name)]


#: The Python worker module Spark runs to push filters (pyspark/sql/worker/data_source_pushdown_filters.py).
PUSHDOWN_WORKER = "pyspark.sql.worker.data_source_pushdown_filters"


def has_filter_pushdown() -> bool:
    """Whether the running PySpark pushes filters to Python data sources (4.1+: ``pushFilters``; 4.0 never calls
    it, and a batch read there reads everything between its bounds and lets Spark filter)."""
    import importlib.util

    return importlib.util.find_spec(PUSHDOWN_WORKER) is not None


def called_for_filter_pushdown(max_depth: int = 12) -> bool:
    """Whether the caller of ``DataSource.reader`` is Spark's filter-pushdown worker (pushdown is on)."""
    frame: FrameType | None = sys._getframe(1)
    for _ in range(max_depth):
        if frame is None:
            return False
        name = frame.f_globals.get("__name__", "")
        path = frame.f_code.co_filename.replace("\\", "/")
        if name == PUSHDOWN_WORKER or path.endswith("pyspark/sql/worker/data_source_pushdown_filters.py"):
            return True
        frame = frame.f_back
    return False
