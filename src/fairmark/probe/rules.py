"""The doctor's severity table: every judgement the doctor makes is a row here, so it can be reviewed at once.

Severity meanings:
  error — the numbers would describe a machine nobody runs in production (debug kernel, malloc debugging) or
          would not measure what the workload claims; `fairmark run` refuses unless --accept-risk.
  warn  — noise that widens confidence intervals or biases one variant (governor, steal, busy processes).
  info  — written down so readers can judge, harmless for an A/B comparison on one host.
"""

from __future__ import annotations

from dataclasses import dataclass

Severity = str  # "error" | "warn" | "info"
SEVERITY_ORDER = {"info": 0, "warn": 1, "error": 2}


@dataclass(frozen=True)
class DebugOption:
    severity: Severity
    why: str


_LOCKDEP = "validates every lock acquisition against a dependency graph: kernel-heavy work slows a lot"
# Linux kernel configuration options (CONFIG_ prefix omitted). Seed 000: debug kernels "give a false
# impression" of kernel performance; the cheap ones stay on in distribution kernels and are only noted.
LINUX_DEBUG_OPTIONS: dict[str, DebugOption] = {
    "PROVE_LOCKING": DebugOption("error", _LOCKDEP),
    "LOCKDEP": DebugOption("error", _LOCKDEP),
    "DEBUG_LOCK_ALLOC": DebugOption("error", "tracks every lock's allocation and freeing"),
    "LOCK_STAT": DebugOption("error", "collects statistics on every lock operation"),
    "KASAN": DebugOption("error", "address sanitizer: every memory access is instrumented (2-3x slower)"),
    "KCSAN": DebugOption("error", "data-race sanitizer: samples and stalls memory accesses"),
    "KMSAN": DebugOption("error", "uninitialised-memory sanitizer: every access instrumented"),
    "UBSAN": DebugOption("error", "undefined-behaviour sanitizer: checks inserted into hot paths"),
    "DEBUG_PAGEALLOC": DebugOption("error", "unmaps freed pages: TLB flushes on every allocation"),
    "SLUB_DEBUG_ON": DebugOption("error", "slab red-zoning and poisoning on for every cache"),
    "DEBUG_OBJECTS": DebugOption("error", "tracks the life time of kernel objects (timers, work items)"),
    "DEBUG_VM": DebugOption("error", "extra consistency checks in the memory manager's hot paths"),
    "KCOV": DebugOption("error", "coverage instrumentation of kernel code (fuzzing builds)"),
    "DEBUG_ATOMIC_SLEEP": DebugOption(
        "error", "checks every sleep for atomic context; implies preempt counting"
    ),
    "DEBUG_MUTEXES": DebugOption("error", "mutex debugging disables the optimistic fast paths"),
    "DEBUG_SPINLOCK": DebugOption("error", "spinlock debugging replaces the inline fast paths"),
    "DEBUG_RT_MUTEXES": DebugOption("error", "rt-mutex debugging checks on every operation"),
    "PROVE_RCU": DebugOption("error", "RCU usage validation through lockdep"),
    "DEBUG_KMEMLEAK": DebugOption("error", "kmemleak tracks every allocation and scans memory periodically"),
    "DEBUG_LIST": DebugOption("info", "cheap list-corruption checks; on in hardened distribution kernels"),
    "SLUB_DEBUG": DebugOption(
        "info", "slab debugging compiled in but off unless slub_debug= is on the command line"
    ),
    "KFENCE": DebugOption("info", "sampling memory-error detector meant for production: negligible overhead"),
    "DEBUG_INFO": DebugOption("info", "debug symbols only; no run-time cost"),
    "SCHED_DEBUG": DebugOption("info", "scheduler statistics files; negligible run-time cost"),
}

# Kernel command-line words that switch debugging on at boot even in a production build.
LINUX_DEBUG_CMDLINE: dict[str, DebugOption] = {
    "slub_debug": DebugOption("error", "slab red-zoning/poisoning switched on at boot"),
    "debug_pagealloc=on": DebugOption("error", "page unmapping on free switched on at boot"),
    "kasan": DebugOption("info", "KASAN boot parameter (only matters when CONFIG_KASAN is built in)"),
    "init_on_free=1": DebugOption("warn", "every freed page is zeroed: costs memory bandwidth"),
    "mitigations=off": DebugOption("info", "CPU vulnerability mitigations off: faster than a default host"),
}

