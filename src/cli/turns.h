/*
 * turns.h — Gemma's chat markup, chosen by the vocabulary: Gemma 1-3's
 * <start_of_turn>role ... <end_of_turn> with a system text folded into
 * the first user turn (they have no system role), and Gemma 4's
 * <|turn>role ... <turn|> with a system turn of its own (gemma4-facts).
 */
#ifndef SW_CLI_TURNS_H
#define SW_CLI_TURNS_H

#include "spillway.h"

typedef struct chat_turns {
    const char *user;    /* opens a user turn ("<start_of_turn>user\n") */
    const char *model;   /* opens the model's reply */
    const char *system;  /* opens a system turn; NULL: fold into the first user turn */
    const char *end;     /* closes any turn ("<end_of_turn>\n") */
} chat_turns;

/* Gemma 4's markup when the model's turn-opening token is "<|turn>", else
 * Gemma 1-3's. Never NULL. */
const chat_turns *chat_turns_of(const sw_model *m);

#endif
