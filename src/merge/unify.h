/* Definitions unified across the processes of a job.
 *
 * Every process names strings, regions, attributes and communicators with its
 * own dense ids.  At finalize the definition sets travel up a binomial tree
 * (each parent merges its children's sets into its own, so no process ever
 * holds more than the union), the root's union is broadcast, and each process
 * maps its own ids into it.  Rank 0 merges its own definitions first, so its
 * ids map to themselves; a job of one process gets identity maps.
 *
 * The same sets, serialized, are what sysmeasure-merge reads back from the
 * per-process files of a job that ended without MPI_Finalize. */
#ifndef SM_UNIFY_H
#define SM_UNIFY_H

#include <stddef.h>
#include <stdint.h>
#include "../core/adapter_api.h"
#include "../core/contexts.h"
#include "../core/compiler.h"
#include "../core/definitions.h"
#include "../core/procs.h"

typedef struct sm_defset sm_defset_t;

/* Ids of one process's definitions in the unified set. */
typedef struct sm_id_maps {
    uint32_t n_strings, n_regions, n_attributes, n_comms, n_metrics, n_contexts;
    uint32_t *strings, *regions, *attributes, *comms, *metrics, *contexts;
} sm_id_maps_t;

/* ---- a set ---- */
sm_defset_t *sm_defset_new(void) SM_HIDDEN;
void sm_defset_free(sm_defset_t *d) SM_HIDDEN;
/* Interning, returning the id in the set (SM_INVALID_ID on ENOMEM). */
uint32_t sm_defset_string(sm_defset_t *d, const char *s) SM_HIDDEN;
uint32_t sm_defset_region(sm_defset_t *d, const char *name, const char *file, uint32_t line,
                          uint8_t paradigm, uint8_t role) SM_HIDDEN;
uint32_t sm_defset_attribute(sm_defset_t *d, const char *name, uint8_t type) SM_HIDDEN;
/* Same key: same id; the first definition with members and a name wins. */
uint32_t sm_defset_comm(sm_defset_t *d, sm_comm_key_t key, const char *name, uint32_t size,
                        const uint32_t *members, uint32_t parent) SM_HIDDEN;

/* Named metrics (name and unit as string ids of the set); same name, same
 * id (the first definition's unit and kind stay). */
typedef struct sm_named_metric_def {
    sm_string_id_t name;
    sm_string_id_t unit;
    uint32_t kind; /* sm_metric_kind_t */
} sm_named_metric_def_t;
uint32_t sm_defset_metric(sm_defset_t *d, const char *name, const char *unit,
                          uint32_t kind) SM_HIDDEN;
uint32_t sm_defset_metric_count(const sm_defset_t *d) SM_HIDDEN;
const sm_named_metric_def_t *sm_defset_metric_get(const sm_defset_t *d, uint32_t id) SM_HIDDEN;

/* Calling contexts (contexts.h; region, parent and module are ids of the
 * set): same (region, parent), same id. */
uint32_t sm_defset_context(sm_defset_t *d, uint32_t region, uint32_t parent,
                           uint32_t module) SM_HIDDEN;
uint32_t sm_defset_context_count(const sm_defset_t *d) SM_HIDDEN;
const sm_context_def_t *sm_defset_context_get(const sm_defset_t *d, uint32_t id) SM_HIDDEN;

uint32_t sm_defset_string_count(const sm_defset_t *d) SM_HIDDEN;
uint32_t sm_defset_region_count(const sm_defset_t *d) SM_HIDDEN;
uint32_t sm_defset_attribute_count(const sm_defset_t *d) SM_HIDDEN;
uint32_t sm_defset_comm_count(const sm_defset_t *d) SM_HIDDEN;
const char *sm_defset_string_get(const sm_defset_t *d, uint32_t id) SM_HIDDEN;
/* name/file fields are string ids of the set. */
const sm_region_def_t *sm_defset_region_get(const sm_defset_t *d, uint32_t id) SM_HIDDEN;
const sm_attribute_def_t *sm_defset_attribute_get(const sm_defset_t *d, uint32_t id) SM_HIDDEN;
const sm_comm_def_t *sm_defset_comm_get(const sm_defset_t *d, uint32_t id) SM_HIDDEN;
/* Region name, "?" when unknown. */
const char *sm_defset_region_name(const sm_defset_t *d, uint32_t id) SM_HIDDEN;

