/*
 * main.c — `spillway` entry point: dispatches to a subcommand.
 * Each subcommand parses its own flags and returns an exit status
 * (cli.h); nothing here knows any subcommand's options.
 */
#include <string.h>

#include "cli/bench.h"
#include "cli/cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} command;

static const command commands[] = {
    {"run", cmd_run, "generate text from a prompt"},
    {"chat", cmd_chat, "talk with the model (Gemma chat format), one line per turn"},
    {"batch", cmd_batch, "generate for many prompts (JSON lines) together, -np at a time"},
    {"serve", cmd_serve, "an OpenAI-compatible HTTP server, -np requests batched together"},
    {"plan", cmd_plan, "show where every byte would live and how fast it would run"},
    {"verify", cmd_verify, "check a memory plan against the all-host plan on four prompts"},
    {"perplexity", cmd_perplexity, "perplexity of a text; KL divergence against a saved base"},
    {"info", cmd_info, "describe a model file (metadata, tensors) or the devices"},
    {"fetch", cmd_fetch, "download the default model (Gemma 3 270M Q4_K_M) into the cache"},
    {"tokenize", cmd_tokenize, "show how the model's tokenizer splits a text into tokens"},
    {"bench", cmd_bench, "measure prompt and generation speed as llama-bench does (cpu)"},
    {"doctor", cmd_doctor, "check backends, devices and memory; measure and cache the rates"},
    {"synth", cmd_synth, "write a synthetic model of an official Gemma shape (GGUF or HF)"},
};

static void usage(FILE *out) {
    fprintf(out, "spillway %s — Gemma inference with planned heterogeneous memory\n\n"
                 "usage: spillway <command> [options]   (spillway <command> --help)\n\n"
                 "commands:\n", SW_VERSION_STRING);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(out, "  %-10s %s\n", "version", "print the version");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(name, "version") || !strcmp(name, "--version")) {
        printf("spillway %s\n", SW_VERSION_STRING);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(name, commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    cli_error("unknown command '%s'; run 'spillway --help' for the list", name);
    return CLI_EXIT_USAGE;
}
