"""``samza-source checkpoint show``: the positions mirrored to the metadata store at each commit."""

from __future__ import annotations

import argparse
from typing import Any

from ....core.checkpoint import CheckpointMirror
from .. import errors
from ..render import cell, iso_ms, render_table
from .common import Outcome, _header, _open, _where

# ---- checkpoints ---------------------------------------------------------------------------------------------


def _position_text(position: Any) -> int | str:
    """A mirrored position for people: Kafka offsets as is, Kinesis positions as ``after 4960...``."""
    if isinstance(position, dict):
        from ....kinesis.errors import PositionFormatError
        from ....kinesis.positions import ShardPosition

        try:
            if isinstance(position.get("type"), str):
                return str(ShardPosition.from_json(position))
            return "; ".join(f"{shard}: {ShardPosition.from_json(p)}" for shard, p in sorted(position.items()))
        except (PositionFormatError, AttributeError):
            pass
    return position if isinstance(position, (int, str)) else cell(position)


def checkpoint_show(args: argparse.Namespace) -> Outcome:
    checkpoint = CheckpointMirror(_open(args)).read()
    if checkpoint is None:
        raise errors.no_committed_positions(_where(args))
    rows = [[task.name, ssp.key, _position_text(pos)] for task, positions in checkpoint.positions.items()
            for ssp, pos in positions.items()]
    batch = f"batch {checkpoint.batch_id}, " if checkpoint.batch_id is not None else ""
    text = (f"committed positions of job {args.job!r} ({batch}committed at {iso_ms(checkpoint.timestamp_ms)})\n"
            + render_table(["TASK", "SSP", "POSITION"], rows))
    data = {**_header(args), "committedAt": iso_ms(checkpoint.timestamp_ms), "checkpoint": checkpoint.to_json()}
    return Outcome(data, text)
