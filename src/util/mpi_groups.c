/* MPI function group names and the --mpi-groups list. */
#include "mpi_groups.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const sm_mpi_group_names[SM_MPI_GROUP_COUNT] = {
    [SM_MPI_GROUP_CG] = "cg",       [SM_MPI_GROUP_COLL] = "coll", [SM_MPI_GROUP_ENV] = "env",
    [SM_MPI_GROUP_ERR] = "err",     [SM_MPI_GROUP_EXT] = "ext",   [SM_MPI_GROUP_IO] = "io",
    [SM_MPI_GROUP_MISC] = "misc",   [SM_MPI_GROUP_P2P] = "p2p",   [SM_MPI_GROUP_PERF] = "perf",
    [SM_MPI_GROUP_RMA] = "rma",     [SM_MPI_GROUP_SPAWN] = "spawn",
    [SM_MPI_GROUP_TOPO] = "topo",   [SM_MPI_GROUP_TYPE] = "type",
};

const char *sm_mpi_group_name(unsigned group)
{
    return group < SM_MPI_GROUP_COUNT ? sm_mpi_group_names[group] : "unknown";
}

int sm_mpi_groups_parse(const char *text, uint32_t *mask, char *err, size_t errlen)
{
    *mask = SM_MPI_GROUPS_ALL;
    if (!text)
        return 0;
    uint32_t m = 0;
    int any = 0;
    const char *p = text;
    while (*p) {
        while (*p == ',' || *p == ' ')
            p++;
        if (!*p)
            break;
        const char *start = p;
        while (*p && *p != ',' && *p != ' ')
            p++;
        size_t n = (size_t)(p - start);
        int off = start[0] == '~';
        if (off) {
            start++;
            n--;
        }
        uint32_t bits = 0;
        if (n == 3 && strncasecmp(start, "all", 3) == 0)
            bits = SM_MPI_GROUPS_ALL;
        else if (n == 7 && strncasecmp(start, "default", 7) == 0)
            bits = SM_MPI_GROUPS_ALL;
        else if (n == 4 && strncasecmp(start, "none", 4) == 0)
            bits = 0;
        else {
            unsigned g;
            for (g = 0; g < SM_MPI_GROUP_COUNT; g++)
                if (strlen(sm_mpi_group_names[g]) == n &&
                    strncasecmp(start, sm_mpi_group_names[g], n) == 0)
                    break;
            if (g == SM_MPI_GROUP_COUNT) {
                char names[256] = "";
                for (unsigned k = 0; k < SM_MPI_GROUP_COUNT; k++)
                    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                             k ? ", " : "", sm_mpi_group_names[k]);
                snprintf(err, errlen, "unknown MPI group '%.*s' (groups: %s; also all, none, "
                         "default, and ~GROUP to leave one out)", (int)n, start, names);
                return -1;
            }
            bits = 1u << g;
        }
        /* "~x" first: from all groups, less x. */
        if (!any && off)
            m = SM_MPI_GROUPS_ALL;
        m = off ? m & ~bits : m | bits;
        any = 1;
    }
    *mask = any ? m : SM_MPI_GROUPS_ALL;
    return 0;
}

void sm_mpi_groups_format_off(uint32_t mask, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (unsigned g = 0; g < SM_MPI_GROUP_COUNT && n < len; g++)
        if (!(mask & (1u << g))) {
            int w = snprintf(buf + n, len - n, "%s%s", n ? "," : "", sm_mpi_group_names[g]);
            if (w < 0)
                break;
            n += (size_t)w;
        }
}
