"""What other benchmark tools write, read as named series of values (issue 38 item 2): `go test -bench` output,
hyperfine's --export-json, pyperf's JSON, Google Benchmark's JSON and criterion's sample.json. `fairmark compare`
detects the format of each file (`read_results`) and judges each benchmark and unit on its own — different
benchmarks are never pooled into one sample.

Each reader is pure (text in, `Results` out) and raises InputError naming the file, and the line or key, of what
it cannot read. Only `cli/compare.py` imports this package, and only for a file that is not one number per line
(the plain files keep their fast path: nothing here is imported for them).
"""

from fairmark.formats.model import Results, Series, better_for_unit
from fairmark.formats.read import detect, parse_results

__all__ = ["Results", "Series", "better_for_unit", "detect", "parse_results"]
