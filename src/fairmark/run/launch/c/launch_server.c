/* fairmark's launch server (fairmark.run.launch.launch_server.server_path builds it): launch-server SOCKET_FD PIDS_FD
   The launcher (launcher.c) kept for a run: it starts the trials one at a time for the
   fairmark at the other end of the Unix stream socket SOCKET_FD, each as the launcher starts its command — the
   clock, vfork, exec (PATH searched as Python's subprocess does), wait4, the clock — and answers on SOCKET_FD
   with what the launcher's report line says, as 15 native 64-bit integers: ANSWER_MAGIC STATUS ERRNO WALL_NS
   USER_US SYS_US MAXRSS_KIB MINFLT MAJFLT NVCSW NIVCSW PID LEFT OUT_BYTES ERR_BYTES (PID: the command's, -1
   when not started, -2 when its output files could not be made (ERRNO: why); LEFT: 1 when its process group
   still had a process once the command was waited for — kill(-PID, 0) — else 0; the sizes of its stdout and
   stderr then). A request is a native unsigned 32-bit length and that many bytes of NUL-terminated fields:
   CWD, CPUS (a comma list or ""), JOIN and LEAVE (cgroup v1 tasks files or ""), STDOUT and STDERR (the files
   the command writes: created, or emptied, by the server), ARGC, ARGV..., then ENVC and ENV... or "-" (the
   previous request's environment). Before the clock starts the server takes the output files as its own 1
   and 2 (its 0 is /dev/null, every trial's stdin), moves to CWD and into the placement (the command inherits
   all of it), then onto one of the CPUs the command may use, drawn at random for each trial (start_cpu); between
   the clock's start and the exec the child only gives itself those CPUs back and calls setsid (the command's own
   session and process group: the launcher's child did not need it, its launcher had one). PID_MAGIC PID T_NS — the
   command's pid (-1: not started) and CLOCK_MONOTONIC once it has exec'd, 3 native 64-bit integers — goes to
   the socket PIDS_FD, which fairmark reads only to kill the trial's group (and then those of a few trials at
   once, to keep the socket from filling), so it is not woken in the middle of a trial. Exits 0 at EOF, 126 on
   a malformed request or a lost socket. Built with FAIRMARK_NOLIBC (Linux x86-64) it uses no C library, as
   the launcher: its memory, where the command's peak RSS starts, is a few KiB plus the largest request. */
#ifndef FAIRMARK_NOLIBC
#define _GNU_SOURCE
#endif
#include "fairmark_launch.h"

