"""One trial's path and what it is made of: each workload's prepared cells, the trial's spec built once, its
loop count, its metrics, the secrets scrubbed from what it stores, the trial itself."""
