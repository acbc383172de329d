/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "jobs/log-budget.h"
#include "store/history.h"
#include "store/run-record.h"
#include "store/store.h"

void log_budget_keep(struct history *h, struct store *s, int64_t budget,
                     const struct run_record *ended,
                     void (*removed)(void *data, const struct run_record *rec), void *data)
{
        int64_t bytes = history_logged_by(h, ended->owner) + (ended->log ? ended->log_bytes : 0);

        for (size_t i = 0; i < h->n && bytes > budget; i++) {
                struct run_record *rec = history_at(h, i);

                /* Another node's run: its log is that node's (and its budget's). */
                if (rec->owner != ended->owner || !rec->log || store_other_node(s, rec->node))
                        continue;
                store_forget_log(s, rec->id, rec->run, rec->log);
                bytes -= rec->log_bytes;
                history_forget_log(h, rec);
                removed(data, rec);
        }
}
