/* SPDX-License-Identifier: MIT */
/*
 * libpq, loaded the first time a PostgreSQL store is opened rather than linked: a daemon that
 * keeps its jobs in SQLite never maps it, nor the libraries it brings (GSSAPI, LDAP, TLS), and
 * starts the faster for it. libpq-fe.h stays the source of the types; the driver's files include
 * this header in its place and call libpq's functions by their own names, which name the
 * pointers below, set by pq_load().
 */
#ifndef SLOWWORKD_PQ_H
#define SLOWWORKD_PQ_H

#include <libpq-fe.h>
#include <stddef.h>

#define PQ_LIBRARY "libpq.so.5"

/* The functions of libpq that the driver calls (a new one is added here and below). */
#define PQ_FUNCTIONS(X)                                                                            \
        X(PQclear)                                                                                 \
        X(PQcmdStatus)                                                                             \
        X(PQcmdTuples)                                                                             \
        X(PQconnectdbParams)                                                                       \
        X(PQconninfoFree)                                                                          \
        X(PQconninfoParse)                                                                         \
        X(PQconsumeInput)                                                                          \
        X(PQenterPipelineMode)                                                                     \
        X(PQerrorMessage)                                                                          \
        X(PQexec)                                                                                  \
        X(PQexecParams)                                                                            \
        X(PQexitPipelineMode)                                                                      \
        X(PQfinish)                                                                                \
        X(PQfreemem)                                                                               \
        X(PQgetResult)                                                                             \
        X(PQgetisnull)                                                                             \
        X(PQgetvalue)                                                                              \
        X(PQnfields)                                                                               \
        X(PQnotifies)                                                                              \
        X(PQntuples)                                                                               \
        X(PQpipelineStatus)                                                                        \
        X(PQpipelineSync)                                                                          \
        X(PQprepare)                                                                               \
        X(PQresultErrorField)                                                                      \
        X(PQresultStatus)                                                                          \
        X(PQsendQueryParams)                                                                       \
        X(PQsendQueryPrepared)                                                                     \
        X(PQsetNoticeProcessor)                                                                    \
        X(PQsetSingleRowMode)                                                                      \
        X(PQsocket)                                                                                \
        X(PQstatus)

#define PQ_POINTER(name) extern __typeof__(name) *pq_##name;
PQ_FUNCTIONS(PQ_POINTER)
#undef PQ_POINTER

/* Loads libpq and resolves every function above, once; any thread. 0, or -ELIBACC when the
 * library cannot be loaded and -ELIBBAD when it lacks a function (then none is set), with
 * dlerror()'s reason in why (size bytes). */
int pq_load(char *why, size_t size);

/* The names the driver calls, on the pointers (one missing here: a link error without -lpq). */
#define PQclear              pq_PQclear
#define PQcmdStatus          pq_PQcmdStatus
#define PQcmdTuples          pq_PQcmdTuples
#define PQconnectdbParams    pq_PQconnectdbParams
#define PQconninfoFree       pq_PQconninfoFree
#define PQconninfoParse      pq_PQconninfoParse
#define PQconsumeInput       pq_PQconsumeInput
#define PQenterPipelineMode  pq_PQenterPipelineMode
#define PQerrorMessage       pq_PQerrorMessage
#define PQexec               pq_PQexec
#define PQexecParams         pq_PQexecParams
#define PQexitPipelineMode   pq_PQexitPipelineMode
#define PQfinish             pq_PQfinish
#define PQfreemem            pq_PQfreemem
#define PQgetResult          pq_PQgetResult
#define PQgetisnull          pq_PQgetisnull
#define PQgetvalue           pq_PQgetvalue
#define PQnfields            pq_PQnfields
#define PQnotifies           pq_PQnotifies
#define PQntuples            pq_PQntuples
#define PQpipelineStatus     pq_PQpipelineStatus
#define PQpipelineSync       pq_PQpipelineSync
#define PQprepare            pq_PQprepare
#define PQresultErrorField   pq_PQresultErrorField
#define PQresultStatus       pq_PQresultStatus
#define PQsendQueryParams    pq_PQsendQueryParams
#define PQsendQueryPrepared  pq_PQsendQueryPrepared
#define PQsetNoticeProcessor pq_PQsetNoticeProcessor
#define PQsetSingleRowMode   pq_PQsetSingleRowMode
#define PQsocket             pq_PQsocket
#define PQstatus             pq_PQstatus

#endif
