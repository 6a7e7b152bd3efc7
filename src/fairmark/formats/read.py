"""Detect which tool wrote a file and read it into `Results`.

* `go test -bench` (Go's benchmark format): configuration lines `key: value` (goos, goarch, pkg, cpu — a value
  may hold spaces: "cpu: AMD EPYC 7B13"), result lines `BenchmarkName-P  iterations  value unit  [value
  unit]…`, everything else (PASS, ok …) ignored as Go's own tools ignore it. Benchmarks are told apart by name
  and `pkg` (as benchstat's tables are, less the other configuration keys: a `note:` does not split a benchmark).
* hyperfine `--export-json`: each command's `times` (seconds).
* pyperf JSON: each benchmark's runs' `values` (warm-ups left out), in its unit (seconds by default).
* Google Benchmark `--benchmark_format=json` (or `--benchmark_out`): each benchmark's iteration runs (with
  `--benchmark_repetitions`, one per repetition; aggregates left out): real_time and cpu_time in its time_unit,
  bytes_per_second and items_per_second when given.
* criterion's `sample.json`: per-iteration times, each sample's time over its iteration count (nanoseconds).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import PurePath

from fairmark.errors import InputError
from fairmark.formats.model import Results, Series

GO_RESULT = re.compile(r"^Benchmark(?:[^a-z\s]\S*)?\s+\d+(?:\s+\S+\s+\S+)+\s*$")
GO_CONFIG = re.compile(r"^([a-z][^\s:]*):\s*(.*?)\s*$")

__all__ = ["detect", "parse_results"]


def detect(text: str) -> str | None:
    """The tool that wrote `text`: "go", "hyperfine", "pyperf", "gbench", "criterion", or None (a plain
    file of numbers, or something else: the plain reader says what)."""
    head = text.lstrip()
    if head.startswith("{"):
        return "json"
    if any(GO_RESULT.match(line) for line in text.splitlines()):
        return "go"
    return None


def parse_results(text: str, path: str) -> Results | None:
    """The file's results, or None when it is not one of the formats here (then it is a plain file)."""
    kind = detect(text)
    if kind == "go":
        return parse_go(text, path)
    if kind == "json":
        return parse_json(text, path)
    return None


def _number(token: str, where: str) -> float:
    try:
        value = float(token)
    except ValueError:
        raise InputError(f"{where}: {token!r} is not a number") from None
    if not math.isfinite(value):
        raise InputError(f"{where}: {token!r} is not a finite number")
    return value


def parse_go(text: str, path: str) -> Results:
    """`go test -bench` output: one series per (pkg, benchmark, unit)."""
    config: dict[str, str] = {}
    values: dict[tuple[str, str, str], list[float]] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if GO_RESULT.match(line):
            fields = line.split()
            name = fields[0].removeprefix("Benchmark") or "Benchmark"
            for value, unit in zip(fields[2::2], fields[3::2], strict=False):
                key = (config.get("pkg", ""), name, unit)
                values.setdefault(key, []).append(_number(value, f"{path}:{lineno}: {name} {unit}"))
            continue
        m = GO_CONFIG.match(line)
        if m and not line.startswith(("ok ", "ok\t", "PASS", "FAIL")):
            config[m.group(1)] = m.group(2)
    series = tuple(Series(name, unit, tuple(v), group) for (group, name, unit), v in values.items())
    return Results(path, "go test -bench", series, config)


def parse_json(text: str, path: str) -> Results:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: a JSON object was expected at the top")
    readers: list[tuple[Callable[[dict, str], bool], Callable[[dict, str], Results]]] = [
        (lambda d, _: isinstance(d.get("results"), list), _hyperfine),
        (lambda d, _: "context" in d and isinstance(d.get("benchmarks"), list), _gbench),
        (lambda d, _: isinstance(d.get("benchmarks"), list), _pyperf),
        (lambda d, _: "iters" in d and "times" in d, _criterion),
    ]
    for matches, reader in readers:
        if matches(doc, path):
            return reader(doc, path)
    raise InputError(
        f"{path}: JSON that fairmark does not know: expected hyperfine's --export-json (key 'results'), pyperf's "
        "or Google Benchmark's JSON (key 'benchmarks') or criterion's sample.json (keys 'iters', 'times')"
    )


