"""Profile parsers on captured (Linux) and documented-format (FreeBSD) outputs; hooks_for's contract."""

from pathlib import Path

import pytest

from fairmark.errors import UsageError
from fairmark.run.hooks import HookContext
from fairmark.run.profiles import freebsd, hooks_for, locks, syscalls
from fairmark.run.profiles.cpu import ALL, WORKLOAD, collapser, count_samples, fold, folded_weight, share_meta

FIX = Path(__file__).parent / "fixtures" / "h4" / "profiles"


def test_perf_lock_contention_table():
    rows = locks.parse_contention((FIX / "perf_lock_contention.txt").read_text())
    assert rows[0] == {
        "contended": 227,
        "total_wait_ns": pytest.approx(1.26e6),
        "max_wait_ns": pytest.approx(59210),
        "avg_wait_ns": pytest.approx(5540),
        "type": "mutex",
        "lock": "ksys_read+0xba",
    }
    assert [r["type"] for r in rows[:3]] == ["mutex", "mutex", "spinlock"] and len(rows) == 17


def test_strace_trace_and_summary():
    stats = syscalls.SyscallStats()
    for line in (FIX / "strace_dd.txt").read_text().splitlines():
        stats.feed(line)
    out = stats.result()
    by_name = {r["syscall"]: r for r in out["table"]}
    assert by_name["read"]["calls"] == by_name["write"]["calls"] >= 300
    assert by_name["openat"]["errors"] > 0
    assert out["total"]["calls"] == sum(r["calls"] for r in out["table"])
    assert len(out["histograms_us"]) <= syscalls.TOP_HISTOGRAMS
    read_hist = out["histograms_us"]["read"]
    assert sum(b["count"] for b in read_hist) == by_name["read"]["calls"]


def test_strace_unfinished_and_resumed_calls_counted_once():
    stats = syscalls.SyscallStats()
    for line in [
        "101 read(3,  <unfinished ...>",
        '102 write(1, "x", 1) = 1 <0.000003>',
        '101 <... read resumed>"abc", 4096) = 3 <0.002500>',
        "101 +++ exited with 0 +++",
        "[pid   103] futex(0x1, FUTEX_WAIT, 0, NULL) = 0 <0.000001>",
    ]:
        stats.feed(line)
    assert stats.hist == {"write": {4: 1}, "read": {4096: 1}, "futex": {1: 1}}


def test_log2_buckets():
    assert [syscalls.log2_bucket_us(x) for x in (0.2, 1, 1.5, 3, 1000)] == [1, 1, 2, 4, 1024]


def test_freebsd_lockstat():
    rows = freebsd.parse_lockstat((FIX / "lockstat_freebsd.txt").read_text())
    assert rows[0]["lock"] == "proctree_lock" and rows[0]["type"] == "Adaptive mutex block"
    assert rows[0]["total_wait_ns"] == 120 * 125000
    assert {r["caller"] for r in rows} >= {"fork1+0x3a2", "vm_map_lookup+0x8e"}
    # "process lock" has a space: the row does not match the two-token form and is skipped, not misread
    assert all(r["lock"] != "process" for r in rows)


def test_freebsd_truss_c():
    table, total = freebsd.parse_truss_c((FIX / "truss_c_freebsd.txt").read_text())
    assert table[0] == {"syscall": "read", "seconds": 0.000911201, "calls": 120, "errors": 0}
    assert total == {"syscall": "total", "seconds": 0.001136512, "calls": 167, "errors": 2}


def test_freebsd_command_builders():
    cmd = freebsd.dtrace_command(["make", "-j", "4", "a b"], "/t/out")
    assert cmd[:2] == ["dtrace", "-q"] and cmd[-1] == "make -j 4 'a b'"
    assert "profile-997" in cmd[cmd.index("-n") + 1] and "/t/out" in cmd
    assert freebsd.lockstat_command(["ls"], "/o")[-1] == "ls"
    assert freebsd.truss_command(["ls", "-l"], "/o") == ["truss", "-f", "-c", "-o", "/o", "ls", "-l"]


def test_freebsd_hooks_say_why_when_tools_missing():
    hooks = hooks_for(["cpu", "locks", "syscalls"], system="FreeBSD")
    assert [h.name for h in hooks] == ["profile.cpu", "profile.locks", "profile.syscalls"]
    assert "dtrace not found" in hooks[0].unavailable  # no DTrace on this Linux machine
    assert "truss not found" in hooks[2].unavailable


def test_freebsd_truss_hook_parses_its_file(tmp_path):
    hook = freebsd.TrussProfile()
    ctx = HookContext("r", "c", "w", "A", "t", str(tmp_path), False)
    assert hook.wrap(["ls"], ctx)[:4] == ["truss", "-f", "-c", "-o"]
    (tmp_path / "truss.txt").write_text((FIX / "truss_c_freebsd.txt").read_text())
    (art,) = hook.stop(ctx, None)
    assert art.kind == "profile.syscalls" and art.data["table"][0]["syscall"] == "read"


