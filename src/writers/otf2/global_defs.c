/* The global definitions, written by rank 0 from what it learned of every
 * process (archive.c): strings, paradigms, attributes, regions, calling
 * contexts, the system tree, locations, communicators and groups, metrics.
 * First, OTF2's names for our enums. */
#include "sm_build.h" /* from configure: _GNU_SOURCE, before any other */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otf2_internal.h"
#include "../../core/clock.h"

#if OTF2_VERSION_MAJOR >= 3
#define SM_OTF2_HAVE_ACCELERATOR_GROUP 1
#endif

/* Transfer metrics (sm_transfer_kind_t): one metric class each, same ids. */
static const char *const sm_otf2_metric_names[SM_XFER_KIND_COUNT] = {
    "MPI-IO bytes read", "MPI-IO bytes written", "RMA bytes put", "RMA bytes got"};

/* ---------------------------------------------------------------- definitions */

/* (The paradigm, sm_otf2_paradigm, is in otf2_internal.h.) */

static OTF2_RegionRole sm_otf2_role(uint8_t r)
{
    switch (r) {
    case SM_ROLE_FUNCTION:
        return OTF2_REGION_ROLE_FUNCTION;
    case SM_ROLE_CODE:
        return OTF2_REGION_ROLE_CODE;
    case SM_ROLE_WRAPPER:
        return OTF2_REGION_ROLE_WRAPPER;
    case SM_ROLE_ARTIFICIAL:
        return OTF2_REGION_ROLE_ARTIFICIAL;
    case SM_ROLE_PARALLEL:
        return OTF2_REGION_ROLE_PARALLEL;
    case SM_ROLE_BARRIER:
        return OTF2_REGION_ROLE_BARRIER;
    case SM_ROLE_TASK:
        return OTF2_REGION_ROLE_TASK;
    case SM_ROLE_LOOP:
    case SM_ROLE_REDUCE:
    case SM_ROLE_SCAN:
        return OTF2_REGION_ROLE_LOOP;
    case SM_ROLE_COLLECTIVE:
        return OTF2_REGION_ROLE_COLL_ALL2ALL;
    case SM_ROLE_POINT2POINT:
        return OTF2_REGION_ROLE_POINT2POINT;
    case SM_ROLE_DATA_TRANSFER:
        return OTF2_REGION_ROLE_DATA_TRANSFER;
    default:
        return OTF2_REGION_ROLE_UNKNOWN;
    }
}

/* Name and class of the parallel paradigms; false for those without a
 * paradigm class (user, measurement system), which get no Paradigm record. */
static bool sm_otf2_paradigm_info(OTF2_Paradigm p, const char **name, OTF2_ParadigmClass *cls)
{
    switch (p) {
    case OTF2_PARADIGM_PTHREAD:
        *name = "Pthread";
        *cls = OTF2_PARADIGM_CLASS_THREAD_CREATE_WAIT;
        return true;
    case OTF2_PARADIGM_MPI:
        *name = "MPI";
        *cls = OTF2_PARADIGM_CLASS_PROCESS;
        return true;
    case OTF2_PARADIGM_OPENMP:
        *name = "OpenMP";
        *cls = OTF2_PARADIGM_CLASS_THREAD_FORK_JOIN;
        return true;
    case OTF2_PARADIGM_CUDA:
        *name = "CUDA";
        *cls = OTF2_PARADIGM_CLASS_ACCELERATOR;
        return true;
#ifdef SM_OTF2_HAVE_KOKKOS_HIP
    case OTF2_PARADIGM_HIP:
        *name = "HIP";
        *cls = OTF2_PARADIGM_CLASS_ACCELERATOR;
        return true;
    case OTF2_PARADIGM_KOKKOS:
        *name = "Kokkos";
        *cls = OTF2_PARADIGM_CLASS_ACCELERATOR;
        return true;
#endif
    default:
        return false;
    }
}

/* A string beyond the interned ones, written right before its first use. */
static bool sm_otf2_extra_string(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g, const char *s,
                                 OTF2_StringRef *ref)
{
    *ref = w->next_string++;
    return sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteString(g, *ref, s ? s : ""));
}

static bool sm_otf2_string_property(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g,
                                    OTF2_LocationRef location, const char *name, const char *value)
{
    OTF2_StringRef name_ref, value_ref;
    OTF2_AttributeValue v;
    if (!sm_otf2_extra_string(w, g, name, &name_ref) ||
        !sm_otf2_extra_string(w, g, value, &value_ref))
        return false;
    v.stringRef = value_ref;
    return sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocationProperty(g, location, name_ref,
                                                                    OTF2_TYPE_STRING, v));
}

