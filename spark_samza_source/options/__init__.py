"""The ground of every option (docs/architecture.md §2): what an option entry is (``option.py``), how values are
read and redacted (``values.py``), the options both sources take (``common.py``), the metadata store's namespaces
(``namespaces.py``) and ``ConfigError`` (``errors.py``). Each source's own options, declared and read, are in its
``options.py`` (``kafka/options.py``, ``kinesis/options.py``); ``ops/options_reference.py`` renders them all as
``docs/options.md``.

A leaf: it imports nothing of the package above it, so ``core/``, ``metadata/``, ``source/``, the systems and the
tools all take these names, defaults and namespaces from here.
"""
