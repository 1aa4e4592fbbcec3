/* NCCL calls made by a program that has no NCCL (no GPU here): each call
 * is looked up by name, as a program that loads NCCL itself would find it;
 * under the launcher it is sysmeasure's, which records the call and, with
 * no real NCCL to pass it on to, returns ncclSystemError (2).
 *   nccl-calls calls   2 ncclAllReduce of 1 MiB float32 (sum) on stream
 *                      0x1234, then ncclGroupStart, ncclBroadcast of 256 KiB
 *                      float32 from root 0, ncclGroupEnd; prints "rc" and
 *                      the results, "errno kept" when errno stayed as set
 *   nccl-calls plain   no NCCL call at all
 * Without a definition of ncclAllReduce it prints "no ncclAllReduce". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef int (*all_reduce_fn)(const void *, void *, size_t, int, int, void *, void *);
typedef int (*broadcast_fn)(const void *, void *, size_t, int, int, void *, void *);
typedef int (*group_fn)(void);

enum { FLOAT32 = 7, SUM = 0 };

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "calls") != 0) {
        printf("plain\n");
        return 0;
    }
    all_reduce_fn all_reduce;
    broadcast_fn broadcast;
    group_fn start, end;
    void *p = dlsym(RTLD_DEFAULT, "ncclAllReduce");
    if (!p) {
        printf("no ncclAllReduce\n");
        return 0;
    }
    memcpy(&all_reduce, &p, sizeof p);
    p = dlsym(RTLD_DEFAULT, "ncclBroadcast");
    memcpy(&broadcast, &p, sizeof p);
    p = dlsym(RTLD_DEFAULT, "ncclGroupStart");
    memcpy(&start, &p, sizeof p);
    p = dlsym(RTLD_DEFAULT, "ncclGroupEnd");
    memcpy(&end, &p, sizeof p);
    if (!broadcast || !start || !end) {
        printf("incomplete\n");
        return 1;
    }
    static float send[4], recv[4]; /* never touched: no NCCL behind */
    void *stream = (void *)0x1234;
    int rc[5], kept = 1;
    for (int i = 0; i < 2; i++) {
        errno = 4321;
        rc[i] = all_reduce(send, recv, 262144, FLOAT32, SUM, NULL, stream);
        kept &= errno == 4321;
    }
    errno = 4321;
    rc[2] = start();
    rc[3] = broadcast(send, recv, 65536, FLOAT32, 0, NULL, stream);
    rc[4] = end();
    kept &= errno == 4321;
    printf("rc %d %d %d %d %d\n", rc[0], rc[1], rc[2], rc[3], rc[4]);
    if (kept)
        printf("errno kept\n");
    return 0;
}
