/* Interning of strings, regions and attributes.
 *
 * Each kind is a table of blocks (entries never move, so an id handed out can
 * be read without a lock) plus an open-addressing hash index.  A definer
 * first looks for what it defines without a lock (an entry and its slot are
 * published complete, and an index that grows is replaced, never freed); only
 * what is new takes the one mutex, with signals held meanwhile (sig_hold.h).
 * So the callers that define on every event (NVTX ranges, annotations) pay
 * no lock and no system call once their names are known. */
#include "definitions.h"

#include "../util/filter.h"
#include "../util/hash.h"
#include "../util/utf8.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "sig_hold.h"

#define SM_DEF_BLOCK_BITS 10
#define SM_DEF_BLOCK (1u << SM_DEF_BLOCK_BITS)
#define SM_DEF_MAX_BLOCKS 4096 /* 4M entries of each kind */

typedef struct sm_def_table {
    size_t entry_size;
    void *blocks[SM_DEF_MAX_BLOCKS];
    uint32_t count; /* published with release after the entry is complete */
    struct sm_def_index *index; /* published with release; NULL: none yet */
} sm_def_table_t;

/* hash -> id + 1 (0: empty), each slot stored with release once its entry
 * is complete.  A larger one replaces it as the table grows; the one it
 * replaces stays (readers without the lock may still be in it), reachable
 * from the new one: together at most twice the last one's size. */
typedef struct sm_def_index {
    struct sm_def_index *replaced;
    uint32_t size;
    uint32_t slot[];
} sm_def_index_t;

static pthread_mutex_t sm_def_lock = PTHREAD_MUTEX_INITIALIZER;

/* Definitions are made on the application's threads: no signal handler may
 * jump out while the lock is held (sig_hold.h); with --crash-safe the
 * journal, which grows a file, is written under it. */
static void sm_def_lock_take(void)
{
    sm_sig_hold(sm_journal_on() ? SM_SIG_LOCKS_IO : SM_SIG_LOCKS);
    pthread_mutex_lock(&sm_def_lock);
}

static void sm_def_lock_give(void)
{
    pthread_mutex_unlock(&sm_def_lock);
    sm_sig_release();
}

void sm_definitions_after_daemon_child(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    sm_def_lock = m; /* a thread of the parent may have held it */
}
static sm_def_table_t sm_strings = {.entry_size = sizeof(char *)};
static sm_def_table_t sm_regions = {.entry_size = sizeof(sm_region_def_t)};
static sm_def_table_t sm_attributes = {.entry_size = sizeof(sm_attribute_def_t)};
static sm_def_table_t sm_comms = {.entry_size = sizeof(sm_comm_def_t)};

static void *sm_def_entry(const sm_def_table_t *t, uint32_t id)
{
    return (char *)t->blocks[id >> SM_DEF_BLOCK_BITS] + (size_t)(id & (SM_DEF_BLOCK - 1)) * t->entry_size;
}

static uint64_t sm_hash_u64(uint64_t h, uint64_t v)
{
    return sm_fnv(&v, sizeof v, h);
}

/* Caller holds the lock.  Appends a zeroed entry and returns its id. */
static uint32_t sm_def_append(sm_def_table_t *t)
{
    uint32_t id = t->count;
    uint32_t b = id >> SM_DEF_BLOCK_BITS;
    if (b >= SM_DEF_MAX_BLOCKS)
        return SM_INVALID_ID;
    if (!t->blocks[b]) {
        t->blocks[b] = calloc(SM_DEF_BLOCK, t->entry_size);
        if (!t->blocks[b])
            return SM_INVALID_ID;
    }
    return id;
}

uint32_t sm_regions_defined;

static void sm_def_publish(sm_def_table_t *t, uint32_t id)
{
    __atomic_store_n(&t->count, id + 1, __ATOMIC_RELEASE);
    if (t == &sm_regions)
        __atomic_store_n(&sm_regions_defined, id + 1, __ATOMIC_RELEASE);
}

typedef int (*sm_def_equal_fn)(const sm_def_table_t *t, uint32_t id, const void *key);

/* Caller holds the lock.  Finds key, or the empty slot where it would go. */
static uint32_t *sm_def_slot(sm_def_table_t *t, uint64_t hash, const void *key, sm_def_equal_fn eq)
{
    if (!t->index)
        return NULL;
    uint32_t mask = t->index->size - 1;
    for (uint32_t i = (uint32_t)hash & mask;; i = (i + 1) & mask) {
        uint32_t v = t->index->slot[i];
        if (v == 0 || eq(t, v - 1, key))
            return &t->index->slot[i];
    }
}

