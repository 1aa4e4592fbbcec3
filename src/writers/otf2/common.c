/* What every part of the OTF2 writer uses (otf2_internal.h): OTF2's
 * callbacks (errors, flushes, the chunks of its buffers), the first failure
 * and its one line, and the folders of the archives. */
#include "sm_build.h" /* from configure: _GNU_SOURCE, before any other */

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "otf2_internal.h"
#include "../../core/cpus.h"
#include "../../core/pages.h"
#include "../../core/write_behind.h"
#include "../../util/fs.h"
#include "../../util/log.h"

sm_otf2_error_t sm_otf2_reported; /* (otf2_internal.h) */
/* The encoders of the end of the run may fail at once. */
static pthread_mutex_t sm_otf2_reported_lock = PTHREAD_MUTEX_INITIALIZER;

/* Keep OTF2 from printing its own messages: keep the first error for our one
 * line instead.  Warnings are shown only when verbose; aborts are shown, as
 * the process is about to end. */
OTF2_ErrorCode sm_otf2_error_callback(void *user, const char *file, uint64_t line,
                                      const char *function, OTF2_ErrorCode code,
                                      const char *fmt, va_list va)
{
    sm_otf2_error_t *e = user;
    char msg[sizeof e->message];
    (void)file;
    (void)line;
    (void)function;
    msg[0] = '\0';
    if (fmt)
        vsnprintf(msg, sizeof msg, fmt, va);
    if (code == OTF2_ABORT) {
        sm_error("OTF2: %s", msg);
    } else if (code == OTF2_WARNING || code == OTF2_DEPRECATED) {
        sm_info(2, "OTF2: %s", msg);
    } else if (e) {
        pthread_mutex_lock(&sm_otf2_reported_lock);
        if (e->code == OTF2_SUCCESS) {
            memcpy(e->message, msg, sizeof msg);
            __atomic_store_n(&e->code, code, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&sm_otf2_reported_lock);
    }
    return code;
}

OTF2_FlushType sm_otf2_pre_flush(void *user, OTF2_FileType type, OTF2_LocationRef location,
                                 void *caller, bool final)
{
    (void)user;
    (void)type;
    (void)location;
    (void)caller;
    (void)final;
    /* Always write full buffers out: OTF2's default for event writers is to
     * keep them in memory. */
    return OTF2_FLUSH;
}

/* OTF2's buffer chunks come from here, and go back to a small pool when a
 * writer is flushed or closed.  Left to itself, OTF2 allocates a fresh 4 MiB
 * chunk for every writer and returns it to the system at close: with
 * thousands of locations (short-lived threads) the page faults and unmaps
 * of those chunks took tens of milliseconds per location on a virtual
 * machine, most of the writing time.  A buffer holds at most
 * SM_OTF2_CHUNKS_PER_BUFFER chunks; then the allocation fails, which makes
 * OTF2 flush the buffer to its file and free its chunks (here).  One chunk:
 * the same 4 MiB are filled again after each flush while still in cache,
 * and only 4 MiB are faulted in at the end of the run (with 4, the fresh
 * 16 MiB cost a tenth of the exit time, issue 13). */
#define SM_OTF2_CHUNKS_PER_BUFFER 1
#define SM_OTF2_POOL (SM_CPUS_END_MAX + 8) /* a chunk per encoder of the end, and some */

/* Every chunk is declared to the write-behind (write_behind.h): while it
 * runs, OTF2's write of a full chunk is queued, and a chunk is filled again
 * only once that write is done (sm_wb_busy), so the encoder fills another
 * meanwhile. */
void *sm_otf2_chunk_new(uint64_t size)
{
    void *c = sm_pages_get((size_t)size); /* populated (pages.h) */
    if (c)
        sm_wb_own(c, (size_t)size);
    return c;
}

void sm_otf2_chunk_free(void *c, uint64_t size)
{
    sm_wb_disown(c); /* (waits for its queued write) */
    sm_pages_put(c, (size_t)size);
}

typedef struct sm_otf2_buffer_chunks {
    uint32_t n;
    uint64_t size;
    void *chunk[SM_OTF2_CHUNKS_PER_BUFFER];
} sm_otf2_buffer_chunks_t;

static void *sm_otf2_pool[SM_OTF2_POOL];
static uint64_t sm_otf2_pool_size[SM_OTF2_POOL];
static uint32_t sm_otf2_pool_n;
static pthread_mutex_t sm_otf2_pool_lock = PTHREAD_MUTEX_INITIALIZER; /* several encoders */

void *sm_otf2_allocate(void *user, OTF2_FileType type, OTF2_LocationRef location,
                       void **per_buffer, uint64_t size)
{
    (void)user;
    (void)type;
    (void)location;
    sm_otf2_buffer_chunks_t *b = *per_buffer;
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b)
            return NULL;
        *per_buffer = b;
    }
    if (b->n == SM_OTF2_CHUNKS_PER_BUFFER)
        return NULL;
    void *c = NULL;
    pthread_mutex_lock(&sm_otf2_pool_lock);
    for (uint32_t i = sm_otf2_pool_n; i-- > 0;)
        if (sm_otf2_pool_size[i] == size && !sm_wb_busy(sm_otf2_pool[i])) {
            c = sm_otf2_pool[i];
            sm_otf2_pool[i] = sm_otf2_pool[sm_otf2_pool_n - 1];
            sm_otf2_pool_size[i] = sm_otf2_pool_size[sm_otf2_pool_n - 1];
            sm_otf2_pool_n--;
            break;
        }
    pthread_mutex_unlock(&sm_otf2_pool_lock);
    if (!c && !(c = sm_otf2_chunk_new(size)))
        return NULL;
    b->size = size;
    b->chunk[b->n++] = c;
    return c;
}

