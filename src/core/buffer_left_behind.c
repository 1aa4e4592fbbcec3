/* Spill files left behind (a rank that ended without the others, a
 * crash-safe file of a killed process), read by sysmeasure-merge and
 * checked (see buffer.h, sm_spill_file_check). */
#define _GNU_SOURCE
#include "buffer_private.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/grow.h"
#include "../util/log.h"

/* ---------------------------------------------------------------- files left behind */

/* The frames of one spill file, read once for all its locations (the merge
 * tool asks for them location by location). */
typedef struct sm_spill_index_entry {
    uint32_t location;
    sm_spill_extent_t e;
} sm_spill_index_entry_t;

static struct {
    char *path;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    sm_spill_index_entry_t *entries;
    uint64_t n;
    sm_spill_report_t report;
    int status;        /* as sm_spill_file_check */
    int tail_bad;      /* the end of the file is cut or overwritten */
    uint64_t tail_lost; /* records of a frame cut short there */
} sm_index;
static pthread_mutex_t sm_index_lock = PTHREAD_MUTEX_INITIALIZER;

static int sm_index_add(uint64_t *cap, uint32_t location, sm_spill_extent_t e)
{
    if (sm_index.n == *cap && SM_GROW(sm_index.entries, *cap, 256) != 0)
        return -1;
    sm_index.entries[sm_index.n++] = (sm_spill_index_entry_t){location, e};
    return 0;
}

static int sm_index_order(const void *a, const void *b)
{
    const sm_spill_index_entry_t *x = a, *y = b;
    if (x->location != y->location)
        return x->location < y->location ? -1 : 1;
    return x->e.seq < y->e.seq ? -1 : x->e.seq > y->e.seq;
}

/* The whole records at [p, end) of a chunk a killed process was writing,
 * in order: the end of that prefix, their number in *n.  Such a chunk has
 * no checksum (it is sealed when its thread leaves it), but every record
 * below its fill word is whole (the word is stored after the record), and
 * a thread records its enters and leaves in time order: a record of no
 * known kind, or an enter or leave earlier than the one before, is damage,
 * and the prefix ends before both of the two (either may be the damaged
 * one). */
static const uint8_t *sm_live_prefix(const uint8_t *p, const uint8_t *end, uint32_t *n,
                                     uint64_t *last_time)
{
    uint64_t last = 0, last_all = *last_time;
    const uint8_t *prev = NULL; /* the last enter or leave taken */
    uint32_t prev_n = 0;
    uint64_t prev_all = last_all;
    *n = 0;
    while (p + sizeof(sm_record_t) <= end) {
        const sm_record_t *rec = (const sm_record_t *)p;
        if (rec->kind == 0 || rec->kind >= SM_REC_KIND_COUNT || p + sm_record_size(rec) > end)
            break;
        if (rec->kind == SM_REC_ENTER || rec->kind == SM_REC_LEAVE) {
            if (rec->time < last) {
                if (prev) {
                    p = prev;
                    *n = prev_n;
                    last_all = prev_all;
                }
                break;
            }
            last = rec->time;
            prev = p;
            prev_n = *n;
            prev_all = last_all;
        }
        if (rec->time > last_all && rec->kind != SM_REC_CALLING_CONTEXT_SAMPLE)
            last_all = rec->time;
        p += sm_record_size(rec);
        ++*n;
    }
    *last_time = last_all;
    return p;
}

/* The slots of a crash-safe spill file: sealed ones are frames like any
 * (their data and the slot's own fields checked); a slot whose frame is not
 * sealed was being written when the process died: its whole records up to
 * its fill word, in order, are taken.  A sealed slot that fails a check is
 * kept in the index as damaged (its events are counted lost where its
 * location is read); a slot whose header is damaged beyond telling its
 * owner is counted in the report. */
