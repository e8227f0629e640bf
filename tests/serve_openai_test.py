#!/usr/bin/env python3
"""serve_openai_test.py — `spillway serve` driven by the real `openai` client.

The `openai` package comes from the test's package folder
($SW_TEST_PYDEPS, default ~/.cache/spillway/test-pydeps), which
scripts/test.sh fills from PyPI (pinned there) before the tests run.
Exits 77 (CTest: skipped) when the package is missing, so a plain `ctest`
without it says so instead of failing; scripts/test.sh fails its stage
when it cannot install it.

Checks: models.list(); completions and chat completions, streamed and not,
with greedy sampling equal `spillway run` for the same prompt (chat: over
Gemma's turn format); logprobs (chat's, streamed and not, and
completions'): each greedy token is its row's likeliest, the pieces make
the text; the client's own exceptions for a wrong key (401),
an unknown model (404) and a prompt longer than the context (400).

usage: serve_openai_test.py SPILLWAY [MODEL]
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.environ.get("SW_TEST_PYDEPS") or
                os.path.expanduser("~/.cache/spillway/test-pydeps"))
import serve_util  # noqa: E402 - after the path of the test's packages
from serve_util import check, free_port, stop  # noqa: E402

try:
    import openai
except ImportError:
    print("serve_openai_test: the openai package is missing (scripts/test.sh installs it "
          "into ~/.cache/spillway/test-pydeps); skipped")
    sys.exit(77)

BIN = sys.argv[1]
MODEL = ["-m", sys.argv[2]] if len(sys.argv) > 2 else []
KEY = "openai-test-key"
CTX = 256
N = 16
COMMON = MODEL + ["-t", "2", "-c", str(CTX), "-b", "16"]


def run_text(prompt):
    p = subprocess.run([BIN, "run", *COMMON, "--temp", "0", "-p", prompt, "-n", str(N)],
                       capture_output=True, timeout=300)
    check(p.returncode == 0, "run: exit %d" % p.returncode)
    return p.stdout.decode("utf-8", "replace")


def token_bytes(token):
    """A logprobs token's bytes: "bytes:\\xe4..." names a partial character."""
    if token.startswith("bytes:"):
        return bytes(int(h, 16) for h in token[len("bytes:"):].split("\\x")[1:])
    return token.encode("utf-8")


def greedy_lps_ok(what, entries, text):
    """Greedy: each token is its row's likeliest (its logprob the first of
    the alternatives, which are sorted); the pieces' bytes make the text."""
    ok = bool(entries)
    for e in entries:
        tops = [t.logprob for t in e.top_logprobs]
        ok = ok and e.logprob <= 0 and len(tops) == 3 and tops == sorted(tops, reverse=True) \
            and abs(e.logprob - tops[0]) < 1e-6 and e.token == e.top_logprobs[0].token \
            and bytes(e.bytes) == token_bytes(e.token)
    joined = b"".join(bytes(e.bytes) for e in entries).decode("utf-8", "replace")
    check(ok and joined == text, "%s: logprobs %r for %r" % (what, entries[:2], text))


