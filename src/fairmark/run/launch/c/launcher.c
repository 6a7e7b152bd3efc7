/* fairmark's trial launcher (fairmark.run.launch.launcher.launcher builds it): launcher REPORT_FD COMMAND [ARG...]
   vforks COMMAND (searched in PATH as Python's subprocess does: no shell for ENOEXEC), waits for it and
   writes one line to REPORT_FD: "fairmark-launcher 1 STATUS ERRNO WALL_NS USER_US SYS_US MAXRSS_KIB MINFLT
   MAJFLT NVCSW NIVCSW" (ERRNO: why the exec failed, else 0). Exits with the command's status (127: no exec,
   128 + N: killed by signal N). SIGTERM, SIGINT, SIGHUP and SIGQUIT are caught (exec resets them for the
   command) so that a signal to the trial's process group ends the command and the report still comes.
   Built with FAIRMARK_NOLIBC (Linux x86-64) it uses no C library: glibc's start-up alone (its CPU feature
   probe: CPUID, which a virtual machine traps) cost 0.8 ms of CPU per exec on a VM, as much as /bin/true. */
#include "fairmark_launch.h"

static char *put(char *p, long long v) {
    char digits[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do digits[n++] = (char)('0' + u % 10); while (u /= 10);
    *p++ = ' ';
    if (v < 0) *p++ = '-';
    while (n) *p++ = digits[--n];
    return p;
}

/* "fairmark-launcher 1 STATUS ERRNO WALL_NS USER_US SYS_US MAXRSS_KIB MINFLT MAJFLT NVCSW NIVCSW\n" at p (the
   clock from t0 to t1, the command's wait status and rusage); returns the end. */
static char *report_line(char *p, int status, const struct timespec *t0, const struct timespec *t1,
                         const struct rusage *ru) {
    long long values[] = {status, exec_errno,
                          (long long)(t1->tv_sec - t0->tv_sec) * 1000000000LL + (t1->tv_nsec - t0->tv_nsec),
                          (long long)ru->ru_utime.tv_sec * 1000000LL + ru->ru_utime.tv_usec,
                          (long long)ru->ru_stime.tv_sec * 1000000LL + ru->ru_stime.tv_usec, ru->ru_maxrss,
                          ru->ru_minflt, ru->ru_majflt, ru->ru_nvcsw, ru->ru_nivcsw};
    for (const char *c = "fairmark-launcher 1"; *c; c++) *p++ = *c;
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) p = put(p, values[i]);
    *p++ = '\n';
    return p;
}

#ifdef FAIRMARK_NOLIBC
struct ksigaction { void (*handler)(int); unsigned long flags; void (*restorer)(void); unsigned long mask; };
#define SIGHUP 1
#define SIGINT 2
#define SIGQUIT 3
#define SIGTERM 15
#define WIFEXITED(s) (((s) & 0x7f) == 0)
#define WEXITSTATUS(s) (((s) >> 8) & 0xff)
#define WTERMSIG(s) ((s) & 0x7f)
void fm_restorer(void);
__asm__(".text\n.globl fm_restorer\nfm_restorer:\n mov $15, %eax\n syscall\n");
static void caught(int sig) { (void)sig; }
static void fm_catch(int sig) {
    struct ksigaction act = {caught, 0x04000000 | 0x10000000, fm_restorer, 0}, old; /* RESTORER | RESTART */
    if (sc(13, sig, 0, (long)&old, 8) == 0 && old.handler != (void (*)(int))1) sc(13, sig, (long)&act, 0, 8);
}
#else
#include <signal.h>
static void caught(int sig) { (void)sig; }
static void fm_catch(int sig) {
    struct sigaction sa, old;
    sa.sa_handler = caught;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sig, &sa, NULL);
}
#endif

int main(int argc, char **argv, char **envp) {
    static const char usage[] = "usage: fairmark-launcher REPORT_FD COMMAND [ARG...]\n";
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    struct timespec t1;
    struct rusage ru;
    static int report;  /* static: nothing of the parent's is in the frame the vfork child runs on */
    static struct timespec t0;
    int status = 0;
    char line[512];
    if (argc < 3) {
        fm_write(2, usage, sizeof usage - 1);
        return 126;
    }
    for (const char *c = argv[1]; *c >= '0' && *c <= '9'; c++) report = report * 10 + (*c - '0');
    if (fm_cloexec(report) < 0) return 126;
    candidates(argv[2], envp);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) fm_catch(sigs[i]);
    fm_monotonic(&t0);
    long pid = fm_vfork();
    if (pid < 0) return 126;
    if (pid == 0) {
        exec_errno = start(argv + 2, envp);
        fm_exit(127);
    }
    long r;
    while ((r = fm_wait4(pid, &status, &ru)) < 0)
        if (r != -EINTR) return 126;
    fm_monotonic(&t1);
    char *p = report_line(line, status, &t0, &t1, &ru);
    while (fm_write(report, line, p - line) == -EINTR) {
    }
    if (exec_errno) return 127;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#ifdef FAIRMARK_NOLIBC
void fm_start(long *sp) {
    int argc = (int)sp[0];
    char **argv = (char **)(sp + 1);
    fm_exit(main(argc, argv, argv + argc + 1));
}
#endif
