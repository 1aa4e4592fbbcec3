/* Definition sets, their serialized form, and their unification across the
 * processes of a job along a binomial tree (see unify.h). */
#include "unify.h"

#include <otf2/otf2.h>
#include <stdlib.h>
#include <string.h>

#include "../core/contexts.h"
#include "../core/metrics.h"
#include "../util/bytes.h"
#include "../util/hash.h"
#include "../util/log.h"

#define SM_DEFSET_MAGIC 0x53444d53u /* "SMDS" */
#define SM_DEFSET_VERSION 1u

/* One kind of definition: a growing array of entries and an open-addressing
 * index of id + 1 (0 = empty) keyed by the entry's content. */
typedef struct sm_dtab {
    void *entries;
    size_t entry_size;
    uint32_t count, capacity;
    uint32_t *index;
    uint32_t index_size;
} sm_dtab_t;

struct sm_defset {
    sm_dtab_t strings;    /* char * */
    sm_dtab_t regions;    /* sm_region_def_t */
    sm_dtab_t attributes; /* sm_attribute_def_t */
    sm_dtab_t comms;      /* sm_comm_def_t */
    sm_dtab_t metrics;    /* sm_named_metric_def_t */
    sm_dtab_t contexts;   /* sm_context_def_t */
};

static void *sm_dtab_at(const sm_dtab_t *t, uint32_t id)
{
    return (char *)t->entries + (size_t)id * t->entry_size;
}


typedef uint64_t (*sm_dtab_hash_fn)(const void *entry);
typedef int (*sm_dtab_eq_fn)(const void *a, const void *b);

static int sm_dtab_reindex(sm_dtab_t *t, sm_dtab_hash_fn hash)
{
    uint32_t size = t->index_size ? t->index_size * 2 : 256;
    uint32_t *index = calloc(size, sizeof *index);
    if (!index)
        return -1;
    for (uint32_t id = 0; id < t->count; id++) {
        uint32_t i = (uint32_t)hash(sm_dtab_at(t, id)) & (size - 1);
        while (index[i])
            i = (i + 1) & (size - 1);
        index[i] = id + 1;
    }
    free(t->index);
    t->index = index;
    t->index_size = size;
    return 0;
}

/* The id of the entry equal to key; a copy of key appended if new (*added). */
static uint32_t sm_dtab_intern(sm_dtab_t *t, const void *key, sm_dtab_hash_fn hash,
                               sm_dtab_eq_fn eq, int *added)
{
    *added = 0;
    if ((t->count + 1) * 2 >= t->index_size && sm_dtab_reindex(t, hash) != 0)
        return SM_INVALID_ID;
    uint32_t mask = t->index_size - 1, i = (uint32_t)hash(key) & mask;
    for (; t->index[i]; i = (i + 1) & mask)
        if (eq(sm_dtab_at(t, t->index[i] - 1), key))
            return t->index[i] - 1;
    if (t->count == t->capacity) {
        uint32_t cap = t->capacity ? t->capacity * 2 : 64;
        void *e = realloc(t->entries, (size_t)cap * t->entry_size);
        if (!e)
            return SM_INVALID_ID;
        t->entries = e;
        t->capacity = cap;
    }
    uint32_t id = t->count++;
    memcpy(sm_dtab_at(t, id), key, t->entry_size);
    t->index[i] = id + 1;
    *added = 1;
    return id;
}

static uint64_t sm_string_hash(const void *e)
{
    const char *s = *(char *const *)e;
    return sm_fnv(s, strlen(s), SM_FNV_START);
}

static int sm_string_eq(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b) == 0;
}

static uint64_t sm_region_hash(const void *e)
{
    const sm_region_def_t *r = e;
    uint32_t k[4] = {r->name, r->file, r->line, r->paradigm};
    return sm_fnv(k, sizeof k, SM_FNV_START);
}

static int sm_region_eq(const void *a, const void *b)
{
    const sm_region_def_t *x = a, *y = b;
    return x->name == y->name && x->file == y->file && x->line == y->line &&
           x->paradigm == y->paradigm;
}

static uint64_t sm_attribute_hash(const void *e)
{
    const sm_attribute_def_t *a = e;
    uint32_t k[2] = {a->name, a->type};
    return sm_fnv(k, sizeof k, SM_FNV_START);
}

static int sm_attribute_eq(const void *a, const void *b)
{
    const sm_attribute_def_t *x = a, *y = b;
    return x->name == y->name && x->type == y->type;
}

static uint64_t sm_comm_hash(const void *e)
{
    const sm_comm_def_t *c = e;
    return sm_fnv(&c->key, sizeof c->key, SM_FNV_START);
}

static int sm_comm_eq(const void *a, const void *b)
{
    const sm_comm_def_t *x = a, *y = b;
    return x->key.leader == y->key.leader && x->key.seq == y->key.seq;
}

static uint64_t sm_metric_hash(const void *e)
{
    const sm_named_metric_def_t *m = e;
    return sm_fnv(&m->name, sizeof m->name, SM_FNV_START);
}

static int sm_metric_eq(const void *a, const void *b)
{
    return ((const sm_named_metric_def_t *)a)->name == ((const sm_named_metric_def_t *)b)->name;
}

