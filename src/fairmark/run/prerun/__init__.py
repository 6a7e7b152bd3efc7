"""Measured before the first trial and stored with the run: a variant's own `wrap` around a no-op, each
file-system workload's device with fio O_DIRECT."""