static OTF2_LocationType sm_otf2_location_type(sm_location_type_t t)
{
    switch (t) {
    case SM_LOCATION_CPU_THREAD:
        return OTF2_LOCATION_TYPE_CPU_THREAD;
    case SM_LOCATION_GPU_STREAM:
        return OTF2_LOCATION_TYPE_ACCELERATOR_STREAM; /* OTF2 3.0's name for "GPU" */
    case SM_LOCATION_METRIC:
        return OTF2_LOCATION_TYPE_METRIC;
    default:
        return OTF2_LOCATION_TYPE_UNKNOWN;
    }
}

/* ---------------------------------------------------------------- global definitions */

/* Creator name and creation path of threads created by another thread. */
static bool sm_otf2_lineage(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g, uint32_t rank,
                            const sm_otf2_proc_info_t *proc, const sm_otf2_loc_info_t *li)
{
    char name[96];
    const sm_otf2_loc_info_t *creator = NULL;
    for (uint32_t i = 0; i < proc->n_locations && !creator; i++)
        if (proc->locations[i].id == li->creator)
            creator = &proc->locations[i];
    if (creator)
        snprintf(name, sizeof name, "%s", creator->name);
    else
        snprintf(name, sizeof name, "location %" PRIu32, li->creator);
    OTF2_LocationRef ref = sm_otf2_location_ref(rank, li->id);
    return sm_otf2_string_property(w, g, ref, "created by", name) &&
           sm_otf2_string_property(w, g, ref, "creation path",
                                   li->creation_path ? li->creation_path : "");
}

/* Group ids, dense and in the order written (readers want them so): the
 * MPI locations group when there are MPI communicators, the OpenMP
 * locations group when there are teams, the CUDA and HIP locations groups
 * when there are NCCL and RCCL communicators, one group per communicator
 * (MPI's, OpenMP teams, NCCL's and RCCL's), then the pthread locations
 * group and one group per process for its thread contingent. */
#define SM_OTF2_GROUP_MPI_LOCATIONS 0
static uint32_t sm_otf2_omp_locations_group(const sm_otf2_writer_t *w)
{
    return w->mpi_comms ? 1 : 0;
}

static uint32_t sm_otf2_nccl_locations_group(const sm_otf2_writer_t *w)
{
    return sm_otf2_omp_locations_group(w) + (w->team_comms ? 1 : 0);
}

static uint32_t sm_otf2_rccl_locations_group(const sm_otf2_writer_t *w)
{
    return sm_otf2_nccl_locations_group(w) + (w->nccl_comms ? 1 : 0);
}

static uint32_t sm_otf2_comm_group(const sm_otf2_writer_t *w, uint32_t comm)
{
    return sm_otf2_rccl_locations_group(w) + (w->rccl_comms ? 1 : 0) + comm;
}

/* NCCL's communicators belong to CUDA, RCCL's to HIP, as their regions
 * (otf2_internal.h): a group's members index the locations group of its
 * paradigm, so neither passes for an MPI communicator. */
static OTF2_Paradigm sm_otf2_hashed_paradigm(bool amd)
{
#ifdef SM_OTF2_HAVE_KOKKOS_HIP
    return amd ? OTF2_PARADIGM_HIP : OTF2_PARADIGM_CUDA;
#else
    return amd ? OTF2_PARADIGM_USER : OTF2_PARADIGM_CUDA;
#endif
}

/* OTF2 allows one locations group per paradigm: for pthread it lists the
 * CPU threads of every rank, and each rank's contingent is a group of
 * indexes into it. */
static uint32_t sm_otf2_thread_locations_group(const sm_otf2_writer_t *w)
{
    return sm_otf2_comm_group(w, w->n_comms);
}

static uint32_t sm_otf2_thread_members_group(const sm_otf2_writer_t *w, uint32_t rank)
{
    return sm_otf2_thread_locations_group(w) + 1 + rank;
}

/* The CPU threads of every rank, in rank and location order: what the
 * OpenMP and pthread locations groups list. */
static uint64_t *sm_otf2_cpu_threads(const sm_otf2_proc_info_t *procs, uint32_t n_ranks,
                                     uint32_t *n)
{
    uint64_t total = 0;
    for (uint32_t r = 0; r < n_ranks; r++)
        total += procs[r].n_locations;
    uint64_t *all = malloc(sizeof *all * (total ? total : 1));
    *n = 0;
    for (uint32_t r = 0; all && r < n_ranks; r++)
        for (uint32_t i = 0; i < procs[r].n_locations; i++)
            if (procs[r].locations[i].type == SM_LOCATION_CPU_THREAD)
                all[(*n)++] = sm_otf2_location_ref(r, procs[r].locations[i].id);
    return all;
}

/* An OpenMP team: a group of indexes into the OpenMP locations group (its
 * threads by thread number), and a communicator whose parent is the team
 * of the thread that forked it. */
