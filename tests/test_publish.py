"""`fairmark publish`: the static dashboard.

The acceptance test (`test_site_in_chromium`) builds a store of three hosts: on this machine 30 real `fairmark
run`s of a program that times its own sleep (helpers.NAP_C), tagged with the commits of a repository the test
makes, the sleep 20% longer from the 16th on (the planted step), and one real `fairmark bisect` over a second
repository (the bisect test's: commit 7 of 12 is 15% slower); two more hosts, "lab-b" and "lab-c", have 40 runs
each written with the store's own API (create_run, ensure_cells, add_trial, update_run — what the runner
calls), "lab-b" with a step of its own. The site is published with the commits linked to a web server the test
runs on loopback, then opened page by page in headless Chromium: no page logs an error (a resource that failed
to load, a content-security-policy violation, a script error), every link resolves (files, fragments, the
commit server), the planted change point is drawn on its series page at the 16th run with the commits on either
side, and the keyboard reaches the links with a visible focus. Screenshots of the index and of that series page
are taken (into $FAIRMARK_SCREENSHOTS too, if set: that is how docs/publish-*.png were made).

The other tests use store-API runs only: what a second publish renders, what it removes, what every page
holds (no script, no resource from elsewhere, captions and titles), usage errors, the palette's contrast.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import os
import random
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import urlopen

import pytest

from fairmark.plan.metric import MetricSpec
from fairmark.store.records import CellRecord, Sample, TrialRecord
from helpers import commit_series, git, nap_workload
from test_continual_history import postgres  # noqa: F401 - a fixture: a PostgreSQL server on loopback

NAP_S, STEP_AT, RUNS = 0.05, 16, 30  # the runs STEP_AT..RUNS sleep 20% longer


# -- stores -------------------------------------------------------------------------------------------------


def store():
    from fairmark.store.db import Store

    return Store.open(os.environ["FAIRMARK_STORE"])


def api_run(st, *, host: str, started: dt.datetime, tags: dict[str, str], values: list[float]) -> str:
    """One run as the runner writes it, through the store's API: the run with its tags, its cell, each trial
    with its sample in its own transaction, then the run's end."""
    metric = MetricSpec("sorted_mb_s", "MB/s", "higher")
    run_id = st.create_run(
        plan_path="lab.toml",
        plan_text="title = 'lab'\n",
        plan_sha256="0" * 64,
        title="lab",
        seed=1,
        host_id=host,
        hostname=host,
        started_at=started,
        status="running",
        command_line="fairmark run lab.toml",
        fairmark_version="test",
        options={"baseline": "default", "variants": {"default": {"name": "default"}}},
        notes=[],
        tags=tags,
    )
    cell = st.ensure_cells(
        run_id, [CellRecord("sort/default", "sort", "default", (), "sorted_mb_s", (metric,), status="done")]
    )
    for k, v in enumerate(values):
        trial = TrialRecord(run_id, cell["sort/default"], k, k, False, "ok", started, wall_s=1.0)
        st.add_trial(trial, [Sample(trial.id, trial.cell_id, "sorted_mb_s", v, "MB/s", "higher")])
    st.update_run(run_id, status="done", ended_at=started + dt.timedelta(minutes=1))
    return run_id


def lab_history(
    st, host: str, runs: int, step_at: int | None, seed: int, commits: list[str] | None = None
) -> list[str]:
    """A host's history written with the store's API: throughput 10% lower from run `step_at` on."""
    rng, t0 = random.Random(seed), dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    out = []
    for i in range(runs):
        level = 400.0 * (0.9 if step_at is not None and i >= step_at else 1.0)
        values = [rng.gauss(level, 4.0) for _ in range(5)]
        tags = {"branch": "main", "commit": commits[i] if commits else f"{i:040x}"}
        out.append(api_run(st, host=host, started=t0 + dt.timedelta(hours=i), tags=tags, values=values))
    return out


def publish(fairmark_cli, out: Path, *args: str) -> dict:
    code, stdout, err = fairmark_cli("publish", "--out", str(out), "--json", *args)
    assert code == 0, err[-3000:]
    return json.loads(stdout)


def pages(out: Path) -> list[Path]:
    return sorted(out.rglob("*.html"))


# -- without a browser --------------------------------------------------------------------------------------


