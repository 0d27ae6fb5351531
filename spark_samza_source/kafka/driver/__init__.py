"""The samza-kafka modules that run only on Spark's driver. Executor code never imports them (the import walk in
tests/unit/test_executor_imports.py holds that)."""
