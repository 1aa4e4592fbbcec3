/* The AMD backend's conversions (gpu/rocm/rocm_convert.c) on records laid
 * out byte for byte as HIP 5.x writes its activity_record_t and as HSA
 * reports profiling ticks.  No AMD GPU was available: these bytes were
 * written from the published layout (prof_protocol.h), not captured from a
 * device, so this checks our reading of that layout and our arithmetic, not
 * that a real runtime delivers such records. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/rocm/rocm_convert.h"
#include "unit.h"

/* Little-endian field writers into a 64-byte record image. */
static void put32(uint8_t *b, size_t at, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[at + i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *b, size_t at, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[at + i] = (uint8_t)(v >> (8 * i));
}

/* A record image: domain, kind, op at 0/4/8, correlation id, begin, end at
 * 16/24/32, device id at 40, queue id at 48, bytes at 56; the padding
 * bytes hold garbage, as a runtime's may. */
static sm_hip_record_t record(uint32_t domain, uint32_t kind, uint32_t op, uint64_t corr,
                              uint64_t begin, uint64_t end, int32_t device, uint64_t queue,
                              uint64_t bytes)
{
    uint8_t img[64];
    memset(img, 0xA5, sizeof img);
    put32(img, 0, domain);
    put32(img, 4, kind);
    put32(img, 8, op);
    put64(img, 16, corr);
    put64(img, 24, begin);
    put64(img, 32, end);
    put32(img, 40, (uint32_t)device);
    put64(img, 48, queue);
    put64(img, 56, bytes);
    sm_hip_record_t r;
    memcpy(&r, img, sizeof r);
    return r;
}

static void test_hip_records(void)
{
    /* HIP stamped 1000 ns after its clock's origin; the host clock is 5 s
     * ahead of it. */
    sm_rocm_clock_t clock = {.offset_ns = 5000000000};
    sm_rocm_names_t *names = calloc(1, sizeof *names);
    sm_rocm_activity_t a;

    /* A kernel dispatch, named through its launch's correlation id. */
    sm_rocm_names_put(names, 41, "vector_add(float*, float const*, int)");
    sm_hip_record_t k = record(SM_HIP_DOMAIN_HIP_OPS, SM_HIP_CMD_KERNEL, SM_HIP_OP_DISPATCH, 41,
                               1000, 21000, 1, 0x7f00aa00, 0xdeadbeef /* a name pointer's word */);
    CHECK(sm_rocm_from_hip_record(&k, &clock, sm_rocm_names_get(names, 41), &a) == 0);
    CHECK_EQ_U(a.kind, SM_ROCM_KERNEL);
    CHECK_EQ_U(a.start_ns, 5000001000ull);
    CHECK_EQ_U(a.end_ns, 5000021000ull);
    CHECK_EQ_U(a.correlation, 41);
    CHECK_EQ_U(a.device, 1);
    CHECK_EQ_U(a.queue, 0x7f00aa00);
    CHECK_EQ_U(a.bytes, 0); /* a kernel moves no bytes, whatever the word holds */
    CHECK_STR(a.name, "vector_add(float*, float const*, int)");

    /* Copies in each direction, with their bytes, named by direction. */
    static const struct {
        uint32_t cmd;
        uint32_t kind;
        const char *name;
    } copies[] = {{SM_HIP_CMD_COPY_HTOD, SM_ROCM_COPY_HTOD, "copy HtoD"},
                  {SM_HIP_CMD_COPY_DTOH, SM_ROCM_COPY_DTOH, "copy DtoH"},
                  {SM_HIP_CMD_COPY_DTOD, SM_ROCM_COPY_DTOD, "copy DtoD"},
                  {SM_HIP_CMD_COPY_HTOD_RECT, SM_ROCM_COPY_HTOD, "copy HtoD"},
                  {SM_HIP_CMD_COPY_DTOH_RECT, SM_ROCM_COPY_DTOH, "copy DtoH"},
                  {SM_HIP_CMD_COPY_DTOD_RECT, SM_ROCM_COPY_DTOD, "copy DtoD"},
                  {SM_HIP_CMD_FILL, SM_ROCM_MEMSET, "memset"}};
    for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++) {
        sm_hip_record_t c = record(SM_HIP_DOMAIN_HIP_OPS, copies[i].cmd, SM_HIP_OP_COPY, 50 + i,
                                   3000, 3500, 0, 7, 4096 * (i + 1));
        CHECK(sm_rocm_from_hip_record(&c, &clock, NULL, &a) == 0);
        CHECK_EQ_U(a.kind, copies[i].kind);
        CHECK_EQ_U(a.bytes, 4096 * (i + 1));
        CHECK_EQ_U(a.end_ns - a.start_ns, 500);
        CHECK_STR(a.name, copies[i].name);
    }

    /* A barrier is a synchronisation; an unknown kind is told by its op. */
    sm_hip_record_t b = record(SM_HIP_DOMAIN_HIP_OPS, 0x1234, SM_HIP_OP_BARRIER, 60, 10, 20, 0, 7, 99);
    CHECK(sm_rocm_from_hip_record(&b, &clock, NULL, &a) == 0);
    CHECK_EQ_U(a.kind, SM_ROCM_SYNC);
    CHECK_EQ_U(a.bytes, 0);
    sm_hip_record_t d = record(SM_HIP_DOMAIN_HIP_OPS, 0x1234, SM_HIP_OP_DISPATCH, 61, 10, 20, 0, 7, 0);
    CHECK(sm_rocm_from_hip_record(&d, &clock, NULL, &a) == 0);
    CHECK_EQ_U(a.kind, SM_ROCM_KERNEL);
    CHECK_STR(a.name, "kernel"); /* no name known for its launch */

    /* An end before the start (clock jitter of the runtime) is clamped. */
    sm_hip_record_t j = record(SM_HIP_DOMAIN_HIP_OPS, SM_HIP_CMD_KERNEL, 0, 62, 900, 800, 0, 7, 0);
    CHECK(sm_rocm_from_hip_record(&j, &clock, NULL, &a) == 0);
    CHECK(a.end_ns == a.start_ns);

    /* Not device work: an API-domain record, and a record without times. */
    sm_hip_record_t api = record(SM_HIP_DOMAIN_HIP_API, 0, 0, 63, 10, 20, 0, 0, 0);
    CHECK(sm_rocm_from_hip_record(&api, &clock, NULL, &a) == -1);
    sm_hip_record_t none = record(SM_HIP_DOMAIN_HIP_OPS, SM_HIP_CMD_KERNEL, 0, 64, 0, 0, 0, 0, 0);
    CHECK(sm_rocm_from_hip_record(&none, &clock, NULL, &a) == -1);

    /* A host clock behind the source's: times below its origin stay at 0. */
    sm_rocm_clock_t behind = {.offset_ns = -2000};
    CHECK(sm_rocm_from_hip_record(&k, &behind, NULL, &a) == 0);
    CHECK_EQ_U(a.start_ns, 0);
    CHECK_EQ_U(a.end_ns, 19000);
    free(names);
}