static bool sm_otf2_team_comm(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g, uint32_t c,
                              const sm_otf2_proc_info_t *procs, const uint32_t *first_thread)
{
    const sm_comm_def_t *def = sm_defset_comm_get(w->job->defs, c);
    uint32_t rank = def->key.leader;
    uint32_t size = def->members && rank < w->n_ranks ? def->size : 0;
    uint64_t *m = malloc(sizeof *m * (size ? size : 1));
    if (!sm_otf2_got(w, m, strerror(ENOMEM)))
        return false;
    uint32_t k = 0;
    for (uint32_t i = 0; i < size; i++) {
        /* The member's index among its rank's CPU threads. */
        uint32_t at = first_thread[rank];
        bool found = false;
        for (uint32_t j = 0; j < procs[rank].n_locations && !found; j++) {
            const sm_otf2_loc_info_t *li = &procs[rank].locations[j];
            if (li->type != SM_LOCATION_CPU_THREAD)
                continue;
            if (li->id == def->members[i])
                found = true;
            else
                at++;
        }
        if (found) /* a thread number the runtime never filled is left out */
            m[k++] = at;
    }
    const char *cname = sm_defset_string_get(w->job->defs, def->name);
    OTF2_StringRef gs;
    OTF2_CommRef parent = def->parent < w->n_comms ? def->parent : OTF2_UNDEFINED_COMM;
    bool ok = sm_otf2_extra_string(w, g, cname ? cname : "OpenMP thread team", &gs) &&
              sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                                g, sm_otf2_comm_group(w, c), gs, OTF2_GROUP_TYPE_COMM_GROUP,
                                OTF2_PARADIGM_OPENMP, OTF2_GROUP_FLAG_NONE, k, m)) &&
              sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteComm(g, c, gs, sm_otf2_comm_group(w, c),
                                                           parent, OTF2_COMM_FLAG_NONE));
    free(m);
    return ok;
}

/* MPI: rank r is its process's first location; each communicator is a group
 * of ranks (world ranks index the locations group).  OpenMP: the CPU threads
 * of all ranks are the locations group; each team indexes into it. */
static bool sm_otf2_comms(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g,
                          const sm_otf2_proc_info_t *procs)
{
    const sm_defset_t *d = w->job->defs;
    uint32_t n = w->n_ranks, n_threads = 0;
    uint64_t *members = malloc(sizeof *members * (n ? n : 1));
    uint64_t *threads = w->team_comms ? sm_otf2_cpu_threads(procs, n, &n_threads) : NULL;
    uint32_t *first_thread = malloc(sizeof *first_thread * (n ? n : 1));
    OTF2_StringRef s;
    bool ok = sm_otf2_got(w, members && first_thread && (threads || !w->team_comms) ? members
                                                                                     : NULL,
                          strerror(ENOMEM));
    for (uint32_t r = 0, at = 0; ok && r < n; r++) {
        members[r] = sm_otf2_location_ref(r, 0);
        first_thread[r] = at;
        for (uint32_t i = 0; i < procs[r].n_locations; i++)
            at += procs[r].locations[i].type == SM_LOCATION_CPU_THREAD;
    }
    if (ok && w->mpi_comms)
        ok = sm_otf2_extra_string(w, g, "MPI ranks", &s) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                               g, SM_OTF2_GROUP_MPI_LOCATIONS, s, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                               OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, n, members));
    if (ok && w->team_comms)
        ok = sm_otf2_extra_string(w, g, "OpenMP threads", &s) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                               g, sm_otf2_omp_locations_group(w), s,
                               OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_OPENMP,
                               OTF2_GROUP_FLAG_NONE, n_threads, threads));
    /* NCCL and RCCL: ranks are processes, as MPI's. */
    if (ok && w->nccl_comms)
        ok = sm_otf2_extra_string(w, g, "NCCL ranks", &s) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                               g, sm_otf2_nccl_locations_group(w), s,
                               OTF2_GROUP_TYPE_COMM_LOCATIONS, sm_otf2_hashed_paradigm(false),
                               OTF2_GROUP_FLAG_NONE, n, members));
    if (ok && w->rccl_comms)
        ok = sm_otf2_extra_string(w, g, "RCCL ranks", &s) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                               g, sm_otf2_rccl_locations_group(w), s,
                               OTF2_GROUP_TYPE_COMM_LOCATIONS, sm_otf2_hashed_paradigm(true),
                               OTF2_GROUP_FLAG_NONE, n, members));
    for (uint32_t c = 0; ok && c < w->n_comms; c++) {
        const sm_comm_def_t *def = sm_defset_comm_get(d, c);
        if (sm_comm_key_is_team(def->key)) {
            ok = sm_otf2_team_comm(w, g, c, procs, first_thread);
            continue;
        }
        char name[96];
        OTF2_GroupType type = OTF2_GROUP_TYPE_COMM_GROUP;
        OTF2_Paradigm paradigm = OTF2_PARADIGM_MPI;
        bool hashed = sm_comm_key_is_hashed(def->key);
        if (hashed)
            paradigm = sm_otf2_hashed_paradigm(def->key.leader & SM_COMM_LEADER_HASHED_AMD);
        uint32_t size = def->size, k = 0;
        uint64_t *m = NULL;
        if (def->key.leader == SM_COMM_LEADER_SELF) {
            type = OTF2_GROUP_TYPE_COMM_SELF;
            size = 0;
        } else {
            if (!def->members)
                size = n; /* MPI_COMM_WORLD */
            m = malloc(sizeof *m * (size ? size : 1));
            if (!sm_otf2_got(w, m, strerror(ENOMEM)))
                break;
            /* A hashed communicator's rank whose process left no
             * definition of it (not measured) has no location: left out. */
            for (uint32_t i = 0; i < size; i++)
                if (!hashed || (def->members && def->members[i] < n))
                    m[k++] = def->members ? def->members[i] : i;
            size = k;
        }
        const char *cname = sm_defset_string_get(d, def->name);
        if (!cname) {
            snprintf(name, sizeof name, "communicator %" PRIu32 ".%" PRIu32, def->key.leader,
                     def->key.seq);
            cname = name;
        }
        OTF2_StringRef gs;
        ok = sm_otf2_extra_string(w, g, cname, &gs) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(g, sm_otf2_comm_group(w, c), gs, type,
                                                           paradigm, OTF2_GROUP_FLAG_NONE, size,
                                                           m));
        free(m);
        OTF2_CommRef parent = def->parent < w->n_comms ? def->parent : OTF2_UNDEFINED_COMM;
        ok = ok && sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteComm(g, c, gs, sm_otf2_comm_group(w, c),
                                                                parent, OTF2_COMM_FLAG_NONE));
    }
    free(members);
    free(threads);
    free(first_thread);
    return ok;
}