# FreeBSD kernel `options` (kern.conftxt) and kern.features names (lower case there).
FREEBSD_DEBUG_OPTIONS: dict[str, DebugOption] = {
    "INVARIANTS": DebugOption(
        "error", "consistency assertions throughout the kernel (seed 000: 30-45% slower)"
    ),
    "INVARIANT_SUPPORT": DebugOption("error", "support code for INVARIANTS, also in modules"),
    "WITNESS": DebugOption("error", "lock-order verification on every lock operation"),
    "WITNESS_SKIPSPIN": DebugOption(
        "error", "WITNESS is on (spin locks excluded, sleep locks still checked)"
    ),
    "DIAGNOSTIC": DebugOption("error", "extra, expensive sanity checks"),
    "DEBUG_VFS_LOCKS": DebugOption("error", "asserts vnode locking in the VFS hot paths"),
    "BUF_TRACKING": DebugOption("error", "records the history of every buffer"),
    "FULL_BUF_TRACKING": DebugOption("error", "records the full history of every buffer"),
    "DEADLKRES": DebugOption("error", "deadlock resolver thread scanning all threads"),
    "COVERAGE": DebugOption("error", "coverage instrumentation of kernel code"),
    "KCOV": DebugOption("error", "coverage instrumentation of kernel code (fuzzing builds)"),
    "MALLOC_DEBUG_MAXZONES": DebugOption(
        "warn", "spreads malloc(9) types over zones to catch use-after-free"
    ),
    "DDB": DebugOption("info", "in-kernel debugger compiled in: no run-time cost until entered"),
    "GDB": DebugOption("info", "remote debugger support: no run-time cost"),
    "KDB": DebugOption("info", "kernel debugger framework: no run-time cost until entered"),
}

FREEBSD_NODEBUG_FIX = (
    "boot a kernel without debugging: build GENERIC-NODEBUG (`make buildkernel KERNCONF=GENERIC-NODEBUG`) "
    'or add `include "std.nodebug"` to your kernel config, install it and reboot'
)
LINUX_NODEBUG_FIX = (
    "boot a production kernel (your distribution's non-debug flavour), or rebuild with these options off "
    "(`scripts/config -d OPTION` then `make olddefconfig`)"
)

# jemalloc options (MALLOC_CONF, /etc/malloc.conf) that make malloc slow; "true" switches them on.
JEMALLOC_DEBUG_OPTS = ("junk", "zero", "abort", "abort_conf", "redzone", "utrace", "xmalloc", "prof")
FREEBSD_MALLOC_FIX = (
    "`ln -sf 'abort:false,junk:false' /etc/malloc.conf` and unset MALLOC_CONF, or build world with "
    "WITH_MALLOC_PRODUCTION"
)
GLIBC_MALLOC_ENV = ("MALLOC_CHECK_", "MALLOC_PERTURB_", "MALLOC_TRACE")
GLIBC_TUNABLE_DEBUG = ("glibc.malloc.check", "glibc.malloc.perturb", "glibc.mem.tagging")
DEBUG_PRELOADS = (
    "libc_malloc_debug",
    "libasan",
    "libtsan",
    "libmsan",
    "libubsan",
    "libhwasan",
    "liblsan",
    "libefence",
    "libduma",
    "valgrind",
)
GLIBC_MALLOC_FIX = (
    "unset MALLOC_CHECK_, MALLOC_PERTURB_ and the glibc.malloc tunables, and drop debug LD_PRELOADs"
)


@dataclass(frozen=True)
class Rule:
    severity: Severity
    title: str
    why: str
    fix: str