/* Without the lock: the id of key, or SM_INVALID_ID when it is not (yet)
 * there; the caller then asks again under the lock. */
static uint32_t sm_def_find(const sm_def_table_t *t, uint64_t hash, const void *key,
                            sm_def_equal_fn eq)
{
    const sm_def_index_t *ix = __atomic_load_n(&t->index, __ATOMIC_ACQUIRE);
    if (!ix)
        return SM_INVALID_ID;
    uint32_t mask = ix->size - 1;
    for (uint32_t i = (uint32_t)hash & mask, n = 0; n < ix->size; i = (i + 1) & mask, n++) {
        uint32_t v = __atomic_load_n(&ix->slot[i], __ATOMIC_ACQUIRE);
        if (v == 0)
            break;
        if (eq(t, v - 1, key))
            return v - 1;
    }
    return SM_INVALID_ID;
}

typedef uint64_t (*sm_def_hash_fn)(const sm_def_table_t *t, uint32_t id);

/* Caller holds the lock.  Keeps the load factor under 1/2. */
static int sm_def_index_grow(sm_def_table_t *t, sm_def_hash_fn hash_of)
{
    if (t->index && (t->count + 1) * 2 < t->index->size)
        return 0;
    uint32_t size = t->index ? t->index->size * 2 : 1024;
    sm_def_index_t *index = calloc(1, sizeof *index + sizeof *index->slot * size);
    if (!index)
        return -1;
    index->size = size;
    index->replaced = t->index;
    for (uint32_t id = 0; id < t->count; id++) {
        uint32_t i = (uint32_t)hash_of(t, id) & (size - 1);
        while (index->slot[i])
            i = (i + 1) & (size - 1);
        index->slot[i] = id + 1;
    }
    __atomic_store_n(&t->index, index, __ATOMIC_RELEASE);
    return 0;
}

/* ---------------------------------------------------------------- strings */

static uint64_t sm_string_hash_of(const char *s)
{
    return sm_fnv(s, strlen(s), SM_FNV_START);
}

static uint64_t sm_string_hash_id(const sm_def_table_t *t, uint32_t id)
{
    return sm_string_hash_of(*(char **)sm_def_entry(t, id));
}

static int sm_string_equal(const sm_def_table_t *t, uint32_t id, const void *key)
{
    return strcmp(*(char **)sm_def_entry(t, id), key) == 0;
}

/* Caller holds the lock. */
static sm_string_id_t sm_string_intern_locked(const char *s)
{
    if (sm_def_index_grow(&sm_strings, sm_string_hash_id) != 0)
        return SM_INVALID_ID;
    uint64_t h = sm_string_hash_of(s);
    uint32_t *slot = sm_def_slot(&sm_strings, h, s, sm_string_equal);
    if (*slot)
        return *slot - 1;
    /* What goes into the archive and the summaries is valid UTF-8: a name
     * with invalid bytes is kept with U+FFFD in their place. */
    size_t n = strlen(s);
    if (sm_utf8_check(s, n) != n) {
        char *clean = sm_utf8_sanitize(s);
        sm_string_id_t cid = clean ? sm_string_intern_locked(clean) : SM_INVALID_ID;
        free(clean);
        return cid;
    }
    uint32_t id = sm_def_append(&sm_strings);
    char *copy = id == SM_INVALID_ID ? NULL : strdup(s);
    if (!copy)
        return SM_INVALID_ID;
    *(char **)sm_def_entry(&sm_strings, id) = copy;
    sm_def_publish(&sm_strings, id);
    __atomic_store_n(slot, id + 1, __ATOMIC_RELEASE);
    if (sm_journal_on())
        sm_journal_add(SM_J_STRING, &id, sizeof id, copy, (uint32_t)n);
    return id;
}

/* Without the lock: s's id, or SM_INVALID_ID when it is not there (an
 * invalid UTF-8 string is there only as its sanitized copy: the lock then). */
static sm_string_id_t sm_string_find(const char *s)
{
    return sm_def_find(&sm_strings, sm_string_hash_of(s), s, sm_string_equal);
}

sm_string_id_t sm_string_intern(const char *s)
{
    if (!s)
        return SM_INVALID_ID;
    sm_string_id_t found = sm_string_find(s);
    if (found != SM_INVALID_ID)
        return found;
    sm_def_lock_take();
    sm_string_id_t id = sm_string_intern_locked(s);
    sm_def_lock_give();
    return id;
}