static int sm_index_build_slots(int fd, const char *path, uint64_t size, uint64_t first_ok)
{
    sm_spill_report_t *r = &sm_index.report;
    sm_slots_hdr_t sh;
    r->crash_safe = 1;
    if (sm_pread_all(fd, &sh, sizeof sh, sizeof(sm_spill_fhdr_t)) != 0 ||
        sh.check != sm_sum64(&sh, offsetof(sm_slots_hdr_t, check)) ||
        sh.slot_bytes < sizeof(sm_chunk_t) + 64 || sh.slot_bytes > (1ull << 31) ||
        sh.first_slot < first_ok) {
        sm_error("%s: the crash-safe header is damaged: its events cannot be found", path);
        r->header_ok = 0;
        r->unreadable_bytes = size;
        sm_index.tail_bad = 1;
        return 0;
    }
    uint8_t *buf = malloc(sh.slot_bytes);
    if (!buf)
        return -1;
    uint64_t cap = 0;
    uint64_t cap_bytes = sh.slot_bytes - sizeof(sm_chunk_t);
    for (uint64_t off = sh.first_slot; off <= size && size - off >= sizeof(sm_chunk_t);
         off += sh.slot_bytes) {
        uint64_t len = size - off < sh.slot_bytes ? size - off : sh.slot_bytes;
        if (sm_pread_all(fd, buf, len, off) != 0)
            break;
        const sm_chunk_t *c = (const sm_chunk_t *)buf;
        if (c->slot_magic == 0)
            continue; /* never used */
        const sm_spill_frame_t *f = &c->frame;
        uint64_t at = off + offsetof(sm_chunk_t, frame);
        int sealed = sm_frame_intact(f);
        int slot_ok = c->slot_magic == SM_SLOT_MAGIC &&
                      (c->slot_pad == sm_slot_check(c, 0) ||
                       (sealed && c->slot_pad == sm_slot_check(c, f->head_check)));
        if (sealed) {
            /* Its location is the frame's (checked); its place the slot's. */
            int ok = slot_ok && f->location == c->slot_location && f->bytes <= cap_bytes &&
                     sizeof(sm_chunk_t) + f->bytes <= len &&
                     f->data_check == sm_sum64(c->data, f->bytes);
            if (ok) {
                r->frames++;
                r->records += f->records;
            } else {
                r->damaged_frames++;
                r->lost_records += f->records;
            }
            /* A damaged one stays in the index (without its bytes), so that
             * its location's reader counts its events as lost; its place is
             * its slot's, or after the location's others when that is
             * damaged too. */
            sm_spill_extent_t e = {at, ok ? f->bytes : 0, f->records,
                                   ok ? SM_EXTENT_SEALED : SM_EXTENT_DAMAGED,
                                   slot_ok ? c->slot_seq : UINT32_MAX, 0};
            if (sm_index_add(&cap, f->location, e) != 0)
                break;
            continue;
        }
        if (!slot_ok) {
            /* Neither sealed nor a slot being written (its check fails):
             * its owner is unknown.  (A frame written in part by a kill
             * while it was sealed leaves the slot's check as it was.) */
            r->damaged_frames++;
            r->damaged_unowned++;
            continue;
        }
        /* Being written at the end: its whole records, in order. */
        uint64_t fill = (uint64_t)(uintptr_t)c->live_end - c->slot_base;
        if ((uint64_t)(uintptr_t)c->live_end < c->slot_base || fill > cap_bytes)
            fill = 0;
        if (sizeof(sm_chunk_t) + fill > len)
            fill = len - sizeof(sm_chunk_t);
        uint32_t n = 0;
        const uint8_t *p = sm_live_prefix(c->data, c->data + fill, &n, &r->last_time);
        uint32_t cut = (uint32_t)(c->data + fill - p);
        r->live_cut_bytes += cut;
        if (!n && !cut)
            continue;
        r->frames++;
        r->records += n;
        r->live_chunks++;
        r->live_records += n;
        sm_spill_extent_t e = {at, (uint32_t)(p - c->data), n, SM_EXTENT_LIVE, c->slot_seq, cut};
        if (sm_index_add(&cap, c->slot_location, e) != 0)
            break;
    }
    free(buf);
    if (sm_index.n > 1)
        qsort(sm_index.entries, sm_index.n, sizeof *sm_index.entries, sm_index_order);
    return 0;
}

