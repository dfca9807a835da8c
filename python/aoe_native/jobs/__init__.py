"""Tuning jobs, one file per mode (:mod:`.opat`: operator tuning), built on the evaluator
seam (:mod:`.evaluator`), the task scheduler (:mod:`.scheduler`) and the result types
(:mod:`.results`)."""
