/* Definitions: strings, regions and attributes, interned once per process and
 * named by small integer ids.  Thread-safe: definers take a mutex, readers of
 * an id already handed out take none (entries live in blocks that never move). */
#ifndef SM_DEFINITIONS_H
#define SM_DEFINITIONS_H

#include <stdint.h>
#include "compiler.h"

typedef uint32_t sm_string_id_t;
typedef uint32_t sm_region_id_t;
typedef uint32_t sm_attribute_id_t;

#define SM_INVALID_ID UINT32_MAX

/* Who defined a region; maps to an OTF2 paradigm (paradigms.def). */
typedef enum {
#define SM_PARADIGM(e, name, why) SM_PARADIGM_##e,
#include "paradigms.def"
#undef SM_PARADIGM
    SM_PARADIGM_COUNT
} sm_paradigm_t;

typedef enum {
    SM_ROLE_FUNCTION,
    SM_ROLE_CODE,   /* a user-named code region */
    SM_ROLE_WRAPPER,/* an intercepted library call */
    SM_ROLE_ARTIFICIAL,
    SM_ROLE_PARALLEL,
    SM_ROLE_BARRIER,
    SM_ROLE_TASK,
    SM_ROLE_LOOP,
    SM_ROLE_COLLECTIVE,
    SM_ROLE_POINT2POINT,
    SM_ROLE_DATA_TRANSFER, /* a copy or memset of device memory */
    SM_ROLE_REDUCE, /* a loop that reduces (Kokkos parallel_reduce; OTF2: loop) */
    SM_ROLE_SCAN,   /* a loop that scans (Kokkos parallel_scan; OTF2: loop) */
    SM_ROLE_COUNT
} sm_region_role_t;

typedef struct sm_region_def {
    sm_string_id_t name;
    sm_string_id_t file; /* SM_INVALID_ID when unknown */
    uint32_t line;       /* 0 when unknown */
    uint8_t paradigm;    /* sm_paradigm_t */
    uint8_t role;        /* sm_region_role_t */
    uint8_t filtered;    /* left out by the filter (see SM_REGION_FILTERED) */
} sm_region_def_t;

/* A region the filter (util/filter.h) leaves out is still defined, but the
 * id handed out for it carries this bit: enter and leave drop it with one
 * test, so a filtered region costs its lookup once and a few ns per call.
 * Its children go to its parent.  SM_INVALID_ID has the bit too. */
#define SM_REGION_FILTERED 0x80000000u

static inline int sm_region_filtered(sm_region_id_t id)
{
    return (id & SM_REGION_FILTERED) != 0;
}

struct sm_filter;
/* The filter applied to regions defined from now on (NULL: none); the
 * caller keeps it alive. */
void sm_definitions_set_filter(const struct sm_filter *filter) SM_HIDDEN;

typedef enum {
    SM_ATTR_INT64,
    SM_ATTR_DOUBLE,
    SM_ATTR_STRING /* value: an sm_string_id_t */
} sm_attr_type_t;

typedef struct sm_attribute_def {
    sm_string_id_t name;
    uint8_t type; /* sm_attr_type_t */
} sm_attribute_def_t;

int sm_definitions_init(void) SM_HIDDEN;
/* In the child that goes on after daemon(): the lock made new. */
void sm_definitions_after_daemon_child(void) SM_HIDDEN;

sm_string_id_t sm_string_intern(const char *s) SM_HIDDEN;
const char *sm_string_get(sm_string_id_t id) SM_HIDDEN;
uint32_t sm_string_count(void) SM_HIDDEN;

/* Same (name, file, line, paradigm) gives the same id; with
 * SM_REGION_FILTERED set when the filter leaves the region out. */
sm_region_id_t sm_region_define(const char *name, const char *file, uint32_t line,
                                sm_paradigm_t paradigm, sm_region_role_t role) SM_HIDDEN;
/* The same, for a name that has a mangled form too (the filter's MANGLED
 * rules match it); mangled may be NULL. */
sm_region_id_t sm_region_define_mangled(const char *name, const char *mangled, const char *file,
                                        uint32_t line, sm_paradigm_t paradigm,
                                        sm_region_role_t role) SM_HIDDEN;
/* Also for an id with SM_REGION_FILTERED. */
const sm_region_def_t *sm_region_get(sm_region_id_t id) SM_HIDDEN;
const char *sm_region_name(sm_region_id_t id) SM_HIDDEN;
/* The number of regions defined, published with release once a region's
 * entry is complete (definitions.c); inline, for the user API's check of
 * a handle on every enter. */
extern uint32_t sm_regions_defined SM_HIDDEN;
static inline uint32_t sm_region_count(void)
{
    return __atomic_load_n(&sm_regions_defined, __ATOMIC_ACQUIRE);
}