def check_logprobs(client, name, prompt, msgs, want, want_chat):
    """logprobs through the client: chat (top_logprobs 3) streamed and not,
    completions (logprobs 3), and the value the client's shapes hold."""
    r = client.chat.completions.create(model=name, messages=msgs, max_tokens=N, temperature=0,
                                       logprobs=True, top_logprobs=3)
    greedy_lps_ok("chat", r.choices[0].logprobs.content, want_chat)
    entries = []
    for c in client.chat.completions.create(model=name, messages=msgs, max_tokens=N,
                                            temperature=0, logprobs=True, top_logprobs=3,
                                            stream=True):
        if c.choices and c.choices[0].logprobs is not None:
            entries += c.choices[0].logprobs.content or []
    greedy_lps_ok("streamed chat", entries, want_chat)
    r = client.completions.create(model=name, prompt=prompt, max_tokens=N, temperature=0,
                                  logprobs=3)
    lp = r.choices[0].logprobs
    got = b"".join(token_bytes(t) for t in lp.tokens)
    offsets_ok = all(got[o:].startswith(token_bytes(t)) for o, t in zip(lp.text_offset, lp.tokens))
    check(got.decode("utf-8", "replace") == want and len(lp.token_logprobs) == len(lp.tokens) and
          all(max(d.values()) == v for d, v in zip(lp.top_logprobs, lp.token_logprobs)) and
          offsets_ok, "completions logprobs: %r" % (lp,))
    r = client.chat.completions.create(model=name, messages=msgs, max_tokens=N, temperature=0)
    check(r.choices[0].logprobs is None, "no logprobs asked, none given")
    try:
        client.chat.completions.create(model=name, messages=msgs, max_tokens=2,
                                       top_logprobs=3)
        check(False, "top_logprobs without logprobs: no error")
    except openai.BadRequestError:
        pass


def main():
    port = free_port()
    prompt = "The three laws of thermodynamics are"
    chat_text = "<start_of_turn>user\nName three colours.<end_of_turn>\n<start_of_turn>model\n"
    want, want_chat = run_text(prompt), run_text(chat_text)
    proc = subprocess.Popen([BIN, "serve", *COMMON, "--port", str(port), "-np", "2",
                             "--api-key", KEY], stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:%d/v1" % port
    client = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0)
    try:
        t0, models = time.time(), None
        while time.time() - t0 < 300 and proc.poll() is None:
            try:
                models = client.models.list()
                break
            except openai.APIConnectionError:
                time.sleep(0.2)
            except openai.APIStatusError:  # 503 while loading
                time.sleep(0.2)
        if not check(models is not None, "the server did not answer models.list()"):
            return
        name = models.data[0].id
        r = client.completions.create(model=name, prompt=prompt, max_tokens=N, temperature=0)
        check(r.choices[0].text == want, "completion %r != run's %r" % (r.choices[0].text, want))
        check(r.usage.completion_tokens <= N, "usage %s" % r.usage)
        text = "".join(c.choices[0].text for c in client.completions.create(
            model=name, prompt=prompt, max_tokens=N, temperature=0, stream=True))
        check(text == want, "streamed completion %r != %r" % (text, want))
        msgs = [{"role": "user", "content": "Name three colours."}]
        r = client.chat.completions.create(model=name, messages=msgs, max_tokens=N,
                                           temperature=0)
        check(r.choices[0].message.content == want_chat and
              r.choices[0].message.role == "assistant",
              "chat %r != run's %r" % (r.choices[0].message.content, want_chat))
        text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
            model=name, messages=msgs, max_tokens=N, temperature=0, stream=True))
        check(text == want_chat, "streamed chat %r != %r" % (text, want_chat))
        check_logprobs(client, name, prompt, msgs, want, want_chat)
        for what, call, exc in (
                ("wrong key", lambda: openai.OpenAI(base_url=base, api_key="wrong",
                                                    max_retries=0).models.list(),
                 openai.AuthenticationError),
                ("unknown model", lambda: client.completions.create(model="no-such-model",
                                                                    prompt="x"),
                 openai.NotFoundError),
                ("prompt over the context", lambda: client.completions.create(
                    model=name, prompt="word " * (2 * CTX)), openai.BadRequestError)):
            try:
                call()
                check(False, "%s: no error" % what)
            except exc:
                pass
            except Exception as e:  # noqa: BLE001 - any other outcome is a failure
                check(False, "%s: %s %s" % (what, type(e).__name__, e))
    finally:
        rc = stop(proc)
        check(rc == 0, "serve exited %d" % rc)


main()
failures = serve_util.failures
print("serve_openai_test: %s" % ("ok" if failures == 0 else "%d failures" % failures))
sys.exit(1 if failures else 0)
