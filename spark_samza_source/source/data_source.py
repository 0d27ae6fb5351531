"""The ``DataSource`` both sources share: the format name, option parsing at ``load()``, the stream reader.

``SamzaKafkaDataSource`` and ``SamzaKinesisDataSource`` derive from :class:`SamzaDataSource` and name their format,
options class, stream reader class and schema. Options are parsed when Spark asks for the schema (so bad options
fail at ``load()``) and again for the reader, which carries the parsed options to the driver and the executors.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource

from .offset_json import install_offset_json_guard


class SamzaDataSource(DataSource):
    """``spark.readStream.format(FORMAT)``: a Samza job over one system."""

    FORMAT: str
    options_class: Any  # has ``parse(raw options) -> options``
    stream_reader_class: Any  # ``(options, schema) -> SamzaStreamReader``

    @classmethod
    def name(cls) -> str:
        return cls.FORMAT

    def parsed_options(self) -> Any:
        return self.options_class.parse(self.options)

    def streamReader(self, schema):
        install_offset_json_guard(self.FORMAT)
        return self.stream_reader_class(self.parsed_options(), schema)
