/* The configuration table: defaults, value parsing, precedence of the
 * sources, the config file and every error message. */
#include "core/config.h"
#include "util/utf8.h"
#include "unit.h"

#include <ctype.h>
#include <stdlib.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/sm-test-config-XXXXXX";
static char files[32][512];
static int nfiles;

/* Writes text to a new file in tmpdir and returns its path. */
static const char *write_file(const char *name, const char *text)
{
    char *path = files[nfiles++];
    snprintf(path, sizeof files[0], "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
    return path;
}

static const sm_config_var_t *var(const char *name)
{
    const sm_config_var_t *v = sm_config_find(name);
    CHECK(v != NULL);
    return v;
}

static void test_table(void)
{
    for (int i = 0; i < SM_CONFIG_COUNT; i++) {
        const sm_config_var_t *v = &sm_config_vars[i];
        char lower[64], env[96];
        size_t n = strlen(v->name);
        CHECK(n < sizeof lower);
        for (size_t k = 0; k <= n && k < sizeof lower; k++)
            lower[k] = (char)tolower((unsigned char)v->name[k]);
        /* The key is the field name; it must be the NAME in lower case. */
        CHECK_STR(v->key, lower);
        snprintf(env, sizeof env, "SYSMEASURE_%s", v->name);
        CHECK_STR(v->env, env);
        CHECK(sm_config_find(v->name) == v);
        CHECK(sm_config_find(v->env) == v);
        CHECK(sm_config_find(v->key) == v);
        CHECK(v->help && *v->help);
        CHECK((v->type == SM_CONFIG_TYPE_ENUM) == (v->choices != NULL));
        /* Every default must be a valid value. */
        sm_config_t cfg;
        char err[512] = "";
        sm_config_init_defaults(&cfg);
        if (sm_config_set(&cfg, v, v->def, SM_CONFIG_FROM_DEFAULT, err, sizeof err) != 0)
            fprintf(stderr, "default of %s: %s\n", v->name, err);
        CHECK(sm_config_set(&cfg, v, v->def, SM_CONFIG_FROM_DEFAULT, err, sizeof err) == 0);
        sm_config_free(&cfg);
    }
    CHECK(sm_config_find("NOPE") == NULL);
    CHECK(sm_config_find("Buffer_Size") == NULL);
    CHECK(sm_config_find(NULL) == NULL);
    CHECK(&sm_config_vars[SM_CONFIG_BUFFER_SIZE] == sm_config_find("buffer_size"));
}

static void test_defaults(void)
{
    sm_config_t cfg;
    char buf[64];
    sm_config_init_defaults(&cfg);
    CHECK(cfg.enable == false);
    CHECK(cfg.trace == true);
    CHECK(cfg.profile == true);
    CHECK_STR(cfg.output, "");
    CHECK_STR(cfg.config_file, "");
    CHECK_EQ_U(cfg.verbose, 0);
    CHECK_EQ_U(cfg.buffer_size, 64u << 20);
    CHECK_EQ_U(cfg.buffer_chunk_size, 256u << 10);
    CHECK_EQ_U(cfg.init_enabled, SM_INIT_ENABLED_AUTO);
    CHECK_EQ_U(cfg.clock, SM_CLOCK_AUTO);
    for (int i = 0; i < SM_CONFIG_COUNT; i++) {
        CHECK_EQ_U(cfg.source[i], SM_CONFIG_FROM_DEFAULT);
        /* Formatting a default gives the table's text back. */
        sm_config_format(&cfg, &sm_config_vars[i], buf, sizeof buf);
        CHECK_STR(buf, sm_config_vars[i].def);
    }
    CHECK_STR(sm_config_source_name(SM_CONFIG_FROM_DEFAULT), "default");
    CHECK_STR(sm_config_source_name(SM_CONFIG_FROM_FILE), "config file");
    CHECK_STR(sm_config_source_name(SM_CONFIG_FROM_ENV), "environment");
    sm_config_free(&cfg);
    CHECK(cfg.output == NULL);
    sm_config_free(&cfg); /* twice is harmless */
}

static void test_sizes(void)
{
    uint64_t v = 0;
    CHECK(sm_config_parse_size("64M", &v) == 0);
    CHECK_EQ_U(v, 64ull << 20);
    CHECK(sm_config_parse_size("4k", &v) == 0);
    CHECK_EQ_U(v, 4096);
    CHECK(sm_config_parse_size("1G", &v) == 0);
    CHECK_EQ_U(v, 1ull << 30);
    CHECK(sm_config_parse_size("2T", &v) == 0);
    CHECK_EQ_U(v, 2ull << 40);
    CHECK(sm_config_parse_size("1000", &v) == 0);
    CHECK_EQ_U(v, 1000);
    CHECK(sm_config_parse_size("512MiB", &v) == 0);
    CHECK_EQ_U(v, 512ull << 20);
    CHECK(sm_config_parse_size("8kb", &v) == 0);
    CHECK_EQ_U(v, 8192);
    CHECK(sm_config_parse_size("100B", &v) == 0);
    CHECK_EQ_U(v, 100);
    CHECK(sm_config_parse_size(" 3 M ", &v) == 0);
    CHECK_EQ_U(v, 3ull << 20);
    v = 7;
    CHECK(sm_config_parse_size("12Q", &v) == -1);
    CHECK_EQ_U(v, 7);
    CHECK(sm_config_parse_size("", &v) == -1);
    CHECK(sm_config_parse_size("M", &v) == -1);
    CHECK(sm_config_parse_size("0", &v) == -1);
    CHECK(sm_config_parse_size("0K", &v) == -1);
    CHECK(sm_config_parse_size("-1", &v) == -1);
    CHECK(sm_config_parse_size("1.5G", &v) == -1);
    CHECK(sm_config_parse_size("64iB", &v) == -1);
    CHECK(sm_config_parse_size("64MM", &v) == -1);
    CHECK(sm_config_parse_size("99999999999999999999", &v) == -1);
    CHECK(sm_config_parse_size("16777216T", &v) == -1); /* 2^64 */
    CHECK(sm_config_parse_size("16777215T", &v) == 0);
    CHECK(sm_config_parse_size(NULL, &v) == -1);

    /* Formatting: the largest exact suffix, else bytes. */
    sm_config_t cfg;
    char buf[64], err[512];
    const sm_config_var_t *bs = var("BUFFER_SIZE");
    sm_config_init_defaults(&cfg);
    CHECK(sm_config_set(&cfg, bs, "1048576", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    sm_config_format(&cfg, bs, buf, sizeof buf);
    CHECK_STR(buf, "1M");
    CHECK(sm_config_set(&cfg, bs, "1536K", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    sm_config_format(&cfg, bs, buf, sizeof buf);
    CHECK_STR(buf, "1536K");
    CHECK(sm_config_set(&cfg, bs, "1000000", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    sm_config_format(&cfg, bs, buf, sizeof buf);
    CHECK_STR(buf, "1000000");
    CHECK(sm_config_set(&cfg, bs, "4096G", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    sm_config_format(&cfg, bs, buf, sizeof buf);
    CHECK_STR(buf, "4T");
    CHECK_EQ_U(cfg.source[SM_CONFIG_BUFFER_SIZE], SM_CONFIG_FROM_ENV);

    /* A bad value leaves the old one and names variable and value. */
    CHECK(sm_config_set(&cfg, bs, "12Q", SM_CONFIG_FROM_ENV, err, sizeof err) == -1);
    CHECK_EQ_U(cfg.buffer_size, 4ull << 40);
    CHECK(strncmp(err, "bad value '12Q' for SYSMEASURE_BUFFER_SIZE: ", 44) == 0);
    CHECK(strchr(err, '\n') == NULL);
    CHECK(sm_config_set(&cfg, bs, "12Q", SM_CONFIG_FROM_FILE, err, sizeof err) == -1);
    CHECK(strncmp(err, "bad value '12Q' for buffer_size: ", 33) == 0);

    /* Chunk size range: 4K .. 1G. */
    const sm_config_var_t *cs = var("BUFFER_CHUNK_SIZE");
    CHECK(sm_config_set(&cfg, cs, "4K", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    CHECK(sm_config_set(&cfg, cs, "1G", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    CHECK(sm_config_set(&cfg, cs, "4095", SM_CONFIG_FROM_ENV, err, sizeof err) == -1);
    CHECK_STR(err, "bad value '4095' for SYSMEASURE_BUFFER_CHUNK_SIZE: must be between 4K and 1G");
    CHECK(sm_config_set(&cfg, cs, "2G", SM_CONFIG_FROM_ENV, err, sizeof err) == -1);
    CHECK_STR(err, "bad value '2G' for SYSMEASURE_BUFFER_CHUNK_SIZE: must be between 4K and 1G");

    /* Encoders at the end: 0 (the process's share) .. 64. */
    const sm_config_var_t *et = var("OTF2_END_THREADS");
    CHECK(sm_config_set(&cfg, et, "0", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    CHECK(sm_config_set(&cfg, et, "64", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    CHECK(cfg.otf2_end_threads == 64);
    CHECK(sm_config_set(&cfg, et, "65", SM_CONFIG_FROM_ENV, err, sizeof err) == -1);
    CHECK_STR(err, "bad value '65' for SYSMEASURE_OTF2_END_THREADS: must be between 0 and 64");
    CHECK(sm_config_set(&cfg, et, "-1", SM_CONFIG_FROM_ENV, err, sizeof err) == -1);
    CHECK(cfg.otf2_end_threads == 64);
    CHECK_EQ_U(cfg.buffer_chunk_size, 1ull << 30);
    sm_config_free(&cfg);
}

static void test_bools_ints_enums_strings(void)
{
    static const char *const yes[] = {"yes", "YES", "true", "True", "on", "ON", "1", " yes "};
    static const char *const no[] = {"no", "No", "false", "FALSE", "off", "Off", "0"};
    bool b;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        b = false;
        CHECK(sm_config_parse_bool(yes[i], &b) == 0);
        CHECK(b == true);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        b = true;
        CHECK(sm_config_parse_bool(no[i], &b) == 0);
        CHECK(b == false);
    }
    CHECK(sm_config_parse_bool("maybe", &b) == -1);
    CHECK(sm_config_parse_bool("", &b) == -1);
    CHECK(sm_config_parse_bool("2", &b) == -1);
    CHECK(sm_config_parse_bool("yess", &b) == -1);

    sm_config_t cfg;
    char err[512], buf[64];
    sm_config_init_defaults(&cfg);
    CHECK(sm_config_set(&cfg, var("TRACE"), "off", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    CHECK(cfg.trace == false);
    sm_config_format(&cfg, var("TRACE"), buf, sizeof buf);
    CHECK_STR(buf, "no");
    CHECK(sm_config_set(&cfg, var("TRACE"), "maybe", SM_CONFIG_FROM_ENV, err, sizeof err) == -1);
    CHECK(strncmp(err, "bad value 'maybe' for SYSMEASURE_TRACE: ", 40) == 0);

    CHECK(sm_config_set(&cfg, var("VERBOSE"), "2", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    CHECK_EQ_U(cfg.verbose, 2);
    CHECK(sm_config_set(&cfg, var("VERBOSE"), "-1", SM_CONFIG_FROM_ENV, err, sizeof err) == -1);
    CHECK_STR(err, "bad value '-1' for SYSMEASURE_VERBOSE: must be 0 or more");
    CHECK(sm_config_set(&cfg, var("VERBOSE"), "two", SM_CONFIG_FROM_ENV, err, sizeof err) == -1);
    CHECK_STR(err, "bad value 'two' for SYSMEASURE_VERBOSE: expected a whole number");
    CHECK(sm_config_set(&cfg, var("VERBOSE"), "3x", SM_CONFIG_FROM_ENV, err, sizeof err) == -1);
    CHECK_EQ_U(cfg.verbose, 2);

    CHECK(sm_config_set(&cfg, var("CLOCK"), "tsc", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    CHECK_EQ_U(cfg.clock, SM_CLOCK_TSC);
    CHECK(sm_config_set(&cfg, var("CLOCK"), "Monotonic", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    CHECK_EQ_U(cfg.clock, SM_CLOCK_MONOTONIC);
    sm_config_format(&cfg, var("CLOCK"), buf, sizeof buf);
    CHECK_STR(buf, "monotonic");
    CHECK(sm_config_set(&cfg, var("CLOCK"), "mono", SM_CONFIG_FROM_ENV, err, sizeof err) == -1);
    CHECK_STR(err, "bad value 'mono' for SYSMEASURE_CLOCK: expected one of auto|tsc|monotonic");
    CHECK(sm_config_set(&cfg, var("CLOCK"), "", SM_CONFIG_FROM_ENV, err, sizeof err) == -1);
    CHECK(sm_config_set(&cfg, var("INIT_ENABLED"), "no", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    CHECK_EQ_U(cfg.init_enabled, SM_INIT_ENABLED_NO);
    CHECK(sm_config_set(&cfg, var("INIT_ENABLED"), "yes", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    CHECK_EQ_U(cfg.init_enabled, SM_INIT_ENABLED_YES);

    CHECK(sm_config_set(&cfg, var("OUTPUT"), "/tmp/a b", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    CHECK_STR(cfg.output, "/tmp/a b");
    CHECK(sm_config_set(&cfg, var("OUTPUT"), "x", SM_CONFIG_FROM_ENV, err, sizeof err) == 0);
    CHECK_STR(cfg.output, "x");
    sm_config_format(&cfg, var("OUTPUT"), buf, sizeof buf);
    CHECK_STR(buf, "x");

    /* A value with a newline stays on one line in the message. */
    CHECK(sm_config_set(&cfg, var("TRACE"), "a\nb", SM_CONFIG_FROM_ENV, err, sizeof err) == -1);
    CHECK(strchr(err, '\n') == NULL);
    CHECK(strncmp(err, "bad value 'a\\x0ab' for SYSMEASURE_TRACE", 39) == 0);
    /* A short buffer is cut, not overrun. */
    char small[16];
    CHECK(sm_config_set(&cfg, var("TRACE"), "maybe", SM_CONFIG_FROM_ENV, small, sizeof small) == -1);
    CHECK_EQ_U(strlen(small), sizeof small - 1);
    sm_config_free(&cfg);
}

static int load(sm_config_t *cfg, char **envp, char *err, size_t len)
{
    err[0] = '\0';
    int rc = sm_config_load(cfg, envp, err, len);
    CHECK(strchr(err, '\n') == NULL);
    return rc;
}

static void test_load(void)
{
    sm_config_t cfg;
    char err[1024], envfile[600], buf[64];
    const char *good = write_file("good.conf",
                                  "# a comment\n"
                                  "\n"
                                  "   # indented comment\n"
                                  "trace = no\n"
                                  "  buffer_size=32M   # per process\n"
                                  "SYSMEASURE_CLOCK = tsc\n"
                                  "output = /tmp/out#1\n"
                                  "verbose\t=\t1\r\n"
                                  "profile = no\n");
    snprintf(envfile, sizeof envfile, "SYSMEASURE_CONFIG_FILE=%s", good);

    /* No environment: defaults. */
    char *env0[] = {"HOME=/root", "PATH=/bin", NULL};
    CHECK(load(&cfg, env0, err, sizeof err) == 0);
    CHECK(cfg.trace == true);
    CHECK_EQ_U(cfg.source[SM_CONFIG_TRACE], SM_CONFIG_FROM_DEFAULT);
    sm_config_free(&cfg);
    CHECK(load(&cfg, NULL, err, sizeof err) == 0);
    sm_config_free(&cfg);

    /* The file alone. */
    char *env1[] = {"HOME=/root", envfile, NULL};
    CHECK(load(&cfg, env1, err, sizeof err) == 0);
    if (*err)
        fprintf(stderr, "load: %s\n", err);
    CHECK(cfg.trace == false);
    CHECK(cfg.profile == false);
    CHECK_EQ_U(cfg.buffer_size, 32ull << 20);
    CHECK_EQ_U(cfg.clock, SM_CLOCK_TSC);
    CHECK_STR(cfg.output, "/tmp/out#1");
    CHECK_EQ_U(cfg.verbose, 1);
    CHECK_STR(cfg.config_file, good);
    CHECK_EQ_U(cfg.source[SM_CONFIG_TRACE], SM_CONFIG_FROM_FILE);
    CHECK_EQ_U(cfg.source[SM_CONFIG_CONFIG_FILE], SM_CONFIG_FROM_ENV);
    CHECK_EQ_U(cfg.source[SM_CONFIG_ENABLE], SM_CONFIG_FROM_DEFAULT);
    sm_config_free(&cfg);

    /* The environment wins over the file, whatever the order in envp. */
    char *env2[] = {"SYSMEASURE_BUFFER_SIZE=128M", envfile, "SYSMEASURE_TRACE=yes",
                    "SYSMEASURE_ENABLE=1", NULL};
    CHECK(load(&cfg, env2, err, sizeof err) == 0);
    CHECK_EQ_U(cfg.buffer_size, 128ull << 20);
    CHECK(cfg.trace == true);
    CHECK(cfg.profile == false);
    CHECK(cfg.enable == true);
    CHECK_EQ_U(cfg.source[SM_CONFIG_BUFFER_SIZE], SM_CONFIG_FROM_ENV);
    CHECK_EQ_U(cfg.source[SM_CONFIG_TRACE], SM_CONFIG_FROM_ENV);
    CHECK_EQ_U(cfg.source[SM_CONFIG_PROFILE], SM_CONFIG_FROM_FILE);
    sm_config_format(&cfg, var("BUFFER_SIZE"), buf, sizeof buf);
    CHECK_STR(buf, "128M");
    sm_config_free(&cfg);

    /* Like getenv(): the first of duplicate entries. */
    char *env3[] = {"SYSMEASURE_VERBOSE=2", "SYSMEASURE_VERBOSE=5", NULL};
    CHECK(load(&cfg, env3, err, sizeof err) == 0);
    CHECK_EQ_U(cfg.verbose, 2);
    sm_config_free(&cfg);

    /* An empty SYSMEASURE_CONFIG_FILE means none. */
    char *env4[] = {"SYSMEASURE_CONFIG_FILE=", NULL};
    CHECK(load(&cfg, env4, err, sizeof err) == 0);
    sm_config_free(&cfg);

    /* read_file on its own applies on top of what is there. */
    sm_config_init_defaults(&cfg);
    CHECK(sm_config_read_file(&cfg, good, err, sizeof err) == 0);
    CHECK_EQ_U(cfg.buffer_size, 32ull << 20);
    sm_config_free(&cfg);
}

static void expect_load_error(char **envp, const char *message)
{
    sm_config_t cfg;
    char err[1024];
    CHECK(load(&cfg, envp, err, sizeof err) == -1);
    CHECK_STR(err, message);
    /* On error the configuration is left at its defaults. */
    for (int i = 0; i < SM_CONFIG_COUNT; i++)
        CHECK_EQ_U(cfg.source[i], SM_CONFIG_FROM_DEFAULT);
    CHECK(cfg.trace == true);
    sm_config_free(&cfg);
}

static void expect_file_error(const char *name, const char *text, const char *message_fmt)
{
    char envfile[600], message[1024];
    const char *path = write_file(name, text);
    snprintf(envfile, sizeof envfile, "SYSMEASURE_CONFIG_FILE=%s", path);
    snprintf(message, sizeof message, message_fmt, path);
    char *envp[] = {envfile, NULL};
    expect_load_error(envp, message);
}

static void test_errors(void)
{
    char *unknown[] = {"PATH=/bin", "SYSMEASURE_TRACE=yes", "SYSMEASURE_FOO=1", NULL};
    expect_load_error(unknown, "unknown variable SYSMEASURE_FOO (sysmeasure-avail lists them)");
    /* Names are exact: neither the key nor another case. */
    char *lower[] = {"SYSMEASURE_trace=yes", NULL};
    expect_load_error(lower, "unknown variable SYSMEASURE_trace (did you mean SYSMEASURE_TRACE? "
                             "sysmeasure-avail lists them)");
    char *noeq[] = {"SYSMEASURE_BAR", NULL};
    expect_load_error(noeq, "unknown variable SYSMEASURE_BAR (sysmeasure-avail lists them)");
    /* The name is reported before a bad value elsewhere. */
    char *both[] = {"SYSMEASURE_BUFFER_SIZE=12Q", "SYSMEASURE_TRACEE=1", NULL};
    expect_load_error(both, "unknown variable SYSMEASURE_TRACEE (did you mean SYSMEASURE_TRACE? "
                            "sysmeasure-avail lists them)");

    char *badenv[] = {"SYSMEASURE_BUFFER_SIZE=12Q", NULL};
    expect_load_error(badenv,
                      "bad value '12Q' for SYSMEASURE_BUFFER_SIZE: expected a size in bytes above 0 "
                      "with an optional K, M, G or T suffix (1K = 1024), e.g. 64M");

    /* buffer_size >= buffer_chunk_size, after every source. */
    char *small[] = {"SYSMEASURE_BUFFER_SIZE=128K", NULL};
    expect_load_error(small, "SYSMEASURE_BUFFER_SIZE=128K is smaller than buffer_chunk_size 256K "
                             "(default): the buffer budget must hold at least one chunk");
    char *small2[] = {"SYSMEASURE_BUFFER_SIZE=1M", "SYSMEASURE_BUFFER_CHUNK_SIZE=2M", NULL};
    expect_load_error(small2, "SYSMEASURE_BUFFER_SIZE=1M is smaller than "
                              "SYSMEASURE_BUFFER_CHUNK_SIZE=2M: the buffer budget must hold at "
                              "least one chunk");
    char *equal[] = {"SYSMEASURE_BUFFER_SIZE=2M", "SYSMEASURE_BUFFER_CHUNK_SIZE=2M", NULL};
    sm_config_t cfg;
    char err[1024];
    CHECK(load(&cfg, equal, err, sizeof err) == 0);
    sm_config_free(&cfg);

    expect_file_error("noeq.conf", "# comment\ntrace = yes\n\nbuffer_size 64M\n",
                      "%s:4: missing '=' in \"buffer_size 64M\"");
    expect_file_error("unknown.conf", "trace = yes\nfoo = 1\n", "%s:2: unknown key 'foo'");
    expect_file_error("upper.conf", "TRACE_X = 1\n", "%s:1: unknown key 'TRACE_X'");
    expect_file_error("badvalue.conf", "\n\nbuffer_size = 12Q\n",
                      "%s:3: bad value '12Q' for buffer_size: expected a size in bytes above 0 "
                      "with an optional K, M, G or T suffix (1K = 1024), e.g. 64M");
    expect_file_error("badbool.conf", "SYSMEASURE_TRACE = maybe\n",
                      "%s:1: bad value 'maybe' for SYSMEASURE_TRACE: expected yes or no (or "
                      "true/false, on/off, 1/0)");
    expect_file_error("badenum.conf", "clock = sundial\n",
                      "%s:1: bad value 'sundial' for clock: expected one of auto|tsc|monotonic");
    expect_file_error("chunk.conf", "buffer_chunk_size = 1K\n",
                      "%s:1: bad value '1K' for buffer_chunk_size: must be between 4K and 1G");
    expect_file_error("nested.conf", "config_file = /etc/other.conf\n",
                      "%s:1: key 'config_file' cannot be set in a config file");
    expect_file_error("small.conf", "buffer_size = 64K\n",
                      "buffer_size = 64K (config file %s) is smaller than buffer_chunk_size 256K "
                      "(default): the buffer budget must hold at least one chunk");

    char missing[600], envfile[700], message[1024];
    snprintf(missing, sizeof missing, "%s/does-not-exist.conf", tmpdir);
    snprintf(envfile, sizeof envfile, "SYSMEASURE_CONFIG_FILE=%s", missing);
    snprintf(message, sizeof message, "cannot read config file %s: No such file or directory",
             missing);
    char *envp[] = {envfile, NULL};
    expect_load_error(envp, message);
    snprintf(envfile, sizeof envfile, "SYSMEASURE_CONFIG_FILE=%s", tmpdir);
    snprintf(message, sizeof message, "config file %s is a folder", tmpdir);
    expect_load_error(envp, message);

    /* The environment is checked against the file's errors too: a bad file
     * is an error even when the environment sets the same variable. */
    const char *bad = write_file("bad-overridden.conf", "buffer_size = 12Q\n");
    snprintf(envfile, sizeof envfile, "SYSMEASURE_CONFIG_FILE=%s", bad);
    char *envp2[] = {envfile, "SYSMEASURE_BUFFER_SIZE=1G", NULL};
    snprintf(message, sizeof message,
             "%s:1: bad value '12Q' for buffer_size: expected a size in bytes above 0 with an "
             "optional K, M, G or T suffix (1K = 1024), e.g. 64M",
             bad);
    expect_load_error(envp2, message);
}

/* Inputs that are not config files, a key given twice, and the UTF-8
 * helpers the reader uses (also used for region names). */
static void test_inputs(void)
{
    expect_file_error("bom.conf", "\xef\xbb\xbftrace = yes\n",
                      "config file %s starts with a UTF-8 byte-order mark (bytes EF BB BF); "
                      "save it without one");
    expect_file_error("ctl.conf", "trace = yes\n\x1b[0m = 1\n",
                      "%s:2: binary data (byte 0x1b at column 1, a control character): not a "
                      "config file?");
    expect_file_error("latin1.conf", "# caf\xe9\n",
                      "%s:1: binary data (byte 0xe9 at column 6, not UTF-8): not a config file?");
    char envp0[] = "SYSMEASURE_CONFIG_FILE=/dev/zero";
    char *envp[] = {envp0, NULL};
    expect_load_error(envp, "config file /dev/zero is a character device, not a regular file");

    /* Tabs, CRLF and valid UTF-8 in comments are text. */
    const char *ok = write_file("ok.conf", "# na\xc3\xafve \xe2\x82\xac\r\n\ttrace = no\r\n");
    sm_config_t cfg;
    char err[1024];
    sm_config_init_defaults(&cfg);
    CHECK(sm_config_read_file(&cfg, ok, err, sizeof err) == 0);
    CHECK(cfg.trace == false);
    CHECK(cfg.warning[0] == '\0');
    sm_config_free(&cfg);

    const char *dup = write_file("dup.conf", "trace = yes\nprofile = no\ntrace = no\n");
    sm_config_init_defaults(&cfg);
    CHECK(sm_config_read_file(&cfg, dup, err, sizeof err) == 0);
    CHECK(cfg.trace == false); /* the last counts */
    char want[1024];
    snprintf(want, sizeof want, "%s:3: key 'trace' given twice (first on line 1); the value of "
             "line 3 counts", dup);
    CHECK_STR(cfg.warning, want);
    sm_config_free(&cfg);

    CHECK_EQ_U(sm_utf8_check("abc", 3), 3);
    CHECK_EQ_U(sm_utf8_check("na\xc3\xafve", 6), 6);
    CHECK_EQ_U(sm_utf8_check("caf\xe9", 4), 3);
    CHECK_EQ_U(sm_utf8_check("\xc0\xaf", 2), 0);         /* overlong '/' */
    CHECK_EQ_U(sm_utf8_check("\xed\xa0\x80", 3), 0);     /* a surrogate */
    CHECK_EQ_U(sm_utf8_check("\xf4\x90\x80\x80", 4), 0); /* past U+10FFFF */
    CHECK_EQ_U(sm_utf8_check("\xf0\x9f\x98\x80", 4), 4); /* U+1F600 */
    char *clean = sm_utf8_sanitize("a\xff" "b\xe2\x82");
    CHECK_STR(clean, "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd");
    free(clean);
    clean = sm_utf8_sanitize("\xe2\x82\xac ok");
    CHECK_STR(clean, "\xe2\x82\xac ok");
    free(clean);
}

/* What a modulefile or the compiler wrappers set under the prefix is no
 * measurement setting: accepted and ignored; a misspelt measurement variable
 * is still refused, naming the nearest variable. */
static void test_other_names(void)
{
    sm_config_t cfg;
    char err[1024];
    char *module[] = {"SYSMEASURE_ROOT=/opt/sysmeasure/0.1.0", "SYSMEASURE_DIR=/opt/sm",
                      "SYSMEASURE_HOME=/opt/sm", "SYSMEASURE_PREFIX=/opt/sm",
                      "SYSMEASURE_VERSION=0.1.0", "SYSMEASURE_CC=clang", "SYSMEASURE_CXX=clang++",
                      "SYSMEASURE_FC=gfortran", "SYSMEASURE_LIBDIR=/opt/sm/lib",
                      "SYSMEASURE_BUFFER_SIZE=2M", NULL};
    CHECK(load(&cfg, module, err, sizeof err) == 0);
    CHECK_STR(err, "");
    CHECK_EQ_U(cfg.buffer_size, 2u << 20);
    CHECK_EQ_U(cfg.source[SM_CONFIG_BUFFER_SIZE], SM_CONFIG_FROM_ENV);
    sm_config_free(&cfg);
    CHECK(sm_config_other_name("SYSMEASURE_ROOT"));
    CHECK(!sm_config_other_name("SYSMEASURE_ROOTS"));
    CHECK(!sm_config_other_name("SYSMEASURE_TRACE"));

    char *bufer[] = {"SYSMEASURE_ROOT=/opt/sm", "SYSMEASURE_BUFER_SIZE=1M", NULL};
    expect_load_error(bufer, "unknown variable SYSMEASURE_BUFER_SIZE (did you mean "
                             "SYSMEASURE_BUFFER_SIZE? sysmeasure-avail lists them)");
    char *swap[] = {"SYSMEASURE_PROFLIE=no", NULL};
    expect_load_error(swap, "unknown variable SYSMEASURE_PROFLIE (did you mean SYSMEASURE_PROFILE? "
                            "sysmeasure-avail lists them)");
    /* Near a conventional name is no measurement variable: refused, no guess. */
    char *roots[] = {"SYSMEASURE_ROOTS=/opt/sm", NULL};
    expect_load_error(roots, "unknown variable SYSMEASURE_ROOTS (sysmeasure-avail lists them)");
    CHECK(sm_config_nearest("SYSMEASURE_FOO") == NULL);
    CHECK(sm_config_nearest("SYSMEASURE_MAX_TRACE_SZE") == &sm_config_vars[SM_CONFIG_MAX_TRACE_SIZE]);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    test_table();
    test_defaults();
    test_sizes();
    test_bools_ints_enums_strings();
    test_load();
    test_errors();
    test_other_names();
    test_inputs();
    for (int i = 0; i < nfiles; i++)
        unlink(files[i]);
    rmdir(tmpdir);
    return UNIT_RESULT();
}