/* Each process's thread contingent (ThreadCreate/Begin/End): a pthread comm
 * over its CPU-thread locations; sequence numbers are location ids. */
static bool sm_otf2_thread_contingents(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g,
                                       const sm_otf2_proc_info_t *procs)
{
    uint64_t total = 0;
    for (uint32_t r = 0; r < w->n_ranks; r++)
        total += procs[r].n_locations;
    uint32_t n = 0;
    uint64_t *all = sm_otf2_cpu_threads(procs, w->n_ranks, &n);
    uint64_t *index = malloc(sizeof *index * (total ? total : 1));
    OTF2_StringRef s;
    bool ok = sm_otf2_got(w, all && index ? all : NULL, strerror(ENOMEM));
    ok = ok && sm_otf2_extra_string(w, g, "pthread locations", &s) &&
         sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                           g, sm_otf2_thread_locations_group(w), s,
                           OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_PTHREAD,
                           OTF2_GROUP_FLAG_NONE, n, all));
    uint32_t at = 0;
    for (uint32_t r = 0; ok && r < w->n_ranks; r++) {
        uint32_t k = 0;
        for (uint32_t i = 0; i < procs[r].n_locations; i++)
            if (procs[r].locations[i].type == SM_LOCATION_CPU_THREAD)
                index[k++] = at++;
        char name[64];
        OTF2_StringRef s_threads;
        snprintf(name, sizeof name, "pthread threads of rank %" PRIu32, r);
        ok = sm_otf2_extra_string(w, g, name, &s_threads) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteGroup(
                               g, sm_otf2_thread_members_group(w, r), s_threads,
                               OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_PTHREAD,
                               OTF2_GROUP_FLAG_NONE, k, index)) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteComm(g, sm_otf2_thread_comm(w, r), s_threads,
                                                          sm_otf2_thread_members_group(w, r),
                                                          OTF2_UNDEFINED_COMM,
                                                          OTF2_COMM_FLAG_NONE));
    }
    free(all);
    free(index);
    return ok;
}

/* Named metrics (Kokkos memory spaces...): one member and class each,
 * after the transfer metrics, in the order of the job's definitions. */
