/* The Perfetto writer's entry, sysmeasure_perfetto_convert: the archive
 * opened with libotf2's reader, its definitions read, then its locations
 * one after another into trace.pftrace (written beside it, then renamed). */
#include "sm_build.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfetto_internal.h"
#include "../../util/log.h"

/* ---------------------------------------------------------------- errors */

typedef struct {
    OTF2_ErrorCode code;
    char message[256];
} sm_pf_error_t;

static OTF2_ErrorCode sm_pf_error_callback(void *user, const char *file, uint64_t line,
                                           const char *function, OTF2_ErrorCode code,
                                           const char *fmt, va_list va)
{
    sm_pf_error_t *e = user;
    (void)file, (void)line, (void)function;
    if (e && e->code == OTF2_SUCCESS && code != OTF2_WARNING && code != OTF2_DEPRECATED) {
        e->code = code;
        e->message[0] = '\0';
        if (fmt)
            vsnprintf(e->message, sizeof e->message, fmt, va);
    }
    return code;
}

/* ---------------------------------------------------------------- driver */

static void sm_pf_free(sm_pf_t *pf)
{
    for (uint32_t i = 0; i < pf->n_strings; i++)
        free(pf->strings[i]);
    free(pf->strings);
    free(pf->region_name);
    free(pf->attrs);
    free(pf->locs);
    free(pf->groups);
    free(pf->members);
    for (uint32_t i = 0; i < pf->n_metrics; i++)
        free(pf->metrics[i].members);
    free(pf->metrics);
    for (uint32_t i = 0; i < pf->n_ogroups; i++)
        free(pf->ogroups[i].members);
    free(pf->ogroups);
    free(pf->comms);
    free(pf->region_seen);
    free(pf->attr_seen);
    free(pf->member_seen);
    free(pf->channels);
    free(pf->buf);
}

static bool sm_pf_read_location(sm_pf_t *pf, OTF2_Reader *r, OTF2_EvtReaderCallbacks *cb,
                                uint32_t i)
{
    pf->loc = i;
    pf->proc = sm_pf_group_proc(pf, pf->locs[i].group);
    pf->track = sm_pf_location_uuid(i);
    pf->seq = i + 2;
    memset(pf->region_seen, 0, pf->n_regions ? pf->n_regions : 1);
    memset(pf->attr_seen, 0, pf->n_attrs ? pf->n_attrs : 1);
    memset(pf->member_seen, 0, pf->n_members ? pf->n_members : 1);
    memset(pf->extra_seen, 0, sizeof pf->extra_seen);
    memset(pf->extra_arg_seen, 0, sizeof pf->extra_arg_seen);
    pf->pending.active = false;
    sm_pf_sequence_start(pf);
    if (!pf->locs[i].n_events)
        return true;
    OTF2_EvtReader *e = OTF2_Reader_GetEvtReader(r, pf->locs[i].ref);
    if (!e)
        return false;
    OTF2_ErrorCode rc = OTF2_Reader_RegisterEvtCallbacks(r, e, cb, pf);
    uint64_t n = 0;
    if (rc == OTF2_SUCCESS)
        rc = OTF2_Reader_ReadAllLocalEvents(r, e, &n);
    sm_pf_flush_pending(pf);
    OTF2_Reader_CloseEvtReader(r, e);
    return rc == OTF2_SUCCESS && !pf->out_of_memory;
}

