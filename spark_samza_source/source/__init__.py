"""The Samza-job layer both sources share (docs/architecture.md §2).

So far: the names of the options every Samza job has (:mod:`.options`). This package's ``__init__`` imports
nothing, so the pure ``core/`` modules may import the option names without loading anything else.
"""
