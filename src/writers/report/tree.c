/* The report's call tree: the call paths as an expandable tree (HTML
 * details/summary) with inclusive and exclusive time, visits and kind;
 * clicking a path draws the distribution of its inclusive time over the
 * ranks (or the ranges of ranks of a large job; data-d) and, in a small
 * job, over the threads (data-t), from values the node carries, so the
 * page needs nothing else.  Bounded: at most
 * SM_REPORT_MAX_TREE nodes, the biggest first; paths below 0.1 % of the
 * job's time are folded (the page says how many). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#define SM_REPORT_MAX_TREE 400
#define SM_REPORT_TREE_OPEN 2 /* levels open at first */

typedef struct sm_tnode {
    uint32_t path;          /* index in r->paths */
    uint32_t *kids, n_kids; /* by inclusive time, most first */
} sm_tnode_t;

typedef struct sm_tree {
    sm_report_t *r;
    sm_tnode_t *nodes; /* [n_paths]; roots: those of depth 0 */
    uint32_t *roots, n_roots;
    double total;      /* inclusive time of the roots */
    uint32_t shown, folded;
} sm_tree_t;

static const sm_rpath_t *sm_tree_paths;

static int sm_tnode_by_incl(const void *a, const void *b)
{
    double x = sm_tree_paths[*(const uint32_t *)a].incl;
    double y = sm_tree_paths[*(const uint32_t *)b].incl;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The node's values for its distribution: inclusive time per rank (µs), or
 * per range of ranks (its mean rank) in a large job. */
static void sm_tree_values(sm_tree_t *t, const sm_rpath_t *p)
{
    sm_out_t *o = &t->r->o;
    const sm_jv_t *pr = sm_jv_get(p->v, "per_rank");
    /* Per thread (a small profile, read whole): member:rank:time. */
    const sm_jv_t *pt = sm_jv_get(p->v, "per_thread");
    if (sm_jv_len(pt)) {
        sm_out_printf(o, " data-t=\"");
        for (uint32_t k = 0; k < sm_jv_len(pt); k++) {
            const sm_jv_t *e = sm_jv_at(pt, k);
            sm_out_printf(o, "%s%.0f:%.0f:%.0f", k ? "," : "", sm_jv_num(e, "member", 0),
                          sm_jv_num(e, "rank", 0),
                          sm_jv_num(sm_jv_get(e, "inclusive"), "sum", 0) / 1e3);
        }
        sm_out_printf(o, "\"");
    }
    if (pr) {
        sm_out_printf(o, " data-u=rank data-d=\"");
        for (uint32_t k = 0; k < sm_jv_len(pr); k++) {
            const sm_jv_t *e = sm_jv_at(pr, k);
            sm_out_printf(o, "%s%.0f:%.0f", k ? "," : "", sm_jv_num(e, "rank", 0),
                          sm_jv_num(e, "inclusive", 0) / 1e3);
        }
        sm_out_printf(o, "\"");
        return;
    }
    if (!t->r->n_bins)
        return;
    sm_out_printf(o, " data-u=range data-d=\"");
    bool first = true;
    for (uint32_t b = 0; b < t->r->n_bins; b++) {
        double n = sm_rpath_bin(p->v, "ranks", b);
        if (n <= 0)
            continue;
        sm_out_printf(o, "%s%u:%.0f", first ? "" : ",", (unsigned)t->r->bin_first[b],
                      sm_rpath_bin(p->v, "inclusive_sum", b) / n / 1e3);
        first = false;
    }
    sm_out_printf(o, "\"");
}

static void sm_tree_node(sm_tree_t *t, uint32_t i, uint32_t level)
{
    sm_out_t *o = &t->r->o;
    const sm_rpath_t *p = &t->r->paths[i];
    const sm_tnode_t *n = &t->nodes[i];
    if (o->err)
        return;
    t->shown++;
    const sm_jv_t *path = sm_jv_get(p->v, "path");
    uint32_t depth = sm_jv_len(path);
    char bi[48], be[48];
    sm_fmt_time(bi, sizeof bi, p->incl);
    sm_fmt_time(be, sizeof be, p->excl);
    sm_out_printf(o, "<details%s%s id=t%u><summary",
                  level < SM_REPORT_TREE_OPEN ? " open" : "", n->n_kids ? "" : " class=leaf",
                  (unsigned)i);
    sm_tree_values(t, p);
    sm_out_printf(o, "><span class=tn>");
    sm_html_name(o, depth ? sm_jv_at(path, depth - 1)->str : "?");
    sm_out_printf(o, "</span> <span class=tm>%s (%.1f%%) incl, %s excl, %.0f visits, ", bi,
                  t->total > 0 ? 100 * p->incl / t->total : 0.0, be, p->visits);
    sm_html(o, sm_jv_str(p->v, "kind") ? sm_jv_str(p->v, "kind") : sm_jv_str(p->v, "paradigm"));
    sm_out_printf(o, "</span></summary>\n");
    uint32_t folded = 0;
    for (uint32_t k = 0; k < n->n_kids; k++) {
        uint32_t c = n->kids[k];
        if (t->shown >= SM_REPORT_MAX_TREE || t->r->paths[c].incl < t->total * 1e-3) {
            folded += n->n_kids - k; /* (sorted: the rest are smaller) */
            break;
        }
        sm_tree_node(t, c, level + 1);
    }
    if (folded)
        sm_out_printf(o, "<div class=note>%u smaller call path%s here not shown</div>\n",
                      (unsigned)folded, folded == 1 ? "" : "s");
    t->folded += folded;
    sm_out_printf(o, "</details>\n");
}

void sm_report_tree(sm_report_t *r)
{
    sm_out_t *o = &r->o;
    uint32_t n = r->n_paths;
    if (!n)
        return;
    sm_tree_t t = {.r = r};
    t.nodes = calloc(n, sizeof *t.nodes);
    t.roots = calloc(n, sizeof *t.roots);
    uint32_t *parent = calloc(n, sizeof *parent), *stack = calloc(n, sizeof *stack);
    uint32_t *kids = calloc(n, sizeof *kids);
    if (!t.nodes || !t.roots || !parent || !stack || !kids) {
        sm_out_fail(o, ENOMEM);
        goto out;
    }
    /* Parents from the pre-order (a path's parent: the last path one
     * level up); children counted, then placed. */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t d = r->paths[i].depth < n ? r->paths[i].depth : n - 1;
        stack[d] = i;
        parent[i] = d > 0 ? stack[d - 1] : UINT32_MAX;
        if (parent[i] == UINT32_MAX) {
            t.roots[t.n_roots++] = i;
            t.total += r->paths[i].incl;
        } else {
            t.nodes[parent[i]].n_kids++;
        }
    }
    uint32_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        t.nodes[i].kids = kids + at;
        at += t.nodes[i].n_kids;
        t.nodes[i].n_kids = 0;
    }
    for (uint32_t i = 0; i < n; i++)
        if (parent[i] != UINT32_MAX) {
            sm_tnode_t *p = &t.nodes[parent[i]];
            p->kids[p->n_kids++] = i;
        }
    sm_tree_paths = r->paths;
    for (uint32_t i = 0; i < n; i++)
        qsort(t.nodes[i].kids, t.nodes[i].n_kids, sizeof *kids, sm_tnode_by_incl);
    qsort(t.roots, t.n_roots, sizeof *t.roots, sm_tnode_by_incl);

    sm_out_printf(o, "<h2 id=tree>Call tree</h2>\n<p>Every call path in its place, the "
                     "children of each by inclusive time (all ranks together; %% of the "
                     "job's time in regions). Open and close a path with its triangle; click "
                     "a path to see how its inclusive time is spread over the ranks, "
                     "below.</p>\n<div id=calltree>\n");
    uint32_t folded = 0;
    for (uint32_t k = 0; k < t.n_roots && !o->err; k++) {
        uint32_t i = t.roots[k];
        if (t.shown >= SM_REPORT_MAX_TREE || r->paths[i].incl < t.total * 1e-3) {
            folded += t.n_roots - k;
            break;
        }
        sm_tree_node(&t, i, 0);
    }
    t.folded += folded;
    sm_out_printf(o, "</div>\n");
    if (t.folded)
        sm_out_printf(o, "<p class=note id=tree-folded>%u call paths are shown; %u smaller "
                         "ones (under 0.1%% of the time, or beyond %u) are not, with what is "
                         "under them (profile.json and profile.txt have all).</p>\n",
                      (unsigned)t.shown, (unsigned)t.folded, SM_REPORT_MAX_TREE);
    sm_out_printf(o, "<div id=dist class=note>Click a call path above for its "
                     "distribution.</div>\n");