# Thresholds the noise rules use; one place to tune them.
LOAD_PER_CPU_WARN = 0.5  # 1-minute load average per CPU before the run
BUSY_PROCESS_CPU_PCT = 10.0  # a process using this much of one CPU during the sample is "busy"
STEAL_PCT_WARN = 2.0  # hypervisor steal (sample or since boot)
STEAL_PCT_NOTE = 0.1  # below this a VM's steal is noise in the counters, not a shared host worth a fix
PRESSURE_SOME_AVG10_WARN = 20.0  # % of the last 10 s in which some task waited for the resource
TEST_SIZE_RAM_FACTOR = 2.0  # seed 003: a disk test must exceed 2x RAM, else it measures the page cache

RULES: dict[str, Rule] = {
    "debug-kernel": Rule(
        "error",
        "Kernel built with debugging options",
        "debug options make kernel-heavy work much slower than on any production kernel, so the results "
        "describe the debug build, not the system (seed 000)",
        "",
    ),
    "debug-kernel-cheap": Rule(
        "info",
        "Cheap kernel debugging options are on",
        "these checks are in distribution kernels too; they cost too little to bias a comparison",
        "",
    ),
    "debug-kernel-unknown": Rule(
        "info",
        "Kernel configuration not readable",
        "debug options could not be checked",
        "Linux: enable CONFIG_IKCONFIG_PROC or install "
        "/boot/config-$(uname -r); FreeBSD: build with `options INCLUDE_CONFIG_FILE`",
    ),
    "debug-kernel-witness-dmesg": Rule(
        "error",
        "Boot log says WITNESS is enabled",
        "the kernel printed 'WITNESS option enabled, expect reduced performance'",
        FREEBSD_NODEBUG_FIX,
    ),
    "debug-kernel-cmdline": Rule(
        "error",
        "Debugging switched on on the kernel command line",
        "boot parameters enable expensive checks in a production kernel",
        "remove the parameter from the boot loader configuration and reboot",
    ),
    "cmdline-note": Rule(
        "info",
        "Kernel command line changes performance-relevant defaults",
        "readers comparing with another host need to know",
        "none needed if intended",
    ),
    "malloc-debug": Rule(
        "error",
        "malloc debugging is on",
        "junk filling, checking and perturbing every allocation slows allocation-heavy programs many "
        "times and dominates what is measured",
        "",
    ),
    "malloc-debug-intended": Rule(
        "info",
        "malloc debugging set by a variant on purpose",
        "a plan variant sets it, so it is the difference under test, not an accident",
        "none needed",
    ),
    "ld-preload": Rule(
        "info",
        "A library is preloaded into every benchmark process",
        "it replaces or wraps functions (often malloc) for every trial",
        "unset LD_PRELOAD unless intended",
    ),
    "freebsd-malloc-default-debug": Rule(
        "warn",
        "FreeBSD -CURRENT userland: jemalloc debugging may be on",
        "on -CURRENT, world is built without MALLOC_PRODUCTION, so jemalloc debugging is on by default",
        FREEBSD_MALLOC_FIX,
    ),
    "governor": Rule(
        "warn",
        "CPU frequency governor is not 'performance'",
        "a dynamic governor changes the clock between and within trials, adding noise and bias",
        "`cpupower frequency-set -g performance` (or write `performance` to every CPU's scaling_governor)",
    ),
    "governor-mixed": Rule(
        "warn",
        "CPUs run different frequency governors or limits",
        "trials on different CPUs would run at different speeds",
        "set the same governor on every CPU",
    ),
    "governor-unknown": Rule(
        "info",
        "CPU frequency control not visible",
        "no cpufreq driver: typical of virtual machines, where the host decides the clock",
        "none possible from the guest; note it with the results",
    ),
    "boost": Rule(
        "warn",
        "Turbo/boost is on",
        "boost clocks depend on temperature and on how many cores are busy, so trials drift",
        "`echo 0 > /sys/devices/system/cpu/cpufreq/boost` (or intel_pstate/no_turbo=1) for stable numbers",
    ),
    "smt": Rule(
        "warn",
        "SMT (hyper-threading) is on",
        "sibling threads share one core's execution units: a trial's speed depends on its sibling's work",
        "pin trials to one thread per core, or `echo off > /sys/devices/system/cpu/smt/control`",
    ),
    "load": Rule(
        "warn",
        "The host is not idle",
        "other work competes with the trials for CPU, memory bandwidth and caches",
        "stop other jobs before benchmarking; interleaved trials only spread the damage evenly",
    ),
    "busy-process": Rule(
        "warn",
        "Another process is using the CPU",
        "it competes with the trials; its activity can change between variants",
        "stop it (or move it to other CPUs) for the duration of the run",
    ),
    "steal": Rule(
        "warn",
        "The hypervisor steals CPU time from this VM",
        "steal time is time the VM wanted to run but another guest ran: it varies outside your control",
        "use a dedicated host or dedicated vCPUs; keep interleaving trials and report the steal",
    ),
    "swap-activity": Rule(
        "warn",
        "The host is swapping",
        "paging adds large, irregular delays to any workload",
        "free memory or reduce the data set",
    ),
    "swap-used": Rule(
        "info",
        "Swap is in use",
        "pages swapped out earlier may be paged in during trials",
        "`swapoff -a && swapon -a` to bring them back before the run",
    ),
    "thp-always": Rule(
        "warn",
        "Transparent huge pages set to 'always'",
        "khugepaged compaction runs at unpredictable times and memory footprint changes between trials",
        "`echo madvise > /sys/kernel/mm/transparent_hugepage/enabled`",
    ),
    "aslr-off": Rule(
        "info",
        "Address-space randomisation is off",
        "layout effects are then fixed, not averaged over trials; compare only with runs in the same state",
        "`sysctl kernel.randomize_va_space=2` (Linux) / `sysctl kern.elf64.aslr.enable=1` (FreeBSD)",
    ),
    "thermal": Rule(
        "warn",
        "Thermal throttling was recorded",
        "a throttled CPU runs slower for reasons unrelated to the variant",
        "improve cooling or lower the load",
    ),
    "clocksource": Rule(
        "warn",
        "Clock source is not the TSC",
        "a slower clock source makes every time-stamp syscall expensive and the measurement itself slower",
        "`echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource` if the TSC is stable",
    ),
    "virtualized": Rule(
        "info",
        "Running in a virtual machine",
        "results include hypervisor effects (steal, virtual devices, no PMU); compare only like with like",
        "none needed; say it with the results",
    ),
    "container": Rule(
        "info",
        "Running inside a container",
        "cgroup limits and overlay file systems may differ from a bare host",
        "none needed; say it with the results",
    ),
    "mitigations-off": Rule(
        "info",
        "Some CPU vulnerability mitigations are off",
        "system-call-heavy work is faster than on a default-configured host",
        "none needed if intended",
    ),
    "test-size": Rule(
        "error",
        "Data set is small compared with RAM",
        "a file-system test whose data fits in memory measures the page cache, not the disk (seed 003)",
        "make the data set at least 2x RAM (fio size, bonnie size_mib, sysbench file_total_size, more dbench "
        "clients, a command workload's data_size; '2xRAM' works), use O_DIRECT, boot with less memory "
        "(mem= / hw.physmem), or say the cache is the point: small_size_reason = '…' (kept with the run)",
    ),
    "workdir-tmpfs": Rule(
        "warn",
        "Working directory is in memory (tmpfs)",
        "a disk workload there measures RAM, not a disk",
        "point the workload's directory at a disk file system",
    ),
    "workdir-netfs": Rule(
        "warn",
        "Working directory is on a network file system",
        "network latency and server load dominate a disk workload there",
        "use a local disk file system",
    ),
    "env-drift": Rule(
        "warn",
        "The environment changed during the run",
        "trials before and after the change ran on different machines, in effect",
        "find what changed it (power daemon, thermal event, another job) and rerun",
    ),
    "pressure": Rule(
        "warn",
        "Tasks are waiting for CPU, memory or I/O (pressure stall)",
        "stalls mean contention: trial times include waiting for other work",
        "stop other jobs; check `cat /proc/pressure/*`",
    ),
    "comparison-validity": Rule(
        "error",
        "The two runs differ in more than the variant",
        "a difference nobody declared (kernel, compiler, libc, CPU, governor, mitigations, mount options) can "
        "cause the measured change by itself",
        "rerun both on the same setup, or declare the difference if it is the one under test",
    ),
    "comparison-environment": Rule(
        "warn",
        "The two runs had different environment variables",
        "variables can change program behaviour (allocator, locale, thread counts)",
        "declare the variable if it is the difference under test, else rerun with the same environment",
    ),
    "mount-sync": Rule(
        "info",
        "Working directory is mounted with performance-relevant options",
        "sync/async/noatime/soft updates change file-system results by large factors (seed 004)",
        "none needed if intended; keep them equal between compared runs",
    ),
}

