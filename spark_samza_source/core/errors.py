"""Errors raised by spark-samza-source.

Every error a user can meet derives from :class:`SamzaSourceError`, so callers (and the fuzz tests) can tell our own
clear errors apart from bugs; a broken invariant of our own raises an :class:`InternalError`, outside that
hierarchy. This module holds the errors both systems and the shared layers raise; each system's own are in its
``errors.py`` (``kafka/errors.py``, ``kinesis/errors.py``), the Samza config importer's in ``samza_config/errors.py``,
the command line's in ``ops/cli/errors.py`` and the lag tools' in ``ops/errors.py``
(``tests/unit/test_error_classes.py`` holds that). Messages name the option, stream or key at fault, what was
expected and how to fix it. They never contain secrets.

Each of these modules is also its layer's *catalogue*: every user's error is built by a function here (``raise
errors.data_loss(...)`` at the raise site), so its text lives in one place and starts with its condition, a stable
name declared as a module constant (``SAMZA_...``) and listed in docs/errors.md (``tests/unit/test_error_catalogue.py``
holds both: no user's error is built outside a catalogue, and every condition is unique and documented). """

from __future__ import annotations

from typing import TYPE_CHECKING

from ..options.common import JOB_NAME
from ..options.errors import INVALID_OPTION

# defined in the option spec's leaf (it raises them and may import nothing above it); re-exported here
from ..options.errors import ConfigError as ConfigError
from ..options.errors import InternalError as InternalError
from ..options.errors import SamzaSourceError as SamzaSourceError

if TYPE_CHECKING:
    from .model import SystemStreamPartition

# the conditions of the shared layers (core/, metadata/, source/): docs/errors.md, "Both sources"
PARTITION_EXPANSION_UNSUPPORTED = "SAMZA_PARTITION_EXPANSION_UNSUPPORTED"
EXPANSION_ALGORITHM_BROKEN = "SAMZA_EXPANSION_ALGORITHM_BROKEN"
COPARTITION_MISMATCH = "SAMZA_COPARTITION_MISMATCH"
STARTPOINT_INVALID = "SAMZA_STARTPOINT_INVALID"
STARTPOINT_CUSTOM_TYPE_INVALID = "SAMZA_STARTPOINT_CUSTOM_TYPE_INVALID"
STARTPOINT_UNSUPPORTED = "SAMZA_STARTPOINT_UNSUPPORTED"
CHECKPOINT_MIRROR_INVALID = "SAMZA_CHECKPOINT_MIRROR_INVALID"
JOB_MODEL_INVALID = "SAMZA_JOB_MODEL_INVALID"
SSP_INVALID = "SAMZA_SSP_INVALID"
TASK_NAME_INVALID = "SAMZA_TASK_NAME_INVALID"
FORMAT_VERSION_UNKNOWN = "SAMZA_FORMAT_VERSION_UNKNOWN"
OFFSET_INVALID = "SAMZA_OFFSET_INVALID"
METADATA_STORE_FAILED = "SAMZA_METADATA_STORE_FAILED"
METADATA_VALUE_INVALID = "SAMZA_METADATA_VALUE_INVALID"
METADATA_VALUE_NOT_STORABLE = "SAMZA_METADATA_VALUE_NOT_STORABLE"
METADATA_WRITE_CONTENDED = "SAMZA_METADATA_WRITE_CONTENDED"
JOB_LEASE_HELD = "SAMZA_JOB_LEASE_HELD"
JOB_LEASE_LOST = "SAMZA_JOB_LEASE_LOST"
SPARK_UNSUPPORTED = "SAMZA_SPARK_UNSUPPORTED"
BATCH_START_UNKNOWN = "SAMZA_BATCH_START_UNKNOWN"


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


# ---- the shared layers' catalogue ------------------------------------------------------------------------------
# Where a family's messages vary with what went wrong, the raise site words ``problem`` (naming the option, stream,
# key or value at fault) and the function here gives it its class and condition.

def invalid_option(problem: str) -> ConfigError:
    """An option the shared layers read (``task.broadcast.inputs``, co-partition groups, the grouper, the expansion
    algorithm, ``metadata.store``, ``job.name``, the test-only fault hooks, a batch read's options) that they cannot
    use; ``problem`` names the option and the fix."""
    return ConfigError(problem)


def expansion_unsupported(problem: str) -> PartitionExpansionError:
    """A stream's partition count changed in a way fixed tasks cannot follow (shrank, grew by a count the
    algorithm cannot map, lost or left partitions)."""
    return PartitionExpansionError(problem, condition=PARTITION_EXPANSION_UNSUPPORTED)


def expansion_algorithm_broken(problem: str) -> PartitionExpansionError:
    """A plugged-in expansion algorithm answered outside its contract: the user's code to fix, not ours."""
    return PartitionExpansionError(problem, condition=EXPANSION_ALGORITHM_BROKEN)


def copartition_mismatch(problem: str) -> CoPartitionError:
    return CoPartitionError(problem, condition=COPARTITION_MISMATCH)


def startpoint_invalid(problem: str) -> StartpointFormatError:
    """A startpoint, its JSON or its store key that is not valid (``problem`` names the key or the value)."""
    return StartpointFormatError(problem, condition=STARTPOINT_INVALID)


def startpoint_custom_type_invalid(problem: str) -> StartpointFormatError:
    """A ``StartpointCustom`` subclass defined against the rules (its name, its decorator)."""
    return StartpointFormatError(problem, condition=STARTPOINT_CUSTOM_TYPE_INVALID)


