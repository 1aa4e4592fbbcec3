/* sysmeasure user API example.
 *
 * N threads each compute fibonacci numbers many times inside a named region;
 * the main thread marks its phases.  A custom push callback wraps the built-in
 * one and attaches the current errno to every region as an annotation.
 *
 *   sysmeasure ./user-api-threads [threads] [iterations] [fib-n]
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <sysmeasure.h>

static sysmeasure_callbacks_t builtin = SYSMEASURE_CALLBACKS_INIT;

/* Replaces push_region: the same region, with errno as an annotation. */
static int push_with_errno(const char *name)
{
    int saved = errno;
    sysmeasure_annotation_t note = {.name = "errno", .type = SYSMEASURE_ANNOTATION_INT64};
    note.value.int64 = saved;
    int rc = builtin.push_annotated_region(name, &note, 1);
    errno = saved;
    return rc;
}

static long fib(long n) __attribute__((noinline));
static long fib(long n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

struct work {
    long iterations;
    long n;
    long result;
    char label[64];
};

static void *run(void *arg)
{
    struct work *w = arg;
    sysmeasure_push_region(w->label);
    long sum = 0;
    for (long i = 0; i < w->iterations; i++)
        sum += fib(w->n);
    w->result = sum;
    sysmeasure_pop_region(w->label);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    long iterations = argc > 2 ? atol(argv[2]) : 1000;
    long n = argc > 3 ? atol(argv[3]) : 10;
    if (threads < 1 || iterations < 1 || n < 0) {
        fprintf(stderr, "usage: %s [threads>0] [iterations>0] [fib-n>=0]\n", argv[0]);
        return 2;
    }

    sysmeasure_callbacks_t mine = SYSMEASURE_CALLBACKS_INIT;
    mine.push_region = push_with_errno;
    sysmeasure_configure(&mine, &builtin);

    sysmeasure_push_region("initialization");
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    struct work *work = calloc((size_t)threads, sizeof *work);
    if (!tids || !work)
        return 1;
    for (int i = 0; i < threads; i++) {
        work[i].iterations = iterations;
        work[i].n = n;
        snprintf(work[i].label, sizeof work[i].label, "run(%ld) x %ld", n, iterations);
    }
    sysmeasure_pop_region("initialization");

    sysmeasure_push_region("thread_creation");
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tids[i], NULL, run, &work[i]) != 0) {
            perror("pthread_create");
            return 1;
        }
    sysmeasure_pop_region("thread_creation");

    sysmeasure_push_region("thread_wait");
    long total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tids[i], NULL);
        total += work[i].result;
    }
    sysmeasure_pop_region("thread_wait");

    printf("%d threads x %ld x fib(%ld): total %ld\n", threads, iterations, n, total);
    free(tids);
    free(work);
    return 0;
}
