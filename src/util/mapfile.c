/*
 * mapfile.c — read-only mapping of a model file (mapfile.h), shared by the
 * GGUF and safetensors readers.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/mapfile.h"

sw_status util_map_readonly(const char *path, const char *dir_hint, void **map, size_t *size) {
    struct stat st;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    sw_status status = SW_OK;
    *map = NULL;
    *size = 0;
    if (fd < 0)
        return sw_errorf(SW_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        status = sw_errorf(SW_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
        goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
        status = sw_errorf(SW_ERR_IO, "'%s' is a directory, %s", path, dir_hint);
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        status = sw_errorf(SW_ERR_IO, "'%s' is not a regular file (a device, FIFO or "
                           "socket cannot hold a model)", path);
        goto fail;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        status = sw_errorf(SW_ERR_IO, "'%s' is too large to map on this system", path);
        goto fail;
    }
    if (st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            status = sw_errorf(SW_ERR_IO, "cannot map '%s': %s", path, strerror(errno));
            goto fail;
        }
        *map = m;
        *size = (size_t)st.st_size;
    }
fail:
    close(fd);
    return status;
}