void sm_spill_image_fix_checks(uint8_t *data, size_t len, int slots)
{
    sm_spill_fhdr_t h;
    if (len < sizeof h)
        return;
    memcpy(&h, data, sizeof h);
    if (slots)
        h.version = SM_SPILL_VERSION_SLOTS;
    h.size = sizeof h;
    h.check = sm_sum64(&h, offsetof(sm_spill_fhdr_t, check));
    memcpy(data, &h, sizeof h);
    if (h.version != SM_SPILL_VERSION_SLOTS) {
        for (uint64_t off = sizeof h; off + sizeof(sm_spill_frame_t) <= len;) {
            sm_spill_frame_t f;
            memcpy(&f, data + off, sizeof f);
            if (off + sizeof f + f.bytes <= len)
                f.data_check = sm_sum64(data + off + sizeof f, f.bytes);
            f.head_check = sm_sum64(&f, offsetof(sm_spill_frame_t, head_check));
            memcpy(data + off, &f, sizeof f);
            off += sizeof f + f.bytes;
        }
        return;
    }
    sm_slots_hdr_t sh;
    if (len < sizeof h + sizeof sh)
        return;
    memcpy(&sh, data + sizeof h, sizeof sh);
    sh.check = sm_sum64(&sh, offsetof(sm_slots_hdr_t, check));
    memcpy(data + sizeof h, &sh, sizeof sh);
    if (sh.slot_bytes < sizeof(sm_chunk_t) + 64 || sh.slot_bytes > (1ull << 31) ||
        sh.first_slot < sizeof h + sizeof sh)
        return;
    for (uint64_t off = sh.first_slot; off <= len && len - off >= sizeof(sm_chunk_t);
         off += sh.slot_bytes) {
        sm_chunk_t c;
        memcpy(&c, data + off, sizeof c);
        sm_spill_frame_t *f = &c.frame;
        uint64_t head = 0;
        if (f->magic == SM_FRAME_MAGIC) {
            if (off + sizeof c + f->bytes <= len)
                f->data_check = sm_sum64(data + off + sizeof c, f->bytes);
            f->head_check = sm_sum64(f, offsetof(sm_spill_frame_t, head_check));
            head = f->head_check;
        }
        c.slot_pad = sm_slot_check(&c, head);
        memcpy(data + off, &c, sizeof c);
    }
}

/* What the header h says into r (header_ok, identity). */
static void sm_spill_header_read(sm_spill_fhdr_t *h, sm_spill_report_t *r)
{
    r->header_ok = h->size == sizeof *h && h->check == sm_sum64(h, offsetof(sm_spill_fhdr_t, check));
    r->rank = SM_SPILL_NO_RANK;
    if (!r->header_ok)
        return;
    memcpy(r->job, h->job, sizeof r->job);
    r->job[sizeof r->job - 1] = '\0';
    memcpy(r->host, h->host, sizeof r->host);
    r->host[sizeof r->host - 1] = '\0';
    r->pid = h->pid;
    r->rank = h->rank;
    r->n_ranks = h->n_ranks;
    r->crash_safe = h->version == SM_SPILL_VERSION_SLOTS;
}

int sm_spill_file_identity(const char *path, sm_spill_report_t *id)
{
    memset(id, 0, sizeof *id);
    id->rank = SM_SPILL_NO_RANK;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    sm_spill_fhdr_t h;
    int ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
             sm_pread_all(fd, &h, sizeof h, 0) == 0 && memcmp(h.magic, SM_SPILL_MAGIC, 8) == 0 &&
             (h.version == SM_SPILL_VERSION || h.version == SM_SPILL_VERSION_SLOTS);
    if (fd >= 0)
        close(fd);
    if (!ok)
        return -1;
    sm_spill_header_read(&h, id);
    return id->header_ok ? 0 : -1;
}