def test_hooks_for_contract():
    with pytest.raises(UsageError, match="unknown profile"):
        hooks_for(["cpu", "gpu"])
    assert hooks_for([]) == []
    (other,) = hooks_for(["cpu"], system="Plan9")
    assert "Linux and FreeBSD only" in other.unavailable
    assert len(hooks_for(["cpu", "cpu"])) == 1


def test_folded_weight():
    assert folded_weight("a;b 10\na;c 5\nbad line\n") == 15


def test_freebsd_dtrace_stacks_fold_with_inferno():
    hook = freebsd.DTraceCpuProfile()
    if hook.collapse is None:
        pytest.skip("inferno-collapse-dtrace not installed (cargo install inferno)")
    folded, meta = hook.artifacts((FIX / "dtrace_profile.txt").read_text())
    lines = dict(line.rsplit(" ", 1) for line in folded.data.splitlines())
    assert (
        lines["a.out`_start;a.out`main;libc.so.7`memset;kernel`trap;kernel`trap_pfault;kernel`vm_fault"]
        == "61"
    )
    assert meta.data["weight"] == 84 and meta.data["collapser"] == "inferno-collapse-dtrace"


# -- issue 25 item 3: profiles that belong to the workload, with its share of the samples -------------------


def test_perf_script_samples_are_counted_per_event():
    """Captured here: `perf record -a -g -e cpu-clock/name=workload/ -G CG -e cpu-clock/name=all/` of
    `head -c 50000000 /dev/zero | md5sum` in its cgroup while `sha1sum /dev/zero` ran outside it."""
    text = (FIX / "perf_script_cgroup_and_all.txt").read_text()
    assert count_samples(text) == {"workload": 88, "all": 193, "idle": 0}
    idle = "swapper     0 [001]  2523.2:    1003009      all: \n\tffffffff8 default_idle ([kernel])\n\n"
    named = "Web Content 4242 [000]  2523.3:    1003009 workload: \n\t42 f (x)\n\n"
    assert count_samples(idle + named) == {"workload": 1, "all": 1, "idle": 1}


def test_the_cpu_flame_graph_holds_only_the_workloads_samples():
    tool = collapser()
    if tool is None:
        pytest.skip("no stack collapser (cargo install inferno)")
    text = (FIX / "perf_script_cgroup_and_all.txt").read_text()
    commands = {line.split(";", 1)[0] for line in fold(text, tool, WORKLOAD).splitlines()}
    assert commands == {"head", "md5sum", "sh"}  # sha1sum ran beside it, outside the cgroup
    assert "sha1sum" in {line.split(";", 1)[0] for line in fold(text, tool, ALL).splitlines()}


def test_share_is_of_the_busy_cpus_samples():
    assert share_meta(88, 193) == {
        "workload_samples": 88,
        "busy_samples": 193,
        "workload_share": pytest.approx(0.456, abs=1e-3),
    }
    assert share_meta(0, 0)["workload_share"] is None


def test_freebsd_dtrace_counts_the_process_trees_and_the_busy_cpus_samples():
    script = freebsd.DTRACE_SCRIPT
    assert "progenyof($target)" in script and "@busy = count()" in script and "printa(" in script
    stacks, counts = freebsd.split_dtrace_samples((FIX / "dtrace_profile_samples.txt").read_text())
    assert counts == {"workload": 84, "busy": 140} and "fairmark-samples" not in stacks
    hook = freebsd.DTraceCpuProfile()
    if hook.collapse is None:
        pytest.skip("inferno-collapse-dtrace not installed (cargo install inferno)")
    _, meta = hook.artifacts((FIX / "dtrace_profile_samples.txt").read_text())
    assert meta.data["weight"] == 84 and meta.data["scope"] == "process tree (dtrace -c)"
    assert meta.data["workload_share"] == pytest.approx(0.6)


def test_freebsd_lockstat_is_labelled_system_wide_and_truss_as_the_tree():
    def parsed(cls, fixture):
        (art,) = cls.__new__(cls).artifacts((FIX / fixture).read_text())  # no tools needed to parse
        return art.data

    assert parsed(freebsd.LockstatProfile, "lockstat_freebsd.txt")["scope"] == "system-wide"
    assert parsed(freebsd.TrussProfile, "truss_c_freebsd.txt")["scope"] == "process tree (truss -f)"


def test_reports_say_what_a_cpu_profile_covers():
    from fairmark.report.profiles import cpu_line, cpu_view

    tree = "process tree (cgroup)"
    view = cpu_view([{"scope": tree, **share_meta(88, 193)}, {"scope": tree, **share_meta(12, 7)}])
    assert view["workload_samples"] == 100 and view["busy_samples"] == 200
    assert cpu_line(view).startswith(f"{tree}: the workload's processes only; they were 50% of")
    old = cpu_view([{"event": "cpu-clock", "scope": "system-wide", "weight": 5}])  # stored before the cgroup
    assert cpu_line(old).startswith("system-wide: every process on the machine, not only the workload")
