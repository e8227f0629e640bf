/*
 * instruct.c — sw_model_instruction_tuned(): whether a model was tuned to
 * follow chat turns, so that `chat` and `serve` can say when one was not
 * (a base model answering a chat continues the text, often repeating
 * itself). The file says so in one of these, strongest first:
 *   - general.finetune or general.name naming an instruction tune
 *     ("it", "instruct", "chat": llama.cpp's converter writes "it" for
 *     Gemma's -it checkpoints);
 *   - a chat template: tokenizer.chat_template in a GGUF, chat_template in
 *     an HF folder's tokenizer_config.json or a chat_template.jinja file
 *     (checkpoints ship one with the tune).
 * None of them: not instruction-tuned (the default Gemma 3 270M has none).
 */
#include <ctype.h>
#include <strings.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/gguf.h"
#include "model/model_internal.h"

/* Whether s (n bytes) holds one of the tune's words as a word of its own
 * ("gemma-3-27b-it", "Instruct", "chat"). */
static bool names_tune(const char *s, size_t n) {
    static const char *const words[] = {"it", "instruct", "chat"};
    size_t i = 0;
    while (i < n) {
        while (i < n && !isalnum((unsigned char)s[i]))
            i++;
        size_t j = i;
        while (j < n && isalnum((unsigned char)s[j]))
            j++;
        for (size_t w = 0; w < sizeof words / sizeof words[0]; w++)
            if (j - i == strlen(words[w]) && !strncasecmp(s + i, words[w], j - i))
                return true;
        i = j;
    }
    return false;
}

static bool key_names_tune(const gguf_file *f, const char *key) {
    gguf_str v;
    return gguf_get_str(f, key, &v) == SW_OK && names_tune(v.ptr, v.len);
}

/* An HF folder's chat template: chat_template.jinja, or a "chat_template"
 * key in tokenizer_config.json (a text search: the key is what matters;
 * the file is read whole, up to 64 MiB). */
static bool hf_has_template(const char *dir) {
    char path[4096];
    struct stat sb;
    if ((size_t)snprintf(path, sizeof path, "%s/chat_template.jinja", dir) < sizeof path &&
        stat(path, &sb) == 0)
        return true;
    if ((size_t)snprintf(path, sizeof path, "%s/tokenizer_config.json", dir) >= sizeof path ||
        stat(path, &sb) != 0 || sb.st_size <= 0 || sb.st_size > (64 << 20))
        return false;
    FILE *f = fopen(path, "rb");
    char *text = f != NULL ? malloc((size_t)sb.st_size + 1) : NULL;
    bool found = false;
    if (text != NULL) {
        const size_t n = fread(text, 1, (size_t)sb.st_size, f);
        text[n] = '\0';
        found = strstr(text, "\"chat_template\"") != NULL;
    }
    free(text);
    if (f != NULL)
        fclose(f);
    return found;
}

int sw_model_instruction_tuned(const sw_model *m) {
    if (m == NULL)
        return 0;
    if (key_names_tune(m->gguf, "general.finetune") || key_names_tune(m->gguf, "general.name"))
        return 1;
    if (gguf_find_kv(m->gguf, "tokenizer.chat_template") != NULL)
        return 1;
    return m->is_hf && m->path != NULL && hf_has_template(m->path);
}
