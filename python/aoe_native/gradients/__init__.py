"""Gradient-split tuning's concepts without the job: the timeline input (:mod:`.timeline`) and
the buckets with their all-reduce timeline, exact optimum and fixed rules (:mod:`.buckets`).
The job (:mod:`aoe_native.jobs.gdat`) and the result type (:class:`aoe_native.results.GradientPlan`)
are built on them."""
