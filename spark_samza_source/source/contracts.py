"""What the shared skeleton (``source/``) asks of a system, written as Protocols so a type checker holds
samza-kafka and samza-kinesis to the same shape: the DataSource names an options parser, the stream reader an
offset codec and a coordinator. Nothing here imports a system; ``tests/unit/source/test_contracts.py`` checks that
both systems fill every one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..core.model import TaskName
from .job_options import JobOptions

__all__ = ["OffsetCodec", "OptionsParser", "SourceOffset", "StreamCoordinator"]


@runtime_checkable
class SourceOffset(Protocol):
    """A system's offset: Spark stores the JSON value ``to_json`` returns in the checkpoint's offset log."""

    def to_json(self) -> dict[str, Any]: ...


OffsetT = TypeVar("OffsetT", bound=SourceOffset)
OffsetCo = TypeVar("OffsetCo", bound=SourceOffset, covariant=True)
OptionsT = TypeVar("OptionsT", bound=JobOptions, covariant=True)


@runtime_checkable
class OffsetCodec(Protocol[OffsetCo]):
    """The offset class itself: ``from_json`` reads what ``to_json`` wrote (raising ``OffsetFormatError``)."""

    def from_json(self, value: Any) -> OffsetCo: ...


@runtime_checkable
class OptionsParser(Protocol[OptionsT]):
    """The options class itself: ``parse`` reads the options a user wrote (raising ``ConfigError``)."""

    def parse(self, raw: Mapping[str, str]) -> OptionsT: ...


@runtime_checkable
class StreamCoordinator(Protocol[OffsetT]):
    """The driver side of a streaming query, one method per Spark call (``source.job_coordinator.JobCoordinator``
    implements the life cycle; a system fills its planning)."""

    def initial_offset(self) -> OffsetT: ...

    def prepare_available_now(self) -> None: ...

    def latest_offset(self, start: OffsetT, *, max_rows: int | None = None) -> OffsetT: ...

    def partitions(self, start: OffsetT, end: OffsetT) -> list[tuple[TaskName, list]]: ...

    def commit(self, end: OffsetT) -> None: ...

    def progress_report(self) -> dict[str, Any] | None: ...