static uint64_t sm_context_hash(const void *e)
{
    const sm_context_def_t *c = e;
    uint32_t w[2] = {c->region, c->parent};
    return sm_fnv(w, sizeof w, SM_FNV_START);
}

static int sm_context_eq(const void *a, const void *b)
{
    const sm_context_def_t *x = a, *y = b;
    return x->region == y->region && x->parent == y->parent;
}

/* ---------------------------------------------------------------- a set */

sm_defset_t *sm_defset_new(void)
{
    sm_defset_t *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->strings.entry_size = sizeof(char *);
    d->regions.entry_size = sizeof(sm_region_def_t);
    d->attributes.entry_size = sizeof(sm_attribute_def_t);
    d->comms.entry_size = sizeof(sm_comm_def_t);
    d->metrics.entry_size = sizeof(sm_named_metric_def_t);
    d->contexts.entry_size = sizeof(sm_context_def_t);
    return d;
}

void sm_defset_free(sm_defset_t *d)
{
    if (!d)
        return;
    for (uint32_t i = 0; i < d->strings.count; i++)
        free(*(char **)sm_dtab_at(&d->strings, i));
    for (uint32_t i = 0; i < d->comms.count; i++)
        free(((sm_comm_def_t *)sm_dtab_at(&d->comms, i))->members);
    sm_dtab_t *tabs[] = {&d->strings, &d->regions, &d->attributes, &d->comms, &d->metrics,
                         &d->contexts};
    for (size_t i = 0; i < sizeof tabs / sizeof tabs[0]; i++) {
        free(tabs[i]->entries);
        free(tabs[i]->index);
    }
    free(d);
}

uint32_t sm_defset_string(sm_defset_t *d, const char *s)
{
    int added;
    if (!s)
        return SM_INVALID_ID;
    uint32_t id = sm_dtab_intern(&d->strings, &s, sm_string_hash, sm_string_eq, &added);
    if (added) {
        char *copy = strdup(s);
        if (!copy) {
            d->strings.count--; /* not indexed for good: rebuild the index */
            sm_dtab_reindex(&d->strings, sm_string_hash);
            return SM_INVALID_ID;
        }
        *(char **)sm_dtab_at(&d->strings, id) = copy;
    }
    return id;
}

static uint32_t sm_defset_region_ids(sm_defset_t *d, uint32_t name, uint32_t file, uint32_t line,
                                     uint8_t paradigm, uint8_t role)
{
    int added;
    sm_region_def_t r = {.name = name, .file = file, .line = line, .paradigm = paradigm,
                         .role = role};
    if (name == SM_INVALID_ID)
        return SM_INVALID_ID;
    return sm_dtab_intern(&d->regions, &r, sm_region_hash, sm_region_eq, &added);
}

uint32_t sm_defset_region(sm_defset_t *d, const char *name, const char *file, uint32_t line,
                          uint8_t paradigm, uint8_t role)
{
    uint32_t f = file ? sm_defset_string(d, file) : SM_INVALID_ID;
    return sm_defset_region_ids(d, sm_defset_string(d, name), f, line, paradigm, role);
}

uint32_t sm_defset_attribute(sm_defset_t *d, const char *name, uint8_t type)
{
    int added;
    sm_attribute_def_t a = {.name = sm_defset_string(d, name), .type = type};
    if (a.name == SM_INVALID_ID)
        return SM_INVALID_ID;
    return sm_dtab_intern(&d->attributes, &a, sm_attribute_hash, sm_attribute_eq, &added);
}

/* members: size world ranks, as bytes (a blob's may be unaligned), or NULL. */
static uint32_t sm_defset_comm_ids(sm_defset_t *d, sm_comm_key_t key, uint32_t name,
                                   uint32_t size, const void *members, uint32_t parent)
{
    int added;
    sm_comm_def_t c = {.key = key, .name = name, .size = size, .members = NULL,
                       .parent = parent};
    uint32_t id = sm_dtab_intern(&d->comms, &c, sm_comm_hash, sm_comm_eq, &added);
    if (id == SM_INVALID_ID)
        return id;
    sm_comm_def_t *e = sm_dtab_at(&d->comms, id);
    /* Fill in what an earlier definition of the same key lacked. */
    if (e->name == SM_INVALID_ID)
        e->name = name;
    if (e->parent == SM_COMM_NONE)
        e->parent = parent;
    if (!e->members && members && size) {
        e->members = malloc(sizeof *e->members * size);
        if (e->members) {
            memcpy(e->members, members, sizeof *e->members * size);
            e->size = size;
        }
    } else if (e->members && members && e->size == size) {
        /* A hashed communicator: each member's definition knows its place. */
        for (uint32_t i = 0; i < size; i++)
            if (e->members[i] == SM_COMM_MEMBER_UNKNOWN)
                memcpy(&e->members[i], (const uint8_t *)members + sizeof *e->members * i,
                       sizeof *e->members);
    }
    if (!e->size)
        e->size = size;
    return id;
}

uint32_t sm_defset_comm(sm_defset_t *d, sm_comm_key_t key, const char *name, uint32_t size,
                        const uint32_t *members, uint32_t parent)
{
    uint32_t n = name ? sm_defset_string(d, name) : SM_INVALID_ID;
    return sm_defset_comm_ids(d, key, n, size, members, parent);
}

