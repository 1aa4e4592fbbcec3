/* MPI communication patterns with known, planted outcomes, for the MPI
 * integration tests.  Usage: mpi-patterns MODE, one of
 *   ring         a token goes 3 times around the ring (tag = round, 8*(rank+1) bytes)
 *   collectives  every blocking and nonblocking collective on MPI_COMM_WORLD
 *   nonblocking  Isend/Irecv with Waitall, Waitany (MPI_ANY_SOURCE), Testsome
 *   persistent   Send_init/Recv_init started 5 times with Startall
 *   comms        Comm_split (even/odd) and Comm_dup, traffic on each
 *   imbalance    user region "imbalanced": rank r sleeps (r+1)*20 ms, then a barrier
 *   orders       regions "alpha".."delta", the k-th visited k+1 times, entered in
 *                an order rotated by the rank (so each rank has its own ids);
 *                "odd_only" once on odd ranks, "rank_zero" once on rank 0
 *   io_rma       MPI-IO: each rank writes 4096 bytes at its offset and reads them
 *                back; one-sided: each puts 8 doubles into its right neighbour's
 *                window and gets 4 back (fences around)
 *   threads      MPI_THREAD_MULTIPLE: 2 threads per rank exchange messages at once
 *   abort        some messages, then rank 1 calls MPI_Abort(3)
 *   hang         some messages, then waits forever (to be killed)
 *   nofinalize   some messages, then returns without MPI_Finalize
 *   finalize     the same messages, then MPI_Finalize (nofinalize's twin:
 *                the live end and sysmeasure-merge give the same folder)
 *   rank-exits   some messages, then rank 1 exits without MPI_Finalize while
 *                the others wait in it (a region "waiting" marks rank 0's wait)
 *   atexit       MPI_Finalize from an atexit handler, after main returned
 * Exit status 0 when every check of the program's own data passed. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sysmeasure.h"

static int rank, size, errors;

#define EXPECT(cond)                                                                   \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "rank %d: %s:%d: %s\n", rank, __FILE__, __LINE__, #cond);  \
            errors++;                                                                  \
        }                                                                              \
    } while (0)

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void ring(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int round = 0; round < 3; round++) {
        double token[64] = {0};
        int n = rank + 1, m = prev + 1; /* 8*(rank+1) bytes out, 8*(prev+1) in */
        MPI_Status st;
        if (rank == 0) {
            MPI_Send(token, n, MPI_DOUBLE, next, round, MPI_COMM_WORLD);
            MPI_Recv(token, m, MPI_DOUBLE, prev, round, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(token, m, MPI_DOUBLE, prev, round, MPI_COMM_WORLD, &st);
            MPI_Send(token, n, MPI_DOUBLE, next, round, MPI_COMM_WORLD);
        }
        EXPECT(st.MPI_SOURCE == prev && st.MPI_TAG == round);
    }
}

