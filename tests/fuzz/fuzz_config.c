/* Fuzz harness: a config file (--config, SYSMEASURE_CONFIG_FILE,
 * src/core/config.c), read from a file as the launcher and the runtime
 * read it.  What must hold: its settings applied, or one line saying what
 * is wrong. */
#include "fuzz_common.h"

#include "core/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512], err[2048] = "";
    sm_config_t cfg;
    sm_fuzz_put("input", data, size, path, sizeof path);
    sm_config_init_defaults(&cfg);
    if (sm_config_read_file(&cfg, path, err, sizeof err) == 0) {
        /* Every setting can be shown as sysmeasure-avail and metadata.json
         * show it. */
        char text[4096];
        for (size_t i = 0; i < SM_CONFIG_COUNT; i++)
            sm_config_format(&cfg, &sm_config_vars[i], text, sizeof text);
    } else {
        sm_fuzz_one_line(err);
    }
    sm_config_free(&cfg);
    return 0;
}
