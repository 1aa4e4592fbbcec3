/* The merge of application-mode passes: see gpu_passes.h. */
#define _GNU_SOURCE
#include "gpu_passes.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/fs.h"
#include "../util/json.h"
#include "../util/log.h"
#include "../writers/gpu_counter_table.h"
#include "../writers/summary_common.h"
#include "../util/grow.h"

/* counter_collection.csv's columns (gpu_counters.c writes them). */
enum {
    C_CORRELATION, C_RANK, C_DEVICE, C_STREAM, C_KERNEL, C_PATH, C_LAUNCH, C_GRID, C_BLOCK,
    C_REGISTERS, C_SHARED, C_GROUP, C_COVERED, C_METRIC, C_VALUE, C_START, C_END, C_COLUMNS
};
static const char *const sm_gp_columns[C_COLUMNS] = {
    "Correlation_Id", "Rank", "Device", "Stream", "Kernel_Name", "Call_Path", "Launch",
    "Grid_Size", "Block_Size", "Registers", "Shared_Memory", "Group", "Launches_Covered",
    "Counter_Name", "Counter_Value", "Start_Timestamp", "End_Timestamp"};

typedef struct sm_gp_row {
    char *line; /* the allocation every field points into */
    char *field[C_COLUMNS];
    uint32_t rank;
    uint64_t launch;
    uint32_t pass;
} sm_gp_row_t;

typedef struct sm_gp_pass {
    sm_gp_row_t *rows; /* sorted by launch key */
    size_t n, cap;
} sm_gp_pass_t;

/* One CSV line (RFC 4180 without line breaks in fields: our writers turn
 * control characters into '?') into at most max fields, in place. */
static int sm_gp_split(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return -1;
        if (*p == '"') {
            char *out = ++p;
            fields[n++] = out;
            for (;;) {
                if (!*p)
                    return -1;
                if (*p == '"' && p[1] == '"') {
                    *out++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *out++ = *p++;
                }
            }
            *out = '\0';
            if (*p == ',') {
                p++;
                continue;
            }
            return *p ? -1 : n;
        }
        fields[n++] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            return n;
        *comma = '\0';
        p = comma + 1;
    }
}

static int sm_gp_key_order(const sm_gp_row_t *x, const sm_gp_row_t *y)
{
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    int c = strcmp(x->field[C_PATH], y->field[C_PATH]);
    if (c)
        return c;
    if ((c = strcmp(x->field[C_KERNEL], y->field[C_KERNEL])) != 0)
        return c;
    return x->launch < y->launch ? -1 : x->launch > y->launch;
}

static int sm_gp_row_order(const void *a, const void *b)
{
    const sm_gp_row_t *x = a, *y = b;
    int c = sm_gp_key_order(x, y);
    return c ? c : strcmp(x->field[C_METRIC], y->field[C_METRIC]);
}

static void sm_gp_pass_free(sm_gp_pass_t *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->rows[i].line);
    free(p->rows);
}

/* Bytes of the largest counter table read (its rows are kept: 4M rows,
 * SM_GPU_COUNTER_ROWS_MAX, of long kernel names stay below). */
#define SM_GP_FILE_MAX ((size_t)4 << 30)

/* One counter_collection*.csv into p: 0; -1 after one line.  (Found in a
 * pass's folder: never through a link, a regular file of bounded size.) */
