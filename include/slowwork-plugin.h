/* SPDX-License-Identifier: MIT */
/*
 * slowwork plugins: shared objects whose entry points slowworkd runs on its pool threads, in the
 * daemon's own process. See slowwork-plugin(7).
 *
 * A plugin exports `slowwork_plugin_abi` (SLOWWORK_PLUGIN_DEFINE_ABI does it) and any number of
 * entry points of type slowwork_plugin_entry. The daemon refuses a plugin whose ABI number is not
 * its own, at submit time.
 */
#ifndef SLOWWORK_PLUGIN_H
#define SLOWWORK_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Changes whenever slowwork_plugin_api or the entry type changes in a way old plugins would
 * misread. */
#define SLOWWORK_PLUGIN_ABI 1

struct slowwork_plugin_ctx;

/* What the daemon offers a run. Valid only during the entry point's call, on its thread. */
struct slowwork_plugin_api {
        /* Appends to the run's log (cut at the daemon's log-limit): 0, or a negative errno. */
        int (*log_write)(struct slowwork_plugin_ctx *ctx, const void *data, size_t len);
        int (*log_vprintf)(struct slowwork_plugin_ctx *ctx, const char *format, va_list ap);
        /* NULL while the run may go on, else why it should return soon: "cancelled", "timed-out"
         * (its timeout passed) or "interrupted" (the daemon is shutting down). */
        const char *(*stop_reason)(struct slowwork_plugin_ctx *ctx);
        /* Sleeps up to `seconds`, waking early when the run should stop: 0 after the whole sleep,
         * -ECANCELED when woken to stop. */
        int (*sleep)(struct slowwork_plugin_ctx *ctx, double seconds);
        int64_t (*item_id)(struct slowwork_plugin_ctx *ctx);    /* the job's id */
        int64_t (*run_number)(struct slowwork_plugin_ctx *ctx); /* 1 for its first run, ... */
        int (*very_slow)(struct slowwork_plugin_ctx *ctx);      /* 1 very slow, 0 slow */
};

/* The run's context: the daemon's, passed to the entry point. */
struct slowwork_plugin_ctx {
        const struct slowwork_plugin_api *api;
};

/*
 * An entry point: `arg` is the submit's "arg" as JSON text ("null" when none was given). Its
 * return value is the run's exit code (0 succeeded, anything else failed); a run that was
 * cancelled, timed out or interrupted is recorded as such whatever it returns.
 */
typedef int slowwork_plugin_entry(struct slowwork_plugin_ctx *ctx, const char *arg);

/* What the daemon looks up: exported even from a plugin built with -fvisibility=hidden, with
 * C names from C++. */
#define SLOWWORK_PLUGIN_EXPORT __attribute__((visibility("default")))
#ifdef __cplusplus
#define SLOWWORK_PLUGIN_LINKAGE extern "C"
#else
#define SLOWWORK_PLUGIN_LINKAGE
#endif

SLOWWORK_PLUGIN_EXPORT extern const unsigned int slowwork_plugin_abi;

/* The declaration above gives it its visibility (C++ will not take it twice). */
#define SLOWWORK_PLUGIN_DEFINE_ABI                                                                 \
        SLOWWORK_PLUGIN_LINKAGE const unsigned int slowwork_plugin_abi = SLOWWORK_PLUGIN_ABI

/*
 * Declares and begins an entry point: SLOWWORK_PLUGIN_ENTRY(greet) { ... } is a function
 * greet(ctx, arg) of the entry type, exported, with C linkage in C++ too.
 */
#define SLOWWORK_PLUGIN_ENTRY(name)                                                                \
        SLOWWORK_PLUGIN_LINKAGE SLOWWORK_PLUGIN_EXPORT int name(struct slowwork_plugin_ctx *ctx,   \
                                                                const char *arg);                  \
        SLOWWORK_PLUGIN_LINKAGE SLOWWORK_PLUGIN_EXPORT int name(struct slowwork_plugin_ctx *ctx,   \
                                                                const char *arg)

static inline int slowwork_log_write(struct slowwork_plugin_ctx *ctx, const void *data, size_t len)
{
        return ctx->api->log_write(ctx, data, len);
}

__attribute__((format(printf, 2, 3))) static inline int
slowwork_log(struct slowwork_plugin_ctx *ctx, const char *format, ...)
{
        va_list ap;
        int r;

        va_start(ap, format);
        r = ctx->api->log_vprintf(ctx, format, ap);
        va_end(ap);
        return r;
}

static inline const char *slowwork_stop_reason(struct slowwork_plugin_ctx *ctx)
{
        return ctx->api->stop_reason(ctx);
}

static inline int slowwork_sleep(struct slowwork_plugin_ctx *ctx, double seconds)
{
        return ctx->api->sleep(ctx, seconds);
}

static inline int64_t slowwork_item_id(struct slowwork_plugin_ctx *ctx)
{
        return ctx->api->item_id(ctx);
}

static inline int64_t slowwork_run_number(struct slowwork_plugin_ctx *ctx)
{
        return ctx->api->run_number(ctx);
}

static inline int slowwork_very_slow(struct slowwork_plugin_ctx *ctx)
{
        return ctx->api->very_slow(ctx);
}

#ifdef __cplusplus
}
#endif

#endif
