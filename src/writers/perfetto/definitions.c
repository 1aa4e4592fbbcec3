/* The Perfetto writer's definitions: the archive's global definitions read
 * into dense tables, and what they say of a location or a communicator rank
 * (its process). */
#include "sm_build.h"

#include <stdlib.h>
#include <string.h>

#include "perfetto_internal.h"

/* Definition tables indexed by reference; larger references than this are
 * taken for a damaged archive (sysmeasure numbers its definitions densely). */
#define SM_PF_MAX_REF (1u << 26)

/* A dense table slot for ref: grows *arr (zero-filled) to hold it. */
static void *sm_pf_slot(sm_pf_t *pf, void **arr, uint32_t *n, uint64_t ref, size_t elem)
{
    if (ref >= SM_PF_MAX_REF) {
        pf->damaged_defs = true;
        return NULL;
    }
    if (ref >= *n) {
        uint32_t want = *n ? *n : 16;
        while (want <= ref)
            want *= 2;
        char *more = realloc(*arr, want * elem);
        if (!more) {
            pf->out_of_memory = true;
            return NULL;
        }
        memset(more + (size_t)*n * elem, 0, (size_t)(want - *n) * elem);
        *arr = more;
        *n = want;
    }
    return (char *)*arr + ref * elem;
}

/* ---------------------------------------------------------------- definitions */

