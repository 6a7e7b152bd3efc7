"""`compare` reads a file of one number per line a block at a time (cli/compare.read_plain, issue 31 item 7): the
same values as float() gives, and anything else — a bad token past the first block, an empty line on a block's
edge, a value past the limit — falls back to the whole text, whose parser names the file and line."""

from __future__ import annotations

import numpy as np
import pytest

from fairmark.cli import compare as cmp
from fairmark.cli.main import main


def _write(path, tokens: list[str], end: str = "\n") -> str:
    path.write_text("\n".join(tokens) + end)
    return str(path)


def test_blocks_read_what_float_reads(tmp_path) -> None:
    rng = np.random.default_rng(31)
    values = rng.normal(0, 1, 60_000) * 10.0 ** rng.integers(-300, 300, 60_000)
    tokens = [repr(float(v)) for v in values] + ["1.", ".5", "-3e-2", "+4E+1", "7"]
    for end in ("\n", ""):  # the last line with and without its newline
        got = cmp.read_plain(_write(tmp_path / "f", tokens, end))
        assert got is not None and np.array_equal(got, np.array([float(t) for t in tokens]))


@pytest.mark.parametrize("bad", ["1.2.3", "1e", "-", "1-2", "0x10", "1 # note", "  7", "1,5", "é"])
def test_anything_else_is_left_to_the_line_parser(tmp_path, bad: str) -> None:
    tokens = ["1.5"] * 30_000  # past the first block (256 KiB)
    tokens[25_000] = bad
    assert cmp.read_plain(_write(tmp_path / "f", tokens)) is None


def test_an_empty_line_on_a_blocks_edge_is_seen(tmp_path) -> None:
    line = "12345.5\n"  # 8 bytes: a block of 2**18 bytes ends on a line's end
    path = tmp_path / "f"
    path.write_text(line * (cmp._BLOCK // len(line)) + "\n" + line * 10)
    assert cmp.read_plain(str(path)) is None
    path.write_text(line * (cmp._BLOCK // len(line) + 10))
    got = cmp.read_plain(str(path))
    assert got is not None and got.size == cmp._BLOCK // len(line) + 10


def test_a_bad_token_past_the_first_block_is_named_by_line(tmp_path, capsys) -> None:
    tokens = ["1.5", "2.5"] * 20_000
    tokens[33_332] = "1.2.3"
    big = _write(tmp_path / "big.txt", tokens)
    assert main(["compare", big, big]) == 2
    assert "big.txt:33333: column 1: '1.2.3' is not a number" in capsys.readouterr().err


def test_a_value_past_the_limit_is_named_by_line(tmp_path, capsys) -> None:
    tokens = ["1.5", "2.5"] * 20_000
    tokens[39_000] = "1e301"
    big = _write(tmp_path / "big.txt", tokens)
    assert main(["compare", big, big]) == 2
    assert "big.txt:39001: column 1: '1e301' is larger in magnitude than" in capsys.readouterr().err
