"""Import a Samza ``job.properties`` file as reader options for ``samza-kafka`` or ``samza-kinesis``.

```python
from spark_samza_source.samza_config import import_properties, load_properties

options = load_properties("job.properties")                      # dict[str, str]; logs what it left out
df = spark.readStream.format("samza-kafka").options(**options).option("metadata.store", "s3://b/p").load()

result = import_properties("job.properties")                     # the full report
print(result.describe())                                         # options, notes, rejected and ignored keys
df = spark.readStream.format(result.format).options(**result.options).load()
```

Nothing is read beyond the file: no broker, no AWS call. The modules, by concern: ``properties`` (Java
``.properties`` syntax), ``importer`` (the entry points), ``common`` (the translation steps every Samza job
has), ``kafka`` / ``kinesis`` (one system's keys), ``report`` (:class:`PropertiesImport`), ``checkpoints``
(``startingOffsets`` from a Samza or a Spark Kafka checkpoint) and ``offset_log`` (the one reader of a Spark
checkpoint's ``offsets/``, shared with the operator CLI in ``ops/``). ``docs/migration.md`` is the user guide.
"""

from .checkpoints import starting_offsets_from_samza_checkpoint, starting_offsets_from_spark_checkpoint
from .common import KAFKA_FORMAT, KINESIS_FORMAT
from .importer import import_mapping, import_properties, load_properties, properties_to_options
from .properties import parse_properties, read_properties
from .report import PropertiesImport

__all__ = [
    "KAFKA_FORMAT",
    "KINESIS_FORMAT",
    "PropertiesImport",
    "import_mapping",
    "import_properties",
    "load_properties",
    "parse_properties",
    "properties_to_options",
    "read_properties",
    "starting_offsets_from_samza_checkpoint",
    "starting_offsets_from_spark_checkpoint",
]
