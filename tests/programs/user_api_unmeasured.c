/* The user API in a program run without the launcher: every call returns
 * SYSMEASURE_ERROR_NOT_ACTIVE at once and leaves errno alone, and the
 * program's own work is unharmed.  Prints what it saw:
 *   pairs N not-active N errno-kept N annotated N sum S active A */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sysmeasure.h"

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    long not_active = 0, errno_kept = 0, annotated = 0, sum = 0;
    sysmeasure_region_t h = sysmeasure_region_define("unmeasured handle", __FILE__, __LINE__);
    sysmeasure_annotation_t a = {.name = "i", .type = SYSMEASURE_ANNOTATION_INT64};
    for (long i = 0; i < n; i++) {
        errno = 42;
        int rc[4];
        rc[0] = sysmeasure_push_region("unmeasured");
        sum += i;
        rc[1] = sysmeasure_pop_region("unmeasured");
        rc[2] = sysmeasure_region_enter(h);
        rc[3] = sysmeasure_region_leave(h);
        not_active += rc[0] == SYSMEASURE_ERROR_NOT_ACTIVE && rc[1] == rc[0] && rc[2] == rc[0] &&
                      rc[3] == rc[0];
        errno_kept += errno == 42;
        if (i % 1000 == 0) {
            a.value.int64 = i;
            int push = sysmeasure_push_annotated_region("annotated", &a, 1);
            int pop = sysmeasure_pop_annotated_region("annotated", &a, 1);
            annotated += push == SYSMEASURE_ERROR_NOT_ACTIVE && pop == push;
        }
    }
    printf("pairs %ld not-active %ld errno-kept %ld annotated %ld sum %ld active %d\n", n,
           not_active, errno_kept, annotated, sum, sysmeasure_is_active());
    return 3; /* an exit code of its own, passed through */
}
