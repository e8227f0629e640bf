/*
 * fuzz_replay.c — runs the fuzz harness over files without libFuzzer, so
 * the seed corpus (and any crash file a fuzzer run left) is replayed by
 * CTest on every build, under ASan in the sanitizer build.
 *
 *   fuzz_gguf_replay DIR_OR_FILE...   (or fuzz_safetensors_replay, ...: one
 *                                      program per harness, named in output)
 *
 * A harness that defines LLVMFuzzerInitialize (to load a tokenizer or a
 * model once) has it called first, as libFuzzer does. Exits non-zero when
 * an input cannot be read or no input was found.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

/* Optional in a harness: NULL when it has none. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

/* This program's name, for messages (argv[0] without its folder). */
static const char *g_prog = "fuzz_replay";

static int replay_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    int rc = -1;
    if (fp == NULL || fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 ||
        fseek(fp, 0, SEEK_SET) != 0)
        goto fail;
    buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, fp) != (size_t)n)
        goto fail;
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    rc = 0;
fail:
    if (rc != 0)
        fprintf(stderr, "%s: cannot read %s\n", g_prog, path);
    free(buf);
    if (fp != NULL)
        fclose(fp);
    return rc;
}

/* Replays path (a file, or every regular file in a directory); returns the
 * number of inputs run, or -1 on a read error. */
static long replay_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode))
        return replay_file(path) == 0 ? 1 : -1;
    DIR *dir = opendir(path);
    long count = 0;
    if (dir == NULL)
        return -1;
    for (struct dirent *e = readdir(dir); e != NULL; e = readdir(dir)) {
        char full[4096];
        if (e->d_name[0] == '.')
            continue;
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        if (stat(full, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (replay_file(full) != 0) {
            count = -1;
            break;
        }
        count++;
    }
    closedir(dir);
    return count;
}

int main(int argc, char **argv) {
    if (argc > 0 && argv[0] != NULL) {
        const char *slash = strrchr(argv[0], '/');
        g_prog = slash ? slash + 1 : argv[0];
    }
    if (LLVMFuzzerInitialize != NULL)
        LLVMFuzzerInitialize(&argc, &argv);
    long total = 0;
    for (int i = 1; i < argc; i++) {
        long n = replay_path(argv[i]);
        if (n < 0) {
            fprintf(stderr, "%s: cannot replay %s\n", g_prog, argv[i]);
            return 1;
        }
        total += n;
    }
    printf("%s: %ld inputs replayed\n", g_prog, total);
    return total > 0 ? 0 : 1;
}
