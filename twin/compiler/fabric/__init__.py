"""The fabric: its shape (:mod:`.shape`, derived from the spec before placement), its synthesis into
the graph (:mod:`.synthesis`), cabling (:mod:`.cabling`), BOM (:mod:`.bom`) and figures (:mod:`.figures`).

Nothing is imported here, so that validation (which needs only the shape) does not load networkx.
"""