const char *sm_string_get(sm_string_id_t id)
{
    if (id >= __atomic_load_n(&sm_strings.count, __ATOMIC_ACQUIRE))
        return NULL;
    return *(char **)sm_def_entry(&sm_strings, id);
}

uint32_t sm_string_count(void)
{
    return __atomic_load_n(&sm_strings.count, __ATOMIC_ACQUIRE);
}

/* ---------------------------------------------------------------- regions */

static uint64_t sm_region_hash_of(const sm_region_def_t *r)
{
    uint64_t h = SM_FNV_START;
    h = sm_hash_u64(h, r->name);
    h = sm_hash_u64(h, r->file);
    h = sm_hash_u64(h, r->line);
    return sm_hash_u64(h, r->paradigm);
}

static uint64_t sm_region_hash_id(const sm_def_table_t *t, uint32_t id)
{
    return sm_region_hash_of(sm_def_entry(t, id));
}

static int sm_region_equal(const sm_def_table_t *t, uint32_t id, const void *key)
{
    const sm_region_def_t *a = sm_def_entry(t, id), *b = key;
    return a->name == b->name && a->file == b->file && a->line == b->line &&
           a->paradigm == b->paradigm;
}

/* Caller holds the lock.  The id of the entry equal to key (entry_size bytes),
 * appended if new. */
static void sm_def_journal(const sm_def_table_t *t, uint32_t id);

static uint32_t sm_def_intern_locked(sm_def_table_t *t, const void *key, uint64_t hash,
                                     sm_def_equal_fn eq, sm_def_hash_fn hash_of)
{
    if (sm_def_index_grow(t, hash_of) != 0)
        return SM_INVALID_ID;
    uint32_t *slot = sm_def_slot(t, hash, key, eq);
    if (*slot)
        return *slot - 1;
    uint32_t id = sm_def_append(t);
    if (id == SM_INVALID_ID)
        return id;
    memcpy(sm_def_entry(t, id), key, t->entry_size);
    sm_def_publish(t, id);
    __atomic_store_n(slot, id + 1, __ATOMIC_RELEASE);
    sm_def_journal(t, id);
    return id;
}

static const sm_filter_t *sm_def_filter;

void sm_definitions_set_filter(const struct sm_filter *filter)
{
    sm_def_lock_take();
    sm_def_filter = filter;
    sm_def_lock_give();
}

sm_region_id_t sm_region_define(const char *name, const char *file, uint32_t line,
                                sm_paradigm_t paradigm, sm_region_role_t role)
{
    return sm_region_define_mangled(name, NULL, file, line, paradigm, role);
}

sm_region_id_t sm_region_define_mangled(const char *name, const char *mangled, const char *file,
                                        uint32_t line, sm_paradigm_t paradigm,
                                        sm_region_role_t role)
{
    if (!name)
        return SM_INVALID_ID;
    /* Known already: no lock. */
    sm_region_def_t key = {
        .name = sm_string_find(name),
        .file = file ? sm_string_find(file) : SM_INVALID_ID,
        .line = line,
        .paradigm = (uint8_t)paradigm,
        .role = (uint8_t)role,
    };
    sm_region_id_t id = SM_INVALID_ID;
    if (key.name != SM_INVALID_ID && (!file || key.file != SM_INVALID_ID))
        id = sm_def_find(&sm_regions, sm_region_hash_of(&key), &key, sm_region_equal);
    if (id != SM_INVALID_ID) {
        const sm_region_def_t *def = sm_def_entry(&sm_regions, id);
        return def->filtered ? id | SM_REGION_FILTERED : id;
    }
    sm_def_lock_take();
    key.name = sm_string_intern_locked(name);
    key.file = file ? sm_string_intern_locked(file) : SM_INVALID_ID;
    /* Decided once, when the region is new (an entry is published whole);
     * sysmeasure's own regions are never filtered. */
    key.filtered = sm_def_filter && paradigm != SM_PARADIGM_MEASUREMENT &&
                   sm_filter_excludes(sm_def_filter, name, mangled, file,
                                      sm_paradigm_name(paradigm));
    if (key.name != SM_INVALID_ID && (!file || key.file != SM_INVALID_ID))
        id = sm_def_intern_locked(&sm_regions, &key, sm_region_hash_of(&key), sm_region_equal,
                                  sm_region_hash_id);
    if (id != SM_INVALID_ID && ((const sm_region_def_t *)sm_def_entry(&sm_regions, id))->filtered)
        id |= SM_REGION_FILTERED;
    sm_def_lock_give();
    return id;
}

