/* sm_perfetto_write for the core and the tools: loads the Perfetto plugin
 * (perfetto.h says why it is a plugin) the first time a trace is written,
 * from beside the shared object this code is in (libsysmeasure.so inside a
 * measured process) or, for a tool, beside its executable. */
#include "sm_build.h"
#include "../finalize/pipeline.h"

#include "perfetto.h"
#include "../util/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/fs.h"
#include "../util/otf2_anchor.h"

static pthread_once_t sm_pf_once = PTHREAD_ONCE_INIT;
static sm_perfetto_convert_fn sm_pf_convert;
static char sm_pf_why[PATH_MAX * 6];

/* dir of the object holding this function, with a trailing '/'. */
static int sm_pf_own_dir(char *dir, size_t len)
{
    Dl_info info;
    if (!dladdr((void *)sm_pf_own_dir, &info) || !info.dli_fname || info.dli_fname[0] != '/')
        return -1;
    snprintf(dir, len, "%s", info.dli_fname);
    char *slash = strrchr(dir, '/');
    slash[1] = '\0';
    return 0;
}

static void sm_pf_load(void)
{
#ifndef SM_HAVE_PERFETTO
    snprintf(sm_pf_why, sizeof sm_pf_why,
             "this sysmeasure was built without protobuf-c, so it writes no Perfetto trace "
             "(install libprotobuf-c-dev and protobuf-c-compiler, then configure again)");
#else
    char lib[PATH_MAX + 64], tried[PATH_MAX * 2], dir[PATH_MAX] = "";
    int found = -1;
    if (sm_pf_own_dir(dir, sizeof dir) == 0) {
        if (snprintf(lib, sizeof lib, "%s%s", dir, SM_PERFETTO_PLUGIN) < (int)sizeof lib)
            found = access(lib, R_OK);
    }
    if (found != 0)
        found = sm_fs_find_library(SM_PERFETTO_PLUGIN, lib, sizeof lib, tried, sizeof tried);
    if (found != 0) {
        snprintf(sm_pf_why, sizeof sm_pf_why, "%s was not found (looked beside %s and in %s)",
                 SM_PERFETTO_PLUGIN, dir, tried);
        return;
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(sm_pf_why, sizeof sm_pf_why, "%s cannot be loaded: %s", lib, dlerror());
        return;
    }
    sm_pf_convert = (sm_perfetto_convert_fn)dlsym(h, SM_PERFETTO_ENTRY);
    if (!sm_pf_convert)
        snprintf(sm_pf_why, sizeof sm_pf_why, "%s lacks %s (a different sysmeasure build?)", lib,
                 SM_PERFETTO_ENTRY);
#endif
}

int sm_perfetto_available(void)
{
    pthread_once(&sm_pf_once, sm_pf_load);
    return sm_pf_convert != NULL;
}

/* What is handed to libotf2 is checked first: the anchor file, read here
 * (never through a link, a regular file, bounded) and walked as libotf2
 * walks it (otf2_anchor.h), since libotf2 trusts its counts.  0; or
 * SM_PERFETTO_NOT_OUTPUT with err.  A missing anchor is left to the
 * converter, which says the folder holds no archive. */
static int sm_pf_check_anchor(const char *dir, char *err, size_t errlen)
{
    char anchor[PATH_MAX + 16], why[300];
    snprintf(anchor, sizeof anchor, "%s/traces.otf2", dir);
    size_t len = 0;
    uint8_t *data =
        (uint8_t *)sm_fs_read_input(anchor, SM_FS_INPUT_FOUND, SM_OTF2_ANCHOR_MAX, &len);
    if (!data) {
        int e = errno;
        if (e == ENOENT)
            return 0;
        snprintf(err, errlen, "the OTF2 archive's anchor file %s %s", anchor,
                 sm_fs_input_why(anchor, SM_FS_INPUT_FOUND, e, SM_OTF2_ANCHOR_MAX, why,
                                 sizeof why));
        return SM_PERFETTO_NOT_OUTPUT;
    }
    int rc = sm_otf2_anchor_check(data, len, NULL, why, sizeof why);
    free(data);
    if (rc != 0) {
        snprintf(err, errlen, "the OTF2 archive %s is damaged: its anchor file cannot be read "
                 "(%s)", anchor, why);
        return SM_PERFETTO_NOT_OUTPUT;
    }
    return 0;
}

int sm_perfetto_write(const char *dir, sm_perfetto_stats_t *stats, char *err, size_t errlen)
{
    if (!sm_perfetto_available()) {
        snprintf(err, errlen, "%s", sm_pf_why);
        return SM_PERFETTO_UNAVAILABLE;
    }
    int rc = sm_pf_check_anchor(dir, err, errlen);
    return rc ? rc : sm_pf_convert(dir, stats, err, errlen);
}

static bool sm_perfetto_wanted(const sm_finalize_t *f)
{
    return f->trace && f->perfetto;
}

/* Without protobuf-c: a warning (the launcher said so at the start too),
 * not a failed output. */
static int sm_perfetto_output(sm_finalize_t *f)
{
    char err[sizeof sm_pf_why + 8600];
    int rc = sm_perfetto_write(f->run->output_dir, NULL, err, sizeof err);
    if (rc == SM_PERFETTO_UNAVAILABLE) {
        sm_warning("no trace.pftrace: %s", err);
        return 0;
    }
    if (rc == SM_PERFETTO_NOT_OUTPUT)
        sm_error("writing %s/trace.pftrace failed: %s", f->run->output_dir, err);
    return rc == 0 ? 0 : -1;
}

const sm_output_t sm_output_perfetto = {
    .file = "trace.pftrace",
    .who = SM_OUTPUT_ROOT,
    .wanted = sm_perfetto_wanted,
    .follows = "traces.otf2",
    .after_every_rank = true, /* it reads the whole archive */
    .write = sm_perfetto_output,
};