static uint32_t sm_defset_metric_ids(sm_defset_t *d, uint32_t name, uint32_t unit,
                                     uint32_t kind)
{
    int added;
    sm_named_metric_def_t m = {.name = name, .unit = unit, .kind = kind};
    if (name == SM_INVALID_ID)
        return SM_INVALID_ID;
    return sm_dtab_intern(&d->metrics, &m, sm_metric_hash, sm_metric_eq, &added);
}

uint32_t sm_defset_metric(sm_defset_t *d, const char *name, const char *unit, uint32_t kind)
{
    uint32_t u = unit ? sm_defset_string(d, unit) : SM_INVALID_ID;
    return sm_defset_metric_ids(d, sm_defset_string(d, name), u, kind);
}

uint32_t sm_defset_context(sm_defset_t *d, uint32_t region, uint32_t parent, uint32_t module)
{
    int added;
    sm_context_def_t c = {region, parent, module};
    if (region == SM_INVALID_ID)
        return SM_INVALID_ID;
    return sm_dtab_intern(&d->contexts, &c, sm_context_hash, sm_context_eq, &added);
}

uint32_t sm_defset_context_count(const sm_defset_t *d)
{
    return d->contexts.count;
}

const sm_context_def_t *sm_defset_context_get(const sm_defset_t *d, uint32_t id)
{
    return id < d->contexts.count ? sm_dtab_at(&d->contexts, id) : NULL;
}

uint32_t sm_defset_metric_count(const sm_defset_t *d)
{
    return d->metrics.count;
}

const sm_named_metric_def_t *sm_defset_metric_get(const sm_defset_t *d, uint32_t id)
{
    return id < d->metrics.count ? sm_dtab_at(&d->metrics, id) : NULL;
}

uint32_t sm_defset_string_count(const sm_defset_t *d)
{
    return d->strings.count;
}

uint32_t sm_defset_region_count(const sm_defset_t *d)
{
    return d->regions.count;
}

uint32_t sm_defset_attribute_count(const sm_defset_t *d)
{
    return d->attributes.count;
}

uint32_t sm_defset_comm_count(const sm_defset_t *d)
{
    return d->comms.count;
}

const char *sm_defset_string_get(const sm_defset_t *d, uint32_t id)
{
    return id < d->strings.count ? *(char **)sm_dtab_at(&d->strings, id) : NULL;
}

const sm_region_def_t *sm_defset_region_get(const sm_defset_t *d, uint32_t id)
{
    return id < d->regions.count ? sm_dtab_at(&d->regions, id) : NULL;
}

const sm_attribute_def_t *sm_defset_attribute_get(const sm_defset_t *d, uint32_t id)
{
    return id < d->attributes.count ? sm_dtab_at(&d->attributes, id) : NULL;
}

const sm_comm_def_t *sm_defset_comm_get(const sm_defset_t *d, uint32_t id)
{
    return id < d->comms.count ? sm_dtab_at(&d->comms, id) : NULL;
}

const char *sm_defset_region_name(const sm_defset_t *d, uint32_t id)
{
    const sm_region_def_t *r = sm_defset_region_get(d, id);
    const char *s = r ? sm_defset_string_get(d, r->name) : NULL;
    return s ? s : "?";
}

/* ---------------------------------------------------------------- serialized form */

/* With procs, what this process sends up the tree: a communicator led by
 * another process of the job goes without its members (every member holds
 * the same list, and the leader sends it), so each list travels once per
 * level of the tree instead of once from every member: a communicator of
 * P/4 ranks would otherwise cost every one of them O(P) bytes and work. */
static void *sm_defset_pack(const sm_defset_t *d, const sm_procs_t *procs, uint64_t *len)
{
    sm_wbuf_t b = {0};
    sm_put_u32(&b, SM_DEFSET_MAGIC);
    sm_put_u32(&b, SM_DEFSET_VERSION);
    sm_put_u32(&b, d->strings.count);
    for (uint32_t i = 0; i < d->strings.count; i++) {
        const char *s = *(char **)sm_dtab_at(&d->strings, i);
        uint32_t n = (uint32_t)strlen(s);
        sm_put_u32(&b, n);
        sm_put_bytes(&b, s, n);
    }
    sm_put_u32(&b, d->regions.count);
    for (uint32_t i = 0; i < d->regions.count; i++) {
        const sm_region_def_t *r = sm_dtab_at(&d->regions, i);
        uint32_t w[5] = {r->name, r->file, r->line, r->paradigm, r->role};
        sm_put_bytes(&b, w, sizeof w);
    }
    sm_put_u32(&b, d->attributes.count);
    for (uint32_t i = 0; i < d->attributes.count; i++) {
        const sm_attribute_def_t *a = sm_dtab_at(&d->attributes, i);
        uint32_t w[2] = {a->name, a->type};
        sm_put_bytes(&b, w, sizeof w);
    }
    sm_put_u32(&b, d->comms.count);
    for (uint32_t i = 0; i < d->comms.count; i++) {
        const sm_comm_def_t *c = sm_dtab_at(&d->comms, i);
        bool members = c->members && (!procs || c->key.leader >= procs->size ||
                                      c->key.leader == procs->rank);
        uint32_t w[6] = {c->key.leader, c->key.seq, c->name, c->size, c->parent,
                         members ? 1u : 0u};
        sm_put_bytes(&b, w, sizeof w);
        if (members)
            sm_put_bytes(&b, c->members, sizeof *c->members * c->size);
    }
    sm_put_u32(&b, d->metrics.count);
    for (uint32_t i = 0; i < d->metrics.count; i++) {
        const sm_named_metric_def_t *m = sm_dtab_at(&d->metrics, i);
        sm_put_u32(&b, m->name);
        sm_put_u32(&b, m->unit);
        sm_put_u32(&b, m->kind);
    }
    sm_put_u32(&b, d->contexts.count);
    for (uint32_t i = 0; i < d->contexts.count; i++) {
        const sm_context_def_t *c = sm_dtab_at(&d->contexts, i);
        uint32_t w[3] = {c->region, c->parent, c->module};
        sm_put_bytes(&b, w, sizeof w);
    }
    return sm_wbuf_finish(&b, len);
}

