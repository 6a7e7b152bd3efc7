"""Environment probe and doctor: write the environment down and catch what invalidates a benchmark.

take_snapshot(root="/", tools=(), workdir=".", env=None) -> dict   full, redacted snapshot
volatile_snapshot(root="/") -> dict                              load, steal, governor, swap, thermal
diagnose(snapshot, intended_env={}, workloads=()) -> [Finding]   the doctor
diff_snapshots(a, b) -> [dict]                                   what differs between two runs' hosts
host_identity(snapshot) -> str                                   stable machine id (no clock rates)
redact_env(mapping) / redact_text(text)                          secret scrubbing

Each is imported from its module (probe.snapshot, probe.doctor, probe.diff, probe.redact): this package imports
none of them, so a reader of one (`show`'s report/hosts.py imports probe.diff) does not load every probe module
(~0.03 s of `show`'s CPU).
"""
