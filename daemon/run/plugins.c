/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run/plugins.h"

/* A name is a file name in the plugin folder, never a way out of it. */
static bool name_ok(const char *name)
{
        return name[0] != '\0' && name[0] != '.' && !strchr(name, '/') && !strstr(name, "..");
}

static int load(struct plugins *ps, const char *name, struct plugin **ret, char *err, size_t errlen)
{
        const unsigned int *abi;
        struct plugin *p;
        struct stat st;
        char *path;
        void *handle;

        if (asprintf(&path, "%s/%s.so", ps->dir, name) < 0)
                return -ENOMEM;
        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
                snprintf(err, errlen, "no plugin \"%s\" in %s (looked for %s)", name, ps->dir,
                         path);
                free(path);
                return -ENOENT;
        }
        handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        free(path);
        if (!handle) {
                snprintf(err, errlen, "cannot load plugin \"%s\": %s", name, dlerror());
                return -EPROTO;
        }
        abi = dlsym(handle, "slowwork_plugin_abi");
        if (!abi || *abi != SLOWWORK_PLUGIN_ABI) {
                if (abi)
                        snprintf(err, errlen,
                                 "plugin \"%s\" was built for plugin ABI %u, this slowworkd "
                                 "has ABI %u",
                                 name, *abi, SLOWWORK_PLUGIN_ABI);
                else
                        snprintf(err, errlen,
                                 "plugin \"%s\" does not export slowwork_plugin_abi (build it "
                                 "with slowwork-plugin.h's SLOWWORK_PLUGIN_DEFINE_ABI)",
                                 name);
                dlclose(handle);
                return -EPROTO;
        }
        p = calloc(1, sizeof(*p));
        if (!p || !(p->name = strdup(name))) {
                free(p);
                dlclose(handle);
                return -ENOMEM;
        }
        p->handle = handle;
        p->next = ps->loaded;
        ps->loaded = p;
        *ret = p;
        return 0;
}

/* dlsym() also finds what the plugin's libraries define (abort, exit) and data: an entry point
 * is a function of the plugin's own. */
static bool own_function(struct plugin *p, void *sym)
{
        const ElfW(Sym) *esym = NULL;
        struct link_map *lm = NULL;
        Dl_info info;

        if (!dladdr1(sym, &info, (void **)&esym, RTLD_DL_SYMENT) || !esym ||
            ELF64_ST_TYPE(esym->st_info) != STT_FUNC)
                return false;
        return dlinfo(p->handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && info.dli_fname &&
               strcmp(info.dli_fname, lm->l_name) == 0;
}

int plugins_get(struct plugins *ps, const char *name, const char *entry, struct plugin **ret,
                slowwork_plugin_entry **ret_entry, char *err, size_t errlen)
{
        struct plugin *p;
        void *sym;
        int r;

        if (!name_ok(name)) {
                snprintf(err, errlen,
                         "\"plugin\" must be a plugin's name: no \"/\", no \"..\", no leading "
                         "\".\"");
                return -EINVAL;
        }
        for (p = ps->loaded; p; p = p->next)
                if (strcmp(p->name, name) == 0)
                        break;
        if (!p) {
                r = load(ps, name, &p, err, errlen);
                if (r < 0)
                        return r;
        }
        p->refs++;
        if (!p->entry || strcmp(p->entry, entry) != 0) {
                sym = dlsym(p->handle, entry);
                if (!sym || !own_function(p, sym)) {
                        snprintf(err, errlen, "plugin \"%s\" has no entry point \"%s\"", name,
                                 entry);
                        plugins_put(ps, p);
                        return -ENOENT;
                }
                free(p->entry);
                p->entry = strdup(entry); /* without memory, the next job looks it up again */
                p->entry_fn = (slowwork_plugin_entry *)sym;
        }
        *ret = p;
        *ret_entry = p->entry_fn;
        return 0;
}

static void unload(struct plugin *p)
{
        dlclose(p->handle);
        free(p->name);
        free(p->entry);
        free(p);
}

void plugins_put(struct plugins *ps, struct plugin *p)
{
        struct plugin **pp;

        if (!p || --p->refs > 0)
                return;
        for (pp = &ps->loaded; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        break;
                }
        unload(p);
}

void plugins_free(struct plugins *ps)
{
        struct plugin *p;

        while ((p = ps->loaded)) {
                ps->loaded = p->next;
                unload(p);
        }
        free(ps->dir);
        ps->dir = NULL;
}
