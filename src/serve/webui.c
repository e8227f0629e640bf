/*
 * webui.c — serving the web page's built-in files (webui.h) and the plan
 * it draws (GET /v1/plan). Files go out from the binary's read-only data,
 * never copied; each carries an ETag from its bytes, so a browser
 * revalidates (Cache-Control: no-cache) and gets 304 until the binary
 * changes. A Content-Security-Policy keeps the page to its own scripts
 * and styles and to this server.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "serve/webui.h"

#define WEBUI_CSP "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"

const srv_asset *srv_webui_find(const char *url) {
    for (size_t i = 0; i < srv_webui_n_assets; i++)
        if (!strcmp(srv_webui_assets[i].url, url))
            return &srv_webui_assets[i];
    return NULL;
}

/* Whether an If-None-Match header lists etag (or is "*"). */
static bool etag_matches(const char *header, const char *etag) {
    if (header == NULL)
        return false;
    if (!strcmp(header, "*"))
        return true;
    const size_t n = strlen(etag);
    for (const char *p = strstr(header, etag); p != NULL; p = strstr(p + 1, etag)) {
        const char end = p[n];
        if (end == '\0' || end == ',' || end == ' ')
            return true;
    }
    return false;
}

enum MHD_Result srv_webui_send(struct MHD_Connection *c, const srv_asset *a) {
    const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");
    const bool fresh = etag_matches(inm, a->etag);
    /* PERSISTENT: libmicrohttpd reads the static bytes, never frees them */
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        fresh ? 0 : a->n_bytes, fresh ? NULL : (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", a->type);
    MHD_add_response_header(resp, "ETag", a->etag);
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "Content-Security-Policy", WEBUI_CSP);
    const enum MHD_Result ok =
        MHD_queue_response(c, fresh ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ok;
}

srv_reply srv_api_plan(srv_state *s) {
    pthread_mutex_lock(&s->mu);
    /* the engine lives until the server has stopped (cli/serve.c) */
    const sw_engine *e = s->engine;
    pthread_mutex_unlock(&s->mu);
    if (e == NULL)
        return srv_api_error(503, "server_error", "the model is loading; its plan follows");
    const sw_plan *p = sw_engine_plan(e);
    size_t len = 0;
    char *body = NULL;
    /* the same formatter as `spillway plan --json` and --plan-json */
    sw_status st = sw_plan_format(p, 1, NULL, 0, &len);
    if (st == SW_OK && (body = malloc(len + 1)) == NULL)
        st = SW_ERR_OOM_HOST;
    if (st == SW_OK)
        st = sw_plan_format(p, 1, body, len + 1, &len);
    if (st != SW_OK) {
        free(body);
        return srv_api_error(500, "server_error", "cannot format the plan: %s",
                             sw_last_error());
    }
    return (srv_reply){200, body};
}
