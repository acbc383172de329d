/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "jobs/log-budget.h"
#include "store/history.h"
#include "store/run-record.h"
#include "store/store.h"

static int64_t logged_by(const struct history *h, uid_t owner)
{
        int64_t bytes = 0;

        for (size_t i = 0; i < h->n; i++) {
                const struct run_record *rec = history_at(h, i);

                if (rec->owner == owner && rec->log)
                        bytes += rec->log_bytes;
        }
        return bytes;
}

void log_budget_keep(struct history *h, struct store *s, int64_t budget,
                     const struct run_record *ended,
                     void (*removed)(void *data, const struct run_record *rec), void *data)
{
        int64_t bytes = logged_by(h, ended->owner) + (ended->log ? ended->log_bytes : 0);

        for (size_t i = 0; i < h->n && bytes > budget; i++) {
                struct run_record *rec = history_at(h, i);

                if (rec->owner != ended->owner || !rec->log)
                        continue;
                store_forget_log(s, rec->id, rec->run, rec->log);
                bytes -= rec->log_bytes;
                free(rec->log);
                rec->log = NULL;
                rec->log_bytes = 0;
                removed(data, rec);
        }
}
