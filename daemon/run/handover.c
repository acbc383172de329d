/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "run/handover.h"

void run_handover_free(struct run_handover *h)
{
        while (h) {
                struct run_handover *next = h->next;

                free(h);
                h = next;
        }
}

static void add_int(json_object *o, const char *name, int64_t v)
{
        json_object_object_add(o, name, json_object_new_int64(v));
}

static void add_double(json_object *o, const char *name, double v)
{
        json_object_object_add(o, name, json_object_new_double(v));
}

json_object *run_handover_to_json(const struct run_handover *list)
{
        json_object *o = json_object_new_object(), *runs = json_object_new_array();

        if (!o || !runs) {
                json_object_put(o);
                json_object_put(runs);
                return NULL;
        }
        json_object_object_add(o, "runs", runs);
        for (const struct run_handover *h = list; h; h = h->next) {
                json_object *r = json_object_new_object();

                if (!r) {
                        json_object_put(o);
                        return NULL;
                }
                add_int(r, "id", h->id);
                add_int(r, "run", h->run);
                add_int(r, "pid", h->pid);
                add_int(r, "out_fd", h->out_fd);
                add_int(r, "log_fd", h->log_fd);
                json_object_object_add(r, "cgroup", json_object_new_boolean(h->cgroup));
                add_double(r, "deadline", h->deadline);
                add_double(r, "started", h->started);
                add_int(r, "logged", h->logged);
                add_int(r, "log_size", h->log_size);
                json_object_object_add(r, "cut", json_object_new_boolean(h->cut));
                json_object_object_add(r, "suspended", json_object_new_boolean(h->suspended));
                add_double(r, "since", h->since);
                add_double(r, "total", h->total);
                json_object_array_add(runs, r);
        }
        return o;
}

/* A member of the type it must have; NULL when it has not. */
static json_object *member(json_object *o, const char *name, json_type type)
{
        json_object *v;

        if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, type))
                return NULL;
        return v;
}

static int from_json(json_object *r, struct run_handover *h)
{
        static const char *const ints[] = {"id", "run", "pid", "out_fd", "log_fd", "logged",
                                           "log_size"};
        static const char *const doubles[] = {"deadline", "started", "since", "total"};
        static const char *const bools[] = {"cgroup", "cut", "suspended"};

        for (size_t i = 0; i < sizeof(ints) / sizeof(*ints); i++)
                if (!member(r, ints[i], json_type_int))
                        return -EINVAL;
        for (size_t i = 0; i < sizeof(doubles) / sizeof(*doubles); i++)
                if (!member(r, doubles[i], json_type_double) && !member(r, doubles[i], json_type_int))
                        return -EINVAL;
        for (size_t i = 0; i < sizeof(bools) / sizeof(*bools); i++)
                if (!member(r, bools[i], json_type_boolean))
                        return -EINVAL;
        h->id = json_object_get_int64(member(r, "id", json_type_int));
        h->run = json_object_get_int64(member(r, "run", json_type_int));
        h->pid = (pid_t)json_object_get_int64(member(r, "pid", json_type_int));
        h->out_fd = json_object_get_int(member(r, "out_fd", json_type_int));
        h->log_fd = json_object_get_int(member(r, "log_fd", json_type_int));
        h->logged = json_object_get_int64(member(r, "logged", json_type_int));
        h->log_size = json_object_get_int64(member(r, "log_size", json_type_int));
        h->deadline = json_object_get_double(json_object_object_get(r, "deadline"));
        h->started = json_object_get_double(json_object_object_get(r, "started"));
        h->since = json_object_get_double(json_object_object_get(r, "since"));
        h->total = json_object_get_double(json_object_object_get(r, "total"));
        h->cgroup = json_object_get_boolean(json_object_object_get(r, "cgroup"));
        h->cut = json_object_get_boolean(json_object_object_get(r, "cut"));
        h->suspended = json_object_get_boolean(json_object_object_get(r, "suspended"));
        return h->id > 0 && h->run > 0 && h->pid > 0 && h->out_fd >= 0 ? 0 : -EINVAL;
}

int run_handover_from_json(json_object *o, struct run_handover **ret_list)
{
        json_object *runs = member(o, "runs", json_type_array);
        struct run_handover *list = NULL, **tail = &list;

        if (!runs)
                return -EINVAL;
        for (size_t i = 0; i < json_object_array_length(runs); i++) {
                struct run_handover *h = calloc(1, sizeof(*h));

                if (!h || from_json(json_object_array_get_idx(runs, i), h) < 0) {
                        int r = h ? -EINVAL : -ENOMEM;

                        free(h);
                        run_handover_free(list);
                        return r;
                }
                *tail = h;
                tail = &h->next;
        }
        *ret_list = list;
        return 0;
}

static int keep(int fd)
{
        int flags = fd < 0 ? 0 : fcntl(fd, F_GETFD);

        if (fd < 0)
                return 0;
        if (flags < 0 || fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
                return -errno;
        return 0;
}

int run_handover_keep_fds(const struct run_handover *h)
{
        int r = keep(h->out_fd);

        return r < 0 ? r : keep(h->log_fd);
}

struct run_handover *run_handover_find(struct run_handover *list, int64_t id, int64_t run)
{
        for (; list; list = list->next)
                if (list->id == id && list->run == run)
                        return list;
        return NULL;
}