/* Same (name, type) gives the same id. */
sm_attribute_id_t sm_attribute_define(const char *name, sm_attr_type_t type) SM_HIDDEN;
const sm_attribute_def_t *sm_attribute_get(sm_attribute_id_t id) SM_HIDDEN;
uint32_t sm_attribute_count(void) SM_HIDDEN;

/* Communicators (MPI): a dense per-process id, and a key that every member
 * computes alike, so that the definitions of all members unify to one global
 * communicator: the world rank of the communicator's leader and a number
 * that leader handed out. */
typedef uint32_t sm_comm_id_t;

typedef struct sm_comm_key {
    uint32_t leader; /* world rank; SM_COMM_LEADER_SELF for MPI_COMM_SELF */
    uint32_t seq;    /* the leader's counter; MPI_COMM_WORLD is {0, 0} */
} sm_comm_key_t;

#define SM_COMM_LEADER_SELF UINT32_MAX
#define SM_COMM_NONE UINT32_MAX /* a communicator the adapter could not name */

/* OpenMP thread teams are communicators too, local to their process: the
 * key's leader is SM_COMM_LEADER_PROCESS until the definitions leave the
 * process (sm_defset_from_process puts the process's rank there), and seq
 * has SM_COMM_SEQ_TEAM set (MPI's counters never reach it).  Members are
 * the process's location ids, by thread number; parent: the team of the
 * encountering thread, or SM_COMM_NONE. */
#define SM_COMM_LEADER_PROCESS (UINT32_MAX - 1)
#define SM_COMM_SEQ_TEAM 0x80000000u

static inline int sm_comm_key_is_team(sm_comm_key_t key)
{
    return (key.seq & SM_COMM_SEQ_TEAM) != 0;
}

/* Communicators named by a hash that each member computes alike on its own
 * (NCCL's and RCCL's, from the unique id all their ranks share): the key's
 * leader is SM_COMM_LEADER_HASHED with 27 bits of the hash and a vendor bit
 * (world ranks never reach it), seq 31 more bits (never a team's).  Their
 * members are world ranks as for MPI, but a process knows only its own
 * place: SM_COMM_MEMBER_SELF there (the process's rank once the definitions
 * leave it, as for a team's leader) and SM_COMM_MEMBER_UNKNOWN elsewhere;
 * the definitions of the other members fill those in as they unify. */
#define SM_COMM_LEADER_HASHED 0xE0000000u
#define SM_COMM_LEADER_HASHED_MASK 0xF0000000u
#define SM_COMM_LEADER_HASHED_AMD 0x08000000u /* RCCL's (HIP), else NCCL's (CUDA) */
#define SM_COMM_MEMBER_UNKNOWN UINT32_MAX
#define SM_COMM_MEMBER_SELF (UINT32_MAX - 1)

static inline sm_comm_key_t sm_comm_key_hashed(uint64_t hash, int amd)
{
    sm_comm_key_t key = {SM_COMM_LEADER_HASHED | (amd ? SM_COMM_LEADER_HASHED_AMD : 0u) |
                             (uint32_t)((hash >> 31) & 0x07FFFFFFu),
                         (uint32_t)(hash & 0x7FFFFFFFu)};
    return key;
}

static inline int sm_comm_key_is_hashed(sm_comm_key_t key)
{
    return (key.leader & SM_COMM_LEADER_HASHED_MASK) == SM_COMM_LEADER_HASHED &&
           !sm_comm_key_is_team(key);
}

typedef struct sm_comm_def {
    sm_comm_key_t key;
    sm_string_id_t name;
    uint32_t size;
    uint32_t *members; /* world ranks in comm rank order; NULL: world/self */
    sm_comm_id_t parent; /* SM_COMM_NONE when none */
} sm_comm_def_t;

/* Same key gives the same id; defining it again renames it, and gives it
 * members if it had none (a team's, known after its first instance), or
 * those it had as SM_COMM_MEMBER_UNKNOWN (a hashed communicator of which
 * one process holds several ranks). */
sm_comm_id_t sm_comm_define(sm_comm_key_t key, const char *name, uint32_t size,
                            const uint32_t *members, sm_comm_id_t parent) SM_HIDDEN;
const sm_comm_def_t *sm_comm_get(sm_comm_id_t id) SM_HIDDEN;
uint32_t sm_comm_count(void) SM_HIDDEN;

const char *sm_paradigm_name(sm_paradigm_t p) SM_HIDDEN;
/* What a region is, in a word for tables: for Kokkos the kinds of
 * kokkos-tools' kernel-timer (ParFor, ParRed, ParScan, REGION, FENCE,
 * DEEPCOPY, EVENT), for the others its role (function, loop, barrier,
 * collective, p2p, ...). */
const char *sm_region_kind_name(sm_paradigm_t p, sm_region_role_t role) SM_HIDDEN;

#endif
