"""The import report: what a Samza configuration becomes, and every key that did not carry over.

:class:`PropertiesImport` is the result of ``import_properties`` / ``import_mapping``: the source's format,
the Samza system read, the reader ``options``, and ``notes`` (translations that are not one to one),
``rejected`` (meaningful keys refused or done differently here, with the reason) and ``ignored`` (Samza
runtime keys, or keys not recognised, said so). Its ``repr`` and :meth:`~PropertiesImport.describe` never show
a secret option's value. :func:`log_report` writes the same report to this package's logger
(``spark_samza_source.samza_config``: notes and ignored keys at INFO, rejected keys as warnings).

Callers: ``importer.py`` builds the result from a ``common.Translation`` and logs it for ``load_properties`` /
``properties_to_options``; users read it (``docs/migration.md``, "Import job.properties").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ..options.secrets import displayed

__all__ = ["PropertiesImport", "log_report"]

log = logging.getLogger(__package__)  # spark_samza_source.samza_config, the module users import


@dataclass(frozen=True)
class PropertiesImport:
    """What a Samza configuration becomes: options for one source, and every key that did not carry over."""

    format: str  # "samza-kafka" or "samza-kinesis": the argument of spark.readStream.format(...)
    system: str  # the Samza system the inputs were read from
    options: dict[str, str]
    notes: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    ignored: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:  # options may hold credentials
        shown = {k: displayed(k, v) for k, v in self.options.items()}
        return (f"PropertiesImport(format={self.format!r}, system={self.system!r}, options={shown!r}, "
                f"{len(self.notes)} notes, {len(self.rejected)} rejected, {len(self.ignored)} ignored)")

    def describe(self) -> str:
        """A human-readable report (secret values are never shown)."""
        lines = [f"{self.format} options from Samza system '{self.system}':"]
        lines += [f"  {k} = {displayed(k, v)}" for k, v in self.options.items()]
        for title, entries in (("notes", self.notes),
                               ("rejected (not carried over)", [f"{k}: {w}" for k, w in self.rejected.items()]),
                               ("ignored", [f"{k}: {w}" for k, w in self.ignored.items()])):
            if entries:
                lines.append(f"{title}:")
                lines += [f"  - {entry}" for entry in entries]
        return "\n".join(lines)


def log_report(result: PropertiesImport, where: str) -> None:
    """Log ``result``'s notes and ignored keys at INFO and its rejected keys as warnings, each prefixed ``where``."""
    for note in result.notes:
        log.info("%s: %s", where, note)
    for key, why in result.rejected.items():
        log.warning("%s: %s is not carried over: %s", where, key, why)
    for key, why in result.ignored.items():
        log.info("%s: %s ignored: %s", where, key, why)
