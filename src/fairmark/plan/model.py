"""The plan as frozen, validated objects. Unknown keys and wrong types are errors (see load.py for line numbers)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from fairmark.errors import UsageError
from fairmark.jsonvalue import JSONValue, Scalar
from fairmark.plan.aa import AA_SUFFIX as AA_SUFFIX
from fairmark.plan.aa import aa_twin_name as aa_twin_name
from fairmark.plan.metric import BUILTIN_METRIC_SPECS as BUILTIN_METRIC_SPECS
from fairmark.plan.metric import BUILTIN_METRICS as BUILTIN_METRICS
from fairmark.plan.metric import LOOP_METRICS, Better
from fairmark.plan.metric import MetricSpec as MetricSpec

# ministat's table levels; fairmark accepts exactly these so results stay comparable with it.
CONFIDENCE_LEVELS = (80.0, 90.0, 95.0, 98.0, 99.0, 99.5)


def confidence_error(value: float) -> str:
    """Why `value` is no confidence level: "0.95" (a fraction, as scipy and R write it) is named as the percent
    it stands for — taken as 0.95% it would make every difference "proven"."""
    allowed = f"one of {', '.join(f'{c:g}' for c in CONFIDENCE_LEVELS)}"
    if round(100 * value, 6) in CONFIDENCE_LEVELS:
        return f"{value:g} is a fraction; the confidence is in percent: {100 * value:g} ({allowed})"
    return f"expected {allowed}"


Command = Annotated[list[str], Field(min_length=1)] | str
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+@-]*$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _check_name(value: str) -> str:
    if not NAME_RE.match(value):
        raise ValueError("expected a name of letters, digits and _ . + @ - (no spaces), e.g. 'malloc-debug'")
    return value


class RunPolicy(Strict):
    warmup: int = Field(1, ge=0, le=100)
    min_trials: int = Field(5, ge=3, le=10_000)  # ministat's floor is 3 values
    max_trials: int = Field(30, ge=3, le=100_000)
    target_ci_pct: float = Field(1.0, gt=0, le=100)
    confidence: float = 95.0
    max_failures: int = Field(3, ge=1)
    # --profile: extra trials per cell and profiler, kept apart from the measured ones; where a difference went
    # (report/explain.py) pairs them by round and needs at least 3 a side to claim a function
    profiled_trials: int = Field(2, ge=1, le=1000)
    # --profile cpu / --explain: more profiled rounds, one at a time, until the top contributor's interval is
    # decided (run/loop/profiled.py), at most this many in all
    max_profiled: int = Field(20, ge=1, le=1000)
    # "abandon": a cell stops after max_failures failed trials. "measure": failures are data (seed 004's "able
    # to run at 3000 connections, but not consistently"): every cell runs its whole max_trials budget and the
    # reports give its failure rate with a Wilson interval and where along a sweep errors start.
    failures: Literal["abandon", "measure"] = "abandon"
    # Also judge the spread (seed 003's "more consistent" is a claim about spread, not about means): every
    # variant's primary metric against the baseline's by Brown–Forsythe and the CV ratio's bootstrap CI.
    spread: bool = False
    seed: int | None = None
    timeout_s: float = Field(600.0, gt=0)
    kill_grace_s: float = Field(2.0, ge=0)
    baseline: str | None = None
    # boots per boot variant (A B B A …); < 2 leaves boot variance unknown; "auto": from min_boots to max_boots,
    # until the boot-level answer is decided (stats.sequential, a look after every A B B A block)
    boots: Annotated[int, Field(ge=1, le=1000)] | Literal["auto"] = 2
    min_boots: int = Field(2, ge=2, le=1000)  # boots = "auto": boots per variant before the first look
    max_boots: int = Field(8, ge=2, le=1000)  # boots = "auto": boots per variant at most
    # "precision": run to the length the first stage plans for the CI target (stats.stopping), the estimate's
    # users' stop. "decision": stop as soon as the A/B answer is decided — a difference, or equivalence within
    # equivalence_pct — by a group-sequential test that spends α over its looks (stats.sequential).
    stop: Literal["precision", "decision"] = "precision"
    equivalence_pct: float = Field(
        2.0, gt=0, le=100
    )  # a change within ±this counts as none (stop = "decision")
    # stop = "decision": a difference decides only when proven beyond ±this (`ab` sets its --fail-on: the gate's
    # question); 0: any difference
    beyond_pct: float = Field(0.0, ge=0, le=100)

    @field_validator("confidence")
    @classmethod
    def _confidence(cls, v: float) -> float:
        if float(v) not in CONFIDENCE_LEVELS:
            raise ValueError(confidence_error(float(v)))
        return float(v)

    @model_validator(mode="after")
    def _trials(self) -> RunPolicy:
        if self.max_trials < self.min_trials:
            raise ValueError(f"max_trials ({self.max_trials}) must be ≥ min_trials ({self.min_trials})")
        if self.max_boots < self.min_boots:
            raise ValueError(f"max_boots ({self.max_boots}) must be ≥ min_boots ({self.min_boots})")
        if self.boots == "auto" and (self.min_boots % 2 or self.max_boots % 2):
            raise ValueError(
                f"boots = 'auto' looks after each A B B A block (2 boots per variant): min_boots "
                f"({self.min_boots}) and max_boots ({self.max_boots}) must be even"
            )
        return self


_BUILTINS = BUILTIN_METRICS | LOOP_METRICS  # measured, not read from output (per loop: a workload with loops)
MAX_LOOPS = 10**12  # 1 ps an iteration would still last a second


class Metric(Strict):
    """What one trial yields. Built-ins (wall_s, user_s, sys_s, cpu_s, max_rss_kib) need no source;
    otherwise `regex` (first group, or the whole match) or `json` (a dotted path into stdout parsed as JSON)."""

    name: str
    regex: str | None = None
    json_path: str | None = Field(None, alias="json")
    stream: Literal["stdout", "stderr"] = "stdout"
    unit: str | None = None
    better: Literal["higher", "lower"] | None = None
    # The gates' threshold for this metric (`check`, `ab`): a regression proven beyond it fails, in place of
    # --threshold / --fail-on (a noisy latency tail may need 10% where a throughput needs 2%).
    fail_on_pct: float | None = Field(None, ge=0, lt=100)

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _check_name(v)

    @field_validator("regex")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return v

    @model_validator(mode="after")
    def _source(self) -> Metric:
        if self.regex and self.json_path:
            raise ValueError("give either regex or json, not both")
        if not self.regex and not self.json_path and self.name not in _BUILTINS:
            raise ValueError(
                f"metric {self.name!r} needs a source: regex = '…' or json = 'a.b.c' "
                f"(or use a built-in: {', '.join(BUILTIN_METRICS)}; with loops: {', '.join(LOOP_METRICS)})"
            )
        if (self.regex or self.json_path) and self.better is None:
            raise ValueError("a metric taken from output needs better = 'higher' or 'lower'")
        return self

    @property
    def direction(self) -> Better:
        if self.better is not None:
            return self.better
        return _BUILTINS[self.name][1] if self.name in _BUILTINS else "lower"

    @property
    def unit_name(self) -> str:
        return self.unit or _BUILTINS.get(self.name, ("", ""))[0]

    @property
    def spec(self) -> MetricSpec:
        return MetricSpec(self.name, self.unit_name, self.direction)


EnvValue = str | Literal[False]  # false unsets the variable


class Workload(Strict):
    name: str
    description: str = ""
    command: Command | None = None
    shell: bool = False
    tool: str | None = None
    params: dict[str, JSONValue] = Field(default_factory=dict)
    sweep: dict[str, list[Scalar] | str] = Field(default_factory=dict)
    setup: Command | None = None
    teardown: Command | None = None
    prime: Command | None = None
    # Run before every trial of the workload (warm-up included), untimed, with the trial's environment (the
    # variant's env too) and working directory: a server restart, a cache drop. Its failure fails the trial.
    before_trial: Command | None = None
    timeout_s: float | None = Field(None, gt=0)
    metrics: list[Metric] = Field(default_factory=list)
    env: dict[str, EnvValue] = Field(default_factory=dict)
    cwd: str | None = None
    # A command workload's data set on disk ("8G", "2xRAM", bytes): under 2 × RAM on a disk file system the
    # run is refused (seed 003: it measures the page cache), unless small_size_reason says the cache is the point.
    data_size: int | str | None = None
    small_size_reason: str = ""
    client_host: str | None = (
        None  # a [hosts.NAME] that runs the tool's client; its server runs on the variant's
    )
    # Microbenchmarks (issue 24): each trial is handed a loop count ({loops} in the command, $FAIRMARK_LOOPS), the
    # command repeats its operation that many times, and the per-loop metrics divide the trial's times by it;
    # "auto" calibrates the count at each cell's first trial so that a trial lasts at least 100 ms.
    loops: int | str | None = None

    @field_validator("loops", mode="before")
    @classmethod
    def _loops(cls, v: object) -> object:
        if v is None or v == "auto" or (type(v) is int and 1 <= v <= MAX_LOOPS):
            return v
        raise ValueError(
            f'expected a loop count (an integer from 1 to {MAX_LOOPS:.0e}) or "auto"; got {type(v).__name__} {v!r}'
        )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _check_name(v)

    @model_validator(mode="after")
    def _what(self) -> Workload:
        if (self.command is None) == (self.tool is None):
            raise ValueError("give exactly one of command = [...] (or a shell string) and tool = 'NAME'")
        if isinstance(self.command, str) and not self.shell:
            raise ValueError("a command given as a string needs shell = true (or give an argv list)")
        if self.tool is None and self.params:
            raise ValueError(
                "params are for tool workloads; a command workload takes its arguments in command"
            )
        if self.tool is not None and self.loops is not None:
            raise ValueError(
                "loops is for command workloads (the command repeats its operation {loops} times); a tool "
                "workload's repetitions are its parameters"
            )
        per_loop = [m.name for m in self.metrics if m.name in LOOP_METRICS and not (m.regex or m.json_path)]
        if per_loop and self.loops is None:
            raise ValueError(
                f'metric {per_loop[0]!r} is a time per loop: the workload needs loops = N or loops = "auto"'
            )
        if self.tool is not None and (self.data_size is not None or self.small_size_reason):
            raise ValueError(
                "data_size and small_size_reason are for command workloads; a tool workload's "
                "data set is in its params (e.g. fio size, bonnie size_mib)"
            )
        if self.data_size is not None and not _DATA_SIZE_RE.match(str(self.data_size)):
            raise ValueError(
                f"data_size: expected a size such as 8G, 512M, 2xRAM or a byte count, got {self.data_size!r}"
            )
        names = [m.name for m in self.metrics]
        if len(set(names)) != len(names):
            raise ValueError(f"metric names must be unique, got {names}")
        for key, values in self.sweep.items():
            if isinstance(values, list) and not values:
                raise ValueError(f"sweep {key!r} has no values")
        return self


_DATA_SIZE_RE = re.compile(r"^\s*(\d+(\.\d+)?\s*[KMGT]?(iB|B)?|\d+(\.\d+)?\s*x\s*RAM)\s*$", re.IGNORECASE)
_SIZE_RE = re.compile(r"^[1-9][0-9]*[KMGT]?$")
_CPU_LIST_RE = re.compile(r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$")
SysctlValue = int | str


def _flatten(prefix: str, value: object, out: dict[str, object]) -> None:
    # An unquoted dotted key (net.ipv4.x = 1) is a nested table in TOML; the user meant one sysctl name.
    if isinstance(value, dict):
        for key, sub in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), sub, out)
    else:
        out[prefix] = value


class MountSpec(Strict):
    """A scratch file system fairmark creates for the variant (never an existing mount)."""

    fs: str = "ext4"
    options: str = ""  # mount -o, e.g. "sync" or "noatime,data=writeback"
    size: str = "1G"  # image size: 512M, 4G …
    mkfs_options: list[str] | str = ""  # extra mkfs arguments, e.g. "-O ^has_journal"
    soft_updates: bool | None = None  # FreeBSD UFS only (tunefs -n enable|disable)
    image_dir: str | None = None  # where the image file lives (default: under fairmark's state directory)

    @field_validator("fs")
    @classmethod
    def _fs(cls, v: str) -> str:
        if not re.match(r"^[a-z0-9]+$", v):
            raise ValueError("expected a file system type such as 'ext4', 'tmpfs' or 'ufs'")
        return v

    @field_validator("size")
    @classmethod
    def _size(cls, v: str) -> str:
        if not _SIZE_RE.match(v):
            raise ValueError("expected a size such as '512M' or '4G' (suffix K, M, G or T)")
        return v


@dataclass(frozen=True)
class VariantKind:
    """What a kind of system change is, declared on its field of SystemChanges (the table of kinds,
    plan/kinds.py, is derived from these; each kind's driver is run/variants/<kind>.py)."""

    kernel_path: bool  # acts only on the kernel's path: a user-bound cell's kernel share bounds what it moves
    machine_wide: bool  # flips machine-wide state (trials then run in A B B A blocks); else per trial
    remote: bool = False  # an agent on another host applies it too


KERNEL_WIDE = VariantKind(kernel_path=True, machine_wide=True, remote=True)  # a sysctl, a scratch file system
USER_SPEED_WIDE = VariantKind(kernel_path=False, machine_wide=True)  # changes how fast user space runs
USER_SPEED_PER_TRIAL = VariantKind(kernel_path=False, machine_wide=False)  # applied to the trial's process
USER_SPEED_WIDE_ON_HOSTS = VariantKind(kernel_path=False, machine_wide=True, remote=True)
USER_SPEED_PER_TRIAL_ON_HOSTS = VariantKind(kernel_path=False, machine_wide=False, remote=True)


class SystemChanges(Strict):
    """Changes to the system under test, applied before a variant's block of trials and reverted after
    (see run/variants/system.py). Shared by [[variant]] and [tuning.NAME]. Each field is a kind of change
    (its VariantKind): adding one means a field here and its driver, run/variants/<kind>.py (found by the
    kind's name: run/variants/driver.py), which the controller and a host's agent both use."""

    sysctl: Annotated[dict[str, SysctlValue], KERNEL_WIDE] = Field(default_factory=dict)
    mount: Annotated[MountSpec | None, KERNEL_WIDE] = None
    # a count (first N online CPUs) or a list "0-1,3"
    cpus: Annotated[int | str | None, USER_SPEED_PER_TRIAL_ON_HOSTS] = None
    # CPU hotplug: keep this many online (on the controller only: no agent takes CPUs offline on a host)
    online_cpus: Annotated[int | None, USER_SPEED_WIDE] = Field(None, ge=1)
    thp: Annotated[Literal["always", "madvise", "never"] | None, USER_SPEED_WIDE_ON_HOSTS] = None
    governor: Annotated[str | None, USER_SPEED_WIDE_ON_HOSTS] = None
    aslr: Annotated[Literal[0, 1, 2] | None, USER_SPEED_WIDE_ON_HOSTS] = None
    malloc_debug: Annotated[bool, USER_SPEED_PER_TRIAL_ON_HOSTS] = False
    # SMT (hyper-threading) on or off for the variant's blocks: seed 002's UP vs SMP question on one machine
    smt: Annotated[Literal["on", "off"] | None, USER_SPEED_WIDE_ON_HOSTS] = None
    # seconds to wait after applying, before the block's first trial (default 1 s when anything changed)
    settle_s: float | None = Field(None, ge=0, le=600)

    @field_validator("sysctl", mode="before")
    @classmethod
    def _sysctl(cls, v: object) -> object:
        if isinstance(v, dict):
            out: dict[str, object] = {}
            _flatten("", v, out)
            return out
        return v

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, v: int | str | None) -> int | str | None:
        if isinstance(v, int) and v < 1:
            raise ValueError("expected at least 1 CPU")
        if isinstance(v, str) and not _CPU_LIST_RE.match(v.replace(" ", "")):
            raise ValueError("expected a CPU count (cpus = 1) or a list such as '0-1' or '0,2'")
        return v