void sm_otf2_free_all(void *user, OTF2_FileType type, OTF2_LocationRef location,
                      void **per_buffer, bool final)
{
    (void)user;
    (void)type;
    (void)location;
    sm_otf2_buffer_chunks_t *b = *per_buffer;
    if (!b)
        return;
    for (uint32_t i = 0; i < b->n; i++) {
        void *spare = b->chunk[i];
        pthread_mutex_lock(&sm_otf2_pool_lock);
        if (sm_otf2_pool_n < SM_OTF2_POOL) {
            sm_otf2_pool_size[sm_otf2_pool_n] = b->size;
            sm_otf2_pool[sm_otf2_pool_n++] = spare;
            spare = NULL;
        }
        pthread_mutex_unlock(&sm_otf2_pool_lock);
        if (spare)
            sm_otf2_chunk_free(spare, b->size);
    }
    b->n = 0;
    if (final) {
        free(b);
        *per_buffer = NULL;
    }
}

void sm_otf2_pool_release(void)
{
    while (sm_otf2_pool_n) {
        sm_otf2_pool_n--;
        sm_otf2_chunk_free(sm_otf2_pool[sm_otf2_pool_n], sm_otf2_pool_size[sm_otf2_pool_n]);
    }
}

/* For calls that return a handle: NULL is a failure with this reason, unless
 * OTF2 said why. */
bool sm_otf2_got(sm_otf2_writer_t *w, const void *handle, const char *reason)
{
    if (handle)
        return sm_otf2_ok(w, OTF2_SUCCESS);
    if (w->failed_code == OTF2_SUCCESS && !w->failed_reason)
        w->failed_reason = reason;
    return false;
}

void sm_otf2_report_failure(const sm_otf2_writer_t *w)
{
    const char *dir = w->run->output_dir;
    const sm_otf2_error_t *e = &sm_otf2_reported;
    if (e->code != OTF2_SUCCESS) {
        /* OTF2's description names the problem ("No space left on device"),
         * its message the object (the file). */
        const char *desc = e->code == OTF2_ERROR_EFBIG ? sm_fs_size_limit_text()
                                                       : OTF2_Error_GetDescription(e->code);
        if (e->message[0])
            sm_error("writing OTF2 archive %s/%s.otf2 failed: %s (%s)", dir, SM_OTF2_ARCHIVE_NAME,
                     desc, e->message);
        else
            sm_error("writing OTF2 archive %s/%s.otf2 failed: %s", dir, SM_OTF2_ARCHIVE_NAME, desc);
    } else if (w->failed_code != OTF2_SUCCESS) {
        sm_error("writing OTF2 archive %s/%s.otf2 failed: %s", dir, SM_OTF2_ARCHIVE_NAME,
                 w->failed_code == OTF2_ERROR_EFBIG ? sm_fs_size_limit_text()
                                                    : OTF2_Error_GetDescription(w->failed_code));
    } else {
        sm_error("writing OTF2 archive %s/%s.otf2 failed: %s", dir, SM_OTF2_ARCHIVE_NAME,
                 w->failed_reason ? w->failed_reason : "unknown error");
    }
}

int sm_otf2_remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* A fresh folder dir (what a killed run left there removed). */
bool sm_otf2_fresh_dir(const char *dir)
{
    if (access(dir, F_OK) == 0)
        nftw(dir, sm_otf2_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return sm_mkdir_p(dir) == 0;
}

/* An archive in folder dir written by one thread, whose files are moved into
 * the job's: the staging archive of the run's encoding, and each extra
 * encoder's at the end.  *archive: the archive, or NULL; false when it or
 * one of its settings failed (it may be open then). */
bool sm_otf2_open_staging(OTF2_Archive **archive, const char *dir, uint64_t def_chunk,
                          const OTF2_MemoryCallbacks *memory)
{
    static const OTF2_FlushCallbacks flush = {sm_otf2_pre_flush, NULL};
    OTF2_Archive *a = OTF2_Archive_Open(dir, SM_OTF2_ARCHIVE_NAME, OTF2_FILEMODE_WRITE,
                                        SM_OTF2_EVT_CHUNK, def_chunk, OTF2_SUBSTRATE_POSIX,
                                        OTF2_COMPRESSION_NONE);
    *archive = a;
    return a && OTF2_Archive_SetFlushCallbacks(a, &flush, NULL) == OTF2_SUCCESS &&
           OTF2_Archive_SetMemoryCallbacks(a, memory, NULL) == OTF2_SUCCESS &&
           OTF2_Archive_SetSerialCollectiveCallbacks(a) == OTF2_SUCCESS &&
           OTF2_Archive_OpenEvtFiles(a) == OTF2_SUCCESS;
}
