"""Design-space sweeps: many variants of a site (and scenario) built and simulated as Dask tasks.

``twin sweep SWEEP.yaml`` (:mod:`.cli`) loads the sweep (:mod:`.language`, paths in :mod:`.paths`),
expands its axes into variants and runs each as one task on a ``dask.distributed`` cluster
(:mod:`.engine`, the task itself in :mod:`.worker`, its figures in :mod:`.figures`), caching results by
the variant's spec hash, and writes Parquet, CSV, Pareto plots and a summary (:mod:`.output`).

Python::

    from twin.sweep.load import load_sweep
    from twin.sweep import engine, output
    sw = load_sweep("sweeps/lab-oversubscription.yaml")
    oc = engine.run(sw, Path("/tmp/lab-sweep"), workers=2)
    output.write(sw, oc, Path("/tmp/lab-sweep"))
"""
