"""`artist report`: a paper's claims checked against a sweep's results, with the network ablation.

- spec.py: the `report:` section of a sweep spec (the paper, its headline figures with sources, its
  claims as orderings or trends of a results column), parsed when the sweep spec is loaded
- evaluate.py: results -> network configurations, per-claim verdicts, tables (data, with provenance)
- figures.py: one bar chart per claim (matplotlib)
- render.py: the tables as markdown and as self-contained HTML

Every number a report prints is computed here from the results table or copied from the spec's
`report.claims[].paper` figures (each with its source); nothing is written by hand.
"""
