"""The ``DataSource`` both sources share: the format name, option parsing at ``load()``, the stream reader.

``SamzaKafkaDataSource`` and ``SamzaKinesisDataSource`` derive from :class:`SamzaDataSource` and name their format,
options class, stream reader class and schema. Options are parsed when Spark asks for the schema (so bad options
fail at ``load()``) and again for the reader, which carries the parsed options to the driver and the executors.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource

from .bounded_reader import SamzaBoundedReader, bounded_raw_options, refuse_bounded_only_options
from .contracts import OptionsParser
from .job_options import JobOptions
from .pyspark_compat import called_for_filter_pushdown, check_spark_version, install_offset_json_guard
from .stream_reader import SamzaStreamReader


class SamzaDataSource(DataSource):
    """``spark.readStream.format(FORMAT)``: a Samza job over one system."""

    FORMAT: str
    options_class: OptionsParser[JobOptions]
    stream_reader_class: type[SamzaStreamReader]
    bounded_only_options: tuple[str, ...] = ()  # where a bounded read stops: refused by streaming reads
    bounded_reader_class: type[SamzaBoundedReader]  # ``(batch options, schema) -> SamzaBoundedReader``; ``spark.read``
    #: the same with ``pushFilters`` (spark.sql.python.filterPushdown.enabled)
    pushdown_bounded_reader_class: type[SamzaBoundedReader]

    @classmethod
    def name(cls) -> str:
        return cls.FORMAT

    def parsed_options(self) -> Any:
        return self.options_class.parse(self.options)

    def schema_options(self) -> Any:
        """The options as the schema needs them: every option checked at ``load()``, ``job.name`` optional (a
        batch read needs none; a streaming query without one fails when it starts). The running PySpark is
        checked first: outside the tested range, nothing else would be trustworthy."""
        check_spark_version()
        raw, _ = bounded_raw_options(self.options, strict=False)
        return self.options_class.parse(raw)

    def streamReader(self, schema):
        install_offset_json_guard(self.FORMAT)
        refuse_bounded_only_options(self.options, self.bounded_only_options, self.FORMAT)
        return self.stream_reader_class(self.parsed_options(), schema)

    def bounded_read_options(self) -> Any:
        """The options of a bounded read: the bounded reader class's ``parse_options(raw options, uses_job_store)``."""
        raw, uses_store = bounded_raw_options(self.options)
        return self.bounded_reader_class.parse_options(raw, uses_store)

    def reader(self, schema):
        """``spark.read``: the pushdown reader only when Spark calls from its filter-pushdown worker (see
        ``source/bounded_reader.py``: a reader with ``pushFilters`` fails while pushdown is off)."""
        cls = self.pushdown_bounded_reader_class if called_for_filter_pushdown() else self.bounded_reader_class
        return cls(self.bounded_read_options(), schema)
