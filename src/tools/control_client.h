/* The client side of the control endpoints of --dormant processes
 * (src/core/window.h), shared by sysmeasure-attach and sysmeasure-stacks:
 * finding them, writing a request, waiting for the answers. */
#ifndef SM_CONTROL_CLIENT_H
#define SM_CONTROL_CLIENT_H

#include <limits.h>
#include <stddef.h>

typedef struct sm_ctl_ep {
    char name[128];    /* <host>.<pid> */
    int answered;      /* to the current request */
    char state[32];
    char text[PATH_MAX];
} sm_ctl_ep_t;

void sm_ctl_sleep_ms(long ms);
double sm_ctl_now_s(void);
/* PID's control folder (the one it holds open).  0, or -1 (said in one
 * line when say). */
int sm_ctl_find_pid(long pid, char *dir, size_t len, int say);
/* Every endpoint of a control folder (a job's processes that still run). */
sm_ctl_ep_t *sm_ctl_job_endpoints(const char *dir, size_t *count);
/* --job JOB: the control folder of the job whose output folder is JOB into
 * dir, and its endpoints (*count of them, malloc'd); NULL after one line
 * naming the problem, *bad_usage set when JOB itself is not a folder. */
sm_ctl_ep_t *sm_ctl_job_open(const char *job, char *dir, size_t len, size_t *count,
                             int *bad_usage);
/* The sequence number at the head of a file (0: none), the rest of its line. */
unsigned long long sm_ctl_file_seq(const char *path, char *rest, size_t len);
/* The next request number of the request file req in dir: above every
 * number used there. */
unsigned long long sm_ctl_next_seq(const char *dir, const char *req, const sm_ctl_ep_t *eps,
                                   size_t n);
/* A file of dir replaced whole (a new file renamed into place).  0 or -1. */
int sm_ctl_put(const char *dir, const char *name, const char *text);
/* Waits until each endpoint answered seq or the timeout; how many did. */
size_t sm_ctl_wait(const char *dir, sm_ctl_ep_t *eps, size_t n, unsigned long long seq,
                   long timeout_ms);
/* The processes that did not answer, in one line. */
void sm_ctl_say_silent(const sm_ctl_ep_t *eps, size_t n, const char *what);

#endif
