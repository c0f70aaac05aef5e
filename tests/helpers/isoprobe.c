/* isoprobe: the isolation suite's hands inside a sandbox
 * (tests/integration/isolation.py). Static, so it runs in any image (busybox,
 * host) and under any backend (native, gVisor); the test uploads it through
 * execd. Each command makes one attempt and prints one line the test
 * compares exactly: "errno=N" (0 when the call worked), or a value.
 *
 *   isoprobe sys NAME            one privileged system call (see calls[])
 *   isoprobe connect IP PORT MS  TCP connect: "connected", "errno=N" or "timeout"
 *   isoprobe kill PID            kill(PID, 0): "errno=N"
 *   isoprobe read PATH           "bytes=N" or "errno=N"
 *   isoprobe mem PID             reads PID's memory (/proc/PID/mem at its first
 *                                writable mapping): "bytes=N" or "errno=N"
 *   isoprobe write PATH TEXT     "errno=N"
 *   isoprobe mknod PATH          a block device 8:0: "mknod=N open=N"
 *   isoprobe fork N              forks up to N sleeping children: "forked=K"
 *   isoprobe alloc MIB           touches MIB MiB: "allocated" (or is killed)
 *   isoprobe fill PATH MIB       writes up to MIB MiB: "errno=N after=K"
 *   isoprobe ids                 "uid=R euid=E"
 *   isoprobe hold MARKER         prints ids, then sleeps (the host finds it by MARKER)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x80
#endif

/* A decimal argument; anything else is a usage error (exit 2), never 0. */
static long number(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < 0) {
        fprintf(stderr, "isoprobe: '%s' is not a number\n", s);
        exit(2);
    }
    return v;
}

/* Every call gets zeroed argument buffers: the question is only whether the
 * kernel (or the Sentry) lets the call through at all. */
static long call(const char *name)
{
    static char buf[4096];
    memset(buf, 0, sizeof buf);
    if (strcmp(name, "mount") == 0) {
        mkdir("/tmp/isoprobe-mnt", 0700);
        return mount("none", "/tmp/isoprobe-mnt", "tmpfs", 0, NULL);
    }
    if (strcmp(name, "umount-root") == 0)
        return umount2("/", MNT_DETACH);
    if (strcmp(name, "ptrace1") == 0)
        return ptrace(PTRACE_ATTACH, 1, 0, 0);
    if (strcmp(name, "keyctl") == 0) /* KEYCTL_GET_KEYRING_ID of the session keyring */
        return syscall(SYS_keyctl, 0, -3, 1, 0, 0);
    if (strcmp(name, "add_key") == 0)
        return syscall(SYS_add_key, "user", "isoprobe", "x", 1, -3);
    if (strcmp(name, "bpf") == 0) /* BPF_MAP_CREATE */
        return syscall(SYS_bpf, 0, buf, 72);
    if (strcmp(name, "perf_event_open") == 0) {
        buf[4] = 112; /* attr.size = PERF_ATTR_SIZE_VER1; type 0 (hardware), config 0 (cycles) */
        return syscall(SYS_perf_event_open, buf, 0, -1, -1, 0);
    }
    if (strcmp(name, "userfaultfd") == 0)
        return syscall(SYS_userfaultfd, O_CLOEXEC);
    if (strcmp(name, "io_uring_setup") == 0)
        return syscall(SYS_io_uring_setup, 4, buf);
    if (strcmp(name, "open_by_handle_at") == 0) {
        buf[0] = 8; /* handle_bytes */
        return syscall(SYS_open_by_handle_at, AT_FDCWD, buf, O_RDONLY);
    }
    if (strcmp(name, "raw_socket") == 0)
        return socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
    if (strcmp(name, "packet_socket") == 0)
        return socket(AF_PACKET, SOCK_RAW, htons(3)); /* ETH_P_ALL */
    if (strcmp(name, "init_module") == 0)
        return syscall(SYS_init_module, buf, 16, "");
    if (strcmp(name, "clock_settime") == 0) {
        struct timespec ts = {.tv_sec = 946684800}; /* 2000-01-01 */
        return clock_settime(CLOCK_REALTIME, &ts);
    }
    if (strcmp(name, "reboot") == 0) /* LINUX_REBOOT_CMD_CAD_OFF: harmless if it worked */
        return syscall(SYS_reboot, 0xfee1dead, 672274793, 0, 0);
    if (strcmp(name, "swapon") == 0)
        return syscall(SYS_swapon, "/tmp", 0);
    if (strcmp(name, "setns-net") == 0) { /* re-join its own: needs CAP_SYS_ADMIN */
        int fd = open("/proc/self/ns/net", O_RDONLY);
        return fd < 0 ? fd : setns(fd, CLONE_NEWNET);
    }
    if (strcmp(name, "sethostname") == 0)
        return sethostname("isoprobe-evil", 13);
    errno = ENOSYS;
    fprintf(stderr, "isoprobe: unknown call %s\n", name);
    exit(2);
}

