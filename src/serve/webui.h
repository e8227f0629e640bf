/*
 * webui.h — the web page `spillway serve` shows at "/" (unless
 * --no-webui): a chat over the server's own /v1/chat/completions and the
 * engine's plan as a picture beside live /metrics. Its files
 * (src/serve/webui/) are built into the binary by cmake/webui_embed.cmake
 * as srv_webui_assets; webui.c serves them with their Content-Type, an
 * ETag (304 on If-None-Match) and Cache-Control: no-cache, and answers
 * GET /v1/plan with the engine's plan as `spillway plan --json` prints it.
 * The page holds no secret, so it needs no API key; the API it calls does
 * (the page asks for the key and sends it as a Bearer token).
 */
#ifndef SW_SERVE_WEBUI_H
#define SW_SERVE_WEBUI_H

#include <stddef.h>

#include <microhttpd.h>

#include "serve/server.h"

typedef struct srv_asset {
    const char *url;             /* "/", "/ui/app.js" */
    const char *type;            /* Content-Type */
    const char *etag;            /* quoted: "\"1f0c...\"", from the bytes' SHA-256 */
    const unsigned char *data;   /* (n_bytes) the file */
    size_t n_bytes;
} srv_asset;

/* The generated table (build/generated/webui_assets.c). */
extern const srv_asset srv_webui_assets[];
extern const size_t srv_webui_n_assets;

/* The asset at url (exact match, no query string), or NULL. */
const srv_asset *srv_webui_find(const char *url);

/* Answers a GET or HEAD of a: its bytes (200), or nothing (304) when the
 * request's If-None-Match names its ETag. */
enum MHD_Result srv_webui_send(struct MHD_Connection *c, const srv_asset *a);

/* GET /v1/plan: the engine's plan as JSON, the bytes `spillway plan --json`
 * prints for the same model and flags (sw_plan_format; with a drafter, its
 * object less the "drafter" member plan adds); 503 while the model loads. */
srv_reply srv_api_plan(srv_state *s);

#endif