static int sm_gp_read_file(const char *path, uint32_t pass, sm_gp_pass_t *p)
{
    struct stat st;
    char why[200];
    int fd = sm_fs_open_input(path, SM_FS_INPUT_FOUND, &st);
    if (fd >= 0 && (uint64_t)st.st_size > SM_GP_FILE_MAX) {
        close(fd);
        fd = -1;
        errno = SM_FS_TOO_LARGE;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        sm_error("%s %s", path, sm_fs_input_why(path, SM_FS_INPUT_FOUND, e, SM_GP_FILE_MAX, why,
                                                 sizeof why));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int map[C_COLUMNS], lineno = 0, rc = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        char *fields[64];
        if (lineno == 1) {
            int n = sm_gp_split(line, fields, 64);
            for (int c = 0; c < C_COLUMNS; c++) {
                map[c] = -1;
                for (int k = 0; k < n; k++)
                    if (!strcmp(fields[k], sm_gp_columns[c]))
                        map[c] = k;
                if (map[c] < 0) {
                    sm_error("%s: no column %s: not a counter_collection.csv of sysmeasure", path,
                             sm_gp_columns[c]);
                    rc = -1;
                    goto done;
                }
            }
            continue;
        }
        if (!len)
            continue;
        char *copy = strdup(line);
        int n = copy ? sm_gp_split(copy, fields, 64) : -1;
        if (n < C_COLUMNS) {
            free(copy);
            if (!copy) {
                sm_error("merging the GPU passes: out of memory");
            } else {
                sm_error("%s line %d: not %d comma-separated fields", path, lineno, C_COLUMNS);
            }
            rc = -1;
            goto done;
        }
        if (p->n == p->cap && SM_GROW(p->rows, p->cap, 1024) != 0) {
            free(copy);
            sm_error("merging the GPU passes: out of memory");
            rc = -1;
            goto done;
        }
        sm_gp_row_t *r = &p->rows[p->n];
        r->line = copy;
        for (int c = 0; c < C_COLUMNS; c++)
            r->field[c] = fields[map[c]];
        char *end = NULL;
        unsigned long rank = strtoul(r->field[C_RANK], &end, 10);
        unsigned long long launch = strtoull(r->field[C_LAUNCH], NULL, 10);
        if (end == r->field[C_RANK] || rank > UINT32_MAX) {
            sm_error("%s line %d: rank '%s' is not a number", path, lineno, r->field[C_RANK]);
            free(copy);
            rc = -1;
            goto done;
        }
        r->rank = (uint32_t)rank;
        r->launch = launch;
        r->pass = pass;
        p->n++;
    }
done:
    free(line);
    fclose(f);
    return rc;
}

static int sm_gp_name_order(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every counter_collection*.csv of folder (all ranks) into p, sorted by
 * launch key: 0; 1 none there; -1 after one line. */
static int sm_gp_read_pass(const char *folder, uint32_t pass, sm_gp_pass_t *p)
{
    DIR *d = opendir(folder);
    if (!d)
        return 1;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "counter_collection", 18) || len < 22 ||
            strcmp(e->d_name + len - 4, ".csv"))
            continue;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        if (!grown || !(grown[n] = strdup(e->d_name))) {
            names = grown ? grown : names;
            sm_error("merging the GPU passes: out of memory");
            rc = -1;
            break;
        }
        names = grown;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, sm_gp_name_order);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *path = NULL;
        if (asprintf(&path, "%s/%s", folder, names[i]) < 0) {
            sm_error("merging the GPU passes: out of memory");
            rc = -1;
            break;
        }
        rc = sm_gp_read_file(path, pass, p);
        free(path);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (rc == 0 && n == 0)
        return 1;
    if (rc == 0 && p->n > 1)
        qsort(p->rows, p->n, sizeof *p->rows, sm_gp_row_order);
    return rc;
}

/* Rows [at, end) of p with the launch key of p->rows[at]. */
static size_t sm_gp_launch_end(const sm_gp_pass_t *p, size_t at)
{
    size_t end = at + 1;
    while (end < p->n && sm_gp_key_order(&p->rows[at], &p->rows[end]) == 0)
        end++;
    return end;
}

