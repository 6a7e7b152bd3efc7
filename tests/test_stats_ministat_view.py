"""The ministat view as a library (what `fairmark show` calls per cell)."""

from __future__ import annotations

from fairmark.report.ministat import DEFAULT_WIDTH, ascii_plot, legend, relative_block, render, vitals_line
from fairmark.verdict.compare import compare

IGUANA = [50, 200, 150, 400, 750, 400, 150]
CHAMELEON = [150, 400, 720, 500, 930]


def test_plot_frame_and_symbols():
    lines = ascii_plot([("A", IGUANA), ("B", CHAMELEON)], width=60, separate_bars=True)
    assert lines[0] == lines[-1] == "+" + "-" * 60 + "+"
    assert all(len(line) == 62 for line in lines)
    body = "".join(lines[1:-3])
    assert body.count("x") + body.count("*") == 7  # every iguana point, stacked where equal
    assert body.count("+") + body.count("*") == 5
    bar_a, bar_b = lines[-3], lines[-2]
    assert bar_a.count("A") == bar_a.count("M") == 1 and bar_a.count("|") == 4  # frame + mean ± stddev ends
    assert bar_b.index("M") < bar_b.index("A")  # chameleon: median 500 below mean 540


def test_zero_span_and_eight_sets():
    assert ascii_plot([("c", [7, 7, 7])]) == ["[no plot, span is zero width]"]
    sets = [(f"s{k}", [k, k + 1.0, k + 2.0]) for k in range(9)]
    lines = ascii_plot(sets)
    assert lines[-1] == "[2 more data set(s) not plotted: the plot has symbols for 7]"
    assert len(lines[0]) == DEFAULT_WIDTH + 2
    assert legend(sets)[-1] == "O s6"


def test_table_and_relative_block():
    assert (
        vitals_line(0, IGUANA)
        == "x   7            50           750           200           300     238.04761"
    )
    c = compare(IGUANA, CHAMELEON, confidence=80)
    assert relative_block(c) == [
        "Difference at 80.0% confidence",
        "\t240 +/- 212.215",
        "\t80% +/- 70.7384%",
        "\t(Student's t, pooled s = 264.159)",
    ]
    lines = render([("iguana", IGUANA), ("chameleon", CHAMELEON)], [c], plot=False)
    assert lines[:3] == [
        "x iguana",
        "+ chameleon",
        "    N           Min           Max        Median           Avg        Stddev",
    ]