static const struct {
    const char *name;
    int flag;
} namespaces[] = {
    {"user", CLONE_NEWUSER},     {"mnt", CLONE_NEWNS},    {"net", CLONE_NEWNET},
    {"pid", CLONE_NEWPID},       {"ipc", CLONE_NEWIPC},   {"uts", CLONE_NEWUTS},
    {"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME},
};

static int do_sys(const char *name)
{
    long r;
    if (strncmp(name, "unshare-", 8) == 0) {
        size_t i;
        for (i = 0; i < sizeof namespaces / sizeof namespaces[0]; i++)
            if (strcmp(name + 8, namespaces[i].name) == 0)
                break;
        if (i == sizeof namespaces / sizeof namespaces[0]) {
            fprintf(stderr, "isoprobe: unknown namespace %s\n", name + 8);
            return 2;
        }
        r = unshare(namespaces[i].flag);
    } else {
        r = call(name);
    }
    printf("errno=%d\n", r < 0 ? errno : 0);
    return 0;
}

static int do_connect(const char *ip, const char *port, const char *ms)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)number(port))};
    if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
        fprintf(stderr, "isoprobe: bad address %s\n", ip);
        return 2;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        printf("errno=%d\n", errno);
        return 0;
    }
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
        printf("connected\n");
        return 0;
    }
    if (errno != EINPROGRESS) {
        printf("errno=%d\n", errno);
        return 0;
    }
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    if (poll(&p, 1, (int)number(ms)) == 0) {
        printf("timeout\n");
        return 0;
    }
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err)
        printf("errno=%d\n", err);
    else
        printf("connected\n");
    return 0;
}

static int do_read(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        printf("errno=%d\n", errno);
        return 0;
    }
    char buf[65536];
    long total = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        total += n;
    if (n < 0)
        printf("errno=%d\n", errno);
    else
        printf("bytes=%ld\n", total);
    return 0;
}

static int do_mem(const char *pid)
{
    char path[64], line[512];
    unsigned long lo = 0, hi = 0;
    char perms[8] = "";
    snprintf(path, sizeof path, "/proc/%s/maps", pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("errno=%d\n", errno);
        return 0;
    }
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[1] == 'w')
            break;
    fclose(f);
    if (perms[1] != 'w') {
        printf("no writable mapping\n");
        return 0;
    }
    snprintf(path, sizeof path, "/proc/%s/mem", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        printf("errno=%d\n", errno);
        return 0;
    }
    char buf[4096];
    ssize_t n = pread(fd, buf, sizeof buf, (off_t)lo);
    if (n < 0)
        printf("errno=%d\n", errno);
    else
        printf("bytes=%zd\n", n);
    close(fd);
    return 0;
}

static int do_write(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, text, strlen(text)) < 0) {
        printf("errno=%d\n", errno);
        return 0;
    }
    printf("errno=%d\n", close(fd) < 0 ? errno : 0);
    return 0;
}

static int do_mknod(const char *path)
{
    int mk = mknod(path, S_IFBLK | 0600, makedev(8, 0)) < 0 ? errno : 0;
    int fd = open(path, O_RDONLY);
    int op = fd < 0 ? errno : 0;
    printf("mknod=%d open=%d\n", mk, op);
    return 0;
}

static int do_fork(int n)
{
    pid_t kids[4096];
    int k = 0;
    if (n > 4096)
        n = 4096;
    while (k < n) {
        pid_t p = fork();
        if (p < 0)
            break;
        if (p == 0) {
            pause();
            _exit(0);
        }
        kids[k++] = p;
    }
    for (int i = 0; i < k; i++)
        kill(kids[i], SIGKILL);
    for (int i = 0; i < k; i++)
        waitpid(kids[i], NULL, 0);
    printf("forked=%d\n", k);
    return 0;
}

static int do_alloc(long mib)
{
    size_t len = (size_t)mib << 20;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        printf("errno=%d\n", errno);
        return 0;
    }
    for (size_t i = 0; i < len; i += 4096)
        p[i] = 1;
    printf("allocated\n");
    return 0;
}

static int do_fill(const char *path, long mib)
{
    static char buf[1 << 20];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        printf("errno=%d after=0\n", errno);
        return 0;
    }
    memset(buf, 'x', sizeof buf);
    long k = 0;
    int err = 0;
    for (; k < mib; k++) {
        size_t off = 0;
        while (off < sizeof buf) {
            ssize_t w = write(fd, buf + off, sizeof buf - off);
            if (w < 0) {
                err = errno;
                break;
            }
            off += (size_t)w;
        }
        if (err)
            break;
    }
    if (!err && fsync(fd) < 0)
        err = errno;
    close(fd);
    printf("errno=%d after=%ld\n", err, k);
    return 0;
}

static void print_ids(void)
{
    printf("uid=%d euid=%d\n", (int)getuid(), (int)geteuid());
    fflush(stdout);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *cmd = argc > 1 ? argv[1] : "";
    if (strcmp(cmd, "sys") == 0 && argc == 3)
        return do_sys(argv[2]);
    if (strcmp(cmd, "connect") == 0 && argc == 5)
        return do_connect(argv[2], argv[3], argv[4]);
    if (strcmp(cmd, "read") == 0 && argc == 3)
        return do_read(argv[2]);
    if (strcmp(cmd, "kill") == 0 && argc == 3) {
        printf("errno=%d\n", kill((pid_t)number(argv[2]), 0) < 0 ? errno : 0);
        return 0;
    }
    if (strcmp(cmd, "mem") == 0 && argc == 3)
        return do_mem(argv[2]);
    if (strcmp(cmd, "write") == 0 && argc == 4)
        return do_write(argv[2], argv[3]);
    if (strcmp(cmd, "mknod") == 0 && argc == 3)
        return do_mknod(argv[2]);
    if (strcmp(cmd, "fork") == 0 && argc == 3)
        return do_fork((int)number(argv[2]));
    if (strcmp(cmd, "alloc") == 0 && argc == 3)
        return do_alloc(number(argv[2]));
    if (strcmp(cmd, "fill") == 0 && argc == 4)
        return do_fill(argv[2], number(argv[3]));
    if (strcmp(cmd, "ids") == 0 && argc == 2) {
        print_ids();
        return 0;
    }
    if (strcmp(cmd, "hold") == 0 && argc == 3) {
        print_ids();
        for (;;)
            pause();
    }
    fprintf(stderr,
            "usage: isoprobe sys|connect|kill|read|mem|write|mknod|fork|alloc|fill|ids|hold ...\n");
    return 2;
}
