/*
 * test_devices.c — sw_devices_query on whatever machine runs it.
 *
 * With a GPU: every device has a name, memory (free <= total) and cc >= 5.
 * Without one (CI): SW_ERR_NO_DEVICE whose message starts "no CUDA device
 * visible", never speaks of memory, and equals sw_last_error().
 * `test_devices --hide-all` sets CUDA_VISIBLE_DEVICES="" before the first
 * CUDA call (CUDA reads it once per process); the message must name it.
 * SW_TEST_EXPECT_CUDA (from CMake) says whether the library has CUDA.
 */
#define _POSIX_C_SOURCE 200112L

#include <stdlib.h>
#include <string.h>

#include "check.h"

#ifndef SW_TEST_EXPECT_CUDA
#error "tests/devices.cmake defines SW_TEST_EXPECT_CUDA=0 or 1"
#endif

#define PREFIX "no CUDA device visible"
#define NO_BACKEND_MESSAGE                                                     \
    "no CUDA device visible: this build has no CUDA backend (nvcc was not "    \
    "found at build time; rebuild with -DSPILLWAY_CUDA=ON after installing "   \
    "the CUDA toolkit)"

static void check_devices(const sw_device_report *r) {
    SW_CHECK(r->n_devices >= 1 && r->n_devices <= SW_MAX_DEVICES, "n_devices %zu",
             r->n_devices);
    SW_CHECK(r->driver_version[0] != '\0', "no driver_version with a device");
    SW_CHECK(r->message[0] == '\0', "message set on success: %s", r->message);
    for (size_t i = 0; i < r->n_devices; i++) {
        const sw_device_info *d = &r->devices[i];
        printf("  %s:%d %s total %llu free %llu cc %d.%d SMs %d\n", r->backend, d->index,
               d->name, (unsigned long long)d->total_bytes, (unsigned long long)d->free_bytes,
               d->arch_major, d->arch_minor, d->n_compute_units);
        SW_CHECK(d->index == (int)i, "device %zu has index %d", i, d->index);
        SW_CHECK(d->name[0] != '\0', "device %zu has no name", i);
        SW_CHECK(d->total_bytes > 0, "device %zu total_bytes 0", i);
        SW_CHECK(d->free_bytes <= d->total_bytes, "device %zu free > total", i);
        SW_CHECK(d->arch_major >= 5, "device %zu cc %d.%d", i, d->arch_major, d->arch_minor);
        SW_CHECK(d->n_compute_units > 0, "device %zu has no SMs", i);
    }
}

static void check_no_device(const sw_device_report *r, sw_status st, int hide_all) {
    SW_CHECK(st == SW_ERR_NO_DEVICE, "status %s, message: %s", sw_status_name(st), r->message);
    SW_CHECK(r->n_devices == 0, "n_devices %zu on failure", r->n_devices);
    SW_CHECK(strncmp(r->message, PREFIX, strlen(PREFIX)) == 0, "message: %s", r->message);
    SW_CHECK(strstr(r->message, "memory") == NULL, "message mentions memory: %s", r->message);
    SW_CHECK(strcmp(sw_last_error(), r->message) == 0, "sw_last_error '%s' != message '%s'",
             sw_last_error(), r->message);
    if (!SW_TEST_EXPECT_CUDA) {
        SW_CHECK(strcmp(r->message, NO_BACKEND_MESSAGE) == 0, "message: %s", r->message);
        return;
    }
    if (hide_all)
        SW_CHECK(strstr(r->message, "CUDA_VISIBLE_DEVICES=''") != NULL,
                 "message does not name CUDA_VISIBLE_DEVICES: %s", r->message);
    else if (r->driver_version[0] == '\0') /* no driver, or the toolkit's stub */
        SW_CHECK(strstr(r->message, "NVIDIA driver") != NULL, "message: %s", r->message);
}

int main(int argc, char **argv) {
    int hide_all = argc > 1 && strcmp(argv[1], "--hide-all") == 0;
    sw_device_report r, again;
    sw_status st, st_again;

    if (hide_all)
        setenv("CUDA_VISIBLE_DEVICES", "", 1);

    SW_CHECK(sw_devices_query(NULL) == SW_ERR_ARG, "NULL report accepted");

    st = sw_devices_query(&r);
    printf("status %s, backend '%s', runtime '%s', driver '%s', devices %zu\n",
           sw_status_name(st), r.backend, r.runtime_version, r.driver_version, r.n_devices);
    if (st != SW_OK)
        printf("message: %s\n", r.message);

    SW_CHECK((strcmp(r.backend, "cuda") == 0) == SW_TEST_EXPECT_CUDA, "backend '%s'",
             r.backend);
    if (SW_TEST_EXPECT_CUDA) /* "11.0" or later */
        SW_CHECK(atoi(r.runtime_version) >= 11, "runtime_version '%s'", r.runtime_version);
    else
        SW_CHECK(r.runtime_version[0] == '\0' && r.driver_version[0] == '\0',
                 "versions without CUDA");

    if (st == SW_OK && !hide_all)
        check_devices(&r);
    else
        check_no_device(&r, st, hide_all);

    /* Asking twice gives the same answer. */
    st_again = sw_devices_query(&again);
    SW_CHECK(st_again == st && again.n_devices == r.n_devices &&
                 strcmp(again.message, r.message) == 0,
             "second query differs: %s vs %s", sw_status_name(st_again), sw_status_name(st));
    return sw_check_finish(hide_all ? "test_devices --hide-all" : "test_devices");
}
