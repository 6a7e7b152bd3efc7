#!/bin/bash
# Which CPU each trial of an A/A run starts on (issue 39): one 300-round A/A run of the gzip pipeline (calibrate's,
# monitors on: bench/aa_exchangeability.py's own run) under an ftrace capture of sched_process_fork, _exec and _exit
# in a trace instance of its own, then bench/aa_exchangeability.py on its store with the trace.
#
#     bench/aa_start_cpu.sh SRC OUTDIR [PREFIX...]     (root: ftrace; SRC: the fairmark tree's src to run)
#
# PREFIX runs before fairmark, e.g. `chrt -f 10`: real-time priority, so that the rest of a busy machine does not
# hide what the harness does on an idle one (the start CPU alternating with the trial's number, as it did before
# 36ffbc2). OUTDIR gets aa.db, trace.txt and report.txt.
set -euo pipefail
src=$(realpath "$1")
out=$(realpath -m "$2")
shift 2
repo=$(cd "$(dirname "$0")/.." && pwd)
inst=/sys/kernel/tracing/instances/fairmark-aa-$$
events="sched_process_fork sched_process_exec sched_process_exit"
mkdir -p "$out" "$inst"
trap 'echo 0 > "$inst/tracing_on"; rmdir "$inst"' EXIT
echo 16384 > "$inst/buffer_size_kb"
for e in $events; do echo 1 > "$inst/events/sched/$e/enable"; done
echo 1 > "$inst/tracing_on"
cd "$repo"
PYTHONPATH=$src "$@" .venv/bin/python -c "
import sys; sys.path.insert(0, 'bench')
import aa_exchangeability
aa_exchangeability.own_store(sys.argv[1])" "$out"
echo 0 > "$inst/tracing_on"
cat "$inst/trace" > "$out/trace.txt"
for e in $events; do echo 0 > "$inst/events/sched/$e/enable"; done
PYTHONPATH=$src .venv/bin/python bench/aa_exchangeability.py "$out/aa.db" --trace "$out/trace.txt" | tee "$out/report.txt"