static bool sm_otf2_named_metrics(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g)
{
    const sm_defset_t *d = w->job->defs;
    uint32_t n = sm_defset_metric_count(d);
    OTF2_StringRef s_desc, s_counter;
    if (n && (!sm_otf2_extra_string(w, g, "a counter's value", &s_desc) ||
              !sm_otf2_extra_string(w, g, "PAPI event count since the thread began",
                                    &s_counter)))
        return false;
    for (uint32_t i = 0; i < n; i++) {
        const sm_named_metric_def_t *m = sm_defset_metric_get(d, i);
        OTF2_MetricMemberRef ref = SM_XFER_KIND_COUNT + i;
        OTF2_StringRef unit = m->unit != SM_INVALID_ID ? m->unit : s_desc;
        bool counter = m->kind == SM_METRIC_COUNTER;
        /* A counter is read with every enter and leave of its thread:
         * strictly synchronous, counted from the thread's start. */
        if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteMetricMember(
                               g, ref, m->name, counter ? s_counter : s_desc,
                               counter ? OTF2_METRIC_TYPE_PAPI : OTF2_METRIC_TYPE_OTHER,
                               counter ? OTF2_METRIC_ACCUMULATED_START : OTF2_METRIC_ABSOLUTE_POINT,
                               OTF2_TYPE_UINT64, OTF2_BASE_DECIMAL, 0, unit)) ||
            !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteMetricClass(
                               g, ref, 1, &ref,
                               counter ? OTF2_METRIC_SYNCHRONOUS_STRICT : OTF2_METRIC_ASYNCHRONOUS,
                               counter ? OTF2_RECORDER_KIND_CPU : OTF2_RECORDER_KIND_ABSTRACT)))
            return false;
    }
    if (!w->n_counters)
        return true;
    /* All counters together: the class each enter and leave refers to. */
    OTF2_MetricMemberRef members[256];
    for (uint32_t i = 0; i < w->n_counters; i++)
        members[i] = SM_XFER_KIND_COUNT + w->counters[i];
    return sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteMetricClass(
                             g, SM_XFER_KIND_COUNT + n, (uint8_t)w->n_counters, members,
                             OTF2_METRIC_SYNCHRONOUS_STRICT, OTF2_RECORDER_KIND_CPU));
}

static bool sm_otf2_metrics(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g)
{
    OTF2_StringRef s_unit, s_desc;
    if (!sm_otf2_extra_string(w, g, "bytes", &s_unit) ||
        !sm_otf2_extra_string(w, g, "running total of this location", &s_desc))
        return false;
    for (uint32_t k = 0; k < SM_XFER_KIND_COUNT; k++) {
        OTF2_StringRef s_name;
        OTF2_MetricMemberRef member = k;
        if (!sm_otf2_extra_string(w, g, sm_otf2_metric_names[k], &s_name) ||
            !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteMetricMember(
                               g, k, s_name, s_desc, OTF2_METRIC_TYPE_OTHER,
                               OTF2_METRIC_ACCUMULATED_START, OTF2_TYPE_UINT64,
                               OTF2_BASE_DECIMAL, 0, s_unit)) ||
            !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteMetricClass(g, k, 1, &member,
                                                                 OTF2_METRIC_ASYNCHRONOUS,
                                                                 OTF2_RECORDER_KIND_ABSTRACT)))
            return false;
    }
    return true;
}

/* Wall-clock ns of a CLOCK_MONOTONIC ns value (rank 0's clock). */
static uint64_t sm_otf2_realtime_of(uint64_t monotonic_ns)
{
    int64_t delta = (int64_t)(monotonic_ns - sm_clock_monotonic_at_init_ns());
    return sm_clock_realtime_at_init_ns() + (uint64_t)delta;
}

/* Devices: each distinct device of a rank's GPU streams is a system-tree
 * node (domain ACCELERATOR_DEVICE) under its host and a location group
 * (ACCELERATOR, created by the process's group) holding its streams.  They
 * are numbered in rank order, then by first appearance among the rank's
 * locations: group n_ranks + k, node first_node + k. */
static bool sm_otf2_same_device(const sm_otf2_loc_info_t *a, const sm_otf2_loc_info_t *b)
{
    return a->has_device == b->has_device &&
           (!a->has_device ||
            (a->device.vendor == b->device.vendor && a->device.ordinal == b->device.ordinal));
}

/* Whether location i of p is the first of its device; and the number of
 * distinct devices among p's locations before i (i = n_locations: all). */
static uint32_t sm_otf2_devices_before(const sm_otf2_proc_info_t *p, uint32_t i, bool *first)
{
    uint32_t k = 0;
    if (first)
        *first = false;
    for (uint32_t j = 0; j <= i && j < p->n_locations; j++) {
        if (p->locations[j].type != SM_LOCATION_GPU_STREAM)
            continue;
        bool seen = false;
        for (uint32_t e = 0; e < j && !seen; e++)
            seen = p->locations[e].type == SM_LOCATION_GPU_STREAM &&
                   sm_otf2_same_device(&p->locations[e], &p->locations[j]);
        if (j == i) {
            if (first)
                *first = !seen;
            if (seen) {
                /* Its device's index: that of the first location with it. */
                for (uint32_t e = 0; e < j; e++)
                    if (p->locations[e].type == SM_LOCATION_GPU_STREAM &&
                        sm_otf2_same_device(&p->locations[e], &p->locations[j]))
                        return sm_otf2_devices_before(p, e, NULL);
            }
            return k;
        }
        if (!seen)
            k++;
    }
    return k;
}