# FreeBSD wording of the fixes whose default text is Linux-specific.
FREEBSD_FIXES: dict[str, str] = {
    "governor": "stop powerd (`service powerd stop`) and pin the clock: `sysctl dev.cpu.0.freq=<highest level>`, "
    "or `sysctl dev.hwpstate_intel.0.epp=0` with hwpstate_intel",
    "governor-mixed": "set the same dev.cpu.N.freq / dev.hwpstate_intel.N.epp on every CPU",
    "boost": "set the EPP to 0 (`sysctl dev.hwpstate_intel.N.epp=0`) or cap dev.cpu.N.freq below the turbo range",
    "smt": "pin trials to one thread per core (cpuset -l), or set `machdep.hyperthreading_allowed=0` in "
    "/boot/loader.conf and reboot",
    "clocksource": "`sysctl kern.timecounter.hardware=TSC-low` if kern.timecounter.choice lists it",
    "aslr-off": "`sysctl kern.elf64.aslr.enable=1`",
    "swap-used": "`swapoff -a && swapon -a` to bring swapped pages back before the run",
    "test-size": "make the data set at least 2x RAM, use O_DIRECT, limit RAM with `hw.physmem` in "
    "/boot/loader.conf, or say the cache is the point: small_size_reason = '…'",
    "busy-process": "stop it (`top -S` shows it) or move it to other CPUs with cpuset for the run",
}