out:
    free(t.nodes);
    free(t.roots);
    free(parent);
    free(stack);
    free(kids);
}

/* The distribution: histograms of the clicked path's values (16 columns
 * from its least to its largest), per rank (or range of ranks) and, where
 * the node has them, per thread; the slowest and fastest named. */
const char sm_report_tree_js[] =
    "function smHist(v,one,many){\n"
    " var lo=Infinity,hi=-Infinity,sl=v[0],fa=v[0];v.forEach(function(x){if(x.t<lo){lo=x.t;"
    "fa=x}if(x.t>hi){hi=x.t;sl=x}});\n"
    " var B=16,c=new Array(B).fill(0),w=(hi-lo)/B||1;v.forEach(function(x){c[Math.min(B-1,"
    "Math.floor((x.t-lo)/w))]++});\n"
    " var m=Math.max.apply(null,c),W=480,H=100,g='';\n"
    " for(var i=0;i<B;i++){var h=m?H*c[i]/m:0;g+='<rect x='+(40+i*W/B)+' y='+(10+H-h)+"
    "' width='+(W/B-2)+' height='+h+' fill=\"#8c8c8c\"><title>'+c[i]+' '+many+': '+"
    "(lo+i*w).toFixed(0)+' to '+(lo+(i+1)*w).toFixed(0)+' us</title></rect>'}\n"
    " return '<div class=dist-'+(one=='thread'?'threads':'ranks')+'>'+v.length+' '+many+', '+"
    "lo.toFixed(0)+' to '+hi.toFixed(0)+' us; slowest '+one+' '+sl.n+', fastest '+one+' '+"
    "fa.n+'<br><svg width='+(W+60)+' height='+(H+30)+'>'+g+'<text x=40 y='+(H+24)+'>'+"
    "lo.toFixed(0)+' us</text><text x='+(40+W)+' y='+(H+24)+' text-anchor=end>'+"
    "hi.toFixed(0)+' us</text><text x=0 y=20>'+m+'</text></svg></div>'}\n"
    "function smDist(s){var d=s.dataset.d,box=document.getElementById('dist');if(!d||!box)"
    "return;\n"
    " var r=s.dataset.u=='range',v=d.split(',').map(function(x){var p=x.split(':');"
    "return{n:p[0],t:+p[1]}});\n"
    " var n=s.querySelector('.tn').textContent,h='<b>'+n.replace(/&/g,'&amp;')"
    ".replace(/</g,'&lt;')+'</b>: inclusive time'+smHist(v,r?'range from rank':'rank',"
    "r?'ranges of ranks':'ranks');\n"
    " if(s.dataset.t)h+=smHist(s.dataset.t.split(',').map(function(x){var p=x.split(':');"
    "return{n:p[0]+' (rank '+p[1]+')',t:+p[2]}}),'thread','threads');\n"
    " box.innerHTML=h}\n"
    "document.querySelectorAll('#calltree summary').forEach(function(s){s.addEventListener("
    "'click',function(){smDist(s)})});\n"
    "if(location.hash.indexOf('#dist-')==0){var s0=document.querySelector('#'+"
    "location.hash.slice(6)+'>summary');if(s0)smDist(s0)}\n";