/* The device slot (0, 1, ... over the job) of location i of rank r. */
static uint32_t sm_otf2_device_slot(const sm_otf2_proc_info_t *procs, uint32_t r, uint32_t i)
{
    uint32_t k = 0;
    for (uint32_t q = 0; q < r; q++)
        k += sm_otf2_devices_before(&procs[q], procs[q].n_locations, NULL);
    return k + sm_otf2_devices_before(&procs[r], i, NULL);
}

/* Whether the job's processes are MPI ranks: MPI_COMM_WORLD (key {0, 0},
 * defined by the MPI adapter at MPI_Init) is among its communicators.  The
 * processes of a job without MPI (torchrun, a Slurm step, a program and the
 * processes it started) are not named as MPI ranks. */
static bool sm_otf2_job_has_mpi(const sm_otf2_writer_t *w)
{
    const sm_defset_t *d = w->job->defs;
    uint32_t n = d ? sm_defset_comm_count(d) : 0;
    for (uint32_t i = 0; i < n; i++) {
        const sm_comm_def_t *c = sm_defset_comm_get(d, i);
        if (c && c->key.leader == 0 && c->key.seq == 0)
            return true;
    }
    return false;
}

/* System tree: the job, one node per host, one location group per process:
 * "MPI Rank R" in an MPI job, "Process R" (the launcher's rank) in a job of
 * several processes without MPI, "Process PID" for a process alone. */
static bool sm_otf2_system_tree(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g,
                                const sm_otf2_proc_info_t *procs)
{
    const sm_job_process_t *jp = w->job->processes;
    uint32_t n = w->n_ranks, n_nodes = 0;
    uint32_t *node_of = calloc(n ? n : 1, sizeof *node_of);
    OTF2_StringRef s_machine = 0, s_job = 0, s_node = 0, s_host = 0;
    char text[160];
    if (!sm_otf2_got(w, node_of, strerror(ENOMEM)))
        return false;
    bool ok = sm_otf2_extra_string(w, g, "machine", &s_machine) &&
              sm_otf2_extra_string(w, g, "job", &s_job) &&
              sm_otf2_extra_string(w, g, "node", &s_node) &&
              sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNode(
                                g, 0, s_job, s_machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE));
    /* One node per distinct host name, in order of first appearance. */
    for (uint32_t r = 0; ok && r < n; r++) {
        const char *host = jp && jp[r].hostname[0] ? jp[r].hostname : "unknown";
        uint32_t k = 0;
        while (k < r && strcmp(jp && jp[k].hostname[0] ? jp[k].hostname : "unknown", host) != 0)
            k++;
        if (k < r) {
            node_of[r] = node_of[k];
            continue;
        }
        node_of[r] = 1 + n_nodes++;
        ok = sm_otf2_extra_string(w, g, host, &s_host) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNode(g, node_of[r], s_host, s_node,
                                                                    0));
    }
    bool mpi = sm_otf2_job_has_mpi(w);
    for (uint32_t r = 0; ok && r < n; r++) {
        OTF2_StringRef s_process;
        if (n > 1)
            snprintf(text, sizeof text, "%s %" PRIu32, mpi ? "MPI Rank" : "Process", r);
        else
            snprintf(text, sizeof text, "Process %" PRId64, jp ? jp[r].pid : (int64_t)w->run->pid);
        ok = sm_otf2_extra_string(w, g, text, &s_process) &&
             sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocationGroup(
                               g, sm_otf2_process_group_ref(r), s_process,
                               OTF2_LOCATION_GROUP_TYPE_PROCESS, node_of[r],
                               OTF2_UNDEFINED_LOCATION_GROUP));
    }