const sm_region_def_t *sm_region_get(sm_region_id_t id)
{
    id &= ~SM_REGION_FILTERED;
    if (id >= __atomic_load_n(&sm_regions.count, __ATOMIC_ACQUIRE))
        return NULL;
    return sm_def_entry(&sm_regions, id);
}

const char *sm_region_name(sm_region_id_t id)
{
    const sm_region_def_t *r = sm_region_get(id);
    return r ? sm_string_get(r->name) : "(unknown region)";
}

/* ---------------------------------------------------------------- attributes */

static uint64_t sm_attribute_hash_of(const sm_attribute_def_t *a)
{
    return sm_hash_u64(sm_hash_u64(SM_FNV_START, a->name), a->type);
}

static uint64_t sm_attribute_hash_id(const sm_def_table_t *t, uint32_t id)
{
    return sm_attribute_hash_of(sm_def_entry(t, id));
}

static int sm_attribute_equal(const sm_def_table_t *t, uint32_t id, const void *key)
{
    const sm_attribute_def_t *a = sm_def_entry(t, id), *b = key;
    return a->name == b->name && a->type == b->type;
}

sm_attribute_id_t sm_attribute_define(const char *name, sm_attr_type_t type)
{
    if (!name)
        return SM_INVALID_ID;
    sm_attribute_def_t key = {.name = sm_string_find(name), .type = (uint8_t)type};
    sm_attribute_id_t id = key.name == SM_INVALID_ID
                               ? SM_INVALID_ID
                               : sm_def_find(&sm_attributes, sm_attribute_hash_of(&key), &key,
                                             sm_attribute_equal);
    if (id != SM_INVALID_ID)
        return id; /* known already: no lock */
    sm_def_lock_take();
    key.name = sm_string_intern_locked(name);
    if (key.name != SM_INVALID_ID)
        id = sm_def_intern_locked(&sm_attributes, &key, sm_attribute_hash_of(&key),
                                  sm_attribute_equal, sm_attribute_hash_id);
    sm_def_lock_give();
    return id;
}

const sm_attribute_def_t *sm_attribute_get(sm_attribute_id_t id)
{
    if (id >= __atomic_load_n(&sm_attributes.count, __ATOMIC_ACQUIRE))
        return NULL;
    return sm_def_entry(&sm_attributes, id);
}

uint32_t sm_attribute_count(void)
{
    return __atomic_load_n(&sm_attributes.count, __ATOMIC_ACQUIRE);
}

/* ---------------------------------------------------------------- communicators */

static uint64_t sm_comm_hash_of(const sm_comm_def_t *c)
{
    return sm_hash_u64(sm_hash_u64(SM_FNV_START, c->key.leader), c->key.seq);
}

static uint64_t sm_comm_hash_id(const sm_def_table_t *t, uint32_t id)
{
    return sm_comm_hash_of(sm_def_entry(t, id));
}

static int sm_comm_equal(const sm_def_table_t *t, uint32_t id, const void *key)
{
    const sm_comm_def_t *a = sm_def_entry(t, id), *b = key;
    return a->key.leader == b->key.leader && a->key.seq == b->key.seq;
}

sm_comm_id_t sm_comm_define(sm_comm_key_t key, const char *name, uint32_t size,
                            const uint32_t *members, sm_comm_id_t parent)
{
    sm_def_lock_take();
    sm_comm_def_t def = {.key = key, .name = SM_INVALID_ID, .size = size, .parent = parent};
    if (name)
        def.name = sm_string_intern_locked(name);
    uint32_t before = sm_comms.count;
    sm_comm_id_t id = SM_INVALID_ID;
    if (members && size) {
        def.members = malloc(sizeof *def.members * size);
        if (def.members)
            memcpy(def.members, members, sizeof *def.members * size);
    }
    if (!members || !size || def.members)
        id = sm_def_intern_locked(&sm_comms, &def, sm_comm_hash_of(&def), sm_comm_equal,
                                  sm_comm_hash_id);
    if (id != SM_INVALID_ID && id < before) {
        /* Known already: a new name (MPI_Comm_set_name) replaces the old. */
        sm_comm_def_t *old = sm_def_entry(&sm_comms, id);
        if (def.name != SM_INVALID_ID)
            __atomic_store_n(&old->name, def.name, __ATOMIC_RELEASE);
        uint32_t *had = old->members;
        if (!had && def.members && old->size == def.size) {
            __atomic_store_n(&old->members, def.members, __ATOMIC_RELEASE);
        } else {
            /* A hashed communicator's places this definition knows. */
            for (uint32_t i = 0; had && def.members && old->size == def.size && i < def.size; i++)
                if (had[i] == SM_COMM_MEMBER_UNKNOWN && def.members[i] != SM_COMM_MEMBER_UNKNOWN)
                    __atomic_store_n(&had[i], def.members[i], __ATOMIC_RELEASE);
            free(def.members);
        }
        sm_def_journal(&sm_comms, id); /* renamed or given members */
    } else if (id == SM_INVALID_ID) {
        free(def.members);
    }
    sm_def_lock_give();
    return id;
}