def test_a_second_publish_renders_only_what_changed(fairmark_cli, tmp_path: Path) -> None:
    st = store()
    runs = lab_history(st, "lab-a", 8, None, 1) + lab_history(st, "lab-b", 8, None, 2)
    out = tmp_path / "site"
    first = publish(fairmark_cli, out)
    assert first["written"] == {"runs": 16, "series": 2, "lists": 1, "index": 1} and first["skipped"] == {}
    again = publish(fairmark_cli, out)
    assert again["written"] == {} and again["skipped"] == {"runs": 16, "series": 2, "lists": 1, "index": 1}

    # one more run on lab-a: its page, lab-a's series, the lists; lab-b's series and the other runs stay
    new = api_run(
        st,
        host="lab-a",
        started=dt.datetime(2026, 4, 1, tzinfo=dt.UTC),
        tags={"branch": "main"},
        values=[401.0, 399.0, 400.5],
    )
    third = publish(fairmark_cli, out)
    assert third["written"] == {"runs": 1, "series": 1, "lists": 1, "index": 1}
    assert third["skipped"] == {"runs": 16, "series": 1}
    assert (out / "runs" / f"{new}.html").is_file()

    # a run deleted from the store: its page goes, nothing else of the site breaks
    st.delete_run(runs[0])
    fourth = publish(fairmark_cli, out)
    assert fourth["removed"] == [f"runs/{runs[0]}.html"] and not (out / "runs" / f"{runs[0]}.html").exists()
    assert runs[0] not in (out / "index.html").read_text() + (out / "runs" / "index.html").read_text()

    # the human sentence says the same
    code, text, _ = fairmark_cli("publish", "--out", str(out))
    assert code == 0 and "wrote 0 pages" in text and "skipped 20 unchanged" in text


def test_a_tampered_manifest_deletes_nothing_outside_the_site(fairmark_cli, tmp_path: Path) -> None:
    """The manifest is a file in the site's directory: entries naming files outside it (absolute, `../`, through
    a link to a file or to a directory out of the site), or what is not a page, are left alone (issue 37); a
    stale page of the site itself still goes."""
    lab_history(store(), "lab-a", 3, None, 1)
    out = tmp_path / "site"
    publish(fairmark_cli, out)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    victims = [outside / "victim.html", outside / "notes.txt", tmp_path / "beside.html"]
    for v in victims:
        v.write_text("keep me")
    (out / "runs" / "link.html").symlink_to(victims[0])
    (out / "away").symlink_to(outside)
    (out / "runs" / "old.html").write_text("a page of an earlier publish")
    (out / "data.txt").write_text("not a page")
    manifest = json.loads((out / ".fairmark-publish.json").read_text())
    hostile = [
        str(victims[0]),
        "../beside.html",
        "runs/../../beside.html",
        "runs/link.html",
        "away/victim.html",
        "away/notes.txt",
        "data.txt",
        "runs",
    ]
    manifest["pages"] |= {rel: "0" * 32 for rel in [*hostile, "runs/old.html"]}
    (out / ".fairmark-publish.json").write_text(json.dumps(manifest))

    done = publish(fairmark_cli, out)
    assert done["removed"] == ["runs/old.html"] and not (out / "runs" / "old.html").exists()
    assert sorted(done["refused"]) == sorted(hostile)
    assert [v.read_text() for v in victims] == ["keep me"] * 3
    assert (out / "runs" / "link.html").is_symlink() and (out / "data.txt").is_file()
    manifest = json.loads((out / ".fairmark-publish.json").read_text())
    assert not set(hostile) & set(manifest["pages"])  # the new manifest lists only the site's pages
    manifest["pages"] |= {rel: "0" * 32 for rel in hostile}
    (out / ".fairmark-publish.json").write_text(json.dumps(manifest))
    code, text, _ = fairmark_cli("publish", "--out", str(out))
    assert code == 0 and "left 8 entries of the manifest alone that name no page of the site" in text


@pytest.mark.slow
@pytest.mark.postgres
def test_a_postgresql_store_published_by_worker_processes(
    fairmark_cli,
    tmp_path: Path,
    postgres: str,  # noqa: F811 - the fixture imported above
) -> None:
    """The run pages of a store on a PostgreSQL server, drawn by worker processes each with its connection."""
    from fairmark.store.db import Store

    st = Store.open(postgres)
    runs = lab_history(st, "lab-a", 15, 10, 6) + lab_history(st, "lab-b", 15, None, 7)
    out = tmp_path / "site"
    first = publish(fairmark_cli, out, "--store", postgres, "--jobs", "2")
    assert first["written"] == {"runs": 30, "series": 2, "lists": 1, "index": 1}
    assert all(str(r) in (out / "runs" / f"{r}.html").read_text() for r in runs)
    assert publish(fairmark_cli, out, "--store", postgres)["written"] == {}


