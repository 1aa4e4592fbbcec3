/* What the generated wrappers (mpi/gen_wrappers.py) need beyond mpi_hooks.h:
 * three adapter functions (implemented in the hand-written adapter), and small
 * helpers that keep the generated code one template per kind.  Only the
 * generated files include this header.
 *
 * Helpers named sm_wc_* serve the C wrappers, sm_wf_* the Fortran ones (with
 * the same meaning); the Fortran part needs SM_MPI_FORTRAN_WRAPPERS defined
 * and _GNU_SOURCE before the first include (dlsym, RTLD_NEXT). */
#ifndef SM_MPI_WRAPPER_SUPPORT_H
#define SM_MPI_WRAPPER_SUPPORT_H

#include <string.h>
#include "mpi_hooks.h"

/* ---------------------------------------------------------------- adapter */

/* MPI_Init, MPI_Init_thread, MPI_Finalize, MPI_Abort (C and Fortran) begin
 * with this instead of sm_mpi_call_begin, because their hooks must run even
 * where measurement is off on the thread or sysmeasure is not active yet.
 * 0: an MPI call of ours is already running on this thread (the Fortran
 * wrapper reaching the C one, MPI calling itself): call straight through, no
 * hook.  1: otherwise; the nesting guard is now held and the call's region
 * entered if the thread measures (call->region, else SM_INVALID_ID); the
 * wrapper runs the hook and the PMPI call and ends with sm_mpi_call_end(call),
 * which leaves the region only if one was entered and drops the guard. */
int sm_mpi_call_begin_lifecycle(sm_mpi_call_t *call, uint32_t fn) SM_HIDDEN;

/* Matched probes.  After MPI_Mprobe/MPI_Improbe matched a message (not
 * MPI_MESSAGE_NULL or MPI_MESSAGE_NO_PROC): the communicator it arrived on.
 * MPI_Mrecv/MPI_Imrecv, which name no communicator, ask for it before their
 * call and the adapter forgets the message then; MPI_COMM_NULL when unknown
 * (probed while not measuring). */
void sm_mpi_hook_message_matched(MPI_Message message, MPI_Comm comm) SM_HIDDEN;
MPI_Comm sm_mpi_message_comm(MPI_Message message) SM_HIDDEN;

static inline void sm_w_message_matched(MPI_Message message, MPI_Comm comm)
{
    if (message != MPI_MESSAGE_NULL && message != MPI_MESSAGE_NO_PROC)
        sm_mpi_hook_message_matched(message, comm);
}

/* ---------------------------------------------------------------- C */

/* The status to pass to PMPI: the caller's, or a scratch one standing in for
 * MPI_STATUS_IGNORE (still MPI_STATUS_IGNORE if none could be had: the
 * completion helpers then record nothing). */
static inline MPI_Status *sm_wc_status(MPI_Status *status)
{
    MPI_Status *s = status != MPI_STATUS_IGNORE ? status : sm_mpi_scratch_statuses(1);
    return s ? s : MPI_STATUS_IGNORE;
}

static inline MPI_Status *sm_wc_statuses(MPI_Status *statuses, int n)
{
    MPI_Status *s = statuses != MPI_STATUSES_IGNORE ? statuses
                    : n > 0                          ? sm_mpi_scratch_statuses(n)
                                                     : NULL;
    return s ? s : MPI_STATUSES_IGNORE;
}

/* The request handles as they were before the call (NULL: none). */
static inline MPI_Request *sm_wc_requests(int n, const MPI_Request *requests)
{
    MPI_Request *copy = n > 0 && requests ? sm_mpi_scratch_requests(n) : NULL;
    if (copy)
        memcpy(copy, requests, (size_t)n * sizeof *copy);
    return copy;
}

static inline void sm_wc_recv(MPI_Datatype type, MPI_Comm comm, const MPI_Status *status, int rc)
{
    if (status != MPI_STATUS_IGNORE)
        sm_mpi_hook_recv(type, comm, status, rc);
}

static inline void sm_wc_completed(MPI_Request before, const MPI_Status *status)
{
    if (status != MPI_STATUS_IGNORE)
        sm_mpi_hook_completed(before, status);
}

/* Waitall/Testall: every request, or with MPI_ERR_IN_STATUS those whose
 * status says MPI_SUCCESS. */
static inline void sm_wc_completed_all(int n, const MPI_Request *before, const MPI_Status *st,
                                       int rc)
{
    if (!before || st == MPI_STATUSES_IGNORE || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS))
        return;
    for (int i = 0; i < n; i++)
        if (rc == MPI_SUCCESS || st[i].MPI_ERROR == MPI_SUCCESS)
            sm_mpi_hook_completed(before[i], &st[i]);
}