class TuningSet(SystemChanges):
    description: str = ""


class HostEntry(Strict):
    """[hosts.NAME]: a machine reached with the user's own `ssh` (their config, keys, known_hosts, ProxyJump)."""

    ssh: str = Field(min_length=1)  # what `ssh` is given: an alias from ~/.ssh/config, user@addr …
    ssh_options: list[str] = Field(default_factory=list)  # passed to ssh before the destination
    agent: list[str] | None = Field(None, min_length=1)  # e.g. ["fairmark", "agent"]; default: shipped copy
    python: str | None = Field(None, min_length=1)  # the host's Python 3 for the shipped agent; None: probed
    # A lab that forbids root logins: log in as a user, run the agent (and reboots) as root through `sudo -n`
    # (sudo = true) or another non-interactive command (become = ["doas", "-n"]).
    sudo: bool = False
    become: list[str] | None = Field(None, min_length=1)
    address: str | None = (
        None  # where clients on other hosts reach it (default: the address ssh connected to)
    )

    @field_validator("ssh")
    @classmethod
    def _destination(cls, value: str) -> str:
        # `-oProxyCommand=…` as a destination would be an option to ssh, run on the controller (issue 37)
        if value.startswith("-") or any(c.isspace() or not c.isprintable() for c in value):
            raise ValueError(
                f"{value[:60]!r} is not an ssh destination (an alias, host or user@host: no leading '-', "
                "no spaces or control characters); ssh's options go in ssh_options"
            )
        return value

    @model_validator(mode="after")
    def _one_way_to_root(self) -> HostEntry:
        if self.sudo and self.become:
            raise ValueError("sudo = true and become = [...] both say how to become root: keep one")
        return self


