/* What fairmark's trial launcher (launcher.c) and its launch server (launch_server.c) share: the system calls
   without a C library (FAIRMARK_NOLIBC, Linux x86-64) or through it, vfork, and the PATH search made before
   vfork (the child only execs, as Python's subprocess searches: no shell for ENOEXEC). Each program is built
   as one file, this header inlined where it is included (fairmark.run.launch.launcher.c_program). */
#ifndef FAIRMARK_LAUNCH_H
#define FAIRMARK_LAUNCH_H
#ifdef FAIRMARK_NOLIBC
typedef unsigned long size_t;
struct timespec { long tv_sec, tv_nsec; };
struct timeval { long tv_sec, tv_usec; };
struct rusage {
    struct timeval ru_utime, ru_stime;
    long ru_maxrss, ru_ixrss, ru_idrss, ru_isrss, ru_minflt, ru_majflt, ru_nswap, ru_inblock, ru_oublock,
        ru_msgsnd, ru_msgrcv, ru_nsignals, ru_nvcsw, ru_nivcsw;
};
#define EINTR 4
#define ENOENT 2
#define ENOTDIR 20
static long sc(long n, long a, long b, long c, long d) {
    register long r10 __asm__("r10") = d;
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}
/* vfork as glibc does it: the return address is kept in a register, so the child's use of the stack cannot
   overwrite the one the parent returns through */
long fm_vfork(void);
__asm__(".text\n.globl fm_vfork\nfm_vfork:\n pop %rdi\n mov $58, %eax\n syscall\n push %rdi\n ret\n"
        ".globl _start\n_start:\n xor %ebp, %ebp\n mov %rsp, %rdi\n and $-16, %rsp\n call fm_start\n hlt\n");
void *memset(void *d, int c, size_t n) {
    unsigned char *p = d;
    while (n--) *p++ = (unsigned char)c;
    return d;
}
void *memcpy(void *d, const void *s, size_t n) {
    unsigned char *p = d;
    const unsigned char *q = s;
    while (n--) *p++ = *q++;
    return d;
}
#define fm_write(fd, b, n) sc(1, fd, (long)(b), n, 0)
#define fm_exit(code) sc(60, code, 0, 0, 0)
#define fm_execve(p, a, e) sc(59, (long)(p), (long)(a), (long)(e), 0)
#define fm_wait4(pid, st, ru) sc(61, pid, (long)(st), 0, (long)(ru))
#define fm_cloexec(fd) sc(72, fd, 2, 1, 0)
#define fm_monotonic(ts) sc(228, 1, (long)(ts), 0, 0)
#else
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static long fm_ret(long r) { return r < 0 ? -errno : r; }
#define fm_write(fd, b, n) fm_ret(write(fd, b, n))
#define fm_exit(code) _exit(code)
#define fm_execve(p, a, e) fm_ret(execve(p, a, e))
#define fm_wait4(pid, st, ru) fm_ret(wait4(pid, st, 0, ru))
#define fm_cloexec(fd) fm_ret(fcntl(fd, F_SETFD, FD_CLOEXEC))
#define fm_monotonic(ts) clock_gettime(CLOCK_MONOTONIC, ts)
#define fm_vfork vfork
#endif

static volatile int exec_errno;
static char names[65536]; /* the command's candidate paths, made before vfork: the child only execs */
static char *paths[1024];

static size_t length(const char *s) {
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

static void candidates(const char *file, char **envp) {
    const char *path = "/bin:/usr/bin", *p;
    char *out = names;
    size_t k = 0, flen = length(file);
    for (char **e = envp; *e; e++)
        if ((*e)[0] == 'P' && (*e)[1] == 'A' && (*e)[2] == 'T' && (*e)[3] == 'H' && (*e)[4] == '=') path = *e + 5;
    for (p = path; k + 1 < sizeof paths / sizeof paths[0];) {
        const char *end = p;
        while (*end && *end != ':') end++;
        size_t dlen = (size_t)(end - p);
        if (dlen == 0) {
            paths[k++] = (char *)file; /* an empty entry is the current directory */
        } else if ((size_t)(out - names) + dlen + flen + 2 <= sizeof names) {
            paths[k++] = out;
            for (size_t i = 0; i < dlen; i++) *out++ = p[i];
            *out++ = '/';
            for (size_t i = 0; i <= flen; i++) *out++ = file[i];
        }
        if (!*end) break;
        p = end + 1;
    }
    paths[k] = 0;
}

/* In the vfork child: exec the command (its path, or each candidate); the errno of the exec that failed. */
static int start(char *const argv[], char **envp) {
    long first = 0, last = -ENOENT;
    const char *file = argv[0];
    for (const char *c = file; *c; c++)
        if (*c == '/') return (int)-fm_execve(file, argv, envp);
    for (char **p = paths; *p; p++) {
        last = fm_execve(*p, argv, envp);
        if (last != -ENOENT && last != -ENOTDIR && !first) first = last;
    }
    return (int)-(first ? first : last);
}

#endif /* FAIRMARK_LAUNCH_H */