/* Waitany/Testany: the request at index (0-based), unless MPI_UNDEFINED. */
static inline void sm_wc_completed_index(int n, const MPI_Request *before, int index,
                                         const MPI_Status *st, int rc)
{
    if (before && rc == MPI_SUCCESS && index >= 0 && index < n && st != MPI_STATUS_IGNORE)
        sm_mpi_hook_completed(before[index], st);
}

/* Waitsome/Testsome: outcount requests named by indices (0-based), the
 * statuses in the same order; nothing for outcount MPI_UNDEFINED. */
static inline void sm_wc_completed_some(int n, const MPI_Request *before, int outcount,
                                        const int *indices, const MPI_Status *st, int rc)
{
    if (!before || st == MPI_STATUSES_IGNORE || outcount == MPI_UNDEFINED ||
        (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS))
        return;
    for (int i = 0; i < outcount; i++)
        if (indices[i] >= 0 && indices[i] < n &&
            (rc == MPI_SUCCESS || st[i].MPI_ERROR == MPI_SUCCESS))
            sm_mpi_hook_completed(before[indices[i]], &st[i]);
}

static inline void sm_wc_start_all(int n, const MPI_Request *requests)
{
    for (int i = 0; i < n && requests; i++)
        sm_mpi_hook_start(requests[i]);
}

/* ---------------------------------------------------------------- Fortran */
#ifdef SM_MPI_FORTRAN_WRAPPERS
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* Fortran statuses are MPI_Fint arrays (TYPE(MPI_Status) has the same
 * layout); handles are MPI_Fint (TYPE(MPI_Comm) etc. hold one). */
#ifdef MPI_F_STATUS_SIZE
#define SM_F_STATUS_SIZE MPI_F_STATUS_SIZE
#else
#define SM_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif

/* The MPI library's own Fortran entry point: base "mpi_send", in the mpif.h
 * library (pmpi_send_ or its other manglings, else mpi_send_ ...) or in the
 * mpi_f08 one (pmpi_send_f08_, else mpi_send_f08_).  Found once, cached.  The
 * mpi_ names are ours too, so only RTLD_NEXT may find those. */
struct sm_wf_form {
    const char *prefix, *suffix;
    int upper;
};

static SM_COLD void *sm_wf_resolve(void **cache, const char *base, int f08)
{
    static const struct sm_wf_form mpifh[] = {
        {"p", "_", 0}, {"p", "", 0}, {"p", "__", 0}, {"P", "", 1},
        {"", "_", 0},  {"", "", 0},  {"", "__", 0},  {"", "", 1},
    };
    static const struct sm_wf_form mpif08[] = {{"p", "_f08_", 0}, {"", "_f08_", 0}};
    const struct sm_wf_form *forms = f08 ? mpif08 : mpifh;
    size_t nforms = f08 ? sizeof mpif08 / sizeof *mpif08 : sizeof mpifh / sizeof *mpifh;
    char upper[64], name[80];
    size_t i;
    for (i = 0; base[i] && i < sizeof upper - 1; i++)
        upper[i] = (char)(base[i] >= 'a' && base[i] <= 'z' ? base[i] - 'a' + 'A' : base[i]);
    upper[i] = '\0';
    for (size_t k = 0; k < nforms; k++) {
        snprintf(name, sizeof name, "%s%s%s", forms[k].prefix, forms[k].upper ? upper : base,
                 forms[k].suffix);
        void *fn = dlsym(RTLD_NEXT, name);
        if (!fn && forms[k].prefix[0])
            fn = dlsym(RTLD_DEFAULT, name);
        if (fn) {
            __atomic_store_n(cache, fn, __ATOMIC_RELAXED);
            return fn;
        }
    }
    fprintf(stderr, "sysmeasure: the MPI library has no Fortran entry point for %s%s\n", base,
            f08 ? " (mpi_f08)" : "");
    abort();
}

static inline void *sm_wf_next(void **cache, const char *base, int f08)
{
    void *fn = __atomic_load_n(cache, __ATOMIC_RELAXED);
    return SM_LIKELY(fn != NULL) ? fn : sm_wf_resolve(cache, base, f08);
}

/* A Fortran buffer argument for the byte formulas: the Fortran MPI_IN_PLACE
 * (a common block of the MPI library) becomes MPI_IN_PLACE. */