#ifdef SM_OTF2_HAVE_ACCELERATOR_GROUP
    OTF2_StringRef s_device = 0, s_uuid = 0, s_pci = 0;
    ok = ok && sm_otf2_extra_string(w, g, "accelerator", &s_device) &&
         sm_otf2_extra_string(w, g, "UUID", &s_uuid) &&
         sm_otf2_extra_string(w, g, "PCI bus id", &s_pci);
    for (uint32_t r = 0; ok && r < n; r++) {
        const sm_otf2_proc_info_t *p = &procs[r];
        for (uint32_t i = 0; ok && i < p->n_locations; i++) {
            bool first;
            const sm_otf2_loc_info_t *li = &p->locations[i];
            if (li->type != SM_LOCATION_GPU_STREAM)
                continue;
            sm_otf2_devices_before(p, i, &first);
            if (!first)
                continue;
            uint32_t slot = sm_otf2_device_slot(procs, r, i);
            uint32_t node = 1 + n_nodes + slot;
            OTF2_StringRef s_name, s_group, s_value;
            const sm_gpu_device_def_t *d = &li->device;
            if (li->has_device)
                snprintf(text, sizeof text, "GPU %" PRIu32 " %s", d->ordinal, d->name);
            else
                snprintf(text, sizeof text, "GPU (unknown)");
            ok = sm_otf2_extra_string(w, g, text, &s_name) &&
                 sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNode(g, node, s_name, s_device,
                                                                        node_of[r])) &&
                 sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNodeDomain(
                                   g, node, OTF2_SYSTEM_TREE_DOMAIN_ACCELERATOR_DEVICE));
            if (ok && li->has_device && d->uuid[0])
                ok = sm_otf2_extra_string(w, g, d->uuid, &s_value) &&
                     sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNodeProperty(
                                       g, node, s_uuid, OTF2_TYPE_STRING,
                                       (OTF2_AttributeValue){.stringRef = s_value}));
            if (ok && li->has_device && d->pci_bus_id[0])
                ok = sm_otf2_extra_string(w, g, d->pci_bus_id, &s_value) &&
                     sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteSystemTreeNodeProperty(
                                       g, node, s_pci, OTF2_TYPE_STRING,
                                       (OTF2_AttributeValue){.stringRef = s_value}));
            if (n > 1)
                snprintf(text, sizeof text, "GPU %" PRIu32 " of rank %" PRIu32,
                         li->has_device ? d->ordinal : 0, r);
            else
                snprintf(text, sizeof text, "GPU %" PRIu32, li->has_device ? d->ordinal : 0);
            ok = ok && sm_otf2_extra_string(w, g, text, &s_group) &&
                 sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocationGroup(
                                   g, n + slot, s_group, OTF2_LOCATION_GROUP_TYPE_ACCELERATOR, node,
                                   sm_otf2_process_group_ref(r)));
        }
    }
#else
    (void)procs;
#endif
    free(node_of);
    return ok;
}

