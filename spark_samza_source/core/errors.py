"""Errors raised by spark-samza-source.

Every error a user can meet derives from :class:`SamzaSourceError`, so callers (and the fuzz tests) can tell our own
clear errors apart from bugs; a broken invariant of our own raises an :class:`InternalError`, outside that
hierarchy. This module holds the errors both systems and the shared layers raise; each system's own are in its
``errors.py`` (``kafka/errors.py``, ``kinesis/errors.py``), the command line's in ``ops/cli/errors.py``
(``tests/unit/test_error_classes.py`` holds that). Messages name the option, stream or key at fault, what was
expected and how to fix it. They never contain secrets.

Each of these modules is also its layer's *catalogue*: every user's error is built by a function here (``raise
errors.data_loss(...)`` at the raise site), so its text lives in one place and starts with its condition, a stable
name declared as a module constant (``SAMZA_...``) and listed in docs/errors.md (``tests/unit/test_error_catalogue.py``
holds both: no user's error is built outside a catalogue, and every condition is unique and documented). """

from __future__ import annotations

# defined in the option spec's leaf (it raises them and may import nothing above it); re-exported here
from ..options.errors import ConfigError as ConfigError
from ..options.errors import InternalError as InternalError
from ..options.errors import SamzaSourceError as SamzaSourceError


class PartitionExpansionError(SamzaSourceError):
    """A stream's partition count changed in a way the expansion algorithm cannot map onto fixed tasks."""


class CoPartitionError(SamzaSourceError):
    """Streams declared as joined (co-partitioned) disagree in partition count."""


class UnsupportedStartpointError(SamzaSourceError):
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


class JobLeaseError(SamzaSourceError):
    """Another query owns this job.name in this metadata store (or took it over from this query)."""


class UnsupportedSparkError(SamzaSourceError):
    """The running PySpark is outside the range this package is tested with."""


class StartUnknownError(SamzaSourceError):
    """Spark ran a batch from another start than the one the source planned it from (PySpark 4.0 / 4.1, where
    Spark does not pass the start: ``core/next_batch.py``)."""


class CheckpointFormatError(SamzaSourceError, ValueError):
    """A checkpoint, or its JSON, is not valid."""


class CheckpointDirError(SamzaSourceError):
    """The checkpoint location cannot be read or holds no offset this tool understands."""


def extra_install_hint(extra: str) -> str:
    """How to install the package with one of its extras, for an error that needs it: the package is not on PyPI,
    so the wheel is built from a clone (``make wheel``) and installed by its file name with the extra."""
    return (f"spark-samza-source[{extra}] (not on PyPI yet: in a clone of the repository, `make wheel`, then "
            f"pip install \"$(ls dist/spark_samza_source-*.whl)[{extra}]\")")
