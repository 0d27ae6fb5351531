"""Parse Samza's ``task.broadcast.inputs``: SSPs that every task reads, each at its own position.

Syntax (Samza's ``TaskConfig``): a comma-separated list of ``system.stream#N`` or ``system.stream#[A-B]``
(inclusive range), e.g. ``kafka.config#0, kafka.config#[1-3]``. The system is the part before the first dot,
so a stream name may itself contain dots (``kafka.orders.v2#0``). Whitespace around every token is ignored.
A blank value means "no broadcast input". Anything else malformed is a :class:`ConfigError` naming the option,
the bad fragment and the expected form, because a silently dropped broadcast input is data a job never reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ..options.common import BROADCAST
from . import errors
from .jobmodel import JobModel
from .model import SystemStream, SystemStreamPartition

#: Guard against ``#[0-999999999]`` building a billion SSPs; far above any real partition count.
MAX_BROADCAST_SSPS = 100_000

_EXPECTED = "expected 'system.stream#N' or 'system.stream#[A-B]' with 0 <= A <= B, e.g. 'kafka.config#[0-3]'"

_FRAGMENT = re.compile(
    r"""^\s*
    (?P<system>[^.\s#,\[\]]+)\.(?P<stream>[^\s#,\[\]]+)
    \s*\#\s*
    (?: (?P<single>\d{1,18}) | \[\s*(?P<low>\d{1,18})\s*-\s*(?P<high>\d{1,18})\s*\] )
    \s*$""",
    re.VERBOSE,
)
_NEGATIVE = re.compile(r"#\s*(?:-|\[\s*-)")


def parse_broadcast_inputs(value: str | None) -> list[SystemStreamPartition]:
    """The SSPs named by a ``task.broadcast.inputs`` value, sorted and without duplicates."""
    if value is None:
        return []
    if not isinstance(value, str):
        raise errors.invalid_option(
            f"option {BROADCAST.name} must be a string, got {type(value).__name__}; {_EXPECTED}")
    if not value.strip():
        return []
    out: set[SystemStreamPartition] = set()
    for fragment in value.split(","):
        match = _FRAGMENT.match(fragment)
        if not match:
            raise errors.invalid_option(
                f"option {BROADCAST.name}: bad entry {fragment.strip()!r} in {value!r:.300}: "
                + _why_bad(fragment)
                + _EXPECTED
            )
        system, stream = match.group("system"), match.group("stream")
        if match.group("single") is not None:
            low = high = int(match.group("single"))
        else:
            low, high = int(match.group("low")), int(match.group("high"))
            if low > high:
                raise errors.invalid_option(
                    f"option {BROADCAST.name}: reversed range in {fragment.strip()!r}: {low} > {high}; "
                    f"write [{high}-{low}]. {_EXPECTED}"
                )
        if len(out) + (high - low + 1) > MAX_BROADCAST_SSPS:
            raise errors.invalid_option(
                f"option {BROADCAST.name}: {fragment.strip()!r} names too many partitions (more than "
                f"{MAX_BROADCAST_SSPS} broadcast SSPs in all); {_EXPECTED}"
            )
        out.update(SystemStreamPartition(system, stream, p) for p in range(low, high + 1))
    return sorted(out)


def _why_bad(fragment: str) -> str:
    if not fragment.strip():
        return "empty entry (stray comma?); "
    if _NEGATIVE.search(fragment):
        return "partition numbers must be >= 0; "
    if "#" not in fragment:
        return "missing '#partition'; "
    name = fragment.split("#", 1)[0].strip()
    if "." not in name or name.startswith(".") or name.endswith("."):
        return f"{name!r} is not 'system.stream' (system and stream separated by the first dot); "
    return ""


def format_broadcast_inputs(ssps: Iterable[SystemStreamPartition]) -> str:
    """The canonical ``task.broadcast.inputs`` value for ``ssps`` (consecutive partitions as ranges)."""
    by_stream: dict[tuple[str, str], list[int]] = {}
    for ssp in sorted(set(ssps)):
        by_stream.setdefault((ssp.system, ssp.stream), []).append(ssp.partition)
    parts: list[str] = []
    for (system, stream), partitions in by_stream.items():
        start = prev = partitions[0]
        for p in [*partitions[1:], None]:
            if p is not None and p == prev + 1:
                prev = p
                continue
            parts.append(f"{system}.{stream}#{start}" if start == prev else f"{system}.{stream}#[{start}-{prev}]")
            if p is not None:
                start = prev = p
    return ", ".join(parts)


def effective_broadcast(
    configured: Iterable[SystemStreamPartition],
    previous: JobModel | None,
    counts: Mapping[SystemStream, int],
) -> frozenset[SystemStreamPartition]:
    """The broadcast SSPs of the next job model: the configured ones, plus every partition that a stream read
    only as broadcast input (none of its partitions is a regular input of ``previous``) has gained since.

    So growing a broadcast topic adds its new partitions to every existing task instead of adding tasks. On the
    first model a stream with partitions beyond the configured ones keeps them as regular inputs (Samza's rule).
    """
    out = set(configured)
    if previous is None:
        return frozenset(out)
    regular = {ssp.system_stream for ssp in previous.ssp_to_task()}
    for stream in {ssp.system_stream for ssp in previous.broadcast} - regular:
        out.update(SystemStreamPartition(stream.system, stream.stream, p) for p in range(counts.get(stream, 0)))
    return frozenset(out)
