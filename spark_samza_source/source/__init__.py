"""The Samza-job skeleton both sources share (docs/architecture.md §2).

The common options parsed once (:mod:`.job_options`; they are declared in ``options/common.py``, each system's
own in its ``options.py``), the ``DataSource`` (:mod:`.data_source`), the stream reader (:mod:`.stream_reader`),
the job coordinator (:mod:`.job_coordinator`), the input partition (:mod:`.partition`), errors for offset files
(:mod:`.offset_json`) and the test-only fault-hook seam (:mod:`.fault_hooks`). A system package derives from these
and adds what is its own.

This ``__init__`` only refuses a PySpark older than 4.0 (:mod:`.pyspark_compat`), before any module here imports
the Python data source API that such a PySpark lacks.
"""

from .pyspark_compat import refuse_pyspark_without_data_sources

refuse_pyspark_without_data_sources()