void *sm_defset_serialize(const sm_defset_t *d, uint64_t *len)
{
    return sm_defset_pack(d, NULL, len);
}

void sm_id_maps_free(sm_id_maps_t *m)
{
    if (!m)
        return;
    free(m->strings);
    free(m->regions);
    free(m->attributes);
    free(m->comms);
    free(m->metrics);
    free(m->contexts);
    memset(m, 0, sizeof *m);
}

/* A blob's string id in d, SM_INVALID_ID passing through. */
static uint32_t sm_map_id(const uint32_t *map, uint32_t n, uint32_t id, int *bad)
{
    if (id == SM_INVALID_ID)
        return id;
    if (id >= n || !map) { /* (no map: its count was impossible, nothing was read) */
        *bad = 1;
        return SM_INVALID_ID;
    }
    return map[id];
}

int sm_defset_merge_blob(sm_defset_t *d, const void *blob, uint64_t len, sm_id_maps_t *maps)
{
    if (!blob) /* (a file that had none) */
        return -1;
    sm_rbuf_t r = {blob, (const uint8_t *)blob + len, 0};
    sm_id_maps_t m = {0};
    int bad = 0;
    if (sm_get_u32(&r) != SM_DEFSET_MAGIC || sm_get_u32(&r) != SM_DEFSET_VERSION)
        return -1;

    m.n_strings = sm_get_u32(&r);
    if (r.bad || m.n_strings > len)
        return -1;
    m.strings = malloc(sizeof *m.strings * (m.n_strings + 1u));
    for (uint32_t i = 0; m.strings && i < m.n_strings && !r.bad; i++) {
        uint32_t n = sm_get_u32(&r);
        const char *s = (const char *)sm_get_bytes(&r, n);
        char *copy = s ? strndup(s, n) : NULL;
        m.strings[i] = copy ? sm_defset_string(d, copy) : SM_INVALID_ID;
        bad |= m.strings[i] == SM_INVALID_ID;
        free(copy);
    }

    m.n_regions = sm_get_u32(&r);
    if (!r.bad && m.n_regions <= len)
        m.regions = malloc(sizeof *m.regions * (m.n_regions + 1u));
    for (uint32_t i = 0; m.regions && i < m.n_regions && !r.bad; i++) {
        uint32_t w[5];
        const void *at = sm_get_bytes(&r, sizeof w);
        if (!at)
            break;
        memcpy(w, at, sizeof w);
        uint32_t name = sm_map_id(m.strings, m.n_strings, w[0], &bad);
        uint32_t file = sm_map_id(m.strings, m.n_strings, w[1], &bad);
        m.regions[i] = sm_defset_region_ids(d, name, file, w[2], (uint8_t)w[3], (uint8_t)w[4]);
    }

    m.n_attributes = sm_get_u32(&r);
    if (!r.bad && m.n_attributes <= len)
        m.attributes = malloc(sizeof *m.attributes * (m.n_attributes + 1u));
    for (uint32_t i = 0; m.attributes && i < m.n_attributes && !r.bad; i++) {
        uint32_t w[2];
        const void *at = sm_get_bytes(&r, sizeof w);
        if (!at)
            break;
        memcpy(w, at, sizeof w);
        int added;
        sm_attribute_def_t a = {.name = sm_map_id(m.strings, m.n_strings, w[0], &bad),
                                .type = (uint8_t)w[1]};
        m.attributes[i] =
            sm_dtab_intern(&d->attributes, &a, sm_attribute_hash, sm_attribute_eq, &added);
    }

    /* Communicators: parents may come later in the blob, so they are mapped
     * in a second pass. */
    m.n_comms = sm_get_u32(&r);
    uint32_t *parents = NULL;
    if (!r.bad && m.n_comms <= len) {
        m.comms = malloc(sizeof *m.comms * (m.n_comms + 1u));
        parents = malloc(sizeof *parents * (m.n_comms + 1u));
    }
    for (uint32_t i = 0; m.comms && parents && i < m.n_comms && !r.bad; i++) {
        uint32_t w[6];
        const void *at = sm_get_bytes(&r, sizeof w);
        if (!at)
            break;
        memcpy(w, at, sizeof w);
        const void *members = NULL;
        if (w[5]) {
            if ((uint64_t)w[3] * 4u > len) {
                r.bad = 1;
                break;
            }
            members = sm_get_bytes(&r, (uint64_t)w[3] * 4u);
        }
        /* (copied from the blob only when the union lacks them) */
        sm_comm_key_t key = {w[0], w[1]};
        m.comms[i] = sm_defset_comm_ids(d, key, sm_map_id(m.strings, m.n_strings, w[2], &bad),
                                        w[3], members, SM_COMM_NONE);
        parents[i] = w[4];
    }
    for (uint32_t i = 0; m.comms && parents && !r.bad && i < m.n_comms; i++) {
        if (parents[i] == SM_COMM_NONE || m.comms[i] == SM_INVALID_ID)
            continue;
        sm_comm_def_t *e = sm_dtab_at(&d->comms, m.comms[i]);
        if (e->parent == SM_COMM_NONE && parents[i] < m.n_comms)
            e->parent = m.comms[parents[i]];
    }
    free(parents);

    m.n_metrics = sm_get_u32(&r);
    if (!r.bad && m.n_metrics <= len)
        m.metrics = malloc(sizeof *m.metrics * (m.n_metrics + 1u));
    for (uint32_t i = 0; m.metrics && i < m.n_metrics && !r.bad; i++) {
        uint32_t name = sm_map_id(m.strings, m.n_strings, sm_get_u32(&r), &bad);
        uint32_t unit = sm_map_id(m.strings, m.n_strings, sm_get_u32(&r), &bad);
        uint32_t kind = sm_get_u32(&r);
        m.metrics[i] = sm_defset_metric_ids(d, name, unit, kind);
    }

    /* Calling contexts: a parent always comes before its children. */
    m.n_contexts = sm_get_u32(&r);
    if (!r.bad && m.n_contexts <= len)
        m.contexts = malloc(sizeof *m.contexts * (m.n_contexts + 1u));
    for (uint32_t i = 0; m.contexts && i < m.n_contexts && !r.bad; i++) {
        uint32_t w[3];
        const void *at = sm_get_bytes(&r, sizeof w);
        if (!at)
            break;
        memcpy(w, at, sizeof w);
        uint32_t region = sm_map_id(m.regions, m.n_regions, w[0], &bad);
        uint32_t parent = w[1] == SM_INVALID_ID ? SM_INVALID_ID
                          : w[1] < i            ? m.contexts[w[1]]
                                                : (bad = 1, SM_INVALID_ID);
        uint32_t module = sm_map_id(m.strings, m.n_strings, w[2], &bad);
        m.contexts[i] = sm_defset_context(d, region, parent, module);
    }

    if (r.bad || bad || !m.strings || !m.regions || !m.attributes || !m.comms || !m.metrics ||
        !m.contexts) {
        sm_id_maps_free(&m);
        return -1;
    }
    if (maps)
        *maps = m;
    else
        sm_id_maps_free(&m);
    return 0;
}