/* Reads the frame headers of fd into sm_index. */
static int sm_index_build(int fd, const char *path, const struct stat *st, int say)
{
    sm_spill_report_t *r = &sm_index.report;
    memset(r, 0, sizeof *r);
    free(sm_index.entries);
    sm_index.entries = NULL;
    sm_index.n = 0;
    sm_spill_fhdr_t h;
    if (sm_pread_all(fd, &h, sizeof h, 0) != 0 || memcmp(h.magic, SM_SPILL_MAGIC, 8) != 0) {
        if (say)
            sm_error("%s is not a sysmeasure spill file (or it is truncated)", path);
        return -1;
    }
    if (h.version != SM_SPILL_VERSION && h.version != SM_SPILL_VERSION_SLOTS) {
        if (say)
            sm_error("%s is a spill file of another sysmeasure version, or its header is damaged "
                 "(format %u; this one reads %u and %u): its events cannot be read", path,
                 (unsigned)h.version, (unsigned)SM_SPILL_VERSION,
                 (unsigned)SM_SPILL_VERSION_SLOTS);
        return -1;
    }
    uint64_t cap = 0;
    uint64_t off = sizeof h;
    /* A damaged header leaves the file's owner unknown; its frames, each
     * checked, are still read. */
    sm_spill_header_read(&h, r);
    uint64_t size = (uint64_t)st->st_size;
    sm_index.tail_bad = 0;
    sm_index.tail_lost = 0;
    if (h.version == SM_SPILL_VERSION_SLOTS)
        return sm_index_build_slots(fd, path, size, sizeof h + sizeof(sm_slots_hdr_t));
    while (off < size) {
        sm_spill_frame_t f;
        if (off + sizeof f > size || sm_pread_all(fd, &f, sizeof f, off) != 0 ||
            !sm_frame_intact(&f)) {
            r->unreadable_bytes = size - off;
            sm_index.tail_bad = 1;
            break;
        }
        if (off + sizeof f + f.bytes > size) { /* cut short */
            r->damaged_frames++;
            r->lost_records += f.records;
            sm_index.tail_bad = 1;
            sm_index.tail_lost = f.records;
            r->unreadable_bytes = size - off;
            break;
        }
        if (sm_index.n == cap && SM_GROW(sm_index.entries, cap, 256) != 0)
            return -1;
        sm_index.entries[sm_index.n++] =
            (sm_spill_index_entry_t){f.location, {off, f.bytes, f.records, SM_EXTENT_SEALED, 0, 0}};
        off += sizeof f + f.bytes;
    }
    return 0;
}

/* sm_index for path (index lock held): built unless it is that file, unchanged. */
/* The last file that could not be read: said once, however often its
 * locations are asked for (index lock held). */
static char *sm_index_failed;

