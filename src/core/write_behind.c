/* Write-behind for a shared library's file output: see write_behind.h. */
#define _GNU_SOURCE
#include "write_behind.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "location.h"

#if __ELF_NATIVE_CLASS == 64
#define SM_WB_R_SYM(info) ELF64_R_SYM(info)
#else
#define SM_WB_R_SYM(info) ELF32_R_SYM(info)
#endif

/* Owned ranges: a few OTF2-sized buffers per encoder. */
#define SM_WB_RANGES 128
/* Bytes queued at most: a writer that gets further ahead waits (its
 * buffers are not reused meanwhile, so this bounds their number too). */
#define SM_WB_MAX_QUEUED (12u << 20)
/* Streams with a failed write, until their fclose. */
#define SM_WB_ERRORS 64

typedef struct sm_wb_entry {
    struct sm_wb_entry *next;
    FILE *f;
    const void *p;
    size_t size, n;
} sm_wb_entry_t;

static pthread_mutex_t sm_wb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sm_wb_work = PTHREAD_COND_INITIALIZER; /* to the thread */
static pthread_cond_t sm_wb_done = PTHREAD_COND_INITIALIZER; /* to waiters */
static int sm_wb_on;                     /* queueing (read without the lock) */
static int sm_wb_hooked;
static int sm_wb_quit;
static pthread_t sm_wb_thread;
static sm_wb_entry_t *sm_wb_head, *sm_wb_tail; /* queued, the head maybe in progress */
static size_t sm_wb_queued;
static uint64_t sm_wb_total;
static struct {
    const char *base;
    size_t len;
    unsigned busy; /* queued writes from it */
} sm_wb_range[SM_WB_RANGES];
static int sm_wb_n_ranges;
static struct {
    FILE *f;
    int err;
} sm_wb_err[SM_WB_ERRORS];
static int sm_wb_n_err;
static int sm_wb_err_lost; /* more failed streams than the table: every fclose fails */

static int sm_wb_range_of(const void *p, size_t len)
{
    const char *c = p;
    for (int i = 0; i < sm_wb_n_ranges; i++)
        if (c >= sm_wb_range[i].base && len <= sm_wb_range[i].len &&
            (size_t)(c - sm_wb_range[i].base) <= sm_wb_range[i].len - len)
            return i;
    return -1;
}

static bool sm_wb_stream_pending(FILE *f)
{
    for (sm_wb_entry_t *e = sm_wb_head; e; e = e->next)
        if (e->f == f)
            return true;
    return false;
}

/* Lock held: until the stream's queued writes are done. */
static void sm_wb_drain_locked(FILE *f)
{
    while (sm_wb_stream_pending(f))
        pthread_cond_wait(&sm_wb_done, &sm_wb_lock);
}

/* Lock held: the stream's failed write (errno), forgotten; 0 if none. */
static int sm_wb_take_error(FILE *f)
{
    for (int i = 0; i < sm_wb_n_err; i++)
        if (sm_wb_err[i].f == f) {
            int err = sm_wb_err[i].err;
            sm_wb_err[i] = sm_wb_err[--sm_wb_n_err];
            return err;
        }
    return sm_wb_err_lost ? EIO : 0;
}

static size_t sm_wb_fwrite(const void *p, size_t size, size_t n, FILE *f)
{
    size_t len = size * n;
    if (!__atomic_load_n(&sm_wb_on, __ATOMIC_ACQUIRE)) /* (nothing queued then) */
        return fwrite(p, size, n, f);
    pthread_mutex_lock(&sm_wb_lock);
    while (sm_wb_on && sm_wb_queued >= SM_WB_MAX_QUEUED)
        pthread_cond_wait(&sm_wb_done, &sm_wb_lock);
    /* (Looked up after the wait: a range's place in the table moves when
     * another is disowned.) */
    int r = sm_wb_on && len ? sm_wb_range_of(p, len) : -1;
    sm_wb_entry_t *e = r >= 0 ? malloc(sizeof *e) : NULL;
    if (!e) {
        sm_wb_drain_locked(f);
        pthread_mutex_unlock(&sm_wb_lock);
        return fwrite(p, size, n, f);
    }
    *e = (sm_wb_entry_t){NULL, f, p, size, n};
    if (sm_wb_tail)
        sm_wb_tail->next = e;
    else
        sm_wb_head = e;
    sm_wb_tail = e;
    sm_wb_queued += len;
    sm_wb_range[r].busy++;
    pthread_cond_signal(&sm_wb_work);
    pthread_mutex_unlock(&sm_wb_lock);
    return n;
}

static int sm_wb_fseek(FILE *f, long offset, int whence)
{
    if (__atomic_load_n(&sm_wb_hooked, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&sm_wb_lock);
        sm_wb_drain_locked(f);
        pthread_mutex_unlock(&sm_wb_lock);
    }
    return fseek(f, offset, whence);
}