/* A hashed communicator's members as they leave the process: its own
 * places (SM_COMM_MEMBER_SELF) become its rank; NULL when no place does
 * (or out of memory: the members are then left as they are). */
static uint32_t *sm_comm_members_placed(const uint32_t *members, uint32_t size, uint32_t rank)
{
    uint32_t i = 0;
    while (members && i < size && members[i] != SM_COMM_MEMBER_SELF)
        i++;
    if (!members || i == size)
        return NULL;
    uint32_t *placed = malloc(sizeof *placed * size);
    for (uint32_t k = 0; placed && k < size; k++)
        placed[k] = members[k] == SM_COMM_MEMBER_SELF ? rank : members[k];
    return placed;
}

sm_defset_t *sm_defset_from_process(uint32_t rank)
{
    sm_defset_t *d = sm_defset_new();
    if (!d)
        return NULL;
    /* In id order, so that the set's ids equal the core's. */
    uint32_t n = sm_string_count();
    for (uint32_t i = 0; i < n; i++)
        sm_defset_string(d, sm_string_get(i) ? sm_string_get(i) : "");
    n = sm_region_count();
    for (uint32_t i = 0; i < n; i++) {
        const sm_region_def_t *r = sm_region_get(i);
        sm_defset_region_ids(d, r->name, r->file, r->line, r->paradigm, r->role);
    }
    n = sm_attribute_count();
    for (uint32_t i = 0; i < n; i++) {
        const sm_attribute_def_t *a = sm_attribute_get(i);
        int added;
        sm_attribute_def_t copy = *a;
        sm_dtab_intern(&d->attributes, &copy, sm_attribute_hash, sm_attribute_eq, &added);
    }
    n = sm_comm_count();
    for (uint32_t i = 0; i < n; i++) {
        const sm_comm_def_t *c = sm_comm_get(i);
        sm_comm_key_t key = c->key;
        if (key.leader == SM_COMM_LEADER_PROCESS) /* a thread team: its process's */
            key.leader = rank;
        const uint32_t *members = __atomic_load_n(&c->members, __ATOMIC_ACQUIRE);
        uint32_t *placed =
            sm_comm_key_is_hashed(key) ? sm_comm_members_placed(members, c->size, rank) : NULL;
        sm_defset_comm_ids(d, key, __atomic_load_n(&c->name, __ATOMIC_ACQUIRE), c->size,
                           placed ? placed : members, c->parent);
        free(placed);
    }
    n = sm_metric_count();
    for (uint32_t i = 0; i < n; i++) {
        sm_metric_def_t m;
        if (sm_metric_get(i, &m) == 0)
            sm_defset_metric_ids(d, m.name, m.unit, m.kind);
    }
    n = sm_context_count();
    for (uint32_t i = 0; i < n; i++) {
        const sm_context_def_t *c = sm_context_get(i);
        sm_defset_context(d, c->region, c->parent, c->module);
    }
    return d;
}

