"""Every option of both sources, declared once (what users write in ``.option(...)``; the folder says options because
a folder named for a spec reads as tests to several tools); the metadata store's namespaces (docs/architecture.md
§2).

A leaf: it imports nothing of the package above it, so ``core/``, ``metadata/``, ``source/``, the systems and the
tools all take names, defaults and namespaces from here. ``options/option.py`` is what an entry is, ``common.py``,
``kafka.py`` and ``kinesis.py`` the entries, ``reference.py`` renders them as ``docs/options.md``.
"""
