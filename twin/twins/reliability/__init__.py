"""The reliability twin: interruptions, checkpoints, spares and goodput of a training campaign.

A discrete-event Monte Carlo of one job on the compiled design over a campaign of D days, vectorised
over runs with numpy. Failure classes come from the catalog (``reliability:``, calibrated on Llama 3
Table 5, arXiv 2407.21783), component counts from the compiled design, a fabric failure's blast
radius from the fabric graph, the step time from the job twin, checkpoint times from the site's
``storage:`` and the workload.

Modules: ``model`` (the ``campaign:`` scenario section), ``components`` (the job's footprint on the
graph and its failure modes), ``checkpoint`` (size, write and restore times, Young/Daly), ``engine``
(the Monte Carlo), ``answers`` (sweeps: checkpoint interval, spares, job size), ``campaign`` (runs it
for ``twin simulate``), ``report`` (tables and Markdown), ``plots`` (PNG).

This package imports nothing at import time so that ``twin.lang.scenario.models`` can import ``model``.
"""
