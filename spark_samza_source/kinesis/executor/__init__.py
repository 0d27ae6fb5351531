"""The samza-kinesis modules that run in Spark's executors (what a task's ``read(partition)`` runs). They import
nothing from ``driver/`` (tests/unit/test_executor_imports.py holds that)."""
