"""Metrics of plain command workloads: built-ins from the executor, or values taken from the output."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from fairmark.plan.metric import LOOP_METRICS, per_loop
from fairmark.plan.model import BUILTIN_METRICS, Metric
from fairmark.run.launch.executor import ExecResult
from fairmark.run.workloads.base import ParseError

_INDEX = re.compile(r"^(.*?)\[(-?\d+)\]$")


def builtin_values(result: ExecResult) -> dict[str, float]:
    """The executor's measurements; no max_rss_kib where the host could not measure the workload's own peak
    (no launcher: `fairmark.run.launch.launcher`)."""
    values = {"wall_s": result.wall_s, "user_s": result.user_s, "sys_s": result.sys_s, "cpu_s": result.cpu_s}
    if result.max_rss_kib is not None and result.max_rss_method is not None:
        values["max_rss_kib"] = float(result.max_rss_kib)
    return values


def _number(text: Any, what: str) -> float:
    try:
        value = (
            float(str(text).replace(",", "").strip()) if not isinstance(text, int | float) else float(text)
        )
    except ValueError:
        raise ParseError(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise ParseError(f"{what}: {text!r} is not a finite number")
    return value


def json_lookup(doc: Any, path: str) -> Any:
    """'end.sum_sent.bits_per_second' or 'results[0].mean' into parsed JSON."""
    node = doc
    for part in path.split("."):
        m = _INDEX.match(part)
        key, idx = (m.group(1), int(m.group(2))) if m else (part, None)
        if key:
            if not isinstance(node, dict) or key not in node:
                raise ParseError(f"json path {path!r}: no key {key!r}")
            node = node[key]
        if idx is not None:
            if not isinstance(node, list) or not -len(node) <= idx < len(node):
                raise ParseError(f"json path {path!r}: no element [{idx}]")
            node = node[idx]
    return node


def extract(metric: Metric, stdout: str, stderr: str) -> float:
    text = stdout if metric.stream == "stdout" else stderr
    if metric.regex:
        m = re.search(metric.regex, text, re.MULTILINE)
        if not m:
            raise ParseError(
                f"metric {metric.name!r}: regex {metric.regex!r} found nothing in {metric.stream}"
            )
        return _number(m.group(1) if m.groups() else m.group(0), f"metric {metric.name!r}")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"metric {metric.name!r}: {metric.stream} is not JSON ({exc})") from None
    assert metric.json_path is not None
    return _number(json_lookup(doc, metric.json_path), f"metric {metric.name!r}")


def measured_only(metrics: list[Metric]) -> bool:
    """Whether every metric is measured by the executor (nothing to read from the output)."""
    return all(m.name in BUILTIN_METRICS or m.name in LOOP_METRICS for m in metrics)


def command_metrics(
    metrics: list[Metric],
    result: ExecResult,
    stdout: str,
    stderr: str,
    loops: int | None = None,
    start_s: float = 0.0,
) -> dict[str, float]:
    """The built-ins, the per-loop times when the trial was handed `loops` (the CPU time less the calibrated
    start `start_s`), and the plan's own metrics."""
    values = builtin_values(result)
    if loops is not None:
        values |= per_loop(values, loops, start_s)
    for m in metrics:
        if m.name not in values:  # a built-in's name means the built-in (as it always did)
            values[m.name] = extract(m, stdout, stderr)
    return values
