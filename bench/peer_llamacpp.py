#!/usr/bin/env python3
"""Peer for bench_generate.sh: llama.cpp (through the llama-cpp-python
package) on the same GGUF, prompt and thread count. Prints one line per
repetition: "prefill <tok/s> decode <tok/s>".

usage: peer_llamacpp.py MODEL PROMPT_FILE N_PREDICT THREADS REPS"""
import sys
import time

import llama_cpp


def main() -> None:
    model, prompt_file, n_predict, threads, reps = sys.argv[1:6]
    n_predict, threads, reps = int(n_predict), int(threads), int(reps)
    llm = llama_cpp.Llama(model_path=model, n_ctx=1024, n_threads=threads,
                          n_threads_batch=threads, n_batch=64, verbose=False)
    ids = llm.tokenize(open(prompt_file, "rb").read(), add_bos=True)
    for _ in range(reps):
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(ids)
        t1 = time.perf_counter()
        n = 0
        # The prompt is already evaluated: generate() continues from it.
        for _tok in llm.generate(ids, temp=0, reset=False):
            n += 1
            if n == n_predict:
                break
        t2 = time.perf_counter()
        print(f"prefill {len(ids) / (t1 - t0):.2f} decode {n / (t2 - t1):.2f}", flush=True)


if __name__ == "__main__":
    main()