bool sm_otf2_write_global_defs(sm_otf2_writer_t *w, OTF2_GlobalDefWriter *g,
                               const sm_otf2_proc_info_t *procs)
{
    const sm_defset_t *d = w->job->defs;
    uint32_t n_regions = sm_defset_region_count(d);
    uint32_t n_attributes = sm_defset_attribute_count(d);
    uint32_t n_strings = sm_defset_string_count(d);
    w->next_string = n_strings;

    /* Clock: ns of rank 0's CLOCK_MONOTONIC, anchored to wall-clock time. */
    bool any = false, threads = false, metrics = false;
    uint64_t lo = 0, hi = 0;
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        const sm_otf2_proc_info_t *p = &procs[r];
        if (!p->locations)
            continue; /* a rank that left no data (sysmeasure-merge) */
        if (!any || p->min_ns < lo)
            lo = p->min_ns;
        if (!any || p->max_ns > hi)
            hi = p->max_ns;
        any = true;
        threads |= p->thread_events;
        metrics |= p->metric_events;
    }
    if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteClockProperties(
                           g, UINT64_C(1000000000), lo, hi > lo ? hi - lo : 0,
                           sm_otf2_realtime_of(lo))))
        return false;

    for (uint32_t i = 0; i < n_strings; i++) {
        const char *s = sm_defset_string_get(d, i);
        if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteString(g, i, s ? s : "")))
            return false;
    }

    /* Paradigms: those of the regions, pthread for thread events, MPI for
     * communicators. */
    bool used[256] = {false};
    for (uint32_t i = 0; i < n_regions; i++)
        used[sm_otf2_paradigm(sm_defset_region_get(d, i)->paradigm)] = true;
    used[OTF2_PARADIGM_PTHREAD] |= threads;
    used[OTF2_PARADIGM_MPI] |= w->mpi_comms;
    used[OTF2_PARADIGM_OPENMP] |= w->team_comms;
    used[sm_otf2_hashed_paradigm(false)] |= w->nccl_comms;
    used[sm_otf2_hashed_paradigm(true)] |= w->rccl_comms;
    for (unsigned p = 0; p < 256; p++) {
        const char *name;
        OTF2_ParadigmClass cls;
        OTF2_StringRef s;
        if (!used[p] || !sm_otf2_paradigm_info((OTF2_Paradigm)p, &name, &cls))
            continue;
        if (!sm_otf2_extra_string(w, g, name, &s) ||
            !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteParadigm(g, (OTF2_Paradigm)p, s, cls)))
            return false;
    }

    OTF2_StringRef s_empty;
    if (!sm_otf2_extra_string(w, g, "", &s_empty))
        return false;

    for (uint32_t i = 0; i < n_attributes; i++) {
        const sm_attribute_def_t *a = sm_defset_attribute_get(d, i);
        OTF2_Type type;
        switch (a->type) {
        case SM_ATTR_INT64:
            type = OTF2_TYPE_INT64;
            break;
        case SM_ATTR_DOUBLE:
            type = OTF2_TYPE_DOUBLE;
            break;
        case SM_ATTR_STRING:
            type = OTF2_TYPE_STRING;
            break;
        default:
            continue; /* its values were skipped too */
        }
        if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteAttribute(g, i, a->name, s_empty, type)))
            return false;
    }

    /* A sampled function's description is its module (from its contexts). */
    uint32_t n_contexts = sm_defset_context_count(d);
    OTF2_StringRef *desc = malloc(sizeof *desc * (n_regions + 1u));
    if (!desc)
        return sm_otf2_got(w, NULL, "out of memory");
    for (uint32_t i = 0; i < n_regions; i++)
        desc[i] = s_empty;
    for (uint32_t i = 0; i < n_contexts; i++) {
        const sm_context_def_t *c = sm_defset_context_get(d, i);
        if (c->region < n_regions && c->module < n_strings)
            desc[c->region] = c->module;
    }
    for (uint32_t i = 0; i < n_regions; i++) {
        const sm_region_def_t *r = sm_defset_region_get(d, i);
        OTF2_StringRef file = r->file < n_strings ? r->file : OTF2_UNDEFINED_STRING;
        if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteRegion(
                               g, i, r->name, r->name, desc[i], sm_otf2_role(r->role),
                               sm_otf2_paradigm(r->paradigm), OTF2_REGION_FLAG_NONE, file,
                               r->line, 0 /* end line: unknown */))) {
            free(desc);
            return false;
        }
    }
    free(desc);

    /* Call-stack sampling: its timer, and the calling contexts (parents
     * first) that the CallingContextSample events name. */
    if (n_contexts) {
        const sm_config_t *cfg = w->run->config;
        int64_t hz = cfg && cfg->sampling_freq > 0 ? cfg->sampling_freq : 100;
        char name[96];
        snprintf(name, sizeof name, "call-stack sampling (%s time)",
                 cfg && cfg->sampling_clock == SM_SAMPLING_CLOCK_REAL ? "wall-clock" : "CPU");
        OTF2_StringRef s_gen;
        if (!sm_otf2_extra_string(w, g, name, &s_gen) ||
            !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteInterruptGenerator(
                               g, 0, s_gen, OTF2_INTERRUPT_GENERATOR_MODE_TIME, OTF2_BASE_DECIMAL,
                               -9, (uint64_t)(1000000000 / hz))))
            return false;
        for (uint32_t i = 0; i < n_contexts; i++) {
            const sm_context_def_t *c = sm_defset_context_get(d, i);
            OTF2_CallingContextRef parent =
                c->parent < i ? c->parent : OTF2_UNDEFINED_CALLING_CONTEXT;
            if (!sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteCallingContext(
                                   g, i, c->region, OTF2_UNDEFINED_SOURCE_CODE_LOCATION, parent)))
                return false;
        }
    }

    if (!sm_otf2_system_tree(w, g, procs))
        return false;

    char text[96];
    for (uint32_t r = 0; r < w->n_ranks; r++) {
        /* A rank that left no data still is a member of its communicators:
         * an empty location stands for it. */
        OTF2_StringRef s_none;
        if (!procs[r].locations &&
            (!sm_otf2_extra_string(w, g, "no data (the rank left none)", &s_none) ||
             !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocation(
                                g, sm_otf2_location_ref(r, 0), s_none,
                                OTF2_LOCATION_TYPE_CPU_THREAD, 0, sm_otf2_process_group_ref(r)))))
            return false;
        for (uint32_t i = 0; i < procs[r].n_locations; i++) {
            const sm_otf2_loc_info_t *li = &procs[r].locations[i];
            OTF2_StringRef s_name;
            OTF2_LocationGroupRef group = sm_otf2_process_group_ref(r);
#ifdef SM_OTF2_HAVE_ACCELERATOR_GROUP
            if (li->type == SM_LOCATION_GPU_STREAM)
                group = w->n_ranks + sm_otf2_device_slot(procs, r, i);
#endif
            snprintf(text, sizeof text, "%s", li->name);
            if (!sm_otf2_extra_string(w, g, text, &s_name) ||
                !sm_otf2_ok(w, OTF2_GlobalDefWriter_WriteLocation(
                                   g, sm_otf2_location_ref(r, li->id), s_name,
                                   sm_otf2_location_type(li->type), li->n_events, group)))
                return false;
        }
    }
    for (uint32_t r = 0; r < w->n_ranks; r++)
        for (uint32_t i = 0; i < procs[r].n_locations; i++)
            if (procs[r].locations[i].creator != SM_INVALID_ID &&
                !sm_otf2_lineage(w, g, r, &procs[r], &procs[r].locations[i]))
                return false;

    if (w->n_comms && !sm_otf2_comms(w, g, procs))
        return false;
    if (threads && !sm_otf2_thread_contingents(w, g, procs))
        return false;
    /* Named metrics are numbered after the transfer ones: both go in. */
    bool named = sm_defset_metric_count(w->job->defs) > 0;
    return (!(metrics || named) || sm_otf2_metrics(w, g)) && (!named || sm_otf2_named_metrics(w, g));
}
