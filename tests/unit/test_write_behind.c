/* Write-behind (src/core/write_behind.c) on the real OTF2 library: its
 * fwrite, fseek and fclose are hooked; an event file written with the
 * write-behind thread running is byte for byte the one written without it;
 * its buffers are busy while queued and free again once written; and a
 * write that fails on the write-behind thread (a file size limit) makes the
 * writer's close fail, as a synchronous failure would. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <otf2/otf2.h>

#include "core/write_behind.h"
#include "unit.h"

#define CHUNK (4u << 20) /* as the OTF2 writer's */
#define EVENTS 2000000 /* about 20 MB: full chunks, then a partial one */

static int busy_seen;

/* One chunk per buffer at a time (OTF2 flushes it when it wants another),
 * from a pool of chunks declared to the write-behind; a chunk is reused only
 * once its queued write is done (as the OTF2 writer's pool does). */
#define POOL 8
typedef struct {
    void *chunk[POOL];
    int in_use[POOL];
    int n;
} pool_t;

static void *allocate(void *user, OTF2_FileType type, OTF2_LocationRef loc, void **per_buffer,
                      uint64_t size)
{
    (void)type;
    (void)loc;
    pool_t *p = user;
    if (*per_buffer)
        return NULL; /* its chunk is full: OTF2 flushes it */
    int pick = -1;
    for (int i = 0; i < p->n && pick < 0; i++)
        if (!p->in_use[i] && !sm_wb_busy(p->chunk[i]))
            pick = i;
    if (pick < 0) {
        busy_seen |= p->n > 0;
        if (p->n == POOL || !(p->chunk[p->n] = aligned_alloc(4096, size)))
            return NULL;
        sm_wb_own(p->chunk[p->n], size);
        pick = p->n++;
    }
    p->in_use[pick] = 1;
    *per_buffer = &p->in_use[pick];
    return p->chunk[pick];
}

static void free_all(void *user, OTF2_FileType type, OTF2_LocationRef loc, void **per_buffer,
                     bool final)
{
    (void)user;
    (void)type;
    (void)loc;
    (void)final;
    if (*per_buffer)
        *(int *)*per_buffer = 0;
    *per_buffer = NULL;
}

static OTF2_FlushType pre_flush(void *user, OTF2_FileType type, OTF2_LocationRef loc,
                                void *caller, bool final)
{
    (void)user;
    (void)type;
    (void)loc;
    (void)caller;
    (void)final;
    return OTF2_FLUSH;
}

static int otf2_errors;

/* An archive with one location's events; returns whether every OTF2 call
 * succeeded and OTF2 reported no error. */
static int write_archive(const char *dir, pool_t *pool)
{
    int errors = otf2_errors;
    static const OTF2_FlushCallbacks flush = {pre_flush, NULL};
    OTF2_MemoryCallbacks memory = {allocate, free_all};
    OTF2_Archive *a = OTF2_Archive_Open(dir, "t", OTF2_FILEMODE_WRITE, CHUNK, CHUNK,
                                        OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!a)
        return 0;
    int ok = OTF2_Archive_SetFlushCallbacks(a, &flush, NULL) == OTF2_SUCCESS &&
             OTF2_Archive_SetMemoryCallbacks(a, &memory, pool) == OTF2_SUCCESS &&
             OTF2_Archive_SetSerialCollectiveCallbacks(a) == OTF2_SUCCESS &&
             OTF2_Archive_OpenEvtFiles(a) == OTF2_SUCCESS;
    OTF2_EvtWriter *e = ok ? OTF2_Archive_GetEvtWriter(a, 0) : NULL;
    ok = ok && e;
    for (uint64_t i = 0; ok && i < EVENTS; i += 2)
        ok = OTF2_EvtWriter_Enter(e, NULL, 1000 + 10 * i, (uint32_t)(i % 7)) == OTF2_SUCCESS &&
             OTF2_EvtWriter_Leave(e, NULL, 1005 + 10 * i, (uint32_t)(i % 7)) == OTF2_SUCCESS;
    if (e)
        ok = OTF2_Archive_CloseEvtWriter(a, e) == OTF2_SUCCESS && ok;
    ok = OTF2_Archive_CloseEvtFiles(a) == OTF2_SUCCESS && ok;
    ok = OTF2_Archive_Close(a) == OTF2_SUCCESS && ok;
    return ok && otf2_errors == errors;
}

