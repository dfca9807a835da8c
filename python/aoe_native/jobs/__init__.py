"""Tuning jobs, one file per mode (:mod:`.opat` operator tuning, :mod:`.sgat` subgraph tuning,
:mod:`.gdat` gradient-split tuning), each starting from the one job setup (:mod:`.setup`) and
built on the evaluator seam (:mod:`.evaluator`) and the task scheduler (:mod:`.scheduler`); what
they return is in :mod:`aoe_native.results`."""
