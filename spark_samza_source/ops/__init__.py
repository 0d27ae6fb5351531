"""Operator tools for samza-kafka and samza-kinesis jobs: they read the metadata store and the offset log.

- ``ops.cli``: the ``samza-source`` command (``python -m spark_samza_source.ops.cli``): startpoints, the job
  model, the checkpoint mirror and lag of a job, from its metadata store and, where asked, its Spark
  checkpoint location (read by ``samza_config.offset_log``, without Spark).
- ``ops.lag``: how far a job is behind, committed positions against the streams' latest; the CLI's ``lag``.
- ``ops.metrics``: offsets behind latest from a running query's streaming progress, and
  ``SamzaLagListener``, a ``StreamingQueryListener`` that logs them (the one module here that imports pyspark).

Callers: operators (the console script ``samza-source``), applications that register the listener, and the
tests. Nothing in the sources imports ``ops``; ``ops`` imports ``core``, ``metadata``, ``samza_config`` and
the system packages' admins (lazily, per command).
"""