def test_every_page_is_self_contained_and_described(fairmark_cli, tmp_path: Path) -> None:
    st = store()
    lab_history(st, "lab-a", 12, 6, 3)
    out = tmp_path / "site"
    publish(fairmark_cli, out, "--repo-url", "https://git.example.org/r/commit/{sha}")
    for page in pages(out):
        text = page.read_text()
        assert '<html lang="en">' in text and "Content-Security-Policy" in text, page
        assert "<script" not in text, page  # no JavaScript at all
        assert not re.search(r'\b(src|srcset)="(?!data:)', text), page  # nothing loaded, only data: pictures
        assert not re.search(r"url\((?!data:)", text), page
        svgs = re.findall(r"<svg\b.*?</svg>", text, re.S)
        assert all(
            "<title" in s and 'role="img"' in s for s in svgs if 'class="spark"' in s or 'class="chart"' in s
        )
        tables = re.findall(r"<table\b.*?</table>", text, re.S)
        assert all("<caption>" in t for t in tables), page  # run pages (`fairmark report`'s own) too
    index = (out / "index.html").read_text()
    assert "https://git.example.org/r/commit/" + f"{7:040x}" in (out / "runs" / "index.html").read_text()
    (series,) = (out / "series").glob("*.html")
    assert "change point" in series.read_text() and "worse" in index  # the planted -10% throughput


def test_a_series_too_short_for_alpha_says_so_not_no_change_point(fairmark_cli, tmp_path: Path) -> None:
    """4 runs cannot reach p < 0.01 whatever they hold: the page says that, not "No change point"."""
    lab_history(store(), "lab-a", 4, 2, 5)
    out = tmp_path / "site"
    publish(fairmark_cli, out)
    (series,) = (out / "series").glob("*.html")
    text = series.read_text()
    assert "4 runs are too few to show any change point at α = 0.01" in text
    assert "No change point" not in text


def test_a_bisect_without_a_stored_outcome_says_so(fairmark_cli, tmp_path: Path) -> None:
    """Runs of a bisect that did not finish (tagged by step, no outcome stored) get a page listing them."""
    st = store()
    t0 = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)
    for step in range(2):
        tags = {
            "commit": f"{step:040x}",
            "bisect.good": "a" * 40,
            "bisect.step": str(step),
            "bisect.attempt": "1",
        }
        api_run(st, host="lab-a", started=t0 + dt.timedelta(hours=step), tags=tags, values=[1.0, 1.1, 0.9])
    out = tmp_path / "site"
    publish(fairmark_cli, out)
    (page,) = (out / "bisects").glob("*.html")
    assert "stored no outcome" in page.read_text()
    assert "did not finish" in (out / "index.html").read_text()
    assert not list((out / "series").glob("*.html"))  # a bisect's runs are no history


def test_usage_errors(fairmark_cli, tmp_path: Path) -> None:
    code, _, err = fairmark_cli(
        "publish", "--out", str(tmp_path / "s"), "--repo-url", "https://x.org/commit/"
    )
    assert code == 2 and "{sha}" in err
    code, _, err = fairmark_cli("publish", "--out", str(tmp_path / "s"), "--window", "-1")
    assert code == 2 and "--window" in err
    code, _, err = fairmark_cli("publish", "--out", str(tmp_path / "s"), "--tag", "nokey")
    assert code == 2 and "KEY=VALUE" in err


def _luminance(hex_colour: str) -> float:
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def test_text_colours_have_enough_contrast() -> None:
    """WCAG 2: text at least 4.5:1 against the page's white; the focus ring at least 3:1."""
    from fairmark.report.publish import svg

    base = (Path(__file__).parents[1] / "src/fairmark/report/templates/publish_base.html.j2").read_text()
    colours = dict(re.findall(r"--([a-z]+):(#[0-9a-f]{6})", base))
    for name in ("fg", "muted", "link", "visited", "bad", "good", "focus", "series"):
        ratio = 1.05 / (_luminance(colours[name]) + 0.05)
        assert ratio >= 4.5, (name, colours[name], ratio)
    for colour in svg.PALETTE:  # the run pages' strip plots: marks, not text, at least 3:1
        assert 1.05 / (_luminance(colour) + 0.05) >= 3.0, colour


