/*
 * test_public_api.c — parts of include/spillway.h used as an outside
 * program uses them (that header only): sw_version() against the header's
 * SW_VERSION_STRING, and a catalog plan formatted into a buffer giving
 * the bytes sw_plan_print writes to a FILE (table and JSON), cut to the
 * buffer with its full length reported; bad arguments refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "spillway.h"

/* What sw_plan_print writes, read back from a temporary file. */
static char *printed(const sw_plan *p, int json, size_t *n) {
    FILE *f = tmpfile();
    char *text = NULL;
    *n = 0;
    if (f == NULL || sw_plan_print(p, f, json) != SW_OK) {
        if (f)
            fclose(f);
        return NULL;
    }
    long size = ftell(f);
    rewind(f);
    text = malloc((size_t)size + 1);
    if (text && fread(text, 1, (size_t)size, f) == (size_t)size) {
        text[size] = '\0';
        *n = (size_t)size;
    }
    fclose(f);
    return text;
}

static void test_format(void) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = "sim";
    o.device_mem_bytes = 8ull << 30;
    o.default_rates = 1;
    sw_plan *p = NULL;
    SW_CHECK_OK(sw_plan_create(NULL, "gemma4-26b-a4b", &o, &p));
    if (p == NULL)
        return;
    for (int json = 0; json < 2; json++) {
        size_t want_n = 0, len = 0;
        char *want = printed(p, json, &want_n);
        SW_CHECK(want != NULL && want_n > 100, "sw_plan_print wrote the plan (%zu bytes)",
                 want_n);
        SW_CHECK_OK(sw_plan_format(p, json, NULL, 0, &len));
        SW_CHECK(len == want_n, "json %d: the length alone: %zu, printed %zu", json, len,
                 want_n);
        char *buf = malloc(len + 1);
        SW_CHECK_OK(sw_plan_format(p, json, buf, len + 1, &len));
        SW_CHECK(want && buf && !strcmp(buf, want), "json %d: the same bytes as sw_plan_print",
                 json);
        char small[16];
        SW_CHECK_OK(sw_plan_format(p, json, small, sizeof small, &len));
        SW_CHECK(len == want_n && strlen(small) == sizeof small - 1 && want &&
                 !strncmp(small, want, sizeof small - 1), "json %d: cut to the buffer, NUL "
                 "ended, full length reported", json);
        free(buf);
        free(want);
    }
    size_t len;
    char b[4];
    SW_CHECK(sw_plan_format(NULL, 0, b, sizeof b, &len) == SW_ERR_ARG, "NULL plan refused");
    SW_CHECK(sw_plan_format(p, 0, NULL, 4, &len) == SW_ERR_ARG, "NULL buffer with room refused");
    SW_CHECK(sw_plan_format(p, 0, b, sizeof b, NULL) == SW_ERR_ARG, "NULL length refused");
    sw_plan_destroy(p);
}

int main(void) {
    SW_CHECK(!strcmp(sw_version(), SW_VERSION_STRING), "sw_version() %s, header %s",
             sw_version(), SW_VERSION_STRING);
    test_format();
    return sw_check_finish("test_public_api");
}