/* OTF2 reports some failures only here (a failed flush of an event buffer
 * returns success): counted, not printed. */

static OTF2_ErrorCode quiet(void *user, const char *file, uint64_t line, const char *function,
                            OTF2_ErrorCode code, const char *msg, va_list args)
{
    (void)user;
    (void)file;
    (void)line;
    (void)function;
    (void)msg;
    (void)args;
    otf2_errors++;
    return code;
}

static long file_bytes(const char *path, char **data)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *data = malloc(n > 0 ? (size_t)n : 1);
    if (!*data || fread(*data, 1, (size_t)n, f) != (size_t)n)
        n = -1;
    fclose(f);
    return n;
}

int main(void)
{
    char dir[] = "/tmp/sm-test-write-behind-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char a_dir[128], b_dir[128], c_dir[128], a_evt[160], b_evt[160];
    snprintf(a_dir, sizeof a_dir, "%s/sync", dir);
    snprintf(b_dir, sizeof b_dir, "%s/behind", dir);
    snprintf(c_dir, sizeof c_dir, "%s/limit", dir);
    snprintf(a_evt, sizeof a_evt, "%s/t/0.evt", a_dir);
    snprintf(b_evt, sizeof b_evt, "%s/t/0.evt", b_dir);
    OTF2_Error_RegisterCallback(quiet, NULL);

    /* Not running: everything synchronous (and before the hook, too). */
    CHECK(sm_wb_start() == -1); /* not hooked yet */
    CHECK(sm_wb_hook((const void *)main) == -1); /* the program itself: no */
    CHECK(sm_wb_hook((const void *)OTF2_Archive_Open) == 0);
    pool_t p1 = {0};
    CHECK(write_archive(a_dir, &p1));
    CHECK_EQ_U(sm_wb_bytes(), 0);

    /* Running: the full chunks are written behind, the file is the same. */
    CHECK(sm_wb_start() == 0);
    pool_t p2 = {0};
    CHECK(write_archive(b_dir, &p2));
    sm_wb_stop();
    uint64_t behind = sm_wb_bytes();
    printf("written behind: %llu bytes; a chunk was busy when wanted: %d; chunks: %d\n",
           (unsigned long long)behind, busy_seen, p2.n);
    CHECK(behind >= 3ull * CHUNK);
    char *a = NULL, *b = NULL;
    long na = file_bytes(a_evt, &a), nb = file_bytes(b_evt, &b);
    CHECK(na > (long)(3 * CHUNK));
    CHECK(na == nb && a && b && memcmp(a, b, (size_t)na) == 0);
    free(a);
    free(b);
    for (int i = 0; i < p2.n; i++)
        CHECK(!sm_wb_busy(p2.chunk[i]));

    /* A write that fails behind: a 1 MB file size limit (SIGXFSZ ignored:
     * the write returns EFBIG).  The event writer's close must fail. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim = {1u << 20, 1u << 20};
    getrlimit(RLIMIT_FSIZE, &old);
    lim.rlim_max = old.rlim_max;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    CHECK(sm_wb_start() == 0);
    uint64_t before = sm_wb_bytes();
    pool_t p3 = {0};
    CHECK(!write_archive(c_dir, &p3));
    sm_wb_stop();
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK(sm_wb_bytes() - before < (1u << 20)); /* only what fitted counts */

    pool_t *ps[3] = {&p1, &p2, &p3};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < ps[k]->n; i++) {
            sm_wb_disown(ps[k]->chunk[i]);
            free(ps[k]->chunk[i]);
        }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return UNIT_RESULT();
}