#ifdef FAIRMARK_NOLIBC
struct iovec { void *iov_base; size_t iov_len; };
struct msghdr {
    void *msg_name;
    unsigned msg_namelen;
    struct iovec *msg_iov;
    size_t msg_iovlen;
    void *msg_control;
    size_t msg_controllen;
    int msg_flags;
};
#define EINVAL 22
#define ENOSYS 38
#define E2BIG 7
#define O_WRONLY 1
#define O_RDWR 2
#define O_CREAT 0100
#define O_CLOEXEC 02000000
#define SEEK_SET 0
#define SEEK_END 2
#define MSG_NOSIGNAL 0x4000
#define fm_read(fd, b, n) sc(0, fd, (long)(b), n, 0)
#define fm_open(p, f) sc(2, (long)(p), f, 0, 0)
#define fm_create(p, f, m) sc(2, (long)(p), f, m, 0)
#define fm_close(fd) sc(3, fd, 0, 0, 0)
#define fm_lseek(fd, o, w) sc(8, fd, o, w, 0)
#define fm_dup2(a, b) sc(33, a, b, 0, 0)
#define fm_sendmsg(fd, m, f) sc(46, fd, (long)(m), f, 0)
#define fm_ftruncate(fd, n) sc(77, fd, n, 0, 0)
#define fm_chdir(p) sc(80, (long)(p), 0, 0, 0)
#define fm_fchdir(fd) sc(81, fd, 0, 0, 0)
#define fm_setsid() sc(112, 0, 0, 0, 0)
#define fm_setaffinity(n, m) sc(203, 0, n, (long)(m), 0)
#define fm_getaffinity(n, m) sc(204, 0, n, (long)(m), 0)
#define fm_kill(pid, sig) sc(62, pid, sig, 0, 0)
#define ESRCH 3
static long fm_size(int fd) { /* st_size of x86-64's struct stat */
    long st[18], r = sc(5, fd, (long)st, 0, 0);
    return r < 0 ? r : st[6];
}
#else
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <string.h>
#include <signal.h>
#ifdef __linux__
#include <sched.h>
#endif
#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif
#define fm_read(fd, b, n) fm_ret(read(fd, b, n))
#define fm_open(p, f) fm_ret(open(p, f))
#define fm_create(p, f, m) fm_ret(open(p, f, m))
#define fm_close(fd) close(fd)
#define fm_lseek(fd, o, w) fm_ret(lseek(fd, o, w))
#define fm_dup2(a, b) fm_ret(dup2(a, b))
#define fm_sendmsg(fd, m, f) fm_ret(sendmsg(fd, m, f))
#define fm_ftruncate(fd, n) fm_ret(ftruncate(fd, n))
static long fm_size(int fd) {
    struct stat st;
    return fstat(fd, &st) < 0 ? -errno : (long)st.st_size;
}
#define fm_chdir(p) fm_ret(chdir(p))
#define fm_fchdir(fd) fm_ret(fchdir(fd))
#define fm_setsid() setsid()
#define fm_kill(pid, sig) fm_ret(kill(pid, sig))
#ifdef __linux__
#define fm_setaffinity(n, m) fm_ret(sched_setaffinity(0, n, (cpu_set_t *)(m)))
#define fm_getaffinity(n, m) fm_ret(sched_getaffinity(0, n, (cpu_set_t *)(m)))
#else
#define fm_setaffinity(n, m) (-ENOSYS)
#define fm_getaffinity(n, m) (-ENOSYS)
#endif
#endif

/* the records it sends, native 64-bit integers with these first (fairmark.run.launch.launch_server._ANSWER, _STARTED) */
#define ANSWER_MAGIC 0x666d2d616e737731LL /* "fm-answ1" */
#define PID_MAGIC 0x666d2d7069643031LL    /* "fm-pid01" */
static int sock, pids, home, devnull;
static char body[1 << 21];    /* a request (its pages count in the commands' peak only once touched) */
static char envs[1 << 21];    /* the environment kept for the requests that say "-" */
static char *envp[1 << 15], *argv[1 << 15];
/* CPU masks of up to 1024 CPUs: the server's own, the trial's, the CPUs the command may use, its start CPU */
static unsigned long mask[16], want[16], span[16], one[16];
static unsigned long long draws; /* xorshift64: the start CPUs' draws, seeded from the clock at start */
static int drawn;                /* whether this trial's start CPU was drawn (the child gives span back) */
static struct timespec t0;

static long number(const char *s) {
    long v = 0;
    if (*s < '0' || *s > '9') return -1;
    for (; *s >= '0' && *s <= '9'; s++) v = v * 10 + (*s - '0');
    return *s ? -1 : v;
}

static int say(int to, const char *data, long n) {
    while (n > 0) {
        struct iovec iov = {(void *)data, (size_t)n};
        struct msghdr msg;
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        long r = fm_sendmsg(to, &msg, MSG_NOSIGNAL);
        if (r == -EINTR) continue;
        if (r <= 0) return -1;
        data += r;
        n -= r;
    }
    return 0;
}

