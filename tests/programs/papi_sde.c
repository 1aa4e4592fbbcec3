/* Software-defined PAPI counters with known values inside known regions, for
 * the PAPI tests (no hardware counters needed).  It registers SMTEST::WORK and
 * SMTEST::BYTES with libsde; on thread k (0 = main, 1 = a pthread, f = k + 1):
 *
 *   outer            WORK += 10f              incl WORK 16f, excl 10f
 *     inner (x3)     WORK += 2f, BYTES += 100 incl = excl: WORK 6f, BYTES 300
 *
 * SDE counters are process-wide variables, not per thread, so the threads run
 * one after the other: each thread's reads then see its own increments only. */
#include <pthread.h>
#include <sde_lib.h>
#include <stdio.h>
#include <sysmeasure.h>

static long long sm_work, sm_bytes;

static void *sm_body(void *arg)
{
    long long f = (long long)(size_t)arg;
    sysmeasure_push_region("outer");
    sm_work += 10 * f;
    for (int i = 0; i < 3; i++) {
        sysmeasure_push_region("inner");
        sm_work += 2 * f;
        sm_bytes += 100;
        sysmeasure_pop_region("inner");
    }
    sysmeasure_pop_region("outer");
    return NULL;
}

int main(void)
{
    papi_handle_t h = papi_sde_init("SMTEST");
    papi_sde_register_counter(h, "WORK", PAPI_SDE_RO | PAPI_SDE_DELTA, PAPI_SDE_long_long, &sm_work);
    papi_sde_register_counter(h, "BYTES", PAPI_SDE_RO | PAPI_SDE_DELTA, PAPI_SDE_long_long,
                              &sm_bytes);
    sm_body((void *)(size_t)1);
    pthread_t t;
    if (pthread_create(&t, NULL, sm_body, (void *)(size_t)2) != 0 || pthread_join(t, NULL) != 0) {
        fprintf(stderr, "papi_sde: cannot run the thread\n");
        return 1;
    }
    printf("WORK=%lld BYTES=%lld\n", sm_work, sm_bytes);
    return 0;
}