static void collectives(void)
{
    int n = size;
    int *a = calloc((size_t)n * 4, sizeof *a), *b = calloc((size_t)n * 4, sizeof *b);
    int *counts = malloc(sizeof *counts * n), *displs = malloc(sizeof *displs * n);
    int *wcounts = malloc(sizeof *wcounts * n), *wdispls = malloc(sizeof *wdispls * n);
    MPI_Datatype *types = malloc(sizeof *types * n);
    for (int i = 0; i < n; i++) {
        counts[i] = 2;
        displs[i] = 2 * i;
        wcounts[i] = 2;
        wdispls[i] = 2 * i * (int)sizeof(int);
        types[i] = MPI_INT;
    }
    for (int i = 0; i < 4 * n; i++)
        a[i] = rank + i;
    int root = size - 1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(a, 4, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Gather(a, 2, MPI_INT, b, 2, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Gatherv(a, 2, MPI_INT, b, counts, displs, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Scatter(a, 2, MPI_INT, b, 2, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Scatterv(a, counts, displs, MPI_INT, b, 2, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Allgather(a, 2, MPI_INT, b, 2, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgatherv(a, 2, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoall(a, 2, MPI_INT, b, 2, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoallv(a, counts, displs, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoallw(a, wcounts, wdispls, types, b, wcounts, wdispls, types, MPI_COMM_WORLD);
    MPI_Reduce(a, b, 2, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
    MPI_Allreduce(a, b, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    EXPECT(b[0] == size * (size - 1) / 2 || b[0] != 0);
    MPI_Reduce_scatter(a, b, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce_scatter_block(a, b, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Scan(a, b, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(a, b, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    /* The same, nonblocking, completed one at a time and all at once. */
    MPI_Request r[17];
    int k = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &r[k++]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    k = 0;
    int *c = calloc((size_t)n * 4 * 16, sizeof *c); /* a receive buffer per call */
#define RB(i) (c + (size_t)(i) * n * 4)
    MPI_Ibcast(a, 4, MPI_INT, root, MPI_COMM_WORLD, &r[k++]);
    MPI_Igather(a, 2, MPI_INT, RB(1), 2, MPI_INT, root, MPI_COMM_WORLD, &r[k++]);
    MPI_Igatherv(a, 2, MPI_INT, RB(2), counts, displs, MPI_INT, root, MPI_COMM_WORLD, &r[k++]);
    MPI_Iscatter(a, 2, MPI_INT, RB(3), 2, MPI_INT, root, MPI_COMM_WORLD, &r[k++]);
    MPI_Iscatterv(a, counts, displs, MPI_INT, RB(4), 2, MPI_INT, root, MPI_COMM_WORLD, &r[k++]);
    MPI_Iallgather(a, 2, MPI_INT, RB(5), 2, MPI_INT, MPI_COMM_WORLD, &r[k++]);
    MPI_Iallgatherv(a, 2, MPI_INT, RB(6), counts, displs, MPI_INT, MPI_COMM_WORLD, &r[k++]);
    MPI_Ialltoall(a, 2, MPI_INT, RB(7), 2, MPI_INT, MPI_COMM_WORLD, &r[k++]);
    MPI_Ialltoallv(a, counts, displs, MPI_INT, RB(8), counts, displs, MPI_INT, MPI_COMM_WORLD,
                   &r[k++]);
    MPI_Ialltoallw(a, wcounts, wdispls, types, RB(9), wcounts, wdispls, types, MPI_COMM_WORLD,
                   &r[k++]);
    MPI_Ireduce(a, RB(10), 2, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &r[k++]);
    MPI_Iallreduce(a, RB(11), 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[k++]);
    MPI_Ireduce_scatter(a, RB(12), counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[k++]);
    MPI_Ireduce_scatter_block(a, RB(13), 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[k++]);
    MPI_Iscan(a, RB(14), 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[k++]);
    MPI_Iexscan(a, RB(15), 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[k++]);
    MPI_Waitall(k, r, MPI_STATUSES_IGNORE);
#undef RB

    /* Neighborhood: a periodic ring topology. */
    MPI_Comm cart;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Neighbor_allgather(a, 2, MPI_INT, b, 2, MPI_INT, cart);
    MPI_Neighbor_alltoall(a, 2, MPI_INT, b, 2, MPI_INT, cart);
    MPI_Comm_free(&cart);
    free(a), free(b), free(c), free(counts), free(displs), free(wcounts), free(wdispls), free(types);
}

static void nonblocking(void)
{
    /* Everyone sends 4 ints to rank 0 (tag 1); rank 0 receives from
     * MPI_ANY_SOURCE with Waitany, the others Waitall. */
    int out[4] = {rank, rank, rank, rank};
    if (rank == 0) {
        int n = size - 1;
        MPI_Request *r = malloc(sizeof *r * (n ? n : 1));
        int (*in)[4] = calloc((size_t)(n ? n : 1), sizeof *in);
        for (int i = 0; i < n; i++)
            MPI_Irecv(in[i], 4, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &r[i]);
        int seen = 0;
        for (int i = 0; i < n; i++) {
            int idx;
            MPI_Status st;
            MPI_Waitany(n, r, &idx, &st);
            EXPECT(idx >= 0 && in[idx][0] == st.MPI_SOURCE && st.MPI_TAG == 1);
            seen |= 1 << st.MPI_SOURCE;
        }
        EXPECT(seen == ((1 << size) - 2));
        free(r), free(in);
    } else {
        MPI_Request r[1];
        MPI_Isend(out, 4, MPI_INT, 0, 1, MPI_COMM_WORLD, &r[0]);
        MPI_Waitall(1, r, MPI_STATUSES_IGNORE);
    }

    /* Pairwise exchange completed with Testsome: rank r with r^1. */
    int peer = rank ^ 1;
    if (peer < size) {
        int in[2] = {0, 0}, msg[2] = {rank, 7};
        MPI_Request r[2];
        MPI_Irecv(in, 2, MPI_INT, peer, 5, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(msg, 2, MPI_INT, peer, 5, MPI_COMM_WORLD, &r[1]);
        int done = 0;
        while (done < 2) {
            int outcount, idx[2];
            MPI_Status st[2];
            MPI_Testsome(2, r, &outcount, idx, st);
            if (outcount != MPI_UNDEFINED)
                done += outcount;
        }
        EXPECT(in[0] == peer && in[1] == 7);
    }
}

static void persistent(void)
{
    int peer = rank ^ 1;
    if (peer >= size)
        peer = MPI_PROC_NULL;
    double out[3] = {1, 2, 3}, in[3];
    MPI_Request r[2];
    MPI_Send_init(out, 3, MPI_DOUBLE, peer, 9, MPI_COMM_WORLD, &r[0]);
    MPI_Recv_init(in, 3, MPI_DOUBLE, peer, 9, MPI_COMM_WORLD, &r[1]);
    for (int round = 0; round < 5; round++) {
        MPI_Startall(2, r);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
}

static void comms(void)
{
    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int hrank, hsize, v = 1, sum = 0;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, half);
    EXPECT(sum == hsize);
    if (hsize > 1) { /* in each half, rank 0 sends to the others */
        if (hrank == 0)
            for (int i = 1; i < hsize; i++)
                MPI_Send(&v, 1, MPI_INT, i, 11, half);
        else
            MPI_Recv(&v, 1, MPI_INT, 0, 11, half, MPI_STATUS_IGNORE);
    }
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, dup);
    EXPECT(sum == size);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
}

static void imbalance(void)
{
    sysmeasure_push_region("imbalanced");
    sleep_ms((rank + 1) * 20);
    sysmeasure_pop_region("imbalanced");
    MPI_Barrier(MPI_COMM_WORLD);
}

static void orders(void)
{
    static const char *const names[] = {"alpha", "beta", "gamma", "delta"};
    if (rank == 0) {
        sysmeasure_push_region("rank_zero");
        sysmeasure_pop_region("rank_zero");
    }
    for (int i = 0; i < 4; i++) {
        int k = (i + rank) % 4;
        for (int v = 0; v <= k; v++) {
            sysmeasure_push_region(names[k]);
            sysmeasure_pop_region(names[k]);
        }
    }
    if (rank % 2) {
        sysmeasure_push_region("odd_only");
        sysmeasure_pop_region("odd_only");
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void io_rma(const char *dir)
{
    char path[4096], buf[4096];
    snprintf(path, sizeof path, "%s/mpi-io.dat", dir);
    MPI_File f;
    memset(buf, 'a' + rank, sizeof buf);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &f);
    MPI_File_write_at(f, (MPI_Offset)rank * 4096, buf, 4096, MPI_CHAR, MPI_STATUS_IGNORE);
    MPI_File_sync(f);
    MPI_Barrier(MPI_COMM_WORLD);
    memset(buf, 0, sizeof buf);
    MPI_File_read_at(f, (MPI_Offset)rank * 4096, buf, 4096, MPI_CHAR, MPI_STATUS_IGNORE);
    EXPECT(buf[0] == 'a' + rank && buf[4095] == 'a' + rank);
    MPI_File_close(&f);

    double win_mem[8] = {0}, mine[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[4];
    MPI_Win win;
    MPI_Win_create(win_mem, sizeof win_mem, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    MPI_Put(mine, 8, MPI_DOUBLE, (rank + 1) % size, 0, 8, MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
    MPI_Get(got, 4, MPI_DOUBLE, (rank + 1) % size, 0, 4, MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
    EXPECT(got[3] == 4 && win_mem[7] == 8);
    MPI_Win_free(&win);
}

static void *thread_exchange(void *arg)
{
    int t = (int)(intptr_t)arg, peer = rank ^ 1, v = rank * 10 + t, in = -1;
    for (int i = 0; i < 20 && peer < size; i++)
        MPI_Sendrecv(&v, 1, MPI_INT, peer, 100 + t, &in, 1, MPI_INT, peer, 100 + t,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (peer < size)
        EXPECT(in == peer * 10 + t);
    return NULL;
}

static void threads(void)
{
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, thread_exchange, (void *)(intptr_t)t);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
}

static void finalize_at_exit(void)
{
    MPI_Finalize();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ring";
    int provided = MPI_THREAD_SINGLE;
    if (!strcmp(mode, "threads")) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            fprintf(stderr, "MPI_THREAD_MULTIPLE not provided\n");
            MPI_Finalize();
            return 77;
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    if (!strcmp(mode, "ring"))
        ring();
    else if (!strcmp(mode, "collectives"))
        collectives();
    else if (!strcmp(mode, "nonblocking"))
        nonblocking();
    else if (!strcmp(mode, "persistent"))
        persistent();
    else if (!strcmp(mode, "comms"))
        comms();
    else if (!strcmp(mode, "imbalance"))
        imbalance();
    else if (!strcmp(mode, "orders"))
        orders();
    else if (!strcmp(mode, "threads"))
        threads();
    else if (!strcmp(mode, "io_rma"))
        io_rma(argc > 2 ? argv[2] : ".");
    else if (!strcmp(mode, "abort") || !strcmp(mode, "hang") || !strcmp(mode, "nofinalize") ||
             !strcmp(mode, "rank-exits") || !strcmp(mode, "finalize")) {
        ring();
        MPI_Barrier(MPI_COMM_WORLD);
        if (!strcmp(mode, "abort") && rank == 1) {
            sleep_ms(200); /* the others are waiting in the barrier below */
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        if (!strcmp(mode, "hang")) {
            if (rank == 0)
                printf("ready\n"), fflush(stdout);
            for (;;)
                pause();
        }
        if (!strcmp(mode, "nofinalize"))
            return errors ? 1 : 0;
        if (!strcmp(mode, "finalize")) {
            MPI_Finalize();
            return errors ? 1 : 0;
        }
        if (!strcmp(mode, "rank-exits")) {
            if (rank == 1) {
                sleep_ms(300); /* the others are inside MPI_Finalize by now */
                exit(errors ? 1 : 0);
            }
            sysmeasure_push_region("waiting");
            sysmeasure_pop_region("waiting");
            MPI_Finalize();
            return errors ? 1 : 0;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (!strcmp(mode, "atexit")) {
        ring();
        atexit(finalize_at_exit);
        return errors ? 1 : 0;
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        errors++;
    }
    MPI_Finalize();
    return errors ? 1 : 0;
}
