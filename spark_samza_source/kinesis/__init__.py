"""The samza-kinesis source. A module's folder says where it runs (docs/architecture.md §2):

- ``driver/``: only on Spark's driver (coordinator, planner, admin, offsets, startpoints); never imported by
  executor code.
- ``executor/``: the reads Spark's tasks run (``read(partition)``); the driver may import them, never the
  other way round.
- this folder: what both sides import (options, input partitions, schema, positions, errors, clients) and the
  DataSource glue (``source.py``), which Spark loads on both sides and which imports driver modules lazily.
"""
