/* Uses sysmeasure_start/stop: measurement starts off (unless
 * SYSMEASURE_INIT_ENABLED=yes), user regions are recorded either way. */
#include <stdio.h>

#include <sysmeasure.h>

int main(void)
{
    sysmeasure_push_region("before start");
    sysmeasure_pop_region("before start");
    sysmeasure_start();
    sysmeasure_push_region("measured");
    sysmeasure_pop_region("measured");
    sysmeasure_stop();
    /* A pop without push is reported, not fatal. */
    int rc = sysmeasure_pop_region("never pushed");
    printf("active=%d pop-unpushed=%s\n", sysmeasure_is_active(), sysmeasure_error_string(rc));
    return 0;
}