# Which snapshot keys matter when comparing two runs (env --diff): first matching prefix wins.
DIFF_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("kernel_config", "validity"),
    ("os.kernel", "validity"),
    ("os.release", "validity"),
    ("os.version", "validity"),
    ("os.cmdline", "validity"),
    ("os.clocksource", "validity"),
    ("cpu.model", "validity"),
    ("cpu.cores", "validity"),
    ("cpu.threads", "validity"),
    ("cpu.sockets", "validity"),
    ("cpu.smt", "validity"),
    ("cpufreq", "validity"),
    ("mitigations", "validity"),
    ("memory.total_kib", "validity"),
    ("memory.thp", "validity"),
    ("memory.aslr", "validity"),
    # where the working directory is (a bundle's re-run elsewhere, two directories of one file system) is no
    # difference of the measured system: its file system's type, options and disk are
    ("fs.workdir", "info"),
    ("fs.mount_point", "info"),
    ("fs.device", "info"),
    ("fs", "validity"),
    ("toolchain", "validity"),
    ("tools", "validity"),
    ("malloc", "validity"),
    ("host.virtualization", "validity"),
    ("identity", "validity"),
    ("env", "environment"),
    ("host", "info"),
    ("cpu", "info"),
    ("os", "info"),
    ("memory", "info"),
)
# Keys that differ on every snapshot by nature; a diff never reports them.
DIFF_IGNORED_PREFIXES: tuple[str, ...] = (
    "taken_at",
    "elapsed_s",
    "source",
    "load",
    "thermal",
    "os.uptime_s",
    "os.boot_time",
    "memory.available_kib",
    "memory.free_kib",
    "memory.swap_free_kib",
    "memory.swap_used_kib",
    "memory.cached_kib",
    "env.OLDPWD",
    "env.PWD",
    "env._",
    "env.SHLVL",
    "env.TERM",
    "env.COLUMNS",
    "env.LINES",
    "identity.inputs",
    "kernel_config.options_set",
)
