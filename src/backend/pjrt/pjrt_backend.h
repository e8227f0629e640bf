/*
 * pjrt_backend.h — the PJRT backend's constructor and probe (the registry
 * calls these; the build has them when CMake found pjrt_c_api.h).
 */
#ifndef SW_BACKEND_PJRT_BACKEND_H
#define SW_BACKEND_PJRT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/backend_params.h"
#include "backend/plugin_doctor.h"

/* A backend on the plugin pjrt_plugin_find() names, its first device.
 * Capacity: params->capacity_bytes, lowered to the plugin's memory limit
 * where it reports one; one of the two is required. Errors: SW_ERR_IO /
 * SW_ERR_FORMAT (plugin), SW_ERR_NO_DEVICE, SW_ERR_ARG, SW_ERR_DEVICE. */
sw_status backend_pjrt_create(const backend_params *params, backend **out);

/* Opens the plugin and its client once to learn the device's free memory
 * (*bytes_limit, 0 when the plugin does not report it) and its name. */
sw_status backend_pjrt_probe(uint64_t *bytes_limit, char *platform, size_t cap);

/* What doctor shows (pjrt_doctor.c): opens the plugin pjrt_plugin_find()
 * names and a client on it, describes both into *out (zeroed first, and
 * filled on failure too: problem, status, message), and closes the client.
 * Returns out->status, with sw_last_error() equal to out->message. */
sw_status backend_pjrt_doctor(backend_plugin_report *out);

#endif