# What a plan may declare as the point of a comparison across hosts (hardware differences are refused else).
Declarable = Literal["os", "kernel", "cpu_model", "cores", "memory", "disk", "fs"]
DECLARABLE: tuple[str, ...] = get_args(Declarable)


class Kexec(Strict):
    """Linux: load `kernel` (and `initrd`) and jump into it; `append` is the new command line (None: the
    current one is reused)."""

    kernel: str = Field(min_length=1)
    initrd: str | None = None
    append: str | None = None


BOOT_SWITCHES = ("command", "kexec", "grub_reboot", "nextboot_kernel", "bectl")


class Boot(Strict):
    """How a variant's boots are made (exactly one switch) and what a boot must show to count as this variant:
    `expect` maps snapshot keys (dotted, e.g. "os.ident", "os.release") to the value they must have."""

    command: str | None = None  # e.g. "bectl activate -t debug"; needs `expect`
    kexec: Kexec | None = None  # verified by its `append` words in /proc/cmdline
    grub_reboot: str | None = None  # a GRUB entry for the next boot only; needs `expect`
    nextboot_kernel: str | None = (
        None  # FreeBSD nextboot -k NAME: verified by kern.bootfile /boot/NAME/kernel
    )
    bectl: str | None = None  # FreeBSD bectl activate -t NAME; needs `expect`
    expect: dict[str, str] = Field(default_factory=dict)
    reboot: list[str] | None = Field(None, min_length=1)  # the reboot command (default per switch and OS)
    timeout_s: float = Field(600.0, gt=0)  # to come back from the reboot

    @model_validator(mode="after")
    def _one_switch(self) -> Boot:
        given = [k for k in BOOT_SWITCHES if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"expected exactly one of {', '.join(BOOT_SWITCHES)}; got {len(given)}")
        checked = (self.kexec is not None and self.kexec.append) or self.nextboot_kernel
        if not checked and not self.expect:
            raise ValueError(
                f"boot.{given[0]}: fairmark cannot tell by itself whether this switch worked; add expect = "
                '{ "os.ident" = "…" } (or os.release, os.cmdline …): a boot that does not show it is refused'
            )
        return self