static inline const void *sm_wf_buf(const void *buf)
{
    static void *in_place; /* resolved once; (void *)&in_place: not found */
    void *p = __atomic_load_n(&in_place, __ATOMIC_RELAXED);
    if (SM_UNLIKELY(!p)) {
        static const char *const names[] = {"mpi_fortran_in_place_", "mpi_fortran_in_place",
                                            "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE"};
        for (size_t k = 0; k < sizeof names / sizeof *names && !p; k++)
            p = dlsym(RTLD_DEFAULT, names[k]);
        if (!p)
            p = (void *)&in_place;
        __atomic_store_n(&in_place, p, __ATOMIC_RELAXED);
    }
    return buf == p ? MPI_IN_PLACE : buf;
}

/* Fortran count arrays for the byte formulas, which read C ints (NULL, so no
 * bytes, where INTEGER is not int). */
static inline const int *sm_wf_ints(const MPI_Fint *a)
{
    return sizeof(MPI_Fint) == sizeof(int) ? (const int *)(const void *)a : NULL;
}

static inline MPI_Fint *sm_wf_status(MPI_Fint *status)
{
    MPI_Fint *s = status != MPI_F_STATUS_IGNORE ? status : sm_mpi_scratch_fint(SM_F_STATUS_SIZE);
    return s ? s : MPI_F_STATUS_IGNORE;
}

static inline MPI_Fint *sm_wf_statuses(MPI_Fint *statuses, int n)
{
    MPI_Fint *s = statuses != MPI_F_STATUSES_IGNORE ? statuses
                  : n > 0 ? sm_mpi_scratch_fint(n * SM_F_STATUS_SIZE)
                          : NULL;
    return s ? s : MPI_F_STATUSES_IGNORE;
}

/* The C handles of a Fortran request array, taken before the call. */
static inline MPI_Request *sm_wf_requests(int n, const MPI_Fint *requests)
{
    MPI_Request *c = n > 0 && requests ? sm_mpi_scratch_requests(n) : NULL;
    for (int i = 0; c && i < n; i++)
        c[i] = MPI_Request_f2c(requests[i]);
    return c;
}

static inline int sm_wf_c_status(const MPI_Fint *f, MPI_Status *c)
{
    return f != MPI_F_STATUS_IGNORE && f != MPI_F_STATUSES_IGNORE &&
           MPI_Status_f2c(f, c) == MPI_SUCCESS;
}

static inline void sm_wf_recv(MPI_Datatype type, MPI_Comm comm, const MPI_Fint *status, int rc)
{
    MPI_Status c;
    if (sm_wf_c_status(status, &c))
        sm_mpi_hook_recv(type, comm, &c, rc);
}

static inline void sm_wf_completed(MPI_Request before, const MPI_Fint *status)
{
    MPI_Status c;
    if (sm_wf_c_status(status, &c))
        sm_mpi_hook_completed(before, &c);
}

static inline void sm_wf_completed_all(int n, const MPI_Request *before, const MPI_Fint *st, int rc)
{
    MPI_Status c;
    if (!before || st == MPI_F_STATUSES_IGNORE || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS))
        return;
    for (int i = 0; i < n; i++)
        if (MPI_Status_f2c(st + (size_t)i * SM_F_STATUS_SIZE, &c) == MPI_SUCCESS &&
            (rc == MPI_SUCCESS || c.MPI_ERROR == MPI_SUCCESS))
            sm_mpi_hook_completed(before[i], &c);
}

/* Fortran indices are 1-based; MPI_UNDEFINED stays MPI_UNDEFINED. */
static inline void sm_wf_completed_index(int n, const MPI_Request *before, int index,
                                         const MPI_Fint *st, int rc)
{
    if (before && rc == MPI_SUCCESS && index != MPI_UNDEFINED && index >= 1 && index <= n)
        sm_wf_completed(before[index - 1], st);
}

static inline void sm_wf_completed_some(int n, const MPI_Request *before, int outcount,
                                        const MPI_Fint *indices, const MPI_Fint *st, int rc)
{
    MPI_Status c;
    if (!before || st == MPI_F_STATUSES_IGNORE || outcount == MPI_UNDEFINED ||
        (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS))
        return;
    for (int i = 0; i < outcount; i++)
        if (indices[i] >= 1 && indices[i] <= n &&
            MPI_Status_f2c(st + (size_t)i * SM_F_STATUS_SIZE, &c) == MPI_SUCCESS &&
            (rc == MPI_SUCCESS || c.MPI_ERROR == MPI_SUCCESS))
            sm_mpi_hook_completed(before[indices[i] - 1], &c);
}

static inline void sm_wf_start_all(int n, const MPI_Fint *requests)
{
    for (int i = 0; i < n && requests; i++)
        sm_mpi_hook_start(MPI_Request_f2c(requests[i]));
}
#endif /* SM_MPI_FORTRAN_WRAPPERS */

#endif
