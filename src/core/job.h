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

/* An identity of this process alone (host, pid, time), the one a process
 * that no launcher names gets. */
void sm_job_process_id(char *out, size_t size) SM_HIDDEN;

/* The same hash of any identity (the files of a job named in a folder). */
uint64_t sm_job_hash_of(const char *id) SM_HIDDEN;

/* Where it came from: "SYSMEASURE_JOB_ID", "torchrun", "Open MPI", "PMIx",
 * "Slurm", or "process" when no launcher named the job (then each process
 * has its own identity and only the files of one process can be matched by
 * it). */
const char *sm_job_id_source(void) SM_HIDDEN;

/* The environment variables in which MPI launchers and Slurm hand each
 * process its rank (Open MPI, MPICH/Hydra and Intel MPI, PMIx, Slurm,
 * MVAPICH), for a list initializer. */
#define SM_JOB_RANK_VARS \
    "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "MV2_COMM_WORLD_RANK"

/* The launcher that started this process as one of a job's processes, as
 * its environment says before any MPI call: torchrun and torch.distributed
 * (RANK, WORLD_SIZE, with TORCHELASTIC_RUN_ID or MASTER_ADDR and
 * MASTER_PORT: checked first, because torchrun's workers inherit the
 * variables of the srun or mpirun that started torchrun), Open MPI
 * (OMPI_COMM_WORLD_RANK/SIZE), MPICH and Intel MPI (PMI_RANK/SIZE), PMIx
 * (PMIX_RANK; PMIx hands no size in the environment: Slurm's task count when
 * Slurm started it), Slurm (SLURM_PROCID, SLURM_STEP_NUM_TASKS, or
 * SLURM_NTASKS in a step: a batch script has SLURM_PROCID 0 and the job's
 * SLURM_NTASKS but is one process), MVAPICH (MV2_COMM_WORLD_RANK/SIZE). */
typedef enum sm_launcher {
    SM_LAUNCHER_NONE,
    SM_LAUNCHER_TORCH,
    SM_LAUNCHER_OPEN_MPI,
    SM_LAUNCHER_PMI,
    SM_LAUNCHER_PMIX,
    SM_LAUNCHER_SLURM,
    SM_LAUNCHER_MVAPICH,
} sm_launcher_t;

typedef struct sm_job_launch {
    sm_launcher_t launcher;
    const char *name; /* "torchrun", "Open MPI", ...; "" for none */
    long rank;        /* -1: no launcher rank */
    long size;        /* processes of the job; 0: not known */
} sm_job_launch_t;

/* This process's (computed once, like the identity). */
const sm_job_launch_t *sm_job_launch(void) SM_HIDDEN;
/* From an environment lookup (tests). */
void sm_job_launch_compute(const char *(*lookup)(const char *name), sm_job_launch_t *out)
    SM_HIDDEN;

/* This process's rank as its launcher says (sm_job_launch), before any MPI
 * call; -1 when none does. */
long sm_job_launcher_rank(void) SM_HIDDEN;

/* Compute the identity from an environment lookup (tests); writes at most
 * size bytes including the NUL; returns the source as above. */
const char *sm_job_id_compute(const char *(*lookup)(const char *name), char *out, size_t size)
    SM_HIDDEN;

#endif