class Variant(SystemChanges):
    name: str
    boot: Boot | None = None  # a kernel (boot) variant: its trials run only in boots verified against it
    host: str | None = None  # a [hosts.NAME]: this variant's trials run there
    client_host: str | None = None  # overrides the workloads' client_host for this variant's trials
    description: str = ""
    tuning: str | None = None  # a [tuning.NAME] set; the variant's own keys override it
    env: dict[str, EnvValue] = Field(default_factory=dict)
    wrap: list[str] | None = Field(None, min_length=1)
    command: Command | None = None  # replaces the command of every command workload
    commands: dict[str, Command] = Field(default_factory=dict)  # per workload name
    shell: bool | None = None
    # Tool parameters this variant changes, per tool workload name: { redis = { transport = "unix" } }.
    # They apply per trial (the command); a workload's setup (e.g. its server) uses the workload's own params.
    params: dict[str, dict[str, JSONValue]] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _check_name(v)


class QuickPolicy(Strict):
    """What `fairmark run --quick` changes: fewer trials and shorter tool parameters, for a first look or CI.
    A quick run is labelled as such in every report."""

    warmup: int = Field(0, ge=0)
    min_trials: int = Field(3, ge=3)
    max_trials: int = Field(6, ge=3)
    target_ci_pct: float | None = Field(None, gt=0)
    params: dict[str, dict[str, JSONValue]] = Field(default_factory=dict)  # workload name → params overrides