static void test_names(void)
{
    sm_rocm_names_t *t = calloc(1, sizeof *t);
    CHECK(sm_rocm_names_get(t, 0) == NULL);
    CHECK(sm_rocm_names_get(t, 5) == NULL);
    sm_rocm_names_put(t, 5, "a");
    sm_rocm_names_put(t, 6, "b");
    CHECK_STR(sm_rocm_names_get(t, 5), "a");
    CHECK_STR(sm_rocm_names_get(t, 6), "b");
    /* The slot of 5 reused by 5 + SM_ROCM_NAMES: 5 is no longer known. */
    sm_rocm_names_put(t, 5 + SM_ROCM_NAMES, "c");
    CHECK(sm_rocm_names_get(t, 5) == NULL);
    CHECK_STR(sm_rocm_names_get(t, 5 + SM_ROCM_NAMES), "c");
    free(t);
}

static void test_hsa_times(void)
{
    /* 1 GHz system domain (the usual): ticks are ns. */
    sm_hsa_clock_t ghz = {.freq_hz = 1000000000, .sys_ref = 1000000, .host_ref_ns = 7000000000};
    CHECK_EQ_U(sm_hsa_ticks_to_host_ns(&ghz, 1000000), 7000000000ull);
    CHECK_EQ_U(sm_hsa_ticks_to_host_ns(&ghz, 1000250), 7000000250ull);
    CHECK_EQ_U(sm_hsa_ticks_to_host_ns(&ghz, 999000), 6999999000ull);
    /* 100 MHz: a tick is 10 ns. */
    sm_hsa_clock_t mhz = {.freq_hz = 100000000, .sys_ref = 500, .host_ref_ns = 1000};
    CHECK_EQ_U(sm_hsa_ticks_to_host_ns(&mhz, 600), 2000);
    /* Large tick values do not overflow: 2^62 ticks at 100 MHz. */
    uint64_t big = 1ull << 62;
    sm_hsa_clock_t z = {.freq_hz = 100000000, .sys_ref = 0, .host_ref_ns = 0};
    CHECK_EQ_U(sm_hsa_ticks_to_host_ns(&z, big), (uint64_t)((unsigned __int128)big * 10));
    /* Ticks before the reference, and before the host clock's origin (0, not wrapped). */
    CHECK_EQ_U(sm_hsa_ticks_to_host_ns(&ghz, 0), 6999000000ull);
    sm_hsa_clock_t late = {.freq_hz = 1000000000, .sys_ref = 5000, .host_ref_ns = 10};
    CHECK_EQ_U(sm_hsa_ticks_to_host_ns(&late, 0), 0);

    /* A dispatch timed by HSA: 2000..9000 ticks at 1 GHz. */
    sm_rocm_activity_t a;
    sm_rocm_from_hsa_times(&ghz, 1002000, 1009000, SM_ROCM_KERNEL, 2, 0xabc, 0, 0, "saxpy", &a);
    CHECK_EQ_U(a.start_ns, 7000002000ull);
    CHECK_EQ_U(a.end_ns, 7000009000ull);
    CHECK_EQ_U(a.device, 2);
    CHECK_EQ_U(a.queue, 0xabc);
    CHECK_STR(a.name, "saxpy");
    /* An async copy with bytes, an end before its start clamped. */
    sm_rocm_from_hsa_times(&ghz, 1005000, 1004000, SM_ROCM_COPY_DTOH, 0, 1, 0, 65536, NULL, &a);
    CHECK_EQ_U(a.end_ns, a.start_ns);
    CHECK_EQ_U(a.bytes, 65536);
    CHECK_STR(a.name, "copy DtoH");
}

static void test_clock_measure(void)
{
    /* The host clock against itself: offset 0 within the read gap. */
    sm_rocm_clock_t c;
    sm_rocm_clock_measure(&c, 1 /* CLOCK_MONOTONIC */);
    CHECK(c.offset_ns > -1000000 && c.offset_ns < 1000000);
}

int main(void)
{
    test_hip_records();
    test_names();
    test_hsa_times();
    test_clock_measure();
    if (!unit_failures)
        printf("test-rocm-convert: all passed\n");
    return unit_failures;
}