# -- in Chromium --------------------------------------------------------------------------------------------


def history_repo(path: Path) -> list[str]:
    """RUNS commits, one per run of the history."""
    return commit_series(path, ({"version": f"{i}\n"} for i in range(1, RUNS + 1)))


class CommitServer:
    """The `--repo-url` on loopback: /commit/SHA answers 200 for a commit of the repositories, 404 otherwise."""

    def __init__(self, repos: list[Path]):
        known = {sha for r in repos for sha in git(r, "log", "--all", "--format=%H").split()}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                sha = self.path.rsplit("/", 1)[-1]
                self.send_response(200 if self.path.startswith("/commit/") and sha in known else 404)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/commit/{{sha}}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def commit_server(tmp_path: Path) -> Iterator[tuple[CommitServer, list[str], Path]]:
    import test_continual_bisect as tb

    shas = history_repo(tmp_path / "history")
    bisect_repo = tmp_path / "bisect-repo"
    tb.make_repo(bisect_repo, 1.15)
    server = CommitServer([tmp_path / "history", bisect_repo])
    try:
        yield server, shas, bisect_repo
    finally:
        server.close()


def real_history(fairmark_cli, tmp_path: Path, shas: list[str]) -> None:
    """RUNS real runs on this machine, made in a shuffled order (the history is ordered by the idx tag, so a
    drift of this shared machine's load lands on random points, not on a step of its own)."""
    plans = {}
    for factor in (1.0, 1.2):
        plans[factor] = tmp_path / f"nap-{factor}.toml"
        plans[factor].write_text(
            "title = 'nap'\n[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\ntarget_ci_pct = 0.0001\n"
            + nap_workload()
            + f"[[variant]]\nname = 'default'\nenv = {{ NAP_S = '{NAP_S * factor:.4f}' }}\n"
        )
    order = list(range(1, RUNS + 1))
    random.Random(26).shuffle(order)
    for idx in order:
        plan = plans[1.2 if idx >= STEP_AT else 1.0]
        tags = ["--tag", "branch=main", "--tag", f"commit={shas[idx - 1]}", "--tag", f"idx={idx}"]
        code, _, err = fairmark_cli(
            "run", str(plan), "--no-monitors", "--accept-risk", "--allow-concurrent", *tags
        )
        assert code == 0, err[-3000:]


def real_bisect(fairmark_cli, tmp_path: Path, repo: Path) -> None:
    import test_continual_bisect as tb

    code, out, err = tb.bisect(fairmark_cli, tmp_path, repo)
    assert code == 0 and "first bad commit" in out, out + err[-3000:]


def links_of(browser, page: Path) -> list[str]:
    return browser.evaluate(
        "Array.from(document.querySelectorAll('a[href]'), a => new URL(a.getAttribute('href'), document.baseURI).href)"
    )


def check_link(url: str, ids: dict[Path, set[str]]) -> str | None:
    """None when `url` resolves: a file of the site (and the element its fragment names), or a commit page."""
    parts = urlsplit(url)
    if parts.scheme == "http":
        with urlopen(url, timeout=30) as answer:  # the commit server on loopback; 404 raises
            return None if answer.status == 200 else f"{url}: {answer.status}"
    path = Path(unquote(parts.path))
    if parts.scheme != "file" or not path.is_file():
        return f"{url}: no such page"
    if parts.fragment:
        if path not in ids:
            ids[path] = set(re.findall(r'\bid="([^"]+)"', path.read_text()))
        if parts.fragment not in ids[path]:
            return f"{url}: no element {parts.fragment!r}"
    return None


def keyboard_reaches_links(browser) -> None:
    """Tab from the top: the skip link first (shown when focused), then the links, each with a visible ring."""
    focus = (
        "(() => { const e = document.activeElement, s = getComputedStyle(e), r = e.getBoundingClientRect();"
        " return [e.tagName, e.className, s.outlineStyle, parseFloat(s.outlineWidth), r.left, r.width]; })()"
    )
    browser.press("Tab")
    tag, cls, style, width, left, w = browser.evaluate(focus)
    assert (tag, cls) == ("A", "skip") and left >= 0 and w > 0
    for _ in range(8):
        browser.press("Tab")
        tag, _, style, width, left, w = browser.evaluate(focus)
        assert tag == "A" and style == "solid" and width >= 2 and w > 0