static int sm_index_get(const char *path, int *fd_out)
{
    int say = !sm_index_failed || strcmp(sm_index_failed, path) != 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    int plain = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (!plain) {
        if (say)
            sm_error("cannot open spill file %s: %s", path,
                     fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        free(sm_index_failed);
        sm_index_failed = strdup(path);
        return -1;
    }
    if (!(sm_index.path && !strcmp(sm_index.path, path) && sm_index.dev == st.st_dev &&
          sm_index.ino == st.st_ino && sm_index.size == st.st_size &&
          sm_index.mtime.tv_sec == st.st_mtim.tv_sec &&
          sm_index.mtime.tv_nsec == st.st_mtim.tv_nsec)) {
        free(sm_index.path);
        sm_index.path = NULL;
        if (sm_index_build(fd, path, &st, say) != 0) {
            close(fd);
            free(sm_index_failed);
            sm_index_failed = strdup(path);
            return -1;
        }
        sm_index.path = strdup(path);
        sm_index.dev = st.st_dev;
        sm_index.ino = st.st_ino;
        sm_index.size = st.st_size;
        sm_index.mtime = st.st_mtim;
        sm_index.status = -2; /* data not checked yet */
    }
    *fd_out = fd;
    return 0;
}

int sm_spill_file_check(const char *path, sm_spill_report_t *report)
{
    pthread_mutex_lock(&sm_index_lock);
    int fd, rc = -1;
    if (sm_index_get(path, &fd) == 0) {
        if (sm_index.status == -2 && sm_index.report.crash_safe) { /* checked when read */
            const sm_spill_report_t *r = &sm_index.report;
            sm_index.status = r->header_ok && !r->damaged_frames && !r->unreadable_bytes ? 0 : 1;
        }
        if (sm_index.status == -2) {
            /* Check every frame's data once. */
            sm_spill_report_t *r = &sm_index.report;
            uint8_t *buf = NULL;
            size_t cap = 0;
            for (uint64_t i = 0; i < sm_index.n; i++) {
                const sm_spill_extent_t *e = &sm_index.entries[i].e;
                size_t len = sizeof(sm_spill_frame_t) + e->bytes;
                if (len > cap) {
                    free(buf);
                    buf = malloc(cap = len);
                }
                const sm_spill_frame_t *f = (const sm_spill_frame_t *)buf;
                if (buf && sm_pread_all(fd, buf, len, e->offset) == 0 &&
                    f->data_check == sm_sum64(buf + sizeof *f, e->bytes)) {
                    r->frames++;
                    r->records += e->records;
                } else {
                    r->damaged_frames++;
                    r->lost_records += e->records;
                }
            }
            free(buf);
            sm_index.status = r->header_ok && !r->damaged_frames && !r->unreadable_bytes ? 0 : 1;
        }
        if (report)
            *report = sm_index.report;
        rc = sm_index.status;
        close(fd);
    }
    pthread_mutex_unlock(&sm_index_lock);
    return rc;
}

/* What was said about the files read (index lock held): each loss once,
 * however often a location is read (the merge reads a recovered rank's
 * twice). */
typedef struct sm_said {
    dev_t dev;
    ino_t ino;
    uint32_t location; /* UINT32_MAX: the file as a whole */
} sm_said_t;
static sm_said_t *sm_said;
static uint64_t sm_n_said, sm_cap_said;

/* Whether this is the first time (and then it is noted). */
static int sm_say_once(uint32_t location)
{
    for (uint64_t i = 0; i < sm_n_said; i++)
        if (sm_said[i].dev == sm_index.dev && sm_said[i].ino == sm_index.ino &&
            sm_said[i].location == location)
            return 0;
    if (sm_n_said == sm_cap_said && SM_GROW(sm_said, sm_cap_said, 16) != 0)
        return 1;
    sm_said[sm_n_said++] = (sm_said_t){sm_index.dev, sm_index.ino, location};
    return 1;
}

/* " (rank R, pid P)": the rank the file's header names, or owner. */
static void sm_spill_whose(const sm_spill_report_t *r, const char *owner, char *buf, size_t len)
{
    if (r->header_ok && r->rank != SM_SPILL_NO_RANK)
        snprintf(buf, len, " (rank %u, pid %lld)", (unsigned)r->rank, (long long)r->pid);
    else if (r->header_ok)
        snprintf(buf, len, " (%s%spid %lld)", owner ? owner : "", owner ? ", " : "",
                 (long long)r->pid);
    else if (owner)
        snprintf(buf, len, " (%s)", owner);
    else
        buf[0] = '\0';
}

int sm_spill_file_for_each(const char *path, uint32_t location, sm_record_fn fn, void *arg)
{
    return sm_spill_file_for_each_of(path, location, NULL, fn, arg);
}

int sm_spill_file_for_each_of(const char *path, uint32_t location, const char *owner,
                              sm_record_fn fn, void *arg)
{
    sm_replay_t rp = {.fn = fn, .arg = arg};
    pthread_mutex_lock(&sm_index_lock);
    int fd;
    if (sm_index_get(path, &fd) != 0) {
        pthread_mutex_unlock(&sm_index_lock);
        return -1;
    }
    uint64_t n = 0;
    for (uint64_t i = 0; i < sm_index.n; i++)
        n += sm_index.entries[i].location == location;
    sm_spill_extent_t *e = malloc((n ? n : 1) * sizeof *e);
    uint32_t *e_cut = calloc(n ? n : 1, sizeof *e_cut);
    n = 0;
    for (uint64_t i = 0; e && e_cut && i < sm_index.n; i++)
        if (sm_index.entries[i].location == location) {
            e_cut[n] = sm_index.entries[i].e.cut;
            e[n++] = sm_index.entries[i].e;
        }
    int tail_damaged = sm_index.tail_bad;
    uint64_t tail_lost = sm_index.tail_lost, tail_bytes = sm_index.report.unreadable_bytes;
    const sm_spill_report_t rep = sm_index.report;
    int say_file = sm_say_once(UINT32_MAX);
    pthread_mutex_unlock(&sm_index_lock);
    if (!e || !e_cut) {
        free(e);
        free(e_cut);
        close(fd);
        return -1;
    }
    uint64_t lost = 0, lost_frames = 0;
    int rc = sm_replay_extents(&rp, fd, location, e, (uint32_t)n, &lost, &lost_frames);
    close(fd);
    free(e);
    rc = sm_replay_end(&rp, rc);
    char whose[160];
    sm_spill_whose(&rep, owner, whose, sizeof whose);
    /* The chunk a killed process was writing, damaged after its first
     * whole records (see sm_live_prefix). */
    uint64_t cut = 0, cut_events = 0;
    for (uint64_t i = 0; i < n; i++)
        if (e_cut[i]) {
            cut += e_cut[i];
            cut_events += (e_cut[i] + sizeof(sm_record_t) - 1) / sizeof(sm_record_t);
        }
    free(e_cut);
    if (cut) {
        pthread_mutex_lock(&sm_index_lock);
        int say = sm_index.path && !strcmp(sm_index.path, path) ? sm_say_once(location) : 1;
        pthread_mutex_unlock(&sm_index_lock);
        if (say)
            sm_error("crash-safe file %s%s: the chunk of location %u being written at the "
                     "kill is damaged after its whole events: %llu bytes of records (up to "
                     "%llu events) lost", path, whose, location, (unsigned long long)cut,
                     (unsigned long long)cut_events);
        if (rc == 0)
            rc = -1;
    }
    if (lost_frames) {
        pthread_mutex_lock(&sm_index_lock);
        int say = sm_index.path && !strcmp(sm_index.path, path) ? sm_say_once(location) : 1;
        pthread_mutex_unlock(&sm_index_lock);
        if (say && rep.crash_safe)
            sm_error("crash-safe file %s%s: %llu sealed chunk%s of location %u damaged (%s); "
                     "%llu events lost", path, whose, (unsigned long long)lost_frames,
                     lost_frames == 1 ? "" : "s", location,
                     lost_frames == 1 ? "it fails its checksum" : "they fail their checksums",
                     (unsigned long long)lost);
        else if (say)
            sm_error("spill file %s%s: %llu chunk%s of location %u damaged; %llu events lost",
                     path, whose, (unsigned long long)lost_frames, lost_frames == 1 ? "" : "s",
                     location, (unsigned long long)lost);
        if (rc == 0)
            rc = -1;
    }
    /* Chunks whose own header is damaged: their location, and so which
     * thread lost what, cannot be told.  Said once per file. */
    if (rep.damaged_unowned) {
        if (say_file)
            sm_error("crash-safe file %s%s: %llu chunk%s damaged beyond telling whose %s "
                     "(%s header fails its check); %s events lost", path, whose,
                     (unsigned long long)rep.damaged_unowned, rep.damaged_unowned == 1 ? "" : "s",
                     rep.damaged_unowned == 1 ? "it is" : "they are",
                     rep.damaged_unowned == 1 ? "its" : "their",
                     rep.damaged_unowned == 1 ? "its" : "their");
        if (rc == 0)
            rc = -1;
    }
    /* The end of the file is cut or overwritten: which location lost what
     * is unknown beyond the frame headers still readable; said once per
     * file. */
    if (tail_damaged) {
        if (say_file)
            sm_error("spill file %s%s is truncated or damaged at its end: %llu bytes unreadable "
                     "(%llu events of a cut chunk, and whatever followed it, lost)", path, whose,
                     (unsigned long long)tail_bytes, (unsigned long long)tail_lost);
        if (rc == 0)
            rc = -1;
    }
    return rc;
}
