/*
 * turns.c — the two chat markups (turns.h).
 */
#include <string.h>

#include "cli/turns.h"

static const chat_turns gemma3 = {"<start_of_turn>user\n", "<start_of_turn>model\n", NULL,
                                  "<end_of_turn>\n"};
static const chat_turns gemma4 = {"<|turn>user\n", "<|turn>model\n", "<|turn>system\n",
                                  "<turn|>\n"};

const chat_turns *chat_turns_of(const sw_model *m) {
    sw_special_tokens sp;
    if (m == NULL || sw_model_special_tokens(m, &sp) != SW_OK || sp.start_of_turn < 0)
        return &gemma3;
    const char *t = sw_token_text(m, sp.start_of_turn);
    return t != NULL && !strcmp(t, "<|turn>") ? &gemma4 : &gemma3;
}