static int sm_wb_fclose(FILE *f)
{
    pthread_mutex_lock(&sm_wb_lock);
    sm_wb_drain_locked(f);
    int err = sm_wb_take_error(f);
    pthread_mutex_unlock(&sm_wb_lock);
    int rc = fclose(f);
    if (err) {
        errno = err;
        return EOF;
    }
    return rc;
}

static void *sm_wb_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&sm_wb_lock);
    for (;;) {
        while (!sm_wb_head && !sm_wb_quit)
            pthread_cond_wait(&sm_wb_work, &sm_wb_lock);
        if (!sm_wb_head)
            break;
        sm_wb_entry_t *e = sm_wb_head; /* stays queued while it is written */
        pthread_mutex_unlock(&sm_wb_lock);
        size_t done = fwrite(e->p, e->size, e->n, e->f);
        int err = done == e->n ? 0 : errno ? errno : EIO;
        pthread_mutex_lock(&sm_wb_lock);
        if (err) {
            int i = 0;
            while (i < sm_wb_n_err && sm_wb_err[i].f != e->f)
                i++;
            if (i == sm_wb_n_err && sm_wb_n_err < SM_WB_ERRORS)
                sm_wb_err[sm_wb_n_err++] = (typeof(sm_wb_err[0])){e->f, err};
            else if (i == sm_wb_n_err)
                sm_wb_err_lost = 1;
        }
        sm_wb_head = e->next;
        if (!sm_wb_head)
            sm_wb_tail = NULL;
        sm_wb_queued -= e->size * e->n;
        if (!err)
            sm_wb_total += e->size * e->n;
        int r = sm_wb_range_of(e->p, e->size * e->n); /* (kept while busy) */
        if (r >= 0)
            sm_wb_range[r].busy--;
        free(e);
        pthread_cond_broadcast(&sm_wb_done);
    }
    pthread_mutex_unlock(&sm_wb_lock);
    return NULL;
}

int sm_wb_start(void)
{
    pthread_mutex_lock(&sm_wb_lock);
    int rc = 0;
    if (!sm_wb_hooked)
        rc = -1;
    else if (!sm_wb_on) {
        sm_wb_quit = 0;
        rc = sm_internal_thread_create(&sm_wb_thread, 128u << 10, sm_wb_main, NULL) == 0 ? 0 : -1;
        if (rc == 0)
            __atomic_store_n(&sm_wb_on, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&sm_wb_lock);
    return rc;
}

void sm_wb_stop(void)
{
    pthread_mutex_lock(&sm_wb_lock);
    int on = sm_wb_on;
    sm_wb_quit = 1;
    pthread_cond_signal(&sm_wb_work);
    while (sm_wb_head) /* still queueing meanwhile: a stream's bytes keep their order */
        pthread_cond_wait(&sm_wb_done, &sm_wb_lock);
    __atomic_store_n(&sm_wb_on, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sm_wb_lock);
    if (on)
        pthread_join(sm_wb_thread, NULL);
}

void sm_wb_own(const void *p, size_t n)
{
    pthread_mutex_lock(&sm_wb_lock);
    if (sm_wb_n_ranges < SM_WB_RANGES && sm_wb_range_of(p, 1) < 0)
        sm_wb_range[sm_wb_n_ranges++] = (typeof(sm_wb_range[0])){p, n, 0};
    pthread_mutex_unlock(&sm_wb_lock); /* (else: its writes stay synchronous) */
}

void sm_wb_disown(const void *p)
{
    pthread_mutex_lock(&sm_wb_lock);
    int r;
    while ((r = sm_wb_range_of(p, 1)) >= 0 && sm_wb_range[r].busy) /* its writes done */
        pthread_cond_wait(&sm_wb_done, &sm_wb_lock);
    if (r >= 0)
        sm_wb_range[r] = sm_wb_range[--sm_wb_n_ranges];
    pthread_mutex_unlock(&sm_wb_lock);
}

bool sm_wb_busy(const void *p)
{
    pthread_mutex_lock(&sm_wb_lock);
    int r = sm_wb_range_of(p, 1);
    bool busy = r >= 0 && sm_wb_range[r].busy;
    pthread_mutex_unlock(&sm_wb_lock);
    return busy;
}

uint64_t sm_wb_bytes(void)
{
    pthread_mutex_lock(&sm_wb_lock);
    uint64_t n = sm_wb_total;
    pthread_mutex_unlock(&sm_wb_lock);
    return n;
}

/* ---------------------------------------------------------------- hooking */

typedef struct sm_wb_find {
    uintptr_t fn;
    int done; /* 1 hooked, -1 found but nothing to hook */
} sm_wb_find_t;

/* A dynamic-section address: glibc relocates most of them in place, other
 * loaders leave them relative to the object. */
static uintptr_t sm_wb_dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) a)
{
    return a < info->dlpi_addr ? info->dlpi_addr + a : a;
}

