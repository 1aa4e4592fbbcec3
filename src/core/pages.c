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
/* Slabs double from 2 MiB to 32 MiB: a small run populates little, a large
 * one makes few slabs, and the tail left unused in each (less than a piece,
 * given back at once) stays small against the slab. */
#define SM_SLAB_MIN SM_HUGE
#define SM_SLAB_MAX ((size_t)32 << 20)

static pthread_mutex_t sm_pages_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *sm_slab_pos, *sm_slab_end;
static size_t sm_slab_next = SM_SLAB_MIN;
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

/* A populated mapping of n bytes (a multiple of SM_HUGE when huge), aligned
 * to 2 MiB so that the kernel can back it with huge pages. */
static uint8_t *sm_map(size_t n, int huge)
{
    if (!huge) {
        void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
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
    sm_populate(p, n);
    return p;
}

void *sm_pages_get(size_t bytes)
{
    size_t n = (bytes + SM_PAGE - 1) & ~(size_t)(SM_PAGE - 1);
    if (n == 0)
        return NULL;
    int saved = errno;
    pthread_mutex_lock(&sm_pages_lock);
    int huge = sm_thp_available();
    uint8_t *p = NULL;
    if (n > SM_SLAB_MAX / 4) {
        /* Large pieces get a mapping of their own. */
        pthread_mutex_unlock(&sm_pages_lock);
        p = sm_map(huge ? (n + SM_HUGE - 1) & ~(SM_HUGE - 1) : n, huge);
        if (p && huge && ((n + SM_HUGE - 1) & ~(SM_HUGE - 1)) > n)
            munmap(p + n, ((n + SM_HUGE - 1) & ~(SM_HUGE - 1)) - n);
        errno = saved;
        return p;
    }
    if ((size_t)(sm_slab_end - sm_slab_pos) < n) {
        /* The tail of the old slab goes back to the system. */
        if (sm_slab_pos && sm_slab_end > sm_slab_pos)
            munmap(sm_slab_pos, (size_t)(sm_slab_end - sm_slab_pos));
        sm_slab_pos = sm_slab_end = NULL;
        size_t size = sm_slab_next;
        while (size < 4 * n)
            size *= 2;
        /* Without huge pages a slab still saves a system call per piece. */
        uint8_t *slab = sm_map(size, huge);
        if (slab) {
            sm_slab_pos = slab;
            sm_slab_end = slab + size;
            if (sm_slab_next < SM_SLAB_MAX)
                sm_slab_next *= 2;
        }
    }
    if ((size_t)(sm_slab_end - sm_slab_pos) >= n) {
        p = sm_slab_pos;
        sm_slab_pos += n;
    }
    pthread_mutex_unlock(&sm_pages_lock);
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