/* ---- serialized form (for the tree and for per-process files) ---- */
void *sm_defset_serialize(const sm_defset_t *d, uint64_t *len) SM_HIDDEN;
/* Merges a serialized set into d; the ids the blob's entries got in d go to
 * maps when it is not NULL (malloc'd arrays).  0, or -1 on a malformed blob. */
int sm_defset_merge_blob(sm_defset_t *d, const void *blob, uint64_t len, sm_id_maps_t *maps) SM_HIDDEN;
void sm_id_maps_free(sm_id_maps_t *m) SM_HIDDEN;

/* This process's definitions (core tables) as a set; its ids equal the
 * core's ids.  rank: the process's, for the keys of its thread teams. */
sm_defset_t *sm_defset_from_process(uint32_t rank) SM_HIDDEN;

/* A process's definitions as plain tables, indexed by its ids (a killed
 * process's, read back from its journal: merge/recover.h). */
typedef struct sm_defs_lists {
    uint32_t n_strings, n_regions, n_attributes, n_comms, n_metrics, n_contexts;
    char **strings;                 /* NULL entries: "" */
    sm_region_def_t *regions;
    sm_attribute_def_t *attributes;
    sm_comm_def_t *comms;
    sm_named_metric_def_t *metrics;
    sm_context_def_t *contexts;
} sm_defs_lists_t;
/* The same set sm_defset_from_process makes, from such tables. */
sm_defset_t *sm_defset_from_lists(const sm_defs_lists_t *l, uint32_t rank) SM_HIDDEN;

/* The whole exchange over procs (collective): returns the unified set on
 * every process and fills maps for this process's ids.  NULL when the
 * transport failed or memory ran out (message printed). */
sm_defset_t *sm_unify(const sm_procs_t *procs, sm_id_maps_t *maps) SM_HIDDEN;
/* Where the union of the definitions is wanted: on every process (the OTF2
 * writer reads it on every rank), or on rank 0 only, the others getting
 * their maps down the tree, so that no process but rank 0 ever holds or
 * reads the union (what a run needs for its profile; the work and memory of
 * a rank other than 0 then grow with its subtree's definitions, not with
 * the job's). */
typedef enum { SM_UNIFY_EVERY_RANK, SM_UNIFY_ROOT_ONLY } sm_unify_scope_t;
/* The exchange for given local definitions (sm_unify: the process's, every
 * rank; the simulated ranks of bench-scale and test-scale: their own);
 * local NULL: this process failed to build its set (it still takes part).
 * 0 with *union_out the union (NULL on ranks other than 0 with
 * SM_UNIFY_ROOT_ONLY) and maps filled; -1 (message printed) when this
 * process, or another before it, failed. */
int sm_unify_set(const sm_procs_t *procs, const sm_defset_t *local, sm_unify_scope_t scope,
                 sm_defset_t **union_out, sm_id_maps_t *maps) SM_HIDDEN;

/* ---- tree helpers shared by the other exchanges ---- */
/* Gathers every process's blob at rank 0 along a binomial tree: at the root,
 * *out is a sequence of records {uint32 rank, uint64 len, bytes} in no
 * particular order (malloc'd); elsewhere *out is NULL.  0 or -1. */
int sm_tree_gather(const sm_procs_t *procs, const void *blob, uint64_t len, void **out,
                   uint64_t *out_len) SM_HIDDEN;
/* Iterates such a sequence; returns the next position or NULL at the end. */
const uint8_t *sm_tree_next(const uint8_t *p, const uint8_t *end, uint32_t *rank,
                            const uint8_t **blob, uint64_t *len) SM_HIDDEN;

/* The group of one process (no MPI). */
const sm_procs_t *sm_procs_single(void) SM_HIDDEN;

#endif
