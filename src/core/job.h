/* The identity of the job a process belongs to: one string, the same in
 * every process of one MPI job (taken from what the MPI launcher or the batch
 * system hands every rank) and different for any other job, so that files left
 * in an output folder can be told apart by job.  Every file sysmeasure leaves
 * for sysmeasure-merge (process files, spill files) carries it. */
#ifndef SM_JOB_H
#define SM_JOB_H

#include <stddef.h>
#include <stdint.h>
#include "compiler.h"

#define SM_JOB_ID_MAX 128

/* The job's identity, at most SM_JOB_ID_MAX-1 printable characters, computed
 * once (thread-safe, async-signal-safe after the first call). */
const char *sm_job_id(void) SM_HIDDEN;

/* A 64-bit hash of sm_job_id() (FNV-1a), for file names: the files two
 * jobs leave in one folder never share a name. */
uint64_t sm_job_hash(void) SM_HIDDEN;

/* Where it came from: "SYSMEASURE_JOB_ID", "Open MPI", "PMIx", "Slurm", or
 * "process" when no launcher named the job (then each process has its own
 * identity and only the files of one process can be matched by it). */
const char *sm_job_id_source(void) SM_HIDDEN;

/* The environment variables in which MPI launchers and Slurm hand each
 * process its rank (Open MPI, MPICH/Hydra and Intel MPI, PMIx, Slurm,
 * MVAPICH), for a list initializer. */
#define SM_JOB_RANK_VARS \
    "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "MV2_COMM_WORLD_RANK"

/* This process's rank as its launcher says (the first of SM_JOB_RANK_VARS
 * that holds a number), before any MPI call; -1 when none does. */
long sm_job_launcher_rank(void) SM_HIDDEN;

/* Compute the identity from an environment lookup (tests); writes at most
 * size bytes including the NUL; returns the source as above. */
const char *sm_job_id_compute(const char *(*lookup)(const char *name), char *out, size_t size)
    SM_HIDDEN;

#endif
