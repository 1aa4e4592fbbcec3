/* A stand-in for another CUPTI tool (Nsight): preloaded, it subscribes to
 * CUPTI under its own name before sysmeasure's backend is loaded. */
#include <cupti.h>
#include <stdio.h>
#include <string.h>

static void CUPTIAPI other_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
                                    const void *data)
{
    (void)u, (void)d, (void)id, (void)data;
}

__attribute__((constructor)) static void other_tool_start(void)
{
    CUpti_SubscriberHandle h;
    CUpti_SubscriberParams p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    p.subscriberName = "other-tool";
    if (cuptiSubscribe_v2(&h, other_callback, NULL, &p) != CUPTI_SUCCESS)
        fprintf(stderr, "other_tool: cuptiSubscribe_v2 failed\n");
}