sm_defset_t *sm_defset_from_lists(const sm_defs_lists_t *l, uint32_t rank)
{
    sm_defset_t *d = sm_defset_new();
    if (!d)
        return NULL;
    for (uint32_t i = 0; i < l->n_strings; i++)
        sm_defset_string(d, l->strings[i] ? l->strings[i] : "");
    for (uint32_t i = 0; i < l->n_regions; i++) {
        const sm_region_def_t *r = &l->regions[i];
        sm_defset_region_ids(d, r->name, r->file, r->line, r->paradigm, r->role);
    }
    for (uint32_t i = 0; i < l->n_attributes; i++) {
        int added;
        sm_attribute_def_t copy = l->attributes[i];
        sm_dtab_intern(&d->attributes, &copy, sm_attribute_hash, sm_attribute_eq, &added);
    }
    for (uint32_t i = 0; i < l->n_comms; i++) {
        const sm_comm_def_t *c = &l->comms[i];
        sm_comm_key_t key = c->key;
        if (key.leader == SM_COMM_LEADER_PROCESS)
            key.leader = rank;
        uint32_t *placed =
            sm_comm_key_is_hashed(key) ? sm_comm_members_placed(c->members, c->size, rank) : NULL;
        sm_defset_comm_ids(d, key, c->name, c->size, placed ? placed : c->members, c->parent);
        free(placed);
    }
    for (uint32_t i = 0; i < l->n_metrics; i++)
        sm_defset_metric_ids(d, l->metrics[i].name, l->metrics[i].unit, l->metrics[i].kind);
    for (uint32_t i = 0; i < l->n_contexts; i++)
        sm_defset_context(d, l->contexts[i].region, l->contexts[i].parent, l->contexts[i].module);
    return d;
}

/* ---------------------------------------------------------------- the tree */

/* ---- maps on the way down (SM_UNIFY_ROOT_ONLY) */

#define SM_MAPS_TABLES 6

static uint32_t *const *sm_maps_table(const sm_id_maps_t *m, uint32_t k, uint32_t *n)
{
    const uint32_t *counts[SM_MAPS_TABLES] = {&m->n_strings, &m->n_regions, &m->n_attributes,
                                              &m->n_comms, &m->n_metrics, &m->n_contexts};
    uint32_t *const *tables[SM_MAPS_TABLES] = {&m->strings, &m->regions, &m->attributes,
                                               &m->comms, &m->metrics, &m->contexts};
    *n = *counts[k];
    return tables[k];
}

/* into = outer o inner: inner's ids (a process's, or a child's union) taken
 * through outer (into this process's union's ids in the job's); outer NULL:
 * the identity (rank 0, whose union is the job's).  0, or -1 when an id is
 * beyond outer (a malformed message) or memory ran out. */
static int sm_maps_compose(const sm_id_maps_t *outer, const sm_id_maps_t *inner,
                           sm_id_maps_t *into)
{
    memset(into, 0, sizeof *into);
    uint32_t *counts[SM_MAPS_TABLES] = {&into->n_strings, &into->n_regions, &into->n_attributes,
                                        &into->n_comms, &into->n_metrics, &into->n_contexts};
    uint32_t **tables[SM_MAPS_TABLES] = {&into->strings, &into->regions, &into->attributes,
                                         &into->comms, &into->metrics, &into->contexts};
    for (uint32_t k = 0; k < SM_MAPS_TABLES; k++) {
        uint32_t n, on = 0;
        const uint32_t *in = *sm_maps_table(inner, k, &n);
        const uint32_t *out = outer ? *sm_maps_table(outer, k, &on) : NULL;
        uint32_t *t = malloc(sizeof *t * (n + 1u));
        if (!t) {
            sm_id_maps_free(into);
            return -1;
        }
        *counts[k] = n;
        *tables[k] = t;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t id = in[i];
            if (id != SM_INVALID_ID && outer && id >= on) {
                sm_id_maps_free(into);
                return -1;
            }
            t[i] = id == SM_INVALID_ID || !outer ? id : out[id];
        }
    }
    return 0;
}

static void *sm_maps_pack(const sm_id_maps_t *m, uint64_t *len)
{
    sm_wbuf_t b = {0};
    for (uint32_t k = 0; k < SM_MAPS_TABLES; k++) {
        uint32_t n;
        const uint32_t *t = *sm_maps_table(m, k, &n);
        sm_put_u32(&b, n);
        sm_put_bytes(&b, t, sizeof *t * n);
    }
    return sm_wbuf_finish(&b, len);
}

