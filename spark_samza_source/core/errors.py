"""Errors raised by spark-samza-source.

Every error a user can meet derives from :class:`SamzaSourceError`, so callers (and the fuzz tests) can tell
our own clear errors apart from bugs. Messages name the option, stream or key at fault, what was expected and
how to fix it. They never contain secrets.
"""

# defined in the option spec's leaf (it raises ConfigError and may import nothing above it); re-exported here
from ..options.errors import ConfigError as ConfigError
from ..options.errors import SamzaSourceError as SamzaSourceError


class PartitionExpansionError(SamzaSourceError):
    """A stream's partition count changed in a way the expansion algorithm cannot map onto fixed tasks."""


class CoPartitionError(SamzaSourceError):
    """Streams declared as joined (co-partitioned) disagree in partition count."""


class UnsupportedStartpoint(SamzaSourceError):
    """A system's startpoint visitor does not support this startpoint type."""


class StartpointFormatError(SamzaSourceError, ValueError):
    """A stored or supplied startpoint is not valid startpoint JSON."""


class MetadataStoreError(SamzaSourceError):
    """The metadata store could not be read or written, or holds a value we cannot interpret."""


class FormatVersionError(SamzaSourceError):
    """A stored value (offset, job model, checkpoint) was written by a newer, unknown format version."""


class OffsetFormatError(SamzaSourceError, ValueError):
    """An offset from Spark's checkpoint is not one this source wrote, or is damaged."""


class DataLossError(SamzaSourceError):
    """Records the query had not read yet are gone (deleted, expired, or the topic was re-created).

    Raised as is by the planners on the driver; the readers on the executors raise their system's subclass
    (``KafkaDataLossError``, ``KinesisDataLossError``), so one ``except DataLossError`` catches every loss."""
