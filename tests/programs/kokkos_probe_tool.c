/* A second KokkosP tool for the chaining test: counts the callbacks it gets
 * and writes the counts to $KP_PROBE_OUT at finalize ("name count" lines). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct kp_space {
    char name[64];
};

enum { INIT, FINALIZE, BEGIN_FOR, END_FOR, BEGIN_REDUCE, END_REDUCE, BEGIN_SCAN, END_SCAN,
       PUSH, POP, ALLOC, DEALLOC, BEGIN_COPY, END_COPY, BEGIN_FENCE, END_FENCE, METADATA,
       CREATE_SECTION, START_SECTION, STOP_SECTION, EVENT, BAD_ID, N };
static const char *const names[N] = {
    "init", "finalize", "begin_for", "end_for", "begin_reduce", "end_reduce", "begin_scan",
    "end_scan", "push", "pop", "alloc", "dealloc", "begin_copy", "end_copy", "begin_fence",
    "end_fence", "metadata", "create_section", "start_section", "stop_section", "event",
    "bad_id"};
static unsigned long counts[N];
static int load_seq = -1;

#define V __attribute__((visibility("default")))

V void kokkosp_init_library(int seq, uint64_t version, uint32_t n, void *info)
{
    (void)version, (void)n, (void)info;
    load_seq = seq;
    counts[INIT]++;
}

V void kokkosp_finalize_library(void)
{
    counts[FINALIZE]++;
    const char *path = getenv("KP_PROBE_OUT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f)
        return;
    fprintf(f, "load_seq %d\n", load_seq);
    for (int i = 0; i < N; i++)
        fprintf(f, "%s %lu\n", names[i], counts[i]);
    fclose(f);
}

/* Kernel ids of our own (7000 + kind), checked at the end: the tool in front
 * must hand back the id this tool chose, not its own. */
#define KERNEL(kind, BEGIN, END, ID)                                       \
    V void kokkosp_begin_##kind(const char *name, uint32_t dev, uint64_t *id) \
    {                                                                       \
        (void)name, (void)dev;                                              \
        *id = ID;                                                           \
        counts[BEGIN]++;                                                    \
    }                                                                       \
    V void kokkosp_end_##kind(uint64_t id)                                  \
    {                                                                       \
        counts[END]++;                                                      \
        if (id != ID)                                                       \
            counts[BAD_ID]++;                                               \
    }
KERNEL(parallel_for, BEGIN_FOR, END_FOR, 7001)
KERNEL(parallel_reduce, BEGIN_REDUCE, END_REDUCE, 7002)
KERNEL(parallel_scan, BEGIN_SCAN, END_SCAN, 7003)
KERNEL(fence, BEGIN_FENCE, END_FENCE, 7004)

V void kokkosp_push_profile_region(const char *name) { (void)name; counts[PUSH]++; }
V void kokkosp_pop_profile_region(void) { counts[POP]++; }
V void kokkosp_allocate_data(struct kp_space s, const char *l, const void *p, uint64_t n)
{
    (void)s, (void)l, (void)p, (void)n;
    counts[ALLOC]++;
}
V void kokkosp_deallocate_data(struct kp_space s, const char *l, const void *p, uint64_t n)
{
    (void)s, (void)l, (void)p, (void)n;
    counts[DEALLOC]++;
}
V void kokkosp_begin_deep_copy(struct kp_space ds, const char *dl, const void *dp,
                               struct kp_space ss, const char *sl, const void *sp, uint64_t n)
{
    (void)ds, (void)dl, (void)dp, (void)ss, (void)sl, (void)sp, (void)n;
    counts[BEGIN_COPY]++;
}
V void kokkosp_end_deep_copy(void) { counts[END_COPY]++; }
V void kokkosp_declare_metadata(const char *k, const char *v) { (void)k, (void)v; counts[METADATA]++; }
V void kokkosp_create_profile_section(const char *name, uint32_t *id)
{
    (void)name;
    *id = 4242;
    counts[CREATE_SECTION]++;
}
V void kokkosp_start_profile_section(uint32_t id) { counts[id == 4242 ? START_SECTION : BAD_ID]++; }
V void kokkosp_stop_profile_section(uint32_t id) { counts[id == 4242 ? STOP_SECTION : BAD_ID]++; }
V void kokkosp_profile_event(const char *name) { (void)name; counts[EVENT]++; }
