"""Import a Samza ``job.properties`` file (or an already parsed mapping) as options of one source.

Every key ends up in exactly one place of the :class:`~.report.PropertiesImport`: ``options``, ``notes``,
``rejected`` or ``ignored``; or a ``ConfigError`` naming the key, for keys whose loss would silently change
which records are read or which task reads them. Decisions worth knowing: ``job.name`` is ``job.name`` when
``job.id`` is ``1`` (Samza's default) and ``<job.name>-<job.id>`` otherwise; one query reads one system
(``system=`` picks it when ``task.inputs`` spans several); SSPs always carry the system name ``kafka`` (or
``kinesis``); options of the sources themselves may be written into the file and pass through, one that
contradicts a value derived from Samza keys is a ``ConfigError``. ``docs/migration.md`` has the mapping table.

Callers: users, through the names ``samza_config`` re-exports (README, ``docs/migration.md``,
``conf/*.example.properties``). :data:`SYSTEMS` lists the systems a configuration may be translated for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..core.errors import ConfigError
from . import errors
from .common import SystemTranslation, Translation
from .kafka import KAFKA
from .kinesis import KINESIS
from .properties import read_properties
from .report import PropertiesImport, log_report

__all__ = ["SYSTEMS", "import_mapping", "import_properties", "load_properties", "properties_to_options"]

#: format -> that system's translation (``kafka.py``, ``kinesis.py``)
SYSTEMS: Mapping[str, SystemTranslation] = {t.format: t for t in (KAFKA, KINESIS)}


def import_properties(
    path: str | os.PathLike[str],
    *,
    system: str | None = None,
    stream: str | None = None,
    partition_counts: Mapping[str, int] | None = None,
) -> PropertiesImport:
    """Read a Samza ``job.properties`` file and translate it; see the module documentation.

    ``system``: the Samza system to read when ``task.inputs`` spans several. ``stream``: the Kinesis stream to
    read when the system has several (one ``samza-kinesis`` query reads one stream). ``partition_counts``
    (topic -> current partition count) lets Kafka topics with different ``samza.offset.default`` values be
    expressed as per-partition ``startingOffsets`` JSON; without it that case is a ``ConfigError``.
    """
    try:
        return import_mapping(read_properties(path), system=system, stream=stream,
                              partition_counts=partition_counts)
    except ConfigError as err:
        raise errors.in_file(os.fspath(path), err) from None


def import_mapping(
    mapping: Mapping[str, str],
    *,
    system: str | None = None,
    stream: str | None = None,
    partition_counts: Mapping[str, int] | None = None,
) -> PropertiesImport:
    """Translate an already parsed Samza configuration (key -> value); see :func:`import_properties`."""
    return Translation(mapping, system=system, stream=stream, partition_counts=partition_counts).run(SYSTEMS)


def load_properties(
    path: str | os.PathLike[str],
    *,
    system: str | None = None,
    stream: str | None = None,
    partition_counts: Mapping[str, int] | None = None,
) -> dict[str, str]:
    """The reader options of :func:`import_properties`; rejected keys are logged as warnings, the rest at info."""
    result = import_properties(path, system=system, stream=stream, partition_counts=partition_counts)
    log_report(result, os.fspath(path))
    return dict(result.options)


def properties_to_options(
    mapping: Mapping[str, str],
    *,
    system: str | None = None,
    stream: str | None = None,
    partition_counts: Mapping[str, int] | None = None,
) -> dict[str, str]:
    """The reader options of :func:`import_mapping`, logging what was left out as :func:`load_properties` does."""
    result = import_mapping(mapping, system=system, stream=stream, partition_counts=partition_counts)
    log_report(result, "Samza configuration")
    return dict(result.options)

