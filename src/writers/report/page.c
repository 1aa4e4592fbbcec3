/* The report's page: its frame (style, script, the sections in order),
 * sm_report_write_html and the output of the pipeline. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report_internal.h"
#include "../../finalize/pipeline.h"

/* ---------------------------------------------------------------- page frame */

static const char sm_report_css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px;"
    "color:#222;background:#fff}"
    "h1{font-size:22px;margin:16px 0 4px}h2{font-size:18px;border-bottom:2px solid #4e79a7;"
    "margin-top:28px}nav a{margin-right:12px}"
    "table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 8px;border-bottom:1px "
    "solid #ddd;text-align:left;vertical-align:top}td.n{text-align:right;"
    "font-variant-numeric:tabular-nums}"
    "table.sortable th{cursor:pointer;background:#eef2f6}table.sortable th:hover{background:"
    "#dde5ee}th.a:after{content:' \\25b2'}th.d:after{content:' \\25bc'}"
    ".note{color:#555;font-style:italic}.warn{color:#a00}.key span{display:inline-block;"
    "width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}"
    "svg text{font:11px system-ui,sans-serif}td.path{font-family:monospace;"
    "overflow-wrap:anywhere}span.abbr{border-bottom:1px dotted #888;cursor:help}"
    "dt{font-weight:bold;float:left;clear:left;width:150px}dd{margin-left:160px}"
    "#calltree details{margin-left:18px}#calltree summary{cursor:pointer}"
    "#calltree details.leaf>summary{list-style:none}#calltree .tn{font-family:monospace}"
    "#calltree .tm{color:#555;font-size:12px}"
    "#dist{position:sticky;bottom:0;background:#fff;border-top:1px solid #ddd;padding:4px}";

/* Sorting only: click a header; numbers sort by data-v. */
static const char sm_report_js[] =
    "document.querySelectorAll('table.sortable').forEach(function(t){\n"
    " t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){\n"
    "  var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),up=!th.classList.contains('a');\n"
    "  t.querySelectorAll('th').forEach(function(h){h.classList.remove('a','d')});\n"
    "  th.classList.add(up?'a':'d');\n"
    "  rows.sort(function(x,y){var p=x.cells[i],q=y.cells[i],r;\n"
    "   if(p.dataset.v!==undefined&&q.dataset.v!==undefined)r=p.dataset.v-q.dataset.v;\n"
    "   else r=p.textContent.localeCompare(q.textContent);return up?r:-r});\n"
    "  rows.forEach(function(r){b.appendChild(r)});});});});\n";

/* ---------------------------------------------------------------- the page */

static void sm_report_page(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    sm_out_printf(o, "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\n"
                     "<meta name=viewport content=\"width=device-width\">\n<title>sysmeasure: ");
    sm_html(o, sm_jv_str(r->meta, "program"));
    sm_out_printf(o, "</title>\n<style>%s</style></head>\n<body>\n<h1>sysmeasure report: ",
                  sm_report_css);
    sm_html(o, sm_jv_str(r->meta, "program"));
    sm_out_printf(o, "</h1>\n<nav><a href=\"#run\">The run</a>");
    if (r->prof)
        sm_out_printf(o, "<a href=\"#time\">Where the time went</a><a href=\"#paths\">Top call "
                         "paths</a><a href=\"#imbalance\">Load imbalance</a><a href=\"#mpi\">"
                         "MPI</a><a href=\"#tree\">Call tree</a>");
    if (r->tl)
        sm_out_printf(o, "<a href=\"#timeline\">Timeline</a>");
    if (sm_jv_len(sm_jv_get(r->prof, "papi_events")))
        sm_out_printf(o, "<a href=\"#counters\">Counters</a>");
    if (sm_jv_get(r->prof, "gpu") && sm_jv_get(r->prof, "gpu")->type == SM_JV_OBJECT)
        sm_out_printf(o, "<a href=\"#gpu\">GPU</a>");
    if (sm_jv_get(r->prof, "sampling") && sm_jv_get(r->prof, "sampling")->type == SM_JV_OBJECT)
        sm_out_printf(o, "<a href=\"#sampling\">Sampled functions</a>");
    if (sm_jv_len(sm_jv_get(r->tl, "metrics")))
        sm_out_printf(o, "<a href=\"#metrics\">Metrics</a>");
    if (r->cmp)
        sm_out_printf(o, "<a href=\"#compare\">Compared</a>");
    if (sm_jv_len(sm_jv_get(r->causal, "functions")))
        sm_out_printf(o, "<a href=\"#causal\">Causal profile</a>");
    sm_out_printf(o, "</nav>\n");
    sm_report_run(r);
    sm_report_compare(r);
    if (r->prof) {
        sm_rpath_t **sorted = sm_sorted_paths(r);
        if (!sorted) {
            sm_out_fail(o, ENOMEM);
        } else {
            sm_report_time(r);
            sm_report_timeline(r);
            sm_report_paths(r, sorted);
            sm_report_tree(r);
            sm_report_imbalance(r, sorted);
            sm_report_counters(r, sorted);
            free(sorted);
        }
        sm_report_mpi_table(r);
        sm_report_matrix(r);
        sm_report_gpu(r);
        sm_report_sampling(r);
    } else {
        sm_report_timeline(r);
    }
    sm_report_metrics(r);
    sm_report_causal(r);
    sm_out_printf(o, "<p class=note style=\"margin-top:32px\">Written by sysmeasure from "
                     "metadata.json, profile.json and timeline.json in this folder; the full "
                     "figures are there and in profile.txt, the events in traces.otf2.</p>\n"
                     "<script>\n%s%s</script>\n</body></html>\n",
                  sm_report_js, r->prof ? sm_report_tree_js : "");
}