/* --crash-safe: a definition made (or a communicator changed) goes to the
 * journal, under the definitions lock so that the journal's order is the
 * ids' order. */
static void sm_def_journal(const sm_def_table_t *t, uint32_t id)
{
    if (!sm_journal_on())
        return;
    if (t == &sm_regions) {
        sm_journal_add(SM_J_REGION, &id, sizeof id, sm_def_entry(t, id), sizeof(sm_region_def_t));
    } else if (t == &sm_attributes) {
        sm_journal_add(SM_J_ATTRIBUTE, &id, sizeof id, sm_def_entry(t, id),
                       sizeof(sm_attribute_def_t));
    } else if (t == &sm_comms) {
        const sm_comm_def_t *c = sm_def_entry(t, id);
        sm_journal_comm_t e;
        memset(&e, 0, sizeof e);
        e.id = id;
        e.key = c->key;
        e.name = c->name;
        e.size = c->size;
        e.parent = c->parent;
        const uint32_t *members = __atomic_load_n(&c->members, __ATOMIC_ACQUIRE);
        e.n_members = members ? c->size : 0;
        sm_journal_add(SM_J_COMM, &e, sizeof e, members, e.n_members * (uint32_t)sizeof *members);
    }
}

const sm_comm_def_t *sm_comm_get(sm_comm_id_t id)
{
    if (id >= __atomic_load_n(&sm_comms.count, __ATOMIC_ACQUIRE))
        return NULL;
    return sm_def_entry(&sm_comms, id);
}

uint32_t sm_comm_count(void)
{
    return __atomic_load_n(&sm_comms.count, __ATOMIC_ACQUIRE);
}

int sm_definitions_init(void)
{
    return 0;
}

const char *sm_paradigm_name(sm_paradigm_t p)
{
    static const char *const names[SM_PARADIGM_COUNT] = {
#define SM_PARADIGM(e, name, why) [SM_PARADIGM_##e] = name,
#include "paradigms.def"
#undef SM_PARADIGM
    };
    return (unsigned)p < SM_PARADIGM_COUNT ? names[p] : "unknown";
}

const char *sm_region_kind_name(sm_paradigm_t p, sm_region_role_t role)
{
    /* Kokkos: the names kokkos-tools' kernel-timer prints, so that its
     * users read both alike. */
    static const char *const kokkos[SM_ROLE_COUNT] = {
        [SM_ROLE_LOOP] = "ParFor",     [SM_ROLE_REDUCE] = "ParRed",
        [SM_ROLE_SCAN] = "ParScan",    [SM_ROLE_CODE] = "REGION",
        [SM_ROLE_BARRIER] = "FENCE",   [SM_ROLE_FUNCTION] = "DEEPCOPY",
        [SM_ROLE_ARTIFICIAL] = "EVENT",
    };
    static const char *const roles[SM_ROLE_COUNT] = {
        [SM_ROLE_FUNCTION] = "function",   [SM_ROLE_CODE] = "region",
        [SM_ROLE_WRAPPER] = "call",        [SM_ROLE_ARTIFICIAL] = "mark",
        [SM_ROLE_PARALLEL] = "parallel",   [SM_ROLE_BARRIER] = "barrier",
        [SM_ROLE_TASK] = "task",           [SM_ROLE_LOOP] = "loop",
        [SM_ROLE_COLLECTIVE] = "collective", [SM_ROLE_POINT2POINT] = "p2p",
        [SM_ROLE_DATA_TRANSFER] = "transfer", [SM_ROLE_REDUCE] = "reduce",
        [SM_ROLE_SCAN] = "scan",
    };
    if ((unsigned)role >= SM_ROLE_COUNT)
        return "?";
    if (p == SM_PARADIGM_KOKKOS && kokkos[role])
        return kokkos[role];
    return roles[role] ? roles[role] : "?";
}
