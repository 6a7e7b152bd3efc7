"""`fairmark history` as a gate and as an honest "no" (issue 31 items 4 and 7): `--new-since RUN|DATE --exit-code`
exits 1 when a change point's new level starts after the mark (Otava's `regressions --since`), and a series
without a change point says at which points a new level could not have been shown at all (10 runs at α 0.01: a
+16% step after run 3 is found 0% of the time). Histories written with the store's API (helpers.api_runs), an
hour apart from 2026-03-01T00:00Z."""

from __future__ import annotations

import json

from helpers import api_runs


def test_new_since_a_run_or_a_date_gates_on_change_points_after_it(fairmark_cli) -> None:
    ids = api_runs([0.1] * 11 + [0.11] * 11, {"step": "1"}, seed=1)  # the new level starts at idx 11
    base = ("history", "nap:elapsed_s", "--tag", "step=1", "--by-tag", "idx")
    for mark, new in ((ids[10], True), (ids[11], False), (ids[15], False), ("2026-03-01T10:30", True)):
        code, out, err = fairmark_cli(*base, "--new-since", mark, "--exit-code")
        assert code == (1 if new else 0), (mark, out, err)
        assert ("NEW change point before point 12" in out) == new, out
        if new:
            assert "1 change point(s) since 2026-03-01T" in err and "before point 12" in err, err
        code, out, _ = fairmark_cli(*base, "--new-since", mark, "--json")
        assert code == 0  # without --exit-code: only marked
        (series,) = json.loads(out)["series"]
        assert [cp["new"] for cp in series["change_points"]] == [new]
    code, _, _ = fairmark_cli(*base, "--new-since", "2026-03-02", "--exit-code")  # a date after every run
    assert code == 0
    code, _, err = fairmark_cli(*base, "--exit-code")  # no mark: any change point
    assert code == 1 and "1 change point(s):" in err
    code, _, err = fairmark_cli(*base, "--new-since", "nosuchrun", "--exit-code")
    assert code == 2 and "nosuchrun" in err
    api_runs([0.1] * 12, {"flat": "1"}, start_h=100, seed=3)
    code, _, _ = fairmark_cli("history", "nap", "--tag", "flat=1", "--new-since", "2026-01-01", "--exit-code")
    assert code == 0


def test_no_change_point_says_where_none_could_have_been_shown(fairmark_cli) -> None:
    api_runs([0.1] * 3 + [0.116] * 7, {"series": "late"})  # a +16% level from the 4th run on
    code, out, _ = fairmark_cli("history", "nap", "--tag", "series=late", "--json")
    (late,) = json.loads(out)["series"]
    assert late["change_points"] == [] and late["too_short"] is None
    assert late["undetectable"] == [2, 3, 4, 8, 9, 10]
    code, out, _ = fairmark_cli("history", "nap", "--tag", "series=late")
    assert code == 0
    text = " ".join(out.split())
    assert "a new level starting at point 2–4 or 8–10 could not have been shown at α = 0.01" in text, out


def test_publish_marks_change_points_new_since_the_last_publish(fairmark_cli, tmp_path) -> None:
    out = tmp_path / "site"

    def publish() -> dict:
        code, stdout, err = fairmark_cli("publish", "--out", str(out), "--json")
        assert code == 0, err[-3000:]
        return json.loads(stdout)

    api_runs([0.1] * 10, {"branch": "main"}, seed=4)
    assert publish()["new_change_points"] == []  # a first publish: nothing is new to anyone
    api_runs([0.115] * 10, {"branch": "main"}, start_h=10, seed=5)  # +15% from the 11th run on
    (cp,) = publish()["new_change_points"]
    assert cp.startswith("h1 nap nap/A elapsed_s +1"), cp
    series = next((out / "series").glob("*.html")).read_text()
    assert '<strong class="new">new</strong>' in series
    assert '<strong class="new">1 new</strong> since the last publish' in (out / "index.html").read_text()
    assert publish()["new_change_points"] == []  # published now: no longer new
    assert '<strong class="new">' not in next((out / "series").glob("*.html")).read_text()
    code, text, _ = fairmark_cli("publish", "--out", str(out))
    assert code == 0 and "new change point" not in text


def test_an_ab_run_is_no_point_of_a_published_series(fairmark_cli, tmp_path) -> None:
    """A run of `fairmark ab` (tagged ab.base, ab.head) answers one change's question: its page is published, but
    it is no point of a branch's series (as a bisect's runs are not)."""
    api_runs([0.1] * 3, {"ab.base": "a" * 40, "ab.head": "b" * 40, "commit": "b" * 40})
    code, stdout, err = fairmark_cli("publish", "--out", str(tmp_path / "site"), "--json")
    assert code == 0, err
    written = json.loads(stdout)["written"]
    assert written.get("runs") == 3 and "series" not in written, written