static OTF2_CallbackCode sm_pf_def_string(void *u, OTF2_StringRef self, const char *s)
{
    sm_pf_t *pf = u;
    char **slot = sm_pf_slot(pf, (void **)&pf->strings, &pf->n_strings, self, sizeof *slot);
    if (slot) {
        free(*slot);
        *slot = strdup(s ? s : "");
        if (!*slot)
            pf->out_of_memory = true;
    }
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_region(void *u, OTF2_RegionRef self, OTF2_StringRef name,
                                          OTF2_StringRef canonical, OTF2_StringRef desc,
                                          OTF2_RegionRole role, OTF2_Paradigm paradigm,
                                          OTF2_RegionFlag flags, OTF2_StringRef file,
                                          uint32_t begin, uint32_t end)
{
    sm_pf_t *pf = u;
    (void)canonical, (void)desc, (void)role, (void)paradigm, (void)flags, (void)file,
        (void)begin, (void)end;
    uint32_t old = pf->n_regions;
    uint32_t *slot = sm_pf_slot(pf, (void **)&pf->region_name, &pf->n_regions, self, sizeof *slot);
    for (uint32_t i = old; i < pf->n_regions; i++)
        pf->region_name[i] = SM_PF_NONE;
    if (slot)
        *slot = name;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_attribute(void *u, OTF2_AttributeRef self, OTF2_StringRef name,
                                             OTF2_StringRef desc, OTF2_Type type)
{
    sm_pf_t *pf = u;
    (void)desc;
    sm_pf_attr_t *a = sm_pf_slot(pf, (void **)&pf->attrs, &pf->n_attrs, self, sizeof *a);
    if (a)
        *a = (sm_pf_attr_t){name, type, true};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_location(void *u, OTF2_LocationRef self, OTF2_StringRef name,
                                            OTF2_LocationType type, uint64_t n_events,
                                            OTF2_LocationGroupRef group)
{
    sm_pf_t *pf = u;
    if (pf->n_locs == pf->cap_locs) {
        uint32_t want = pf->cap_locs ? 2 * pf->cap_locs : 64;
        sm_pf_location_t *more = realloc(pf->locs, sizeof *more * want);
        if (!more) {
            pf->out_of_memory = true;
            return OTF2_CALLBACK_INTERRUPT;
        }
        pf->locs = more;
        pf->cap_locs = want;
    }
    pf->locs[pf->n_locs++] = (sm_pf_location_t){self, name, type, group, n_events};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_location_group(void *u, OTF2_LocationGroupRef self,
                                                  OTF2_StringRef name,
                                                  OTF2_LocationGroupType type,
                                                  OTF2_SystemTreeNodeRef parent,
                                                  OTF2_LocationGroupRef creator)
{
    sm_pf_t *pf = u;
    (void)parent;
    sm_pf_group_t *g = sm_pf_slot(pf, (void **)&pf->groups, &pf->n_groups, self, sizeof *g);
    if (g)
        *g = (sm_pf_group_t){name, type, creator, SM_PF_NONE, true};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_member(void *u, OTF2_MetricMemberRef self, OTF2_StringRef name,
                                          OTF2_StringRef desc, OTF2_MetricType mtype,
                                          OTF2_MetricMode mode, OTF2_Type vtype, OTF2_Base base,
                                          int64_t exponent, OTF2_StringRef unit)
{
    sm_pf_t *pf = u;
    (void)desc, (void)mtype, (void)mode, (void)vtype, (void)base, (void)exponent;
    sm_pf_member_t *m = sm_pf_slot(pf, (void **)&pf->members, &pf->n_members, self, sizeof *m);
    if (m)
        *m = (sm_pf_member_t){name, unit, true};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_metric_class(void *u, OTF2_MetricRef self, uint8_t n,
                                                const OTF2_MetricMemberRef *members,
                                                OTF2_MetricOccurrence occ, OTF2_RecorderKind kind)
{
    sm_pf_t *pf = u;
    (void)occ, (void)kind;
    sm_pf_metric_t *m = sm_pf_slot(pf, (void **)&pf->metrics, &pf->n_metrics, self, sizeof *m);
    if (!m)
        return OTF2_CALLBACK_SUCCESS;
    free(m->members);
    m->members = malloc(sizeof *m->members * (n ? n : 1u));
    if (!m->members) {
        pf->out_of_memory = true;
        return OTF2_CALLBACK_INTERRUPT;
    }
    for (uint32_t i = 0; i < n; i++)
        m->members[i] = members[i];
    m->n = n;
    m->klass = SM_PF_NONE;
    m->defined = true;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_metric_instance(void *u, OTF2_MetricRef self,
                                                   OTF2_MetricRef klass, OTF2_LocationRef rec,
                                                   OTF2_MetricScope scope, uint64_t which)
{
    sm_pf_t *pf = u;
    (void)rec, (void)scope, (void)which;
    sm_pf_metric_t *m = sm_pf_slot(pf, (void **)&pf->metrics, &pf->n_metrics, self, sizeof *m);
    if (m) {
        m->klass = klass;
        m->defined = true;
    }
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_group(void *u, OTF2_GroupRef self, OTF2_StringRef name,
                                         OTF2_GroupType type, OTF2_Paradigm paradigm,
                                         OTF2_GroupFlag flags, uint32_t n, const uint64_t *members)
{
    sm_pf_t *pf = u;
    (void)name, (void)flags;
    sm_pf_ogroup_t *g = sm_pf_slot(pf, (void **)&pf->ogroups, &pf->n_ogroups, self, sizeof *g);
    if (!g)
        return OTF2_CALLBACK_SUCCESS;
    free(g->members);
    g->members = malloc(sizeof *g->members * (n ? n : 1u));
    if (!g->members) {
        pf->out_of_memory = true;
        return OTF2_CALLBACK_INTERRUPT;
    }
    if (n)
        memcpy(g->members, members, sizeof *members * n);
    g->n = n;
    g->type = type;
    g->paradigm = paradigm;
    g->defined = true;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_comm(void *u, OTF2_CommRef self, OTF2_StringRef name,
                                        OTF2_GroupRef group, OTF2_CommRef parent,
                                        OTF2_CommFlag flags)
{
    sm_pf_t *pf = u;
    (void)name, (void)parent, (void)flags;
    sm_pf_comm_t *c = sm_pf_slot(pf, (void **)&pf->comms, &pf->n_comms, self, sizeof *c);
    if (c)
        *c = (sm_pf_comm_t){group, true};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode sm_pf_def_clock(void *u, uint64_t resolution, uint64_t offset,
                                         uint64_t length, uint64_t realtime)
{
    sm_pf_t *pf = u;
    (void)length, (void)realtime;
    pf->resolution = resolution;
    pf->offset = offset;
    return OTF2_CALLBACK_SUCCESS;
}

/* The location with reference ref; SM_PF_NONE.  Locations come sorted by
 * reference from sysmeasure, so try a binary search first. */
static uint32_t sm_pf_find_location(const sm_pf_t *pf, uint64_t ref)
{
    uint32_t lo = 0, hi = pf->n_locs;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (pf->locs[mid].ref < ref)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < pf->n_locs && pf->locs[lo].ref == ref)
        return lo;
    for (uint32_t i = 0; i < pf->n_locs; i++)
        if (pf->locs[i].ref == ref)
            return i;
    return SM_PF_NONE;
}

/* The process (index) of a location group: itself, or the process that
 * created it (an accelerator). */
uint32_t sm_pf_group_proc(const sm_pf_t *pf, uint32_t g)
{
    for (int hops = 0; hops < 4 && g < pf->n_groups && pf->groups[g].defined; hops++) {
        if (pf->groups[g].proc != SM_PF_NONE)
            return pf->groups[g].proc;
        g = pf->groups[g].creator;
    }
    return SM_PF_NONE;
}

/* The process of rank `rank` of communicator `comm`, seen from process
 * `me`; SM_PF_NONE when the archive does not say. */
uint32_t sm_pf_comm_peer(const sm_pf_t *pf, uint32_t comm, uint32_t rank, uint32_t me)
{
    if (comm >= pf->n_comms || !pf->comms[comm].defined)
        return SM_PF_NONE;
    uint32_t g = pf->comms[comm].group;
    if (g >= pf->n_ogroups || !pf->ogroups[g].defined)
        return SM_PF_NONE;
    const sm_pf_ogroup_t *grp = &pf->ogroups[g];
    if (grp->type == OTF2_GROUP_TYPE_COMM_SELF)
        return rank == 0 ? me : SM_PF_NONE;
    if (grp->type != OTF2_GROUP_TYPE_COMM_GROUP || rank >= grp->n)
        return SM_PF_NONE;
    uint64_t index = grp->members[rank];
    /* Its members index the locations group of its paradigm. */
    for (uint32_t i = 0; i < pf->n_ogroups; i++) {
        const sm_pf_ogroup_t *l = &pf->ogroups[i];
        if (!l->defined || l->type != OTF2_GROUP_TYPE_COMM_LOCATIONS ||
            l->paradigm != grp->paradigm)
            continue;
        if (index >= l->n)
            return SM_PF_NONE;
        uint32_t loc = sm_pf_find_location(pf, l->members[index]);
        return loc == SM_PF_NONE ? SM_PF_NONE : sm_pf_group_proc(pf, pf->locs[loc].group);
    }
    return SM_PF_NONE;
}

bool sm_pf_read_defs(sm_pf_t *pf, OTF2_Reader *r)
{
    OTF2_GlobalDefReader *g = OTF2_Reader_GetGlobalDefReader(r);
    if (!g)
        return false;
    OTF2_GlobalDefReaderCallbacks *cb = OTF2_GlobalDefReaderCallbacks_New();
    if (!cb) {
        pf->out_of_memory = true;
        return false;
    }
    OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, sm_pf_def_string);
    OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cb, sm_pf_def_region);
    OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(cb, sm_pf_def_attribute);
    OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cb, sm_pf_def_location);
    OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(cb, sm_pf_def_location_group);
    OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback(cb, sm_pf_def_member);
    OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback(cb, sm_pf_def_metric_class);
    OTF2_GlobalDefReaderCallbacks_SetMetricInstanceCallback(cb, sm_pf_def_metric_instance);
    OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cb, sm_pf_def_group);
    OTF2_GlobalDefReaderCallbacks_SetCommCallback(cb, sm_pf_def_comm);
    OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cb, sm_pf_def_clock);
    OTF2_ErrorCode rc = OTF2_Reader_RegisterGlobalDefCallbacks(r, g, cb, pf);
    uint64_t n = 0;
    if (rc == OTF2_SUCCESS)
        rc = OTF2_Reader_ReadAllGlobalDefinitions(r, g, &n);
    OTF2_GlobalDefReaderCallbacks_Delete(cb);
    OTF2_Reader_CloseGlobalDefReader(r, g);
    return rc == OTF2_SUCCESS && !pf->out_of_memory && !pf->damaged_defs;
}

/* Numbers the processes (location groups of type process, by reference)
 * and finds the correlation-id attribute. */
void sm_pf_index(sm_pf_t *pf)
{
    pf->n_procs = 0;
    for (uint32_t g = 0; g < pf->n_groups; g++)
        if (pf->groups[g].defined && pf->groups[g].type != OTF2_LOCATION_GROUP_TYPE_ACCELERATOR)
            pf->groups[g].proc = pf->n_procs++;
    pf->corr_attr = SM_PF_NONE;
    for (uint32_t a = 0; a < pf->n_attrs; a++) {
        const char *s = pf->attrs[a].defined ? sm_pf_string(pf, pf->attrs[a].name) : NULL;
        if (s && !strcmp(s, "correlation id"))
            pf->corr_attr = a;
    }
}