static int sm_maps_unpack(const void *blob, uint64_t len, sm_id_maps_t *m)
{
    sm_rbuf_t r = {blob, (const uint8_t *)blob + len, 0};
    uint32_t *counts[SM_MAPS_TABLES] = {&m->n_strings, &m->n_regions, &m->n_attributes,
                                        &m->n_comms, &m->n_metrics, &m->n_contexts};
    uint32_t **tables[SM_MAPS_TABLES] = {&m->strings, &m->regions, &m->attributes,
                                         &m->comms, &m->metrics, &m->contexts};
    memset(m, 0, sizeof *m);
    for (uint32_t k = 0; k < SM_MAPS_TABLES; k++) {
        uint32_t n = sm_get_u32(&r);
        if (r.bad || (uint64_t)n * 4u > sm_remaining(&r) ||
            !(*tables[k] = malloc(sizeof(uint32_t) * (n + 1u)))) {
            sm_id_maps_free(m);
            return -1;
        }
        *counts[k] = n;
        sm_get_copy(&r, *tables[k], (uint64_t)n * 4u);
    }
    return 0;
}

/* Binomial tree rooted at 0: a process with bit k set (its lowest set bit)
 * sends to rank - 2^k after receiving from rank + 2^j for each j < k.  Each
 * process merges its children's unions into its own set (acc), so rank 0
 * ends with the job's.  Then either that union goes to everyone, who map
 * their own ids in it (SM_UNIFY_EVERY_RANK), or only maps come down the same
 * tree (SM_UNIFY_ROOT_ONLY): each process keeps, from its merges, where its
 * own and each child's ids went in its union; its parent sends it where its
 * union's ids are in the job's; it composes and sends each child the same. */
int sm_unify_set(const sm_procs_t *procs, const sm_defset_t *local, sm_unify_scope_t scope,
                 sm_defset_t **union_out, sm_id_maps_t *maps)
{
    bool down = scope == SM_UNIFY_ROOT_ONLY;
    /* This process's definitions, serialized once: what it sends up when it
     * has no children, and what it maps into the union at the end. */
    uint64_t own_len = 0, len = 0;
    void *own = local ? sm_defset_pack(local, procs, &own_len) : NULL;
    sm_defset_t *acc = NULL;
    void *blob = NULL;
    int failed = own == NULL;
    sm_id_maps_t own_in_acc = {0}, kid_maps[32];
    uint32_t kids[32], n_kids = 0, parent = 0;
    memset(kid_maps, 0, sizeof kid_maps);
    *union_out = NULL;

    for (uint32_t mask = 1; mask < procs->size; mask <<= 1) {
        if (procs->rank & mask) {
            parent = procs->rank - mask;
            /* A process without children sends its own set as it is. */
            blob = failed ? NULL : acc ? sm_defset_serialize(acc, &len) : own;
            len = blob == own ? own_len : len;
            if (!blob) {
                failed = 1;
                len = 0;
            }
            /* Send even when empty, so the parent is not left waiting. */
            if (procs->send(procs->ctx, parent, blob ? blob : "", len) != 0)
                failed = 1;
            if (blob != own)
                free(blob);
            blob = NULL;
            /* (Only the root's union is used from here on.) */
            sm_defset_free(acc);
            acc = NULL;
            break;
        }
        if (procs->rank + mask < procs->size) {
            void *child = NULL;
            uint64_t clen = 0;
            /* The union starts as this process's own set (its ids kept). */
            if (!failed && !acc &&
                (!(acc = sm_defset_new()) ||
                 sm_defset_merge_blob(acc, own, own_len, down ? &own_in_acc : NULL) != 0))
                failed = 1;
            if (procs->recv(procs->ctx, procs->rank + mask, &child, &clen) != 0 ||
                (!failed && sm_defset_merge_blob(acc, child, clen,
                                                 down ? &kid_maps[n_kids] : NULL) != 0))
                failed = 1;
            kids[n_kids++] = procs->rank + mask;
            free(child);
        }
    }
    if (procs->rank == 0 && !failed && !acc &&
        (!(acc = sm_defset_new()) ||
         sm_defset_merge_blob(acc, own, own_len, down ? &own_in_acc : NULL) != 0))
        failed = 1; /* (a job of one process) */

    sm_defset_t *global = NULL;
    if (!down) {
        /* The root's union, to everyone. */
        if (procs->rank == 0) {
            blob = failed ? NULL : sm_defset_serialize(acc, &len);
            if (!blob)
                len = 0;
        }
        if (procs->size > 1 && procs->bcast(procs->ctx, 0, &blob, &len) != 0)
            failed = 1;
        global = acc;
        if (procs->rank != 0) {
            global = sm_defset_new();
            if (!global || !blob || !len || sm_defset_merge_blob(global, blob, len, NULL) != 0)
                failed = 1;
        }
        free(blob);
        /* This process's ids in the union: every local definition is in it. */
        if (failed || sm_defset_merge_blob(global, own, own_len, maps) != 0)
            failed = 1;
    } else {
        /* Where this process's union went in the job's (rank 0: nowhere). */
        sm_id_maps_t up = {0};
        if (procs->rank != 0) {
            void *m = NULL;
            uint64_t mlen = 0;
            if (procs->recv(procs->ctx, parent, &m, &mlen) != 0 || !mlen ||
                (!failed && sm_maps_unpack(m, mlen, &up) != 0))
                failed = 1;
            free(m);
        }
        const sm_id_maps_t *outer = procs->rank == 0 ? NULL : &up;
        /* The largest subtree first, as a broadcast goes; an empty message
         * says that the exchange failed. */
        for (uint32_t k = n_kids; k-- > 0;) {
            sm_id_maps_t kid = {0};
            void *m = NULL;
            uint64_t mlen = 0;
            if (!failed && sm_maps_compose(outer, &kid_maps[k], &kid) == 0)
                m = sm_maps_pack(&kid, &mlen);
            if (procs->send(procs->ctx, kids[k], m ? m : "", m ? mlen : 0) != 0)
                failed = 1;
            free(m);
            sm_id_maps_free(&kid);
        }
        if (!failed && procs->rank != 0 && !n_kids) {
            *maps = up; /* (it sent its own set: its ids are those of its union) */
            memset(&up, 0, sizeof up);
        } else if (failed || sm_maps_compose(outer, &own_in_acc, maps) != 0) {
            failed = 1;
        }
        sm_id_maps_free(&up);
        global = procs->rank == 0 ? acc : NULL;
    }
    for (uint32_t k = 0; k < n_kids; k++)
        sm_id_maps_free(&kid_maps[k]);
    sm_id_maps_free(&own_in_acc);
    free(own);
    if (failed) {
        sm_error("unifying the definitions of the job's processes failed; no trace or profile "
                 "written by rank %u",
                 (unsigned)procs->rank);
        sm_defset_free(global);
        sm_id_maps_free(maps);
        return -1;
    }
    *union_out = global;
    return 0;
}

