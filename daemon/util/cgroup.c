/* SPDX-License-Identifier: MIT */
/*
 * cgroup v2 for the daemon's runs. A cgroup is a folder of the cgroup2 file system; everything
 * here is openat(), read and write on its files, relative to descriptors opened once, so that a
 * path is resolved once and a call from any thread is a few syscalls.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"

struct cgroup_tree {
        int refs;
        int fd; /* the subtree's folder, O_RDONLY so that it can be listed */
};

struct cgroup_run {
        int refs;
        struct cgroup_tree *tree;
        char *name;
        int fd;        /* O_PATH|O_DIRECTORY: for clone3() and openat() */
        int procs_fd;  /* cgroup.procs, O_WRONLY */
        int events_fd; /* cgroup.events, O_RDONLY */
};

static const struct {
        const char *name;
        unsigned bit;
} controllers[] = {
    {"memory", CGROUP_CTRL_MEMORY},
    {"pids", CGROUP_CTRL_PIDS},
    {"cpu", CGROUP_CTRL_CPU},
};

static int read_all_fd(int fd, char **ret_text)
{
        size_t len = 0, size = 1024;
        char *buf = malloc(size), *bigger;
        ssize_t n;

        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (size - len < 2) {
                        bigger = realloc(buf, size * 2);
                        if (!bigger) {
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = bigger;
                        size *= 2;
                }
                n = read(fd, buf + len, size - len - 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        free(buf);
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        *ret_text = buf;
        return 0;
}

static int read_file_at(int dir, const char *file, char **ret_text)
{
        int fd, r;

        fd = openat(dir, file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        r = read_all_fd(fd, ret_text);
        close(fd);
        return r;
}

/* One write of the whole string: a cgroup file takes a value per write(). */
static int write_fd(int fd, const char *text)
{
        size_t len = strlen(text);
        ssize_t n;

        do
                n = write(fd, text, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return (size_t)n == len ? 0 : -EIO;
}

static int write_file_at(int dir, const char *file, const char *text)
{
        int fd, r;

        fd = openat(dir, file, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        r = write_fd(fd, text);
        close(fd);
        return r;
}

/* The value of "key value" lines (cpu.stat, memory.events, cgroup.events); -ENOENT if absent. */
static int keyed_value(const char *text, const char *key, uint64_t *ret_value)
{
        size_t klen = strlen(key);
        const char *line;
        unsigned long long v;
        char *end;

        for (line = text; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                if (strncmp(line, key, klen) != 0 || line[klen] != ' ')
                        continue;
                errno = 0;
                v = strtoull(line + klen + 1, &end, 10);
                if (errno != 0 || end == line + klen + 1 || (*end != '\n' && *end != '\0'))
                        return -EBADMSG;
                *ret_value = v;
                return 0;
        }
        return -ENOENT;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
        char *out = s;

        for (; *s; s++) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
                    s[3] >= '0' && s[3] <= '7') {
                        *out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
                        s += 3;
                } else
                        *out++ = *s;
        }
        *out = '\0';
}

int cgroup_find_mount(char **ret_path)
{
        char *text, *line, *next, *sep, *field, *save = NULL, *path;
        int i, r;

        r = read_file_at(AT_FDCWD, "/proc/self/mountinfo", &text);
        if (r < 0)
                return r;
        r = -ENOMEDIUM;
        for (line = text; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                /* "id parent maj:min root mountpoint options [optional...] - fstype source" */
                sep = strstr(line, " - ");
                if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
                        continue;
                *sep = '\0';
                field = strtok_r(line, " ", &save);
                for (i = 0; field && i < 4; i++)
                        field = strtok_r(NULL, " ", &save);
                if (!field)
                        continue;
                unescape_octal(field);
                path = strdup(field);
                if (!path) {
                        r = -ENOMEM;
                        break;
                }
                *ret_path = path;
                r = 0;
                break;
        }
        free(text);
        return r;
}

int cgroup_pid_path(pid_t pid, char **ret_path)
{
        char file[64], *text, *line, *next, *path;
        int r;

        if (pid < 0)
                return -EINVAL;
        if (pid == 0)
                snprintf(file, sizeof(file), "/proc/self/cgroup");
        else
                snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
        r = read_file_at(AT_FDCWD, file, &text);
        if (r < 0)
                return r;
        r = -ENOMEDIUM;
        for (line = text; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (strncmp(line, "0::", 3) != 0 || line[3] != '/')
                        continue;
                path = strdup(line + 3);
                r = path ? 0 : -ENOMEM;
                if (path)
                        *ret_path = path;
                break;
        }
        free(text);
        return r;
}

unsigned cgroup_controllers_parse(const char *line)
{
        unsigned mask = 0;
        size_t i, len;

        while (line && *line) {
                while (isspace((unsigned char)*line))
                        line++;
                len = strcspn(line, " \t\n");
                for (i = 0; i < sizeof(controllers) / sizeof(controllers[0]); i++)
                        if (len == strlen(controllers[i].name) &&
                            strncmp(line, controllers[i].name, len) == 0)
                                mask |= controllers[i].bit;
                line += len;
        }
        return mask;
}

static int controllers_at(int dir, const char *file, unsigned *ret_mask)
{
        char *text;
        int r;

        r = read_file_at(dir, file, &text);
        if (r < 0)
                return r;
        *ret_mask = cgroup_controllers_parse(text);
        free(text);
        return 0;
}

int cgroup_tree_open(const char *path, bool create, struct cgroup_tree **ret_tree)
{
        struct cgroup_tree *t;
        struct statfs sfs;
        int fd;

        if (!path || path[0] != '/')
                return -EINVAL;
        if (create && mkdir(path, 0755) < 0 && errno != EEXIST)
                return -errno;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstatfs(fd, &sfs) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        if (sfs.f_type != CGROUP2_SUPER_MAGIC) {
                close(fd);
                return -ENOMEDIUM;
        }
        /* Delegation is ownership of the folder and of these files (systemd chowns them). */
        if (faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) < 0 ||
            faccessat(fd, "cgroup.procs", W_OK, AT_EACCESS) < 0 ||
            faccessat(fd, "cgroup.subtree_control", W_OK, AT_EACCESS) < 0) {
                int r = errno == EROFS || errno == EPERM ? -EACCES : -errno;

                close(fd);
                return r;
        }
        t = calloc(1, sizeof(*t));
        if (!t) {
                close(fd);
                return -ENOMEM;
        }
        t->refs = 1;
        t->fd = fd;
        *ret_tree = t;
        return 0;
}

/* Moves the calling process, all its threads, into <subtree>/CGROUP_TREE_LEAF (made if needed),
 * so that the subtree root holds no process and controllers can be enabled in it. */
static int cgroup_tree_enter(struct cgroup_tree *t)
{
        if (mkdirat(t->fd, CGROUP_TREE_LEAF, 0755) < 0 && errno != EEXIST)
                return -errno;
        /* "0" is the writer: its whole thread group moves. */
        return write_file_at(t->fd, CGROUP_TREE_LEAF "/cgroup.procs", "0");
}

int cgroup_tree_enable(struct cgroup_tree *t, unsigned want, unsigned *ret_enabled)
{
        unsigned available, enabled;
        char change[32];
        size_t i;
        int r, first = 0;

        r = controllers_at(t->fd, "cgroup.controllers", &available);
        if (r < 0)
                return r;
        /* One at a time, as one write fails whole: a controller that fails leaves the others. */
        for (i = 0; i < sizeof(controllers) / sizeof(controllers[0]); i++) {
                if (!(want & available & controllers[i].bit))
                        continue;
                snprintf(change, sizeof(change), "+%s", controllers[i].name);
                r = write_file_at(t->fd, "cgroup.subtree_control", change);
                if (r < 0 && first == 0)
                        first = r;
        }
        if (first < 0)
                return first;
        r = controllers_at(t->fd, "cgroup.subtree_control", &enabled);
        if (r < 0)
                return r;
        if (ret_enabled)
                *ret_enabled = enabled;
        return 0;
}

int cgroup_tree_setup(const char *path, unsigned want, struct cgroup_tree **ret_tree,
                      unsigned *ret_enabled)
{
        struct cgroup_tree *t;
        unsigned enabled;
        int r;

        r = cgroup_tree_open(path, true, &t);
        if (r < 0)
                return r;
        r = cgroup_tree_enter(t);
        if (r >= 0)
                r = cgroup_tree_enable(t, want, &enabled);
        if (r < 0) {
                cgroup_tree_unref(t);
                return r;
        }
        *ret_tree = t;
        if (ret_enabled)
                *ret_enabled = enabled;
        return 0;
}

static void names_free(char **names, size_t n)
{
        size_t i;

        for (i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

int cgroup_tree_list_runs(struct cgroup_tree *t, char ***ret_names)
{
        char **names = NULL, **bigger;
        size_t n = 0, size = 0;
        struct dirent *de;
        DIR *d;
        int fd, r = 0;

        fd = openat(t->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                r = -errno;
                close(fd);
                return r;
        }
        for (;;) {
                errno = 0;
                de = readdir(d);
                if (!de) {
                        r = -errno;
                        break;
                }
                if (de->d_type != DT_DIR || !cgroup_name_is_valid(de->d_name))
                        continue;
                if (n + 2 > size) {
                        size = size ? size * 2 : 8;
                        bigger = realloc(names, size * sizeof(*names));
                        if (!bigger) {
                                r = -ENOMEM;
                                break;
                        }
                        names = bigger;
                }
                names[n] = strdup(de->d_name);
                if (!names[n]) {
                        r = -ENOMEM;
                        break;
                }
                n++;
        }
        closedir(d);
        if (r == 0 && !names) {
                names = calloc(1, sizeof(*names));
                if (!names)
                        r = -ENOMEM;
        }
        if (r < 0) {
                names_free(names, n);
                return r;
        }
        names[n] = NULL;
        *ret_names = names;
        return 0;
}

static struct cgroup_tree *cgroup_tree_ref(struct cgroup_tree *t)
{
        if (t)
                __atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
        return t;
}

struct cgroup_tree *cgroup_tree_unref(struct cgroup_tree *t)
{
        if (!t || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) > 0)
                return NULL;
        close(t->fd);
        free(t);
        return NULL;
}

bool cgroup_name_is_valid(const char *name)
{
        size_t len;

        if (!name)
                return false;
        len = strlen(name);
        if (len == 0 || len > NAME_MAX || name[0] == '.' || strcmp(name, CGROUP_TREE_LEAF) == 0)
                return false;
        return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                            "._@:+-") == len;
}

static int run_new(struct cgroup_tree *t, const char *name, struct cgroup_run **ret_run)
{
        struct cgroup_run *run;
        int r;

        run = calloc(1, sizeof(*run));
        if (!run)
                return -ENOMEM;
        run->refs = 1;
        run->fd = run->procs_fd = run->events_fd = -1;
        run->name = strdup(name);
        if (!run->name) {
                r = -ENOMEM;
                goto fail;
        }
        run->fd = openat(t->fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (run->fd < 0) {
                r = -errno;
                goto fail;
        }
        run->procs_fd = openat(run->fd, "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (run->procs_fd < 0) {
                r = -errno;
                goto fail;
        }
        run->events_fd = openat(run->fd, "cgroup.events", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (run->events_fd < 0) {
                r = -errno;
                goto fail;
        }
        run->tree = cgroup_tree_ref(t);
        *ret_run = run;
        return 0;
fail:
        cgroup_run_unref(run);
        return r;
}

int cgroup_run_create(struct cgroup_tree *t, const char *name, struct cgroup_run **ret_run)
{
        int r;

        if (!cgroup_name_is_valid(name))
                return -EINVAL;
        if (mkdirat(t->fd, name, 0755) < 0)
                return -errno;
        r = run_new(t, name, ret_run);
        if (r < 0)
                (void)unlinkat(t->fd, name, AT_REMOVEDIR);
        return r;
}

int cgroup_run_open(struct cgroup_tree *t, const char *name, struct cgroup_run **ret_run)
{
        if (!cgroup_name_is_valid(name))
                return -EINVAL;
        return run_new(t, name, ret_run);
}

struct cgroup_run *cgroup_run_ref(struct cgroup_run *run)
{
        if (run)
                __atomic_add_fetch(&run->refs, 1, __ATOMIC_RELAXED);
        return run;
}

struct cgroup_run *cgroup_run_unref(struct cgroup_run *run)
{
        if (!run || __atomic_sub_fetch(&run->refs, 1, __ATOMIC_ACQ_REL) > 0)
                return NULL;
        if (run->events_fd >= 0)
                close(run->events_fd);
        if (run->procs_fd >= 0)
                close(run->procs_fd);
        if (run->fd >= 0)
                close(run->fd);
        cgroup_tree_unref(run->tree);
        free(run->name);
        free(run);
        return NULL;
}

int cgroup_run_fd(const struct cgroup_run *run)
{
        return run->fd;
}

int cgroup_run_procs_fd(const struct cgroup_run *run)
{
        return run->procs_fd;
}

/* A limit file is there exactly when its controller is enabled in the parent. */
static int set_limit(struct cgroup_run *run, const char *file, uint64_t value)
{
        char text[32];
        int r;

        if (value == CGROUP_LIMIT_MAX)
                snprintf(text, sizeof(text), "max");
        else
                snprintf(text, sizeof(text), "%" PRIu64, value);
        r = write_file_at(run->fd, file, text);
        return r == -ENOENT ? -EOPNOTSUPP : r;
}

int cgroup_run_set_memory_max(struct cgroup_run *run, uint64_t bytes)
{
        return set_limit(run, "memory.max", bytes);
}

int cgroup_run_set_pids_max(struct cgroup_run *run, uint64_t pids)
{
        return set_limit(run, "pids.max", pids);
}

int cgroup_run_set_cpu_weight(struct cgroup_run *run, uint64_t weight)
{
        if (weight < 1 || weight > 10000)
                return -EINVAL;
        return set_limit(run, "cpu.weight", weight);
}

int cgroup_run_freeze(struct cgroup_run *run, bool frozen)
{
        int r = write_file_at(run->fd, "cgroup.freeze", frozen ? "1" : "0");

        return r == -ENOENT ? -EOPNOTSUPP : r;
}

static bool pid_seen(const pid_t *pids, size_t n, pid_t pid)
{
        size_t i;

        for (i = 0; i < n; i++)
                if (pids[i] == pid)
                        return true;
        return false;
}

int cgroup_run_signal(struct cgroup_run *run, int sig)
{
        pid_t *seen = NULL, *bigger, pid;
        size_t n = 0, size = 0;
        char *text, *p, *end;
        bool found;
        long v;
        int r = 0;

        do {
                found = false;
                r = read_file_at(run->fd, "cgroup.procs", &text);
                if (r < 0)
                        break;
                for (p = text; *p; p = end) {
                        errno = 0;
                        v = strtol(p, &end, 10);
                        if (end == p || errno != 0 || v <= 0 || v > INT_MAX) {
                                r = -EBADMSG;
                                break;
                        }
                        while (*end == '\n')
                                end++;
                        pid = (pid_t)v;
                        if (pid_seen(seen, n, pid))
                                continue;
                        if (n == size) {
                                size = size ? size * 2 : 16;
                                bigger = realloc(seen, size * sizeof(*seen));
                                if (!bigger) {
                                        r = -ENOMEM;
                                        break;
                                }
                                seen = bigger;
                        }
                        seen[n++] = pid;
                        found = true;
                        if (kill(pid, sig) < 0 && errno != ESRCH) {
                                r = -errno;
                                break;
                        }
                }
                free(text);
        } while (r == 0 && found);
        free(seen);
        if (r < 0)
                return r;
        return n > INT_MAX ? INT_MAX : (int)n;
}

int cgroup_run_kill(struct cgroup_run *run)
{
        int r;

        r = write_file_at(run->fd, "cgroup.kill", "1");
        if (r != -ENOENT)
                return r;
        r = cgroup_run_signal(run, SIGKILL);
        return r < 0 ? r : 0;
}

int cgroup_run_populated(struct cgroup_run *run)
{
        char buf[256];
        uint64_t v;
        ssize_t n;
        int r;

        /* From offset 0 of the same open file: that is what rearms its poll(). */
        do
                n = pread(run->events_fd, buf, sizeof(buf) - 1, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        r = keyed_value(buf, "populated", &v);
        if (r < 0)
                return r == -ENOENT ? -EBADMSG : r;
        return v != 0;
}

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cgroup_run_wait_empty(struct cgroup_run *run, int timeout_ms)
{
        int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms, left;
        struct pollfd pfd = {.fd = run->events_fd, .events = POLLPRI};
        int r;

        for (;;) {
                /* Read, then poll: a change after the read makes the poll return at once. */
                r = cgroup_run_populated(run);
                if (r <= 0)
                        return r;
                left = -1;
                if (deadline >= 0) {
                        left = deadline - now_ms();
                        if (left <= 0)
                                return -ETIMEDOUT;
                }
                r = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
                if (r < 0 && errno != EINTR)
                        return -errno;
        }
}

/* A stat file's key: CGROUP_UNKNOWN when the file or the key is not there. */
static int stat_value(int dir, const char *file, const char *key, uint64_t *ret_value)
{
        char *text;
        int r;

        r = read_file_at(dir, file, &text);
        if (r == -ENOENT) {
                *ret_value = CGROUP_UNKNOWN;
                return 0;
        }
        if (r < 0)
                return r;
        if (key)
                r = keyed_value(text, key, ret_value);
        else {
                char *end;

                errno = 0;
                *ret_value = strtoull(text, &end, 10);
                r = errno != 0 || end == text ? -EBADMSG : 0;
        }
        free(text);
        if (r == -ENOENT) {
                *ret_value = CGROUP_UNKNOWN;
                r = 0;
        }
        return r;
}

int cgroup_run_stats(struct cgroup_run *run, struct cgroup_stats *ret_stats)
{
        struct cgroup_stats st = {.cpu_usec = CGROUP_UNKNOWN,
                                  .user_usec = CGROUP_UNKNOWN,
                                  .system_usec = CGROUP_UNKNOWN};
        char *cpu;
        int r;

        /* Missing files and keys mean unknown, unless the whole cgroup is gone. */
        r = read_file_at(run->fd, "cpu.stat", &cpu);
        if (r == -ENOENT && faccessat(run->fd, "cgroup.procs", F_OK, 0) < 0)
                return -errno;
        if (r < 0 && r != -ENOENT)
                return r;
        if (r >= 0) {
                const char *keys[] = {"usage_usec", "user_usec", "system_usec"};
                uint64_t *values[] = {&st.cpu_usec, &st.user_usec, &st.system_usec};

                for (int i = 0; i < 3 && (r >= 0 || r == -ENOENT); i++)
                        r = keyed_value(cpu, keys[i], values[i]);
                free(cpu);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        r = stat_value(run->fd, "memory.peak", NULL, &st.memory_peak);
        if (r >= 0)
                r = stat_value(run->fd, "memory.events", "oom_kill", &st.oom_kills);
        if (r < 0)
                return r;
        *ret_stats = st;
        return 0;
}

/* Depth first: the kernel removes an empty cgroup with its files, but not one with children;
 * one without children (a run's, nearly always) goes at the first try. */
static int remove_at(int parent, const char *name)
{
        struct dirent *de;
        DIR *d;
        int fd, r = 0;

        if (unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
                return 0;
        if (errno != ENOTEMPTY && errno != EBUSY)
                return -errno;
        fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        d = fdopendir(fd);
        if (!d) {
                r = -errno;
                close(fd);
                return r;
        }
        while (r == 0) {
                errno = 0;
                de = readdir(d);
                if (!de) {
                        r = -errno;
                        break;
                }
                if (de->d_type == DT_DIR && strcmp(de->d_name, ".") != 0 &&
                    strcmp(de->d_name, "..") != 0)
                        r = remove_at(dirfd(d), de->d_name);
        }
        closedir(d);
        if (r < 0)
                return r;
        if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int cgroup_run_remove(struct cgroup_run *run)
{
        return remove_at(run->tree->fd, run->name);
}
