/* MPI function groups (--mpi-groups), named as Score-P's
 * SCOREP_MPI_ENABLE_GROUPS names them.  Which group each function belongs
 * to is derived from the one list of MPI functions by mpi/gen_wrappers.py;
 * here are only the group names, for the launcher (which checks the option
 * before the program runs) and the MPI adapter. */
#ifndef SM_MPI_GROUPS_H
#define SM_MPI_GROUPS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    SM_MPI_GROUP_CG,     /* communicators and groups */
    SM_MPI_GROUP_COLL,   /* collectives (blocking and nonblocking) */
    SM_MPI_GROUP_ENV,    /* environment: init, finalize, abort, wtime, ... */
    SM_MPI_GROUP_ERR,    /* error handlers and codes */
    SM_MPI_GROUP_EXT,    /* external interfaces: generalized requests, status setters */
    SM_MPI_GROUP_IO,     /* MPI-IO */
    SM_MPI_GROUP_MISC,   /* everything else: info, memory, ... */
    SM_MPI_GROUP_P2P,    /* point to point, with the requests' wait/test */
    SM_MPI_GROUP_PERF,   /* MPI_Pcontrol, the MPI_T interface */
    SM_MPI_GROUP_RMA,    /* one-sided */
    SM_MPI_GROUP_SPAWN,  /* process creation and connection */
    SM_MPI_GROUP_TOPO,   /* topologies */
    SM_MPI_GROUP_TYPE,   /* datatypes, packing */
    SM_MPI_GROUP_COUNT
} sm_mpi_group_t;

#define SM_MPI_GROUPS_ALL ((1u << SM_MPI_GROUP_COUNT) - 1)

/* "p2p", ... */
const char *sm_mpi_group_name(unsigned group);

/* A comma-separated list, case-insensitive: group names, "all", "none",
 * "default" (= all), and "~name" to take a group out of what came before
 * ("all,~p2p").  An empty text is "all".  0 with the mask of enabled groups,
 * or -1 with a one-line message in err. */
int sm_mpi_groups_parse(const char *text, uint32_t *mask, char *err, size_t errlen);

/* The names of the groups not in mask, comma-separated ("" when none). */
void sm_mpi_groups_format_off(uint32_t mask, char *buf, size_t len);

#endif
