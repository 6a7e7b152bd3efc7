"""fairmark — honest A/B benchmarks of operating systems.

Glossary (one meaning each; the code, the store and the reports use these words and no others):

plan
    A TOML file: workloads × variants × run policy (× sweeps). What the user asks for.
workload
    One benchmark: a tool adapter (iperf3, pgbench, …) or a plain command, with parameters and metrics.
variant
    One side of a comparison (A, B, …): what differs — env vars, a command wrapper, a replacement command,
    later sysctls, mounts, CPU sets. The first variant of a plan is the baseline.
sweep
    A parameter taking several values (threads = 1, 2, 4 …); each value is its own cell.
cell
    workload × variant × sweep point. Statistics are per cell.
trial
    One execution of one cell: one process tree, measured. Never called a "run".
run
    One invocation of a plan: all its trials, environment snapshots, findings and verdicts. Has a UUID.
sample
    One metric value from one trial (a trial may yield several: wall_s, Gbit/s, retransmits …).
monitor
    A background sampler during trials (vmstat-like); yields a time series, not samples.
finding
    Something the probe/doctor noticed (debug kernel, governor, steal time), with severity and a fix.
verdict
    The statistical answer for a cell against its baseline cell: difference ± CI, or
    "no difference proven (this run would detect a change of ±x% with 80% power)".
"""

__version__ = "0.1.0"