/* Whether pass q has a launch with row's key. */
static int sm_gp_has(const sm_gp_pass_t *q, const sm_gp_row_t *row)
{
    size_t lo = 0, hi = q->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = sm_gp_key_order(&q->rows[mid], row);
        if (c == 0)
            return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static void sm_gp_csv_row(sm_out_t *o, const sm_gp_row_t *r, uint32_t group)
{
    for (int c = 0; c < C_COLUMNS; c++) {
        if (c)
            sm_out_printf(o, ",");
        if (c == C_GROUP)
            sm_out_printf(o, "%u", group);
        else
            sm_csv_field(o, r->field[c]);
    }
    sm_out_printf(o, "\n");
}

int sm_gpu_passes_merge(const char *dir)
{
    sm_gp_pass_t *passes = NULL;
    uint32_t n_passes = 0;
    int rc = 0;
    for (;;) {
        char folder[4200];
        struct stat st;
        if (snprintf(folder, sizeof folder, "%s/pass%u", dir, n_passes) >= (int)sizeof folder)
            break;
        if (stat(folder, &st) != 0 || !S_ISDIR(st.st_mode))
            break;
        sm_gp_pass_t *grown = realloc(passes, (n_passes + 1) * sizeof *grown);
        if (!grown) {
            sm_error("merging the GPU passes: out of memory");
            rc = 1;
            goto out;
        }
        passes = grown;
        memset(&passes[n_passes], 0, sizeof *passes);
        int read = sm_gp_read_pass(folder, n_passes, &passes[n_passes]);
        n_passes++;
        if (read > 0) {
            sm_error("%s has no counter_collection.csv: that pass collected no GPU counters (see "
                     "its metadata.json notes); nothing merged",
                     folder);
            rc = 2;
            goto out;
        }
        if (read < 0) {
            rc = 2;
            goto out;
        }
    }
    if (!n_passes) {
        sm_error("%s has no pass folders (pass0, pass1, ...) to merge", dir);
        rc = 2;
        goto out;
    }

    uint32_t n_ranks = 1;
    for (uint32_t k = 0; k < n_passes; k++)
        for (size_t i = 0; i < passes[k].n; i++)
            if (passes[k].rows[i].rank + 1 > n_ranks)
                n_ranks = passes[k].rows[i].rank + 1;
    sm_gct_t *table = sm_gct_new(n_ranks);
    sm_out_t csv;
    sm_json_t report;
    if (!table || sm_out_open(&csv, dir, "counter_collection.csv") != 0) {
        sm_gct_free(table);
        rc = 1;
        goto out;
    }
    if (sm_json_open(&report, dir, "gpu_passes.json") != 0) {
        sm_out_close(&csv);
        sm_gct_free(table);
        rc = 1;
        goto out;
    }
    for (int c = 0; c < C_COLUMNS; c++)
        sm_out_printf(&csv, "%s%s", c ? "," : "", sm_gp_columns[c]);
    sm_out_printf(&csv, "\n");
    sm_json_object_begin(&report);
    sm_json_key(&report, "passes");
    sm_json_array_begin_inline(&report);
    for (uint32_t k = 0; k < n_passes; k++) {
        char name[32];
        snprintf(name, sizeof name, "pass%u", k);
        sm_json_string(&report, name);
    }
    sm_json_array_end(&report);

    /* Launches in every pass: pass 0's that all others have; their rows
     * from every pass, in launch-key order. */
    uint64_t merged = 0;
    const sm_gp_pass_t *p0 = &passes[0];
    for (size_t at = 0, end; at < p0->n; at = end) {
        end = sm_gp_launch_end(p0, at);
        int everywhere = 1;
        for (uint32_t k = 1; k < n_passes && everywhere; k++)
            everywhere = sm_gp_has(&passes[k], &p0->rows[at]);
        if (!everywhere)
            continue;
        merged++;
        for (uint32_t k = 0; k < n_passes; k++) {
            const sm_gp_pass_t *q = &passes[k];
            size_t lo = 0, hi = q->n;
            while (lo < hi) { /* the first row of the key */
                size_t mid = lo + (hi - lo) / 2;
                if (sm_gp_key_order(&q->rows[mid], &p0->rows[at]) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (size_t i = lo; i < q->n && !sm_gp_key_order(&q->rows[i], &p0->rows[at]); i++) {
                const sm_gp_row_t *r = &q->rows[i];
                sm_gp_csv_row(&csv, r, k);
                sm_fstat_t one;
                sm_fstat_clear(&one);
                sm_fstat_add(&one, strtod(r->field[C_VALUE], NULL),
                             strtoull(r->field[C_COVERED], NULL, 10));
                if (sm_gct_add(table, r->rank, r->field[C_KERNEL], r->field[C_PATH],
                               r->field[C_METRIC], &one) != 0)
                    rc = 1;
            }
        }
    }
    sm_json_field_uint(&report, "merged_launches", merged);

    /* The others, by pass: listed and counted, never merged. */
    uint64_t differing = 0;
    char kernels[512] = "";
    uint32_t n_kernels = 0;
    sm_json_key(&report, "differing_launches");
    sm_json_array_begin(&report);
    for (uint32_t k = 0; k < n_passes; k++) {
        const sm_gp_pass_t *q = &passes[k];
        for (size_t at = 0, end; at < q->n; at = end) {
            end = sm_gp_launch_end(q, at);
            const sm_gp_row_t *r = &q->rows[at];
            int everywhere = 1;
            for (uint32_t j = 0; j < n_passes && everywhere; j++)
                everywhere = j == k || sm_gp_has(&passes[j], r);
            if (everywhere)
                continue;
            differing++;
            sm_json_object_begin_inline(&report);
            sm_json_field_uint(&report, "pass", k);
            sm_json_field_uint(&report, "rank", r->rank);
            sm_json_field_string(&report, "call_path", r->field[C_PATH]);
            sm_json_field_string(&report, "kernel", r->field[C_KERNEL]);
            sm_json_field_uint(&report, "launch", r->launch);
            sm_json_object_end(&report);
            /* Up to 5 kernel names for the line. */
            if (!strstr(kernels, r->field[C_KERNEL])) {
                if (n_kernels < 5 && strlen(kernels) + strlen(r->field[C_KERNEL]) + 3 < sizeof kernels)
                    snprintf(kernels + strlen(kernels), sizeof kernels - strlen(kernels), "%s%s",
                             n_kernels ? ", " : "", r->field[C_KERNEL]);
                else if (n_kernels == 5)
                    snprintf(kernels + strlen(kernels), sizeof kernels - strlen(kernels), " ...");
                n_kernels++;
            }
        }
    }
    sm_json_array_end(&report);
    sm_json_object_end(&report);
    if (sm_json_close(&report) != 0)
        rc = 1;
    if (sm_out_close(&csv) != 0)
        rc = 1;

    sm_gct_finish(table);
    char heading[160];
    snprintf(heading, sizeof heading,
             "application mode: %u passes merged by rank, call path, kernel and n-th launch",
             n_passes);
    sm_out_t txt;
    if (sm_out_open(&txt, dir, "profile_gpu_counters.txt") == 0) {
        sm_gct_text(&txt, table, heading);
        if (differing)
            sm_out_printf(&txt, "\n%llu launches were not in every pass and are not merged "
                                "(gpu_passes.json lists them)\n",
                          (unsigned long long)differing);
        if (sm_out_close(&txt) != 0)
            rc = 1;
    } else {
        rc = 1;
    }
    sm_json_t js;
    if (sm_json_open(&js, dir, "profile_gpu_counters.json") == 0) {
        sm_json_object_begin(&js);
        sm_json_field_uint(&js, "passes", n_passes);
        sm_json_field_uint(&js, "ranks", n_ranks);
        sm_gct_json(&js, table);
        sm_json_object_end(&js);
        if (sm_json_close(&js) != 0)
            rc = 1;
    } else {
        rc = 1;
    }
    if (sm_gct_csv(dir, "profile_gpu_counters.csv", table) != 0)
        rc = 1;
    sm_gct_free(table);
    if (differing)
        sm_warning("%llu kernel launches differ between the %u passes (kernels: %s; listed in "
                   "%s/gpu_passes.json); merged only the %llu found in every pass",
                   (unsigned long long)differing, n_passes, kernels, dir,
                   (unsigned long long)merged);
out:
    for (uint32_t k = 0; k < n_passes; k++)
        sm_gp_pass_free(&passes[k]);
    free(passes);
    return rc;
}
