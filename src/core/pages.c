/* Populated memory in pieces carved from huge-page slabs (see pages.h). */
#define _GNU_SOURCE
#include "pages.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SM_PAGE 4096u
#define SM_HUGE ((size_t)2 << 20)
/* Address space is reserved 32 MiB at a time (only what is handed out is
 * ever populated). */
#define SM_RESERVATION ((size_t)32 << 20)

static pthread_mutex_t sm_pages_lock = PTHREAD_MUTEX_INITIALIZER;
static int sm_thp = -1; /* transparent huge pages: -1 unknown, 0 no, 1 madvise/always */

static int sm_thp_available(void)
{
    if (sm_thp >= 0)
        return sm_thp;
    sm_thp = 0;
    int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char buf[128];
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n > 0) {
            buf[n] = '\0';
            sm_thp = strstr(buf, "[never]") == NULL;
        }
    }
    return sm_thp;
}

int sm_pages_huge(void)
{
    pthread_mutex_lock(&sm_pages_lock);
    int h = sm_thp_available();
    pthread_mutex_unlock(&sm_pages_lock);
    return h;
}

/* Fault every page of [p, p + n) in for writing, in one system call where
 * the kernel has MADV_POPULATE_WRITE (5.14), else by touching each page. */
static void sm_populate(uint8_t *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
    int saved = errno;
    int rc = madvise(p, n, MADV_POPULATE_WRITE);
    errno = saved;
    if (rc == 0)
        return;
#endif
    for (size_t o = 0; o < n; o += SM_PAGE)
        ((volatile uint8_t *)p)[o] = 0;
}

/* Address space for n bytes (a multiple of SM_HUGE), aligned to 2 MiB and
 * advised for huge pages, not populated yet. */
static uint8_t *sm_reserve(size_t n)
{
    uint8_t *raw = mmap(NULL, n + SM_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                        -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + SM_HUGE - 1) & ~(uintptr_t)(SM_HUGE - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (p + n < raw + n + SM_HUGE)
        munmap(p + n, (size_t)(raw + n + SM_HUGE - (p + n)));
    int saved = errno;
    madvise(p, n, MADV_HUGEPAGE);
    errno = saved;
    return p;
}

/* Pieces are carved from a reservation in order and populated as they are
 * handed out, not before: the kernel clears each huge page when the first
 * piece reaches it, at most 2 MiB ahead of the writes, which then find the
 * cleared lines still in cache.  (Populating a whole slab ahead leaves the
 * writes to miss, which costs more than the faults saved.) */
static uint8_t *sm_res_pos, *sm_res_end;

void *sm_pages_get(size_t bytes)
{
    size_t n = (bytes + SM_PAGE - 1) & ~(size_t)(SM_PAGE - 1);
    if (n == 0)
        return NULL;
    int saved = errno;
    pthread_mutex_lock(&sm_pages_lock);
    int huge = sm_thp_available();
    uint8_t *p = NULL;
    if (!huge) {
        /* No huge pages: mapped and populated in one call, per piece. */
        pthread_mutex_unlock(&sm_pages_lock);
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
                 0);
        errno = saved;
        return p == MAP_FAILED ? NULL : p;
    }
    if (n > SM_RESERVATION / 4) {
        /* Large pieces get a reservation of their own. */
        pthread_mutex_unlock(&sm_pages_lock);
        size_t whole = (n + SM_HUGE - 1) & ~(SM_HUGE - 1);
        p = sm_reserve(whole);
        if (p && whole > n)
            munmap(p + n, whole - n);
    } else {
        if ((size_t)(sm_res_end - sm_res_pos) < n) {
            /* The unused tail was never populated: give the addresses back. */
            if (sm_res_pos && sm_res_end > sm_res_pos)
                munmap(sm_res_pos, (size_t)(sm_res_end - sm_res_pos));
            sm_res_pos = sm_reserve(SM_RESERVATION);
            sm_res_end = sm_res_pos ? sm_res_pos + SM_RESERVATION : NULL;
        }
        if (sm_res_pos && (size_t)(sm_res_end - sm_res_pos) >= n) {
            p = sm_res_pos;
            sm_res_pos += n;
        }
        pthread_mutex_unlock(&sm_pages_lock);
    }
    if (p)
        sm_populate(p, n);
    errno = saved;
    return p;
}

void sm_pages_put(void *p, size_t bytes)
{
    size_t n = (bytes + SM_PAGE - 1) & ~(size_t)(SM_PAGE - 1);
    if (!p || !n)
        return;
    int saved = errno;
    munmap(p, n);
    errno = saved;
}