def planted_change_point(browser, shas: list[str]) -> None:
    """The series page of the stepped workload draws its change point at the 16th run, with the commits on
    either side in the change-point table, linked."""
    marks = browser.evaluate(
        "Array.from(document.querySelectorAll('svg.chart g.cp'), g => { const r = g.getBoundingClientRect();"
        " return [parseInt(g.dataset.index), r.width, r.height, g.querySelector('text').textContent]; })"
    )
    hits = [m for m in marks if abs(m[0] - (STEP_AT - 1)) <= 1]
    assert hits, marks
    index, width, height, label = hits[0]
    assert height > 100 and width > 0 and label.startswith("+"), hits  # drawn, and slower
    # its row in the table (a real history on a busy machine may carry another change point, the machine's own:
    # seen once with the load falling mid-suite, +0.2% between runs 3 and 4, listed first)
    rows = browser.evaluate("Array.from(document.querySelectorAll('tr.cp-row'), tr => tr.textContent)")
    assert any(shas[index - 1][:12] in row and shas[index][:12] in row for row in rows), rows
    # every point is a link to its run, and so is every row of the table under the chart
    links = browser.evaluate(
        "[document.querySelectorAll('svg.chart .points a[href]').length,"
        " document.querySelectorAll('#runs ~ table tbody a[href*=\"/runs/\"]').length]"
    )
    assert links == [RUNS, RUNS], links


DESCRIBED = """(() => {
  const unnamed = s => !(s.querySelector('title') || s.getAttribute('aria-label'));
  return [document.documentElement.lang,
          Array.from(document.images).filter(i => !i.hasAttribute('alt')).length,
          Array.from(document.querySelectorAll('main table')).filter(t => !t.caption).length,
          Array.from(document.querySelectorAll('main svg')).filter(unnamed).length];
})()"""


@pytest.mark.slow
@pytest.mark.timeout(900)  # 30 real runs, a bisect and 110 pages in a browser, on a machine maybe at load 16
def test_site_in_chromium(fairmark_cli, tmp_path: Path, commit_server, own_tmp: Path) -> None:
    from chromium import Chromium

    server, shas, bisect_repo = commit_server
    real_history(fairmark_cli, tmp_path, shas)  # at a raised priority: own_tmp (conftest.py) sets it
    real_bisect(fairmark_cli, tmp_path, bisect_repo)
    st = store()
    lab_history(st, "lab-b", RUNS, 20, 4, shas)
    lab_history(st, "lab-c", RUNS, None, 5, shas)
    out = tmp_path / "site"
    result = publish(fairmark_cli, out, "--repo-url", server.url, "--by-tag", "idx")
    assert result["written"]["runs"] >= 3 * RUNS + 4 and result["written"]["bisects"] == 1
    index_text = (out / "index.html").read_text()
    assert index_text.count('<section aria-labelledby="host-') == 3

    here = next(p for p in (out / "series").glob("*elapsed_s*.html"))
    ids: dict[Path, set[str]] = {}
    broken, problems = [], []
    with Chromium() as browser:
        for page in pages(out):
            problems += [f"{page.relative_to(out)}: {e}" for e in browser.load(page.as_uri())]
            # for screen readers: a language, every image its alt text; on the dashboard's own pages (a run's
            # page is its `fairmark report`) every table a caption and every picture a title
            lang, no_alt, no_caption, no_title = browser.evaluate(DESCRIBED)
            assert lang == "en" and no_alt == 0 and no_caption == 0 and no_title == 0, page
            broken += [b for url in links_of(browser, page) if (b := check_link(url, ids))]
            if page == out / "index.html":
                browser.screenshot(tmp_path / "publish-index.png")
                keyboard_reaches_links(browser)
            elif page == here:
                browser.screenshot(tmp_path / "publish-series.png")
                planted_change_point(browser, shas)
        assert problems == [] and broken == []
        assert len(ids) > 0  # fragments were checked
    for name in ("publish-index.png", "publish-series.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if os.environ.get("FAIRMARK_SCREENSHOTS"):
            (Path(os.environ["FAIRMARK_SCREENSHOTS"]) / name).write_bytes((tmp_path / name).read_bytes())
    bisect_page = next((out / "bisects").glob("*.html")).read_text()
    assert "First bad commit" in bisect_page and git(bisect_repo, "rev-parse", "main~5")[:12] in bisect_page