/* The plugin's one entry (perfetto_loader.c finds it with dlsym). */
SM_EXPORT int sysmeasure_perfetto_convert(const char *dir, sm_perfetto_stats_t *stats, char *err,
                                          size_t errlen)
{
    char anchor[4200], path[4200], tmp[4300];
    snprintf(anchor, sizeof anchor, "%s/traces.otf2", dir);
    snprintf(path, sizeof path, "%s/trace.pftrace", dir);
    snprintf(tmp, sizeof tmp, "%s/.trace.pftrace.%ld.tmp", dir, (long)getpid());
    struct stat st;
    if (stat(anchor, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s holds no OTF2 archive (traces.otf2): not a sysmeasure output "
                 "folder with a trace", dir);
        return SM_PERFETTO_NOT_OUTPUT;
    }

    sm_pf_error_t reported = {OTF2_SUCCESS, ""};
    OTF2_ErrorCallback previous = OTF2_Error_RegisterCallback(sm_pf_error_callback, &reported);
    sm_pf_t pf;
    memset(&pf, 0, sizeof pf);
    int result = SM_PERFETTO_NOT_OUTPUT;
    const char *damage = NULL;
    OTF2_Reader *r = OTF2_Reader_Open(anchor);
    OTF2_EvtReaderCallbacks *cb = NULL;
    if (!r || OTF2_Reader_SetSerialCollectiveCallbacks(r) != OTF2_SUCCESS) {
        damage = "its anchor file cannot be read";
        goto done;
    }
    if (!sm_pf_read_defs(&pf, r)) {
        damage = pf.out_of_memory ? NULL : "its definitions are damaged";
        goto done;
    }
    sm_pf_index(&pf);
    pf.region_seen = calloc(pf.n_regions ? pf.n_regions : 1, 1);
    pf.attr_seen = calloc(pf.n_attrs ? pf.n_attrs : 1, 1);
    pf.member_seen = calloc(pf.n_members ? pf.n_members : 1, 1);
    cb = sm_pf_event_callbacks();
    if (!pf.region_seen || !pf.attr_seen || !pf.member_seen || !cb) {
        pf.out_of_memory = true;
        goto done;
    }
    for (uint32_t i = 0; i < pf.n_locs; i++)
        OTF2_Reader_SelectLocation(r, pf.locs[i].ref);
    /* Local definitions (mapping tables), where an archive has them. */
    if (OTF2_Reader_OpenDefFiles(r) == OTF2_SUCCESS) {
        for (uint32_t i = 0; i < pf.n_locs; i++) {
            OTF2_DefReader *d = OTF2_Reader_GetDefReader(r, pf.locs[i].ref);
            if (d) {
                uint64_t n = 0;
                OTF2_Reader_ReadAllLocalDefinitions(r, d, &n);
                OTF2_Reader_CloseDefReader(r, d);
            }
        }
        OTF2_Reader_CloseDefFiles(r);
    }
    reported.code = OTF2_SUCCESS; /* (a missing local definition file is no damage) */
    if (OTF2_Reader_OpenEvtFiles(r) != OTF2_SUCCESS) {
        damage = "its event files cannot be opened";
        goto done;
    }

    pf.out = fopen(tmp, "wb");
    if (!pf.out) {
        sm_error("cannot write %s: %s", path, strerror(errno));
        result = -1;
        goto done;
    }
    setvbuf(pf.out, NULL, _IOFBF, 1u << 20);
    errno = 0;
    sm_pf_write_tracks(&pf);
    for (uint32_t i = 0; i < pf.n_locs && !pf.write_failed; i++)
        if (!sm_pf_read_location(&pf, r, cb, i)) {
            if (!pf.out_of_memory)
                damage = "the events of a location are damaged";
            break;
        }
    OTF2_Reader_CloseEvtFiles(r);
    if (damage || pf.out_of_memory)
        goto done;
    if (fflush(pf.out) != 0 && !pf.write_failed) {
        pf.write_failed = true;
        pf.write_errno = errno;
    }
    if (fclose(pf.out) != 0 && !pf.write_failed) {
        pf.write_failed = true;
        pf.write_errno = errno;
    }
    pf.out = NULL;
    if (pf.write_failed) {
        sm_error("writing %s failed: %s", path, strerror(pf.write_errno));
        result = -1;
        goto done;
    }
    if (rename(tmp, path) != 0) {
        sm_error("cannot write %s: %s", path, strerror(errno));
        result = -1;
        goto done;
    }
    pf.stats.bytes = pf.bytes;
    if (stats)
        *stats = pf.stats;
    result = 0;
done:
    if (result != 0 && pf.out_of_memory) {
        sm_error("writing %s failed: out of memory", path);
        result = -1;
    } else if (result == SM_PERFETTO_NOT_OUTPUT) {
        if (reported.code != OTF2_SUCCESS && reported.message[0])
            snprintf(err, errlen, "the OTF2 archive %s is damaged: %s (%s)", anchor,
                     damage ? damage : "it cannot be read", reported.message);
        else
            snprintf(err, errlen, "the OTF2 archive %s is damaged: %s", anchor,
                     damage ? damage : "it cannot be read");
    }
    if (pf.out)
        fclose(pf.out);
    if (result != 0)
        unlink(tmp);
    if (cb)
        OTF2_EvtReaderCallbacks_Delete(cb);
    if (r)
        OTF2_Reader_Close(r);
    OTF2_Error_RegisterCallback(previous, NULL);
    sm_pf_free(&pf);
    return result;
}