class Plan(Strict):
    title: str = ""
    description: str = ""
    run: RunPolicy = Field(default_factory=RunPolicy)
    quick: QuickPolicy = Field(default_factory=QuickPolicy)
    tuning: dict[str, TuningSet] = Field(default_factory=dict)
    workload: list[Workload] = Field(min_length=1)
    variant: list[Variant] = Field(default_factory=lambda: [Variant(name="default")], min_length=1)
    hosts: dict[str, HostEntry] = Field(default_factory=dict)
    declare: list[Declarable] = Field(default_factory=list)

    @model_validator(mode="after")
    def _hosts(self) -> Plan:
        known = ", ".join(sorted(self.hosts)) or "none"
        for v in self.variant:
            if v.host is not None and v.host not in self.hosts:
                raise ValueError(
                    f"variant {v.name!r}: host {v.host!r} is not a [hosts.NAME] (defined: {known})"
                )
        booted = [v.name for v in self.variant if v.boot is not None]
        if booted and len(booted) != len(self.variant):
            raise ValueError(
                f"variants {', '.join(booted)} have boot = …, the others not: every variant of a plan with boot "
                "variants needs its own boot (which kernel would the others run on?)"
            )
        users: list[Workload | Variant] = [*self.workload, *self.variant]
        for w in users:
            if w.client_host is not None and w.client_host not in self.hosts:
                kind = "variant" if isinstance(w, Variant) else "workload"
                raise ValueError(
                    f"{kind} {w.name!r}: client_host {w.client_host!r} is not a [hosts.NAME] "
                    f"(defined: {known})"
                )
        return self

    def with_host(self, host: str) -> Plan:
        """Every variant on `host` (`--host`): a name from [hosts], else an ssh destination."""
        hosts = dict(self.hosts)
        if host not in hosts:
            try:
                hosts[host] = HostEntry(ssh=host)
            except ValidationError as exc:
                raise UsageError(f"--host: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
        variants = [v.model_copy(update={"host": host}) for v in self.variant]
        return self.model_copy(update={"hosts": hosts, "variant": variants})

    def client_hosts(self) -> dict[tuple[str, str], str]:
        """(variant, workload) → the [hosts.NAME] that runs the workload's tool client, where one does: the
        variant's client_host, else the workload's."""
        return {
            (v.name, w.name): host
            for v in self.variant
            for w in self.workload
            if (host := v.client_host or w.client_host)
        }

    @property
    def remote(self) -> bool:
        return any(v.host or v.client_host for v in self.variant) or any(w.client_host for w in self.workload)

    @model_validator(mode="after")
    def _cross(self) -> Plan:
        for kind, items in (("workload", self.workload), ("variant", self.variant)):
            names = [i.name for i in items]
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ValueError(f"{kind} names must be unique; repeated: {', '.join(dup)}")
        workloads = {w.name for w in self.workload}
        for v in self.variant:
            unknown = sorted(set(v.commands) - workloads)
            if unknown:
                raise ValueError(f"variant {v.name!r}: commands for unknown workload(s) {unknown}")
            tools = {w.name for w in self.workload if w.tool}
            unknown = sorted(set(v.params) - tools)
            if unknown:
                raise ValueError(f"variant {v.name!r}: params for unknown or non-tool workload(s) {unknown}")
        self._check_tuning_names()
        unknown = sorted(set(self.quick.params) - workloads)
        if unknown:
            raise ValueError(f"quick.params names unknown workload(s) {unknown}")
        if self.run.baseline and self.run.baseline not in {v.name for v in self.variant}:
            raise ValueError(f"run.baseline {self.run.baseline!r} is not a variant of this plan")
        return self

    def _check_tuning_names(self) -> None:
        for i, v in enumerate(self.variant):
            if v.tuning is not None and v.tuning not in self.tuning:
                # raised with its location so load.py can name the line of `tuning = "…"`
                known = ", ".join(sorted(self.tuning)) or "none"
                msg = f"no [tuning.{v.tuning}] in this plan (defined: {known})"
                err = InitErrorDetails(
                    type=PydanticCustomError("value_error", msg), loc=("variant", i, "tuning"), input=v.tuning
                )
                raise ValidationError.from_exception_data("Plan", [err])

    def policy(self, quick: bool = False) -> RunPolicy:
        if not quick:
            return self.run
        q = self.quick
        return self.run.model_copy(
            update={
                "warmup": min(self.run.warmup, q.warmup),
                "min_trials": min(self.run.min_trials, q.min_trials),
                "max_trials": min(self.run.max_trials, max(q.max_trials, q.min_trials)),
                "target_ci_pct": q.target_ci_pct or self.run.target_ci_pct,
            }
        )

    def with_decision_stop(self, beyond_pct: float = 0.0) -> Plan:
        """The plan with `stop = "decision"` unless its [run] chose a stop itself: the default where the question
        is "is B different, and which way" — a bisect step, `fairmark ab` (issue 36). `beyond_pct`: a gate's
        threshold (ab's --fail-on): a difference then decides when proven beyond it, and equivalence within it
        unless the plan set `equivalence_pct` (and `beyond_pct`) itself."""
        if "stop" in self.run.model_fields_set:
            return self
        update: dict[str, object] = {"stop": "decision"}
        if beyond_pct > 0 and "beyond_pct" not in self.run.model_fields_set:
            update["beyond_pct"] = beyond_pct
            if "equivalence_pct" not in self.run.model_fields_set:
                update["equivalence_pct"] = beyond_pct
        return self.model_copy(update={"run": self.run.model_copy(update=update)})

    def with_aa_twin(self) -> Plan:
        """The plan plus an exact copy of the baseline variant, interleaved like any other: an A/A
        calibration that measures this machine's false positives and smallest detectable change."""
        base = self.variant_named(self.baseline)
        twin = base.model_copy(update={"name": aa_twin_name(self.baseline)})
        at = self.variant.index(base) + 1
        return self.model_copy(update={"variant": [*self.variant[:at], twin, *self.variant[at:]]})

    @property
    def baseline(self) -> str:
        return self.run.baseline or self.variant[0].name

    def workload_named(self, name: str) -> Workload:
        return next(w for w in self.workload if w.name == name)

    def variant_named(self, name: str) -> Variant:
        return next(v for v in self.variant if v.name == name)


def metric_thresholds(plan: Plan) -> dict[tuple[str, str], float]:
    """(workload, metric) → the metric's own `fail_on_pct`, where the plan gives one (the gates of check, ab)."""
    return {
        (w.name, m.name): m.fail_on_pct for w in plan.workload for m in w.metrics if m.fail_on_pct is not None
    }
