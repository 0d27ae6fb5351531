"""``python -m spark_samza_source.ops.cli``: the same as the ``samza-source`` console script."""

import sys

from . import main

sys.exit(main())