def startpoint_unsupported(type_name: str, visitor: str, ssp: SystemStreamPartition,
                           startpoint_json: str) -> UnsupportedStartpointError:
    return UnsupportedStartpointError(
        f"{type_name} is not supported by {visitor} (for {ssp}); "
        f"delete or replace the startpoint: {startpoint_json}", condition=STARTPOINT_UNSUPPORTED)


def checkpoint_invalid(problem: str) -> CheckpointFormatError:
    """A checkpoint of the metadata store's checkpoint mirror, or its JSON, that is not valid."""
    return CheckpointFormatError(problem, condition=CHECKPOINT_MIRROR_INVALID)


def job_model_invalid(problem: str) -> SamzaSourceError:
    """A job model's JSON that is not one this package wrote (the stored job model's readers say what to do)."""
    return SamzaSourceError(problem, condition=JOB_MODEL_INVALID)


def ssp_invalid(problem: str) -> SamzaSourceError:
    """A SystemStreamPartition (or its JSON or string form) that names no partition."""
    return SamzaSourceError(problem, condition=SSP_INVALID)


def task_name_invalid(problem: str) -> SamzaSourceError:
    return SamzaSourceError(problem, condition=TASK_NAME_INVALID)


def format_version_unknown(problem: str) -> FormatVersionError:
    """A stored value (store item, checkpoint, job model) written by a newer release (``problem`` names it)."""
    return FormatVersionError(problem, condition=FORMAT_VERSION_UNKNOWN)


def offset_invalid(problem: str) -> OffsetFormatError:
    """An offset from Spark's checkpoint that is not JSON or not this source's; the stream reader quotes it in
    :func:`offset_unusable`."""
    return OffsetFormatError(problem, condition=OFFSET_INVALID)


def offset_unusable(source: str, what: str, where: str, problem: str, condition: str | None) -> OffsetFormatError:
    """An offset ``source`` cannot use (``what``: which one, ``where``: its file in the checkpoint location), keeping
    the condition of the error that found it (``condition``; the shared one when none)."""
    return OffsetFormatError(
        f"{source} cannot use {what} that Spark read from the query's checkpoint: {problem}. It is in {where}, "
        "on the line after Spark's metadata line. Spark does not tell the source the checkpoint location or the "
        "batch number, so check that file: restore it from a backup, or remove that batch's files from "
        "<checkpoint>/offsets/ and <checkpoint>/commits/ so the batch is planned again; or start a new checkpoint "
        f"location (the job model and startpoints are kept in the metadata store for the same {JOB_NAME.name})",
        condition=condition or OFFSET_INVALID)


def metadata_store_failed(problem: str) -> MetadataStoreError:
    """A read or write of the metadata store failed, or its table cannot serve (``problem``: the cause, the fix)."""
    return MetadataStoreError(problem, condition=METADATA_STORE_FAILED)


def metadata_value_invalid(problem: str) -> MetadataStoreError:
    """A stored item that is damaged or not one this package wrote (``problem`` names it and what to delete)."""
    return MetadataStoreError(problem, condition=METADATA_VALUE_INVALID)


def metadata_value_not_storable(problem: str) -> MetadataStoreError:
    """A key that is not UTF-8 text, or a value that is not JSON: the store cannot hold it."""
    return MetadataStoreError(problem, condition=METADATA_VALUE_NOT_STORABLE)


def metadata_write_contended(problem: str) -> MetadataStoreError:
    """A conditional write that kept losing to other writers until its attempts ran out."""
    return MetadataStoreError(problem, condition=METADATA_WRITE_CONTENDED)


def job_lease_held(problem: str) -> JobLeaseError:
    """Another query owns this ``job.name`` in this store (``problem``: who, and how to tell the queries apart)."""
    return JobLeaseError(problem, condition=JOB_LEASE_HELD)


def job_lease_lost(problem: str) -> JobLeaseError:
    """This query no longer owns its job: taken over, or not renewed within its TTL."""
    return JobLeaseError(problem, condition=JOB_LEASE_LOST)


def job_lease_ttl_invalid(option: str, minimum_ms: int, got: object) -> JobLeaseError:
    return JobLeaseError(f"option '{option}' must be at least {minimum_ms} ms, got {got!r}", condition=INVALID_OPTION)


def spark_unsupported(problem: str) -> UnsupportedSparkError:
    """The running PySpark is outside the tested range, or lacks what this package relies on."""
    return UnsupportedSparkError(problem, condition=SPARK_UNSUPPORTED)


def batch_start_unknown(source: str, available_now_wrapper_option: str) -> StartUnknownError:
    """PySpark 4.0 / 4.1 resumed from the checkpoint after the source planned from its initial offset."""
    return StartUnknownError(
        f"{source} planned the first batch of this run from its initial offset, but Spark then "
        "resumed the query from its checkpoint: Spark asked the source for its latest offset before "
        "saying where the checkpoint stands. This PySpark (4.0 or 4.1) does that with "
        f"Trigger.AvailableNow when '{available_now_wrapper_option}' is true. Set it to false (Trigger."
        "AvailableNow then runs one batch, bounded by the source's limit), or use PySpark 4.2 or later, "
        "where the source reads Trigger.AvailableNow in bounded batches itself; nothing was read",
        condition=BATCH_START_UNKNOWN)
