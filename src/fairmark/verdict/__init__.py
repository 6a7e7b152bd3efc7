"""Verdicts: between the store and the statistics, the one place where stored measurements become verdicts.

`values` reads a run's records into cells whose values carry their unit labels (round, run, boot, host);
`match` says which cells of two runs are the same cell; `pairs` builds every pair the judge (verdict.judge) sees,
with the design its data call for, and judges them; `rule` holds the gates' decision ("a regression proven beyond
X%"); `run` gives a stored run's verdicts. It may read the store and call the statistics; the statistics never
read the store, and nothing here prints or knows a command line.
"""
