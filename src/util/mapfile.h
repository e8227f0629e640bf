/*
 * mapfile.h — mapping a model file read-only, with the path checks every
 * container reader needs (missing, directory, FIFO/device, too large).
 */
#ifndef SW_UTIL_MAPFILE_H
#define SW_UTIL_MAPFILE_H

#include <stddef.h>

#include "spillway.h"

/* Maps `path` read-only (MAP_PRIVATE). A zero-length regular file yields
 * *map == NULL and *size == 0, so the caller's parser reports the empty
 * file as a format error. `dir_hint` ends the message for a directory
 * ("not a model file", ...). Errors: SW_ERR_IO naming the path. Unmap
 * with munmap(*map, *size). */
sw_status util_map_readonly(const char *path, const char *dir_hint, void **map, size_t *size);

#endif