def _floats(items: object, where: str) -> tuple[float, ...]:
    if not isinstance(items, list):
        raise InputError(f"{where}: a list of numbers was expected")
    out = []
    for i, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item):
            raise InputError(f"{where}[{i}]: {item!r} is not a number")
        out.append(float(item))
    return tuple(out)


def _hyperfine(doc: dict, path: str) -> Results:
    series = []
    for i, result in enumerate(doc["results"]):
        where = f"{path}: results[{i}]"
        if not isinstance(result, dict) or "times" not in result:
            raise InputError(f"{where}: no 'times' (hyperfine writes each run's time there since 1.5)")
        name = str(result.get("command", f"command {i + 1}"))
        series.append(Series(name, "s", _floats(result["times"], f"{where}.times")))
    return Results(path, "hyperfine", tuple(series))


PYPERF_UNITS = {"second": "s", "byte": "B", "integer": ""}


def _pyperf(doc: dict, path: str) -> Results:
    common = doc.get("metadata") or {}
    series = []
    for i, bench in enumerate(doc["benchmarks"]):
        where = f"{path}: benchmarks[{i}]"
        meta = {**common, **(bench.get("metadata") or {})} if isinstance(bench, dict) else None
        if meta is None or not isinstance(bench.get("runs"), list):
            raise InputError(f"{where}: no 'runs' (pyperf writes each benchmark's runs there)")
        values: list[float] = []
        for k, run in enumerate(bench["runs"]):
            if isinstance(run, dict) and "values" in run:  # a calibration run has warm-ups only
                values += _floats(run["values"], f"{where}.runs[{k}].values")
        unit = str(meta.get("unit", "second"))
        series.append(
            Series(str(meta.get("name", f"benchmark {i + 1}")), PYPERF_UNITS.get(unit, unit), tuple(values))
        )
    return Results(path, "pyperf", tuple(series))


GBENCH_RATES = ("bytes_per_second", "items_per_second")


def _gbench(doc: dict, path: str) -> Results:
    values: dict[tuple[str, str], list[float]] = {}
    for i, run in enumerate(doc["benchmarks"]):
        where = f"{path}: benchmarks[{i}]"
        if not isinstance(run, dict) or run.get("run_type", "iteration") != "iteration":
            continue  # the mean/median/stddev rows of --benchmark_repetitions: not measurements
        name = str(run.get("run_name") or run.get("name") or f"benchmark {i + 1}")
        unit = str(run.get("time_unit", "ns"))
        for metric in ("real_time", "cpu_time", *GBENCH_RATES):
            if metric in run:
                label = (
                    f"{unit} {metric}" if metric.endswith("_time") else metric.replace("_per_second", "/s")
                )
                (value,) = _floats([run[metric]], f"{where}.{metric}")
                values.setdefault((name, label), []).append(value)
    series = tuple(Series(name, unit, tuple(v)) for (name, unit), v in values.items())
    return Results(path, "Google Benchmark", series, _gbench_context(doc))


def _gbench_context(doc: dict) -> dict[str, str]:
    context = doc.get("context")
    if not isinstance(context, dict):
        return {}
    return {k: str(context[k]) for k in ("num_cpus", "mhz_per_cpu", "library_build_type") if k in context}


def _criterion(doc: dict, path: str) -> Results:
    iters = _floats(doc["iters"], f"{path}: iters")
    times = _floats(doc["times"], f"{path}: times")
    if len(iters) != len(times):
        raise InputError(f"{path}: {len(iters)} 'iters' but {len(times)} 'times'; one of each per sample")
    if any(n <= 0 for n in iters):
        raise InputError(f"{path}: an iteration count of 0 or less in 'iters': no per-iteration time")
    per = tuple(t / n for t, n in zip(times, iters, strict=True))
    return Results(path, "criterion", (Series(_criterion_name(path), "ns", per),))


def _criterion_name(path: str) -> str:
    """criterion keeps target/criterion/<group>/<function>/new/sample.json: the benchmark is what stands
    between `criterion` and `new` (or `base`, or a saved baseline's name)."""
    parts = PurePath(path).parts[:-2]  # without <new>/sample.json
    if "criterion" in parts:
        parts = parts[len(parts) - parts[::-1].index("criterion") :]
    return "/".join(parts[-2:]) or PurePath(path).stem