/* The request's length, then its body: 0 at EOF, -1 malformed, else the length. */
static long receive(void) {
    unsigned len = 0;
    size_t got = 0;
    while (got < sizeof len) {
        long n = fm_read(sock, (char *)&len + got, sizeof len - got);
        if (n == -EINTR) continue;
        if (n <= 0) return n == 0 && got == 0 ? 0 : -1;
        got += (size_t)n;
    }
    if (len == 0 || len >= sizeof body) return -1;
    for (got = 0; got < len;) {
        long n = fm_read(sock, body + got, len - got);
        if (n == -EINTR) continue;
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    body[len] = 0;
    return (long)len;
}

/* Points out[0..max) at the NUL-terminated fields of [p, end); returns how many there were. */
static long fields(char *p, char *end, char **out, long max) {
    long n = 0;
    for (; p < end && n < max; p += length(p) + 1) out[n++] = p;
    out[n] = 0;
    return n;
}

/* The command's fields (ARGC, ARGV..., ENVC and ENV... or "-") into argv and envp; 0 or -1. */
static int command(char *p, char *end) {
    long argc = number(p);
    p += length(p) + 1;
    if (argc < 1 || argc >= (long)(sizeof argv / sizeof argv[0]) || fields(p, end, argv, argc) != argc) return -1;
    p = argv[argc - 1] + length(argv[argc - 1]) + 1;
    if (p >= end) return -1;
    if (p[0] == '-' && !p[1]) return 0; /* the environment kept from the last request */
    long envc = number(p);
    p += length(p) + 1;
    if (envc < 0 || envc >= (long)(sizeof envp / sizeof envp[0]) || end - p > (long)sizeof envs) return -1;
    memcpy(envs, p, (size_t)(end - p));
    return fields(envs, envs + (end - p), envp, envc) == envc ? 0 : -1;
}

static long write_zero(const char *path) {
    long fd = fm_open(path, O_WRONLY | O_CLOEXEC), r;
    if (fd < 0) return fd;
    r = fm_write(fd, "0", 1);
    fm_close(fd);
    return r == 1 ? 0 : r < 0 ? r : -EINVAL;
}

/* This process into the trial's cpuset (JOIN) and onto its CPUs (CPUS), which the command inherits; 0 or
   -errno. Its own mask is saved first: joining a cpuset replaces it. */
static long place(const char *cpus, const char *join) {
    long r;
    if (!*cpus && !*join) return 0;
    if ((r = fm_getaffinity(sizeof mask, mask)) < 0) return r;
    if (*join && (r = write_zero(join)) < 0) return r;
    if (!*cpus) return 0;
    memset(want, 0, sizeof want);
    for (const char *p = cpus; *p;) {
        long cpu = 0;
        if (*p < '0' || *p > '9') return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) cpu = cpu * 10 + (*p - '0');
        if (cpu >= 1024 || (*p && *p++ != ',')) return -EINVAL;
        want[cpu / 64] |= 1UL << (cpu % 64);
    }
    return fm_setaffinity(sizeof want, want);
}

static void unplace(const char *cpus, const char *join, const char *leave) {
    if (*join && *leave) write_zero(leave);
    if (*cpus || *join) fm_setaffinity(sizeof mask, mask);
}

/* Issue 39: this process vforks each trial's command on a CPU drawn at random from those the command may use
   (span), and the child (which can only start there) gives itself span back before its exec, where the scheduler
   places the command (on an idle 2-CPU VM: on the other CPU, 604 of 604 trials). Left to the scheduler, this
   process was woken where the last trial's command ended and the command went to the other CPU: on an idle
   machine the start CPU alternated with the trial's number (586 of 603 trials), so a round's first and second
   trials started on two fixed CPUs for a whole run (+5.3% apart for the gzip pipeline). Drawn, it follows the
   draw, not the trial's number. 1 when drawn; 0 (left to the scheduler) with one CPU, or a mask that cannot be
   read or set. */
static int start_cpu(void) {
    long n = 0, k;
    if (fm_getaffinity(sizeof span, span) < 0) return 0;
    for (int cpu = 0; cpu < 1024; cpu++) n += (long)(span[cpu / 64] >> (cpu % 64) & 1);
    if (n < 2) return 0;
    draws ^= draws << 13;
    draws ^= draws >> 7;
    draws ^= draws << 17;
    k = (long)(draws % (unsigned long long)n);
    memset(one, 0, sizeof one);
    for (int cpu = 0; cpu < 1024; cpu++)
        if ((span[cpu / 64] >> (cpu % 64) & 1) && k-- == 0) one[cpu / 64] = 1UL << (cpu % 64);
    return fm_setaffinity(sizeof one, one) == 0;
}

/* The file at PATH, made empty (not O_TRUNC: that costs ext4 a journalled update of an empty file too), as this
   process's descriptor TO; 0 or -errno. */
