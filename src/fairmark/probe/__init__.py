"""Environment probe and doctor: write the environment down and catch what invalidates a benchmark.

take_snapshot(root="/", tools=(), workdir=".", env=None) -> dict   full, redacted snapshot
volatile_snapshot(root="/") -> dict                              load, steal, governor, swap, thermal
diagnose(snapshot, intended_env={}, workloads=()) -> [Finding]   the doctor
diff_snapshots(a, b) -> [dict]                                   what differs between two runs' hosts
host_identity(snapshot) -> str                                   stable machine id (no clock rates)
redact_env(mapping) / redact_text(text)                          secret scrubbing
"""

from fairmark.probe.diff import comparison_findings, diff_snapshots
from fairmark.probe.doctor import Finding, diagnose, diagnose_volatile, worst_severity
from fairmark.probe.redact import redact_env, redact_text
from fairmark.probe.snapshot import host_identity, take_snapshot, volatile_part, volatile_snapshot

__all__ = [
    "Finding",
    "comparison_findings",
    "diagnose",
    "diagnose_volatile",
    "diff_snapshots",
    "host_identity",
    "redact_env",
    "redact_text",
    "take_snapshot",
    "volatile_part",
    "volatile_snapshot",
    "worst_severity",
]