/* Points one slot of the object's offset table at `to`; under RELRO the
 * page is made writable for the store.  0, or -1 (left as it was). */
static int sm_wb_patch(const struct dl_phdr_info *info, void **slot, void *to)
{
    uintptr_t a = (uintptr_t)slot;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_GNU_RELRO || a < lo || a >= lo + ph->p_memsz)
            continue;
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        void *start = (void *)(a & ~(page - 1));
        if (mprotect(start, page, PROT_READ | PROT_WRITE) != 0)
            return -1;
        __atomic_store_n(slot, to, __ATOMIC_RELEASE);
        (void)mprotect(start, page, PROT_READ);
        return 0;
    }
    __atomic_store_n(slot, to, __ATOMIC_RELEASE);
    return 0;
}

static int sm_wb_hook_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    sm_wb_find_t *find = arg;
    const ElfW(Dyn) *dyn = NULL;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && find->fn >= lo && find->fn < lo + ph->p_memsz)
            mine = 1;
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
    }
    if (!mine)
        return 0;
    find->done = -1;
    if (!dyn || !info->dlpi_name || !info->dlpi_name[0])
        return 1; /* the program itself: not a shared library */
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    uintptr_t rel[2] = {0, 0};
    size_t rel_size[2] = {0, 0};
    int plt_rela = 1;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)sm_wb_dyn_addr(info, d->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const char *)sm_wb_dyn_addr(info, d->d_un.d_ptr); break;
        case DT_JMPREL: rel[0] = sm_wb_dyn_addr(info, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: rel_size[0] = d->d_un.d_val; break;
        case DT_PLTREL: plt_rela = d->d_un.d_val == DT_RELA; break;
        case DT_RELA: rel[1] = sm_wb_dyn_addr(info, d->d_un.d_ptr); break;
        case DT_RELASZ: rel_size[1] = d->d_un.d_val; break;
        default: break;
        }
    }
    if (!symtab || !strtab)
        return 1;
    static const struct {
        const char *name;
        void *to;
    } hooks[] = {{"fwrite", (void *)sm_wb_fwrite},
                 {"fseek", (void *)sm_wb_fseek},
                 {"fclose", (void *)sm_wb_fclose}};
    /* The slots first: all of them are pointed here, or none (a queued
     * write must never meet an fclose that does not wait for it). */
    enum { SM_WB_SLOTS = 8 };
    void **slot[SM_WB_SLOTS], *was[SM_WB_SLOTS];
    size_t which[SM_WB_SLOTS];
    int n_slots = 0, seen = 0;
    /* The PLT's jump slots, and GLOB_DAT entries of the same names (a
     * library built without a PLT calls through those). */
    for (int t = 0; t < 2; t++) {
        int rela = t == 1 || plt_rela;
        size_t each = rela ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
        for (size_t off = 0; rel[t] && off + each <= rel_size[t]; off += each) {
            ElfW(Addr) r_offset;
            size_t sym;
            if (rela) {
                const ElfW(Rela) *r = (const ElfW(Rela) *)(rel[t] + off);
                r_offset = r->r_offset;
                sym = SM_WB_R_SYM(r->r_info);
            } else {
                const ElfW(Rel) *r = (const ElfW(Rel) *)(rel[t] + off);
                r_offset = r->r_offset;
                sym = SM_WB_R_SYM(r->r_info);
            }
            if (!sym)
                continue;
            const char *name = strtab + symtab[sym].st_name;
            for (size_t k = 0; k < sizeof hooks / sizeof hooks[0]; k++)
                if (!strcmp(name, hooks[k].name) && n_slots < SM_WB_SLOTS) {
                    slot[n_slots] = (void **)(info->dlpi_addr + r_offset);
                    which[n_slots++] = k;
                    seen |= 1 << k;
                }
        }
    }
    if (!(seen & 1) || !(seen & 4)) /* fwrite and fclose, or nothing */
        return 1;
    int i = 0;
    for (; i < n_slots; i++) {
        was[i] = __atomic_load_n(slot[i], __ATOMIC_ACQUIRE);
        if (sm_wb_patch(info, slot[i], hooks[which[i]].to) != 0)
            break;
    }
    if (i < n_slots) { /* put back what was changed */
        while (i-- > 0)
            (void)sm_wb_patch(info, slot[i], was[i]);
        return 1;
    }
    find->done = 1;
    return 1;
}

int sm_wb_hook(const void *fn)
{
    pthread_mutex_lock(&sm_wb_lock);
    int hooked = sm_wb_hooked;
    pthread_mutex_unlock(&sm_wb_lock);
    if (hooked)
        return 0;
    sm_wb_find_t find = {(uintptr_t)fn, 0};
    dl_iterate_phdr(sm_wb_hook_object, &find);
    if (find.done != 1)
        return -1;
    __atomic_store_n(&sm_wb_hooked, 1, __ATOMIC_RELEASE);
    return 0;
}