sm_defset_t *sm_unify(const sm_procs_t *procs, sm_id_maps_t *maps)
{
    sm_defset_t *local = sm_defset_from_process(procs->rank), *global = NULL;
    sm_unify_set(procs, local, SM_UNIFY_EVERY_RANK, &global, maps);
    sm_defset_free(local);
    return global;
}

int sm_tree_gather(const sm_procs_t *procs, const void *blob, uint64_t len, void **out,
                   uint64_t *out_len)
{
    sm_wbuf_t b = {0};
    int failed = 0;
    sm_put_u32(&b, procs->rank);
    sm_put_bytes(&b, &len, sizeof len);
    sm_put_bytes(&b, blob, len);
    *out = NULL;
    *out_len = 0;
    for (uint32_t mask = 1; mask < procs->size; mask <<= 1) {
        if (procs->rank & mask) {
            if (procs->send(procs->ctx, procs->rank - mask, b.oom ? "" : (void *)b.p,
                            b.oom ? 0 : b.len) != 0)
                failed = 1;
            free(b.p);
            return failed || b.oom ? -1 : 0;
        }
        if (procs->rank + mask < procs->size) {
            void *child = NULL;
            uint64_t clen = 0;
            if (procs->recv(procs->ctx, procs->rank + mask, &child, &clen) != 0)
                failed = 1;
            else
                sm_put_bytes(&b, child, clen);
            free(child);
        }
    }
    if (b.oom || failed) {
        free(b.p);
        return -1;
    }
    *out = b.p;
    *out_len = b.len;
    return 0;
}

const uint8_t *sm_tree_next(const uint8_t *p, const uint8_t *end, uint32_t *rank,
                            const uint8_t **blob, uint64_t *len)
{
    if (!p || (uint64_t)(end - p) < sizeof(uint32_t) + sizeof(uint64_t))
        return NULL;
    memcpy(rank, p, sizeof *rank);
    memcpy(len, p + sizeof *rank, sizeof *len);
    p += sizeof *rank + sizeof *len;
    if ((uint64_t)(end - p) < *len)
        return NULL;
    *blob = p;
    return p + *len;
}

/* ---------------------------------------------------------------- a group of one */

static int sm_single_send(void *ctx, uint32_t dest, const void *buf, uint64_t len)
{
    (void)ctx, (void)dest, (void)buf, (void)len;
    return -1; /* there is no one to send to */
}

static int sm_single_recv(void *ctx, uint32_t src, void **buf, uint64_t *len)
{
    (void)ctx, (void)src, (void)buf, (void)len;
    return -1;
}

static int sm_single_bcast(void *ctx, uint32_t root, void **buf, uint64_t *len)
{
    (void)ctx, (void)root, (void)buf, (void)len;
    return 0;
}

static int sm_single_barrier(void *ctx)
{
    (void)ctx;
    return 0;
}

static int sm_single_gather(void *ctx, uint32_t root, const void *sendbuf, uint64_t len,
                            void *recvbuf)
{
    (void)ctx, (void)root;
    memmove(recvbuf, sendbuf, len);
    return 0;
}

static int sm_single_allreduce(void *ctx, uint64_t *values, uint32_t n)
{
    (void)ctx, (void)values, (void)n;
    return 0;
}

static int sm_single_otf2(void *ctx, void *archive)
{
    (void)ctx;
    return OTF2_Archive_SetSerialCollectiveCallbacks(archive) == OTF2_SUCCESS ? 0 : -1;
}

const sm_procs_t *sm_procs_single(void)
{
    static const sm_procs_t single = {
        .rank = 0,
        .size = 1,
        .ctx = NULL,
        .send = sm_single_send,
        .recv = sm_single_recv,
        .bcast = sm_single_bcast,
        .barrier = sm_single_barrier,
        .gather = sm_single_gather,
        .allreduce_max_u64 = sm_single_allreduce,
        .allreduce_sum_u64 = sm_single_allreduce,
        .otf2_collectives = sm_single_otf2,
    };
    return &single;
}
