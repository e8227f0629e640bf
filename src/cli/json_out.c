/*
 * json_out.c — JSON pieces more than one command writes: a string for
 * the few hand-assembled lines (bench), through format/json_write.h so
 * the escaping is the one JSON writer's; a device's fields (info
 * --devices, doctor). Reports built whole use jsonw.
 */
#include "cli/cli.h"
#include "format/json_write.h"

void json_put_string(FILE *out, const char *s) {
    jsonw j;
    jw_init_file(&j, out, JW_COMPACT);
    jw_str(&j, s);
}

void cli_json_device_fields(jsonw *j, const sw_device_info *d) {
    jw_key_int(j, "index", d->index);
    jw_key_str(j, "name", d->name);
    jw_key_uint(j, "total_bytes", d->total_bytes);
    jw_key_uint(j, "free_bytes", d->free_bytes);
    jw_key_int(j, "cc_major", d->arch_major);
    jw_key_int(j, "cc_minor", d->arch_minor);
    jw_key_int(j, "n_multiprocessors", d->n_compute_units);
}
