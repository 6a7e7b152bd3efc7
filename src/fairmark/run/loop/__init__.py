"""The rounds: the runner (warm-up, measured, profiled rounds; stopping; resume), the boot run, the stopping
rule, the workload's stage, the probe gate, a run's options and profiled rounds."""