static int sm_report_write(const char *dir, sm_fs_input_t how, const char *other, FILE *text,
                           char *err, size_t errlen);

int sm_report_write_html(const char *dir, sm_fs_input_t how, char *err, size_t errlen)
{
    return sm_report_write(dir, how, NULL, NULL, err, errlen);
}

int sm_report_write_compare(const char *dir, const char *other, FILE *text, char *err,
                            size_t errlen)
{
    return sm_report_write(dir, SM_FS_INPUT_FOUND, other, text, err, errlen);
}

static int sm_report_write(const char *dir, sm_fs_input_t how, const char *other, FILE *text,
                           char *err, size_t errlen)
{
    char why[512];
    int refused;
    sm_jv_t *meta = sm_report_read(dir, "metadata.json", how, NULL, &refused, why, sizeof why);
    if (!meta || !sm_jv_str(meta, "sysmeasure_version")) {
        if (!meta && (refused || how == SM_FS_INPUT_OWN))
            snprintf(err, errlen, "%s/metadata.json %s", dir, why);
        else
            snprintf(err, errlen, "%s is not a sysmeasure output folder (metadata.json %s)", dir,
                     meta ? "was not written by sysmeasure" : why);
        sm_jv_free(meta);
        return SM_REPORT_NOT_OUTPUT;
    }
    /* The per-thread records are the bulk of a large job's profile.json
     * and the page does not use them. */
    static const char *const skip[] = {"per_thread", NULL};
    sm_jv_t *prof = sm_report_read(dir, "profile.json", how, skip, &refused, why, sizeof why);
    if (refused || (prof && !sm_jv_get(prof, "callpaths"))) {
        snprintf(err, errlen, "%s/profile.json %s", dir,
                 refused ? why : "is damaged (no call paths)");
        sm_jv_free(meta);
        sm_jv_free(prof);
        return SM_REPORT_NOT_OUTPUT;
    }
    /* A small profile is read again whole: the call tree's distributions
     * then have each thread's time too. */
    if (prof && sm_jv_len(sm_jv_get(prof, "callpaths")) <= SM_REPORT_THREAD_PATHS &&
        sm_jv_num(prof, "thread_count", 0) <= SM_REPORT_THREAD_VALUES) {
        sm_jv_t *whole = sm_report_read(dir, "profile.json", how, NULL, &refused, why, sizeof why);
        if (whole && sm_jv_get(whole, "callpaths")) {
            sm_jv_free(prof);
            prof = whole;
        } else {
            sm_jv_free(whole);
        }
    }
    /* timeline.json: written with the trace; a damaged one costs only the
     * timeline (said on the page and in one line), not the report. */
    sm_jv_t *tl = sm_report_read(dir, "timeline.json", how, NULL, &refused, why, sizeof why);
    char bad[400];
    if (tl && sm_report_check_timeline(tl, bad, sizeof bad) != 0) {
        snprintf(why, sizeof why, "is damaged: %s", bad);
        sm_jv_free(tl);
        tl = NULL;
        refused = 1;
    }
    if (refused)
        sm_warning("%s/timeline.json %s: report.html has no timeline", dir, why);
    /* One left by an earlier run in a reused --output folder (this one
     * traced nothing, or failed before it) is older than this run's start. */
    struct stat st;
    char path[4200];
    snprintf(path, sizeof path, "%s/timeline.json", dir);
    double started = sm_jv_num(meta, "start_time_ns", 0) / 1e9;
    if (tl && how != SM_FS_INPUT_OWN && stat(path, &st) == 0 && started > 0 &&
        (double)st.st_mtime + 1 < started) {
        sm_jv_free(tl);
        tl = NULL;
    }
    /* causal/experiments.json (--causal): a damaged one costs its section. */
    sm_jv_t *causal = sm_report_read(dir, "causal/experiments.json", how, NULL, &refused, why,
                                     sizeof why);
    if (refused || (causal && causal->type != SM_JV_OBJECT)) {
        if (refused)
            sm_warning("%s/causal/experiments.json %s: report.html has no causal profile", dir,
                       why);
        sm_jv_free(causal);
        causal = NULL;
    }
    sm_report_t r = {.meta = meta, .prof = prof, .tl = tl, .causal = causal};
    const char *file;
    int rc = -1;
    sm_cmp_t cmp = {0};
    sm_jv_t *aprof = NULL;
    if (other) {
        /* The run compared with: its profile.json, and this run's. */
        aprof = sm_report_read(other, "profile.json", how, skip, &refused, why, sizeof why);
        if (!aprof || !sm_jv_get(aprof, "callpaths") || !prof) {
            snprintf(err, errlen, "%s/profile.json %s", prof ? other : dir,
                     !prof ? "is not there (no profile to compare)"
                           : aprof ? "is damaged (no call paths)" : why);
            rc = SM_REPORT_NOT_OUTPUT;
            goto done;
        }
        if (sm_cmp_build(&cmp, aprof, prof) != 0) {
            sm_error("comparing %s with %s failed: %s", dir, other, strerror(ENOMEM));
            goto done;
        }
        r.cmp = &cmp;
        r.cmp_dir = other;
        if (text)
            sm_cmp_text(text, &cmp, other, dir);
    }
    if (sm_report_check(&r, &file, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s/%s is damaged: %s", dir, file, why);
        rc = SM_REPORT_NOT_OUTPUT;
    } else if (sm_report_prepare(&r) != 0) {
        sm_error("writing %s/report.html failed: %s", dir, strerror(ENOMEM));
    } else if (sm_out_open(&r.o, dir, "report.html") == 0) { /* (failures printed there) */
        sm_report_page(&r);
        rc = sm_out_close(&r.o);
    }
done:
    sm_cmp_free(&cmp);
    sm_jv_free(aprof);
    free(r.paths);
    free(r.threads);
    free(r.main_threads);
    free(r.bin_first);
    free(r.bin_ranks);
    free(r.bin_threads);
    free(r.bin_main);
    sm_jv_free(meta);
    sm_jv_free(prof);
    sm_jv_free(tl);
    sm_jv_free(causal);
    return rc;
}

static bool sm_report_wanted(const sm_finalize_t *f)
{
    return f->report;
}

static int sm_report_output(sm_finalize_t *f)
{
    char err[PATH_MAX + 512];
    int rc = sm_report_write_html(f->run->output_dir, SM_FS_INPUT_OWN, err, sizeof err);
    if (rc == SM_REPORT_NOT_OUTPUT)
        sm_error("writing %s/report.html failed: %s", f->run->output_dir, err);
    return rc == 0 ? 0 : -1;
}

const sm_output_t sm_output_report = {
    .file = "report.html",
    .who = SM_OUTPUT_ROOT,
    .wanted = sm_report_wanted,
    .follows = "metadata.json", /* it reads metadata.json and profile.json back */
    .write = sm_report_output,
};
