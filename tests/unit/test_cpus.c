/* The CPU rule of SYSMEASURE_OTF2_BACKGROUND=auto apart from the machine:
 * kernel CPU lists (cgroup cpuset files), Slurm's tasks per node, and where
 * the writer thread may run.  Malformed text gives "not known", never a
 * wrong count. */
#define _GNU_SOURCE
#include <sched.h>

#include "core/cpus.h"
#include "unit.h"

static cpu_set_t cpus(const char *list)
{
    cpu_set_t s;
    CHECK(sm_cpus_parse_list(list, &s) == 0);
    return s;
}

static void check_lists(void)
{
    cpu_set_t s = cpus("0-3,8,10-11\n");
    CHECK_EQ_U(CPU_COUNT(&s), 7);
    CHECK(CPU_ISSET(3, &s) && CPU_ISSET(8, &s) && CPU_ISSET(11, &s) && !CPU_ISSET(9, &s));
    char text[64];
    sm_cpus_format(&s, text, sizeof text);
    CHECK_STR(text, "0-3,8,10-11");
    s = cpus("5");
    sm_cpus_format(&s, text, sizeof text);
    CHECK_STR(text, "5");
    /* Not lists: empty, a reversed range, a stray character, a sign. */
    const char *bad[] = {"", "\n", "3-1", "0-3;8", "a", "-1", "0-", "1,,2x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(sm_cpus_parse_list(bad[i], &s) == -1);
}

static void check_slurm(void)
{
    /* "2(x3),1": nodes 0-2 run 2 tasks, node 3 runs 1. */
    CHECK_EQ_U(sm_cpus_slurm_tasks("2(x3),1", 0), 2);
    CHECK_EQ_U(sm_cpus_slurm_tasks("2(x3),1", 2), 2);
    CHECK_EQ_U(sm_cpus_slurm_tasks("2(x3),1", 3), 1);
    CHECK_EQ_U(sm_cpus_slurm_tasks("2(x3),1", 4), 0); /* no such node */
    CHECK_EQ_U(sm_cpus_slurm_tasks("16", 0), 16);
    CHECK_EQ_U(sm_cpus_slurm_tasks("4,8", 1), 8);
    const char *bad[] = {"", "x", "2(x", "2(x0)", "2(3)", "2;1", "2(x2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK_EQ_U(sm_cpus_slurm_tasks(bad[i], 1), 0); /* (read up to node 1) */
}

static void check_place(void)
{
    cpu_set_t writer, node = cpus("0-15");
    /* One process on its whole mask, needing fewer: the writer runs there. */
    cpu_set_t own = cpus("0-15");
    CHECK(sm_cpus_writer_place(&own, &node, 1, &writer) == 1);
    CHECK(CPU_EQUAL(&writer, &own));
    /* Bound to CPU 1, 2 processes on 16 CPUs: the node's others, never 1. */
    own = cpus("1");
    CHECK(sm_cpus_writer_place(&own, &node, 2, &writer) == 2);
    CHECK_EQ_U(CPU_COUNT(&writer), 15);
    CHECK(!CPU_ISSET(1, &writer) && CPU_ISSET(0, &writer) && CPU_ISSET(15, &writer));
    /* As many processes x threads as CPUs: no spare one. */
    CHECK(sm_cpus_writer_place(&own, &node, 16, &writer) == 0);
    CHECK(sm_cpus_writer_place(&own, &node, 2 * 8, &writer) == 0);
    /* 2 ranks on a 2-CPU node, each bound to one. */
    node = cpus("0-1");
    CHECK(sm_cpus_writer_place(&own, &node, 2, &writer) == 0);
}

static void check_end(void)
{
    cpu_set_t set, node = cpus("0-15"), own = cpus("0-15");
    /* One process: its whole mask. */
    CHECK_EQ_U(sm_cpus_end_share(&own, &node, 1, 1, &set), 16);
    CHECK(CPU_EQUAL(&set, &node));
    /* 2 ranks bound to CPU 1 and another of 16: 8 each, on the node's CPUs. */
    own = cpus("1");
    CHECK_EQ_U(sm_cpus_end_share(&own, &node, 2, 1, &set), 8);
    CHECK_EQ_U(CPU_COUNT(&set), 16);
    /* 16 ranks on 16 CPUs, or more: one each. */
    CHECK_EQ_U(sm_cpus_end_share(&own, &node, 16, 1, &set), 1);
    CHECK_EQ_U(sm_cpus_end_share(&own, &node, 40, 1, &set), 1);
    /* Processes on the node unknown: its own mask only. */
    CHECK_EQ_U(sm_cpus_end_share(&own, &node, 1, 0, &set), 1);
    CHECK(CPU_EQUAL(&set, &own));
    own = cpus("0-3");
    CHECK_EQ_U(sm_cpus_end_share(&own, &node, 1, 0, &set), 4);
    /* 2 ranks, not bound, on a 2-CPU node: one each. */
    own = node = cpus("0-1");
    CHECK_EQ_U(sm_cpus_end_share(&own, &node, 2, 1, &set), 1);
    /* Never more than SM_CPUS_END_MAX. */
    own = node = cpus("0-127");
    CHECK_EQ_U(sm_cpus_end_share(&own, &node, 1, 1, &set), SM_CPUS_END_MAX);
}

int main(void)
{
    check_end();
    check_lists();
    check_slurm();
    check_place();
    return unit_failures;
}
