"""`fairmark compare` of what other benchmark tools write (issue 38 item 2), on their real captured outputs
(tests/fixtures/othertools/README.md says how each was made) and on benchstat's own test data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairmark.cli.main import main
from fairmark.errors import InputError
from fairmark.formats import better_for_unit, detect, parse_results

HERE = Path(__file__).parent / "fixtures" / "othertools"


def fixture(*parts: str) -> str:
    return str(HERE.joinpath(*parts))


def read(*parts: str):
    path = fixture(*parts)
    results = parse_results(Path(path).read_text(), path)
    assert results is not None
    return results


def run_json(capsys, *args: str) -> dict:
    assert main(["compare", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def rows_by_name(doc: dict) -> dict[tuple[str, str], dict]:
    return {(r["benchmark"], r["unit"]): r for r in doc["rows"]}


# ---- go test -bench ----------------------------------------------------------------------------------------------


def test_go_output_is_one_series_per_benchmark_and_unit():
    old = read("go", "old.txt")
    assert old.tool == "go test -bench"
    assert old.config["cpu"] == "Intel(R) Xeon(R) Processor"  # a cpu: line with spaces is configuration
    assert old.config["goos"] == "linux" and old.config["pkg"] == "example.com/fmbench"
    units = {(s.name, s.unit): len(s.values) for s in old.series}
    names = {"Encode/format=json-2", "Encode/format=gob-2"}
    assert set(units) == {(n, u) for n in names for u in ("ns/op", "MB/s", "B/op", "allocs/op")}
    assert set(units.values()) == {6}
    assert {s.unit: s.better for s in old.series} == {
        "ns/op": "lower",
        "MB/s": "higher",
        "B/op": "lower",
        "allocs/op": "lower",
    }
    assert all(s.group == "example.com/fmbench" for s in old.series)


def test_go_files_are_judged_benchmark_by_benchmark(capsys):
    doc = run_json(capsys, fixture("go", "old.txt"), fixture("go", "new.txt"))
    rows = rows_by_name(doc)
    assert len(rows) == 8  # 2 benchmarks × 4 units, never pooled
    json_ns = rows[("Encode/format=json-2", "ns/op")]
    (c,) = json_ns["comparisons"]
    assert json_ns["n"] == [6, 6] and c["n_baseline"] == 6 and c["better"] == "lower"
    mbs = rows[("Encode/format=gob-2", "MB/s")]["comparisons"][0]
    assert mbs["better"] == "higher" and mbs["unit"] == "MB/s"
    # B/op and allocs/op are the same in every run: no spread, the rank test says no difference
    allocs = rows[("Encode/format=json-2", "allocs/op")]["comparisons"][0]
    assert allocs["constant"] and not allocs["significant"]
    # q: one false discovery rate across all 8 rows
    assert all(0 <= r["comparisons"][0]["q_value"] <= 1 for r in doc["rows"])


def test_a_single_value_row_cannot_be_judged_and_the_others_are(capsys):
    doc = run_json(capsys, fixture("go", "old.txt"), fixture("go", "one.txt"))
    assert all(r["n"] == [6, 1] and r["comparisons"] == [None] for r in doc["rows"])
    assert main(["compare", fixture("go", "old.txt"), fixture("go", "one.txt")]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the table wraps its cells to 80 columns
    assert "cannot be judged (n=1)" in out


def test_minus_c_does_not_pool_benchmarks(capsys):
    code = main(["compare", "-C", "3", fixture("go", "old.txt"), fixture("go", "new.txt")])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "-C and -d pick a column of plain files" in err


def test_plain_and_go_files_are_not_mixed(capsys, tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("1\n2\n3\n")
    code = main(["compare", str(plain), fixture("go", "old.txt")])
    err = " ".join(capsys.readouterr().err.split())
    assert (
        code == 2 and "plain.txt is a plain file of numbers but the others are go test -bench output" in err
    )


# ---- benchstat's own test data -----------------------------------------------------------------------------------


def test_benchstat_old_new_one_verdict_per_benchmark_and_a_geomean(capsys):
    old, new = fixture("benchstat", "old.txt"), fixture("benchstat", "new.txt")
    rows = rows_by_name(run_json(capsys, old, new))
    assert set(rows) == {("Encode/format=json-48", "ns/op"), ("Encode/format=gob-48", "ns/op")}
    # benchstat: json -17.20% (p=0.000), gob ~ (p=0.446)
    json_c = rows[("Encode/format=json-48", "ns/op")]["comparisons"][0]
    gob_c = rows[("Encode/format=gob-48", "ns/op")]["comparisons"][0]
    assert json_c["significant"] and json_c["change"] == "better" and -18.5 < json_c["change_percent"] < -16
    assert not gob_c["significant"]
    assert main(["compare", old, new]) == 0
    out = capsys.readouterr().out
    (geomean,) = [line for line in out.splitlines() if line.startswith("geomean")]
    assert "2295" in geomean and "2090" in geomean  # benchstat: 2.295µ, 2.090µ


def test_castagnoli_1kb_is_found_by_the_robust_rule(capsys, tmp_path):
    # benchstat's crc data: Castagnoli/1kB/align=0 +1.22% (p=0.007); Welch's t alone missed it (issue 38)
    doc = run_json(capsys, fixture("benchstat", "crc-old.txt"), fixture("benchstat", "crc-new.txt"))
    (c,) = rows_by_name(doc)[("CRC32/poly=Castagnoli/size=1kB/align=0-8", "ns/op")]["comparisons"]
    assert c["significant"] and c["design"] == "Yuen's t, 20% trimmed" and c["change"] == "worse"
    assert 0.5 < c["change_percent"] < 2.0
    assert any("Welch's t alone" in w for w in c["warnings"])


# ---- hyperfine, pyperf, Google Benchmark, criterion -------------------------------------------------------------


def test_hyperfine_files_are_judged_per_command(capsys):
    a = read("hyperfine", "hf_a.json")
    assert a.tool == "hyperfine" and [(s.name, s.unit, len(s.values)) for s in a.series] == [
        ("sleep 0.01", "s", 10)
    ]
    doc = run_json(capsys, fixture("hyperfine", "hf_a.json"), fixture("hyperfine", "hf_b.json"))
    (row,) = doc["rows"]
    assert row["benchmark"] == "sleep 0.01" and row["comparisons"][0]["n_other"] == 10


def test_one_hyperfine_file_compares_its_commands(capsys):
    doc = run_json(capsys, fixture("hyperfine", "hf_two.json"))
    assert doc["columns"] == ["sleep 0.01", "sleep 0.02"]
    (row,) = doc["rows"]
    c = row["comparisons"][0]
    assert c["significant"] and c["change"] == "worse" and 50 < c["change_percent"] < 150


def test_pyperf_runs_values(capsys):
    a = read("pyperf", "pyperf_a.json")
    raw = json.loads(Path(fixture("pyperf", "pyperf_a.json")).read_text())
    runs = raw["benchmarks"][0]["runs"]
    expected = [v for run in runs for v in run.get("values", [])]
    assert a.tool == "pyperf" and [(s.name, s.unit) for s in a.series] == [("timeit", "s")]
    assert list(a.series[0].values) == expected and len(expected) == 20  # 4 processes × 5 values
    doc = run_json(capsys, fixture("pyperf", "pyperf_a.json"), fixture("pyperf", "pyperf_b.json"))
    assert doc["rows"][0]["comparisons"][0]["n_baseline"] == 20


def test_google_benchmark_repetitions(capsys):
    a = read("gbench", "gb_a.json")
    assert a.tool == "Google Benchmark"
    got = {(s.name, s.unit): len(s.values) for s in a.series}
    assert got[("BM_StringCopy/64", "ns real_time")] == 5  # 5 repetitions; the aggregates left out
    assert got[("BM_StringCopy/64", "bytes/s")] == 5 and better_for_unit("bytes/s") == "higher"
    assert got[("BM_Sort", "items/s")] == 5
    doc = run_json(capsys, fixture("gbench", "gb_a.json"), fixture("gbench", "gb_b.json"))
    assert all(r["comparisons"][0] is not None for r in doc["rows"])
    # without repetitions: one value each, nothing can be judged, and the command still answers
    doc = run_json(capsys, fixture("gbench", "gb_a.json"), fixture("gbench", "gb_one.json"))
    assert all(r["comparisons"] == [None] for r in doc["rows"])


def test_criterion_sample_json_as_criterion_writes_it(capsys):
    base = fixture("criterion", "sum 1000", "base", "sample.json")
    new = fixture("criterion", "sum 1000", "new", "sample.json")
    r = read("criterion", "sum 1000", "new", "sample.json")
    raw = json.loads(Path(new).read_text())
    assert r.tool == "criterion" and [(s.name, s.unit) for s in r.series] == [("sum 1000", "ns")]
    assert r.series[0].values == tuple(t / n for t, n in zip(raw["times"], raw["iters"], strict=True))
    (row,) = run_json(capsys, base, new)["rows"]
    assert row["benchmark"] == "sum 1000" and row["comparisons"][0]["n_baseline"] == 10


def test_criterion_per_iteration_times(tmp_path):
    sample = tmp_path / "criterion" / "sum 1000" / "new" / "sample.json"
    sample.parent.mkdir(parents=True)
    sample.write_text(json.dumps({"sampling_mode": "Linear", "iters": [2.0, 4.0], "times": [100.0, 180.0]}))
    r = parse_results(sample.read_text(), str(sample))
    assert r is not None and r.tool == "criterion"
    assert [(s.name, s.unit, s.values) for s in r.series] == [("sum 1000", "ns", (50.0, 45.0))]


# ---- errors name the file and what is wrong ----------------------------------------------------------------------


def test_bad_json_names_file_and_line(tmp_path):
    bad = tmp_path / "h.json"
    bad.write_text('{"results": [\n  {"command": "x", "times": [1, "two"]}\n]}')
    with pytest.raises(InputError, match=r"h\.json: results\[0\]\.times\[1\]: 'two' is not a number"):
        parse_results(bad.read_text(), str(bad))
    bad.write_text('{"results": [\n  oops\n]}')
    with pytest.raises(InputError, match=r"h\.json:2: not valid JSON"):
        parse_results(bad.read_text(), str(bad))
    bad.write_text('{"something": 1}')
    with pytest.raises(InputError, match="JSON that fairmark does not know"):
        parse_results(bad.read_text(), str(bad))


def test_detection():
    assert detect("1\n2\n3\n") is None
    assert detect("goos: linux\nBenchmarkX-8 \t 100\t 12.5 ns/op\n") == "go"
    assert detect('{"results": []}') == "json"
    assert detect("Benchmarking is fun\n") is None  # not a result line


def test_a_short_plain_file_does_not_fail_the_others(capsys, tmp_path):
    a, b, c = (tmp_path / n for n in ("a.txt", "b.txt", "c.txt"))
    a.write_text("10\n11\n12\n10.5\n")
    b.write_text("20\n")
    c.write_text("10\n11.5\n12\n10.7\n")
    assert main(["compare", str(a), str(b), str(c)]) == 0
    captured = capsys.readouterr()
    assert "b.txt: 1 value(s): cannot be judged" in " ".join(captured.err.split())
    assert "c.txt" in captured.out


def test_plain_files_load_no_reader(tmp_path):
    # compare's start on plain files (issue ab31: ≤ 0.3 s): the readers are imported only for other tools' files;
    # nor the variants' journal (compare changes nothing), the store's records (verdict/ names them in
    # annotations only) or the levels above the trials (files have none)
    import subprocess
    import sys

    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("1\n2\n3\n")
    b.write_text("2\n3\n4\n")
    code = (
        "import sys\nfrom fairmark.cli.main import main\n"
        f"main(['compare', {str(a)!r}, {str(b)!r}])\n"
        "print(sorted(m for m in sys.modules if m.startswith(('fairmark.formats', 'fairmark.report.series', "
        "'fairmark.run', 'fairmark.store.records', 'fairmark.plan.schedule', 'fairmark.stats.levels', "
        "'fairmark.verdict.levels'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