static long output(const char *path, int to) {
    long fd = fm_create(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), r;
    if (fd < 0) return fd;
    r = fm_lseek(fd, 0, SEEK_END);
    if (r > 0 && (r = fm_ftruncate(fd, 0)) == 0) r = fm_lseek(fd, 0, SEEK_SET);
    if (r >= 0) r = fm_dup2(fd, to);
    fm_close(fd);
    return r < 0 ? r : 0;
}

/* The trial's stdout and stderr as this process's 1 and 2 (its stdin is /dev/null, as between trials); 0 or
   -errno. */
static long outputs(const char *out, const char *err) {
    long r = output(out, 1);
    return r ? r : output(err, 2);
}

/* vfork in a frame of its own, what the child needs in statics: it runs below this frame and never returns. */
static long __attribute__((noinline)) spawn(void) {
    long pid = fm_vfork();
    if (pid == 0) {
        if (drawn) fm_setaffinity(sizeof span, span);
        fm_setsid();
        exec_errno = start(argv, envp);
        fm_exit(127);
    }
    return pid;
}

/* The trial's start record (PIDS_FD), the wait, the placement undone, its answer; 0 or -1 (a socket lost). */
static int answer(long pid, char *const f[4]) {
    struct timespec t1;
    struct rusage ru;
    int status = 0;
    fm_monotonic(&t1);
    long long started[3] = {PID_MAGIC, pid, (long long)t1.tv_sec * 1000000000LL + t1.tv_nsec};
    if (say(pids, (const char *)started, sizeof started) != 0) return -1;
    memset(&ru, 0, sizeof ru);
    long r;
    while (pid > 0 && (r = fm_wait4(pid, &status, &ru)) < 0)
        if (r != -EINTR) return -1;
    fm_monotonic(&t1);
    long long left = pid > 0 && fm_kill(-pid, 0) != -ESRCH; /* EPERM: a process is there */
    if (drawn) fm_setaffinity(sizeof span, span);
    unplace(f[1], f[2], f[3]); /* before the answer: fairmark may remove the cpuset once it has it */
    long long done[15] = {ANSWER_MAGIC, status, exec_errno,
                          (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec),
                          (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
                          (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec, ru.ru_maxrss,
                          ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw, pid, left, fm_size(1), fm_size(2)};
    return say(sock, (const char *)done, sizeof done);
}

/* One request: 0 answered, -1 malformed or a socket lost. */
static int serve(long len) {
    char *f[8], *end = body + len;
    long pid = -1, r;
    if (fields(body, end, f, 7) < 7 || command(f[6], end) != 0) return -1;
    candidates(argv[0], envp);
    if ((r = outputs(f[4], f[5])) < 0) {
        pid = -2; /* its output files could not be made: nothing started */
    } else if ((r = *f[0] ? fm_chdir(f[0]) : fm_fchdir(home)) >= 0) {
        r = place(f[1], f[2]);
    }
    exec_errno = r < 0 ? (int)-r : 0;
    drawn = !exec_errno && start_cpu();
    fm_monotonic(&t0);
    if (!exec_errno && (pid = spawn()) < 0) {
        exec_errno = (int)-pid;
        pid = -1;
    }
    int done = answer(pid, f);
    fm_dup2(devnull, 1); /* the trial's files are not held until the next one */
    fm_dup2(devnull, 2);
    return done;
}

int main(int argc, char **args) {
    struct timespec now;
    if (argc != 3) return 126;
    fm_monotonic(&now);
    draws = ((unsigned long long)now.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (unsigned long long)now.tv_sec) | 1;
    sock = (int)number(args[1]);
    pids = (int)number(args[2]);
    devnull = (int)fm_open("/dev/null", O_RDWR | O_CLOEXEC);
    home = (int)fm_open(".", O_CLOEXEC);
    if (sock < 0 || pids < 0 || devnull < 0 || home < 0 || fm_cloexec(sock) < 0 || fm_cloexec(pids) < 0) return 126;
    for (int i = 0; i < 3; i++)
        if (fm_dup2(devnull, i) < 0) return 126; /* every trial's stdin */
    for (;;) {
        long len = receive();
        if (len == 0) return 0;
        if (len < 0 || serve(len) != 0) return 126;
    }
}

#ifdef FAIRMARK_NOLIBC
void fm_start(long *sp) {
    fm_exit(main((int)sp[0], (char **)(sp + 1)));
}
#endif
