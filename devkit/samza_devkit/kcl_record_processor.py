"""A KCL record processor written with amazon-kclpy's own API, for tests: it writes what it reads to a file and
checkpoints when told to.

The KCL MultiLangDaemon (``kcl_daemon``) starts one of these per shard lease it holds, as a child process speaking
the MultiLang protocol on stdin/stdout::

    python -m samza_devkit.kcl_record_processor <work directory>

Everything it does goes to ``<work directory>/events.jsonl``, one JSON object a line, appended with one ``write`` per
line (``O_APPEND``), so the processes of every shard share the file safely:

- ``{"event": "initialize", "shard": ..., "sequence": ..., "sub": ...}``: the lease was taken, and where KCL
  resumes the shard from (its checkpoint);
- ``{"event": "record", "shard", "sequence", "sub", "data", "partition_key"}``: one user record, in the order
  KCL delivered it (``data`` decoded as UTF-8, the tests write text); ``sub`` is the sub-sequence number inside a
  KPL aggregate (0 for a record that is not aggregated);
- ``{"event": "checkpoint", "shard", "sequence", "sub"}``: a checkpoint KCL confirmed;
- ``{"event": "shard_ended" | "lease_lost" | "shutdown_requested", "shard"}``.

Checkpoints happen only on command, so a test knows exactly where they are: ``<work directory>/command.json`` holds
``{"shardId-...": [sequence, sub], ...}`` (checkpoint at that user record once it has been read) and/or
``{"*": "last"}`` (checkpoint at the last record read, in every shard). The processor looks at the file whenever
KCL calls it, including with empty record lists (the daemon runs with ``callProcessRecordsEvenForEmptyRecordList``),
and checkpoints each commanded position once. At a shard's end it checkpoints ``SHARD_END``, as KCL requires.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from amazon_kclpy import kcl
from amazon_kclpy.v3 import processor

EVENTS_FILE = "events.jsonl"
COMMAND_FILE = "command.json"


class RecordingProcessor(processor.RecordProcessorBase):
    """Writes every user record KCL delivers for its shard to the events file; checkpoints on command."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.shard: str | None = None
        self.read: set[tuple[str, int]] = set()
        self.last: tuple[str, int] | None = None
        self.done: set[tuple[str, int]] = set()

    # ---- output ---------------------------------------------------------------------------------------------
    def emit(self, event: str, **fields: object) -> None:
        line = (json.dumps({"event": event, "shard": self.shard, **fields}, sort_keys=True) + "\n").encode()
        fd = os.open(self.work_dir / EVENTS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    # ---- KCL calls ------------------------------------------------------------------------------------------
    def initialize(self, initialize_input) -> None:
        self.shard = initialize_input.shard_id
        self.emit("initialize", sequence=initialize_input.sequence_number, sub=initialize_input.sub_sequence_number)

    def process_records(self, process_records_input) -> None:
        for record in process_records_input.records:
            sequence, sub = record.sequence_number, int(record.sub_sequence_number or 0)
            self.read.add((sequence, sub))
            self.last = (sequence, sub)
            self.emit("record", sequence=sequence, sub=sub, partition_key=record.partition_key,
                      data=record.binary_data.decode("utf-8", "replace"))
        self.checkpoint_as_commanded(process_records_input.checkpointer)

    def lease_lost(self, lease_lost_input) -> None:
        self.emit("lease_lost")

    def shard_ended(self, shard_ended_input) -> None:
        shard_ended_input.checkpointer.checkpoint()
        self.emit("shard_ended")

    def shutdown_requested(self, shutdown_requested_input) -> None:
        self.emit("shutdown_requested")

    # ---- commands -------------------------------------------------------------------------------------------
    def commanded(self) -> list[tuple[str, int]]:
        try:
            command = json.loads((self.work_dir / COMMAND_FILE).read_text())
        except (FileNotFoundError, ValueError):  # no command yet, or the test is writing it (it renames it in)
            return []
        wanted = []
        if command.get("*") == "last" and self.last is not None:
            wanted.append(self.last)
        at = command.get(self.shard)
        if at is not None and (str(at[0]), int(at[1])) in self.read:
            wanted.append((str(at[0]), int(at[1])))
        return [w for w in wanted if w not in self.done]

    def checkpoint_as_commanded(self, checkpointer) -> None:
        for sequence, sub in self.commanded():
            try:
                checkpointer.checkpoint(sequence, sub)
            except kcl.CheckpointError as err:  # the lease is gone (another worker took it): say so, go on
                self.emit("checkpoint_failed", sequence=sequence, sub=sub, error=str(err.value))
                self.done.add((sequence, sub))
                continue
            self.done.add((sequence, sub))
            self.emit("checkpoint", sequence=sequence, sub=sub)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m samza_devkit.kcl_record_processor <work directory>", file=sys.stderr)
        return 2
    kcl.KCLProcess(RecordingProcessor(Path(args[0]))).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
