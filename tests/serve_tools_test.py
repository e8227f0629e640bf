#!/usr/bin/env python3
"""serve_tools_test.py — Gemma 4 tool calls in `spillway serve`, through the
real `openai` client (from $SW_TEST_PYDEPS, default
~/.cache/spillway/test-pydeps; exits 77, CTest's skip, without it).

On the tiny Gemma 4 (random weights: it calls no tool by itself, so the
calls are forced with tool_choice): "tools" are accepted with "auto" and
"none"; a named function and "required" (one function) give a tool call
(id, name, arguments a JSON object valid for the function's schema: they
are decoded under its grammar; finish "tool_calls"), the same
streamed (deltas summed by index) as not; the call and a "tool" message fed
back are accepted; bad tool fields are 400s. On the tiny Gemma 3: tools
are a 400 naming its architecture (no native tool-call format).

usage: serve_tools_test.py SPILLWAY GEMMA4_MODEL GEMMA3_MODEL
"""
import json
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
    print("serve_tools_test: the openai package is missing (scripts/test.sh installs it "
          "into ~/.cache/spillway/test-pydeps); skipped")
    sys.exit(77)

BIN, GEMMA4, GEMMA3 = sys.argv[1], sys.argv[2], sys.argv[3]
N = 28  # a forced call is complete in 9 + 4 tokens or fewer (maxLength 4)
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 4}},
                   "required": ["city"]}}}]
MSGS = [{"role": "user", "content": "Paris?"}]
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def start(model):
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", "-m", model, "-t", "2", "-c", "256", "-b", "16",
                             "--port", str(port), "-np", "2"], stderr=subprocess.DEVNULL)
    client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key="x",
                           max_retries=0)
    t0 = time.time()
    while time.time() - t0 < 120 and proc.poll() is None:
        try:
            return proc, client, client.models.list().data[0].id
        except (openai.APIConnectionError, openai.APIStatusError):
            time.sleep(0.2)
    return proc, None, None


def call_ok(what, c):
    """A tool call: id, type, name, arguments a JSON object."""
    try:
        args = json.loads(c.function.arguments)
    except ValueError:
        args = None
    return check(c.id.startswith("call_") and c.type == "function" and
                 c.function.name == "get_weather" and isinstance(args, dict) and
                 isinstance(args.get("city"), str) and set(args) <= {"city"},
                 "%s: call %r" % (what, c))


def streamed(client, name, **kw):
    """A streamed chat's content, tool calls (summed by index) and finish."""
    content, calls, finish = "", {}, None
    for ch in client.chat.completions.create(model=name, messages=MSGS, tools=TOOLS,
                                             max_tokens=N, temperature=0, stream=True, **kw):
        if not ch.choices:
            continue
        d = ch.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:
            c = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            c["id"] = tc.id or c["id"]
            if tc.function is not None:
                c["name"] += tc.function.name or ""
                c["arguments"] += tc.function.arguments or ""
        finish = ch.choices[0].finish_reason or finish
    return content, calls, finish


def forced(client, name, choice):
    """A forced call, non-streamed and streamed: the same call."""
    r = client.chat.completions.create(model=name, messages=MSGS, tools=TOOLS, max_tokens=N,
                                       temperature=0, tool_choice=choice)
    ch = r.choices[0]
    if not check(ch.message.tool_calls and len(ch.message.tool_calls) >= 1,
                 "%r: no tool call in %r" % (choice, ch.message)):
        return None
    tc = ch.message.tool_calls[0]
    call_ok("%r" % (choice,), tc)
    check(ch.finish_reason == "tool_calls", "finish %s" % ch.finish_reason)
    print("%r: %s(%s)" % (choice, tc.function.name, tc.function.arguments))
    content, calls, finish = streamed(client, name, tool_choice=choice)
    s = calls.get(0, {})
    check(finish == ch.finish_reason and content == (ch.message.content or "") and
          s.get("name") == tc.function.name and s.get("arguments") == tc.function.arguments
          and (s.get("id") or "").startswith("call_") and len(calls) == len(
              ch.message.tool_calls),
          "%r streamed %r %r %r != %r" % (choice, content, calls, finish, ch))
    return tc


def on_gemma4(client, name):
    r = client.chat.completions.create(model=name, messages=MSGS, tools=TOOLS, max_tokens=4,
                                       temperature=0)
    check(r.choices[0].message.role == "assistant", "auto: %r" % r)
    r = client.chat.completions.create(model=name, messages=MSGS, tools=TOOLS, max_tokens=4,
                                       temperature=0, tool_choice="none")
    check(not r.choices[0].message.tool_calls and r.choices[0].finish_reason == "length",
          "none: %r" % r)
    tc = forced(client, name, NAMED)
    forced(client, name, "required")
    if tc is None:
        return
    back = MSGS + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": tc.id, "type": "function",
         "function": {"name": tc.function.name, "arguments": tc.function.arguments}}]},
        {"role": "tool", "tool_call_id": tc.id, "content": "15 C"}]
    r = client.chat.completions.create(model=name, messages=back, max_tokens=4,
                                       temperature=0)  # (declarations: over the tiny context)
    check(r.choices[0].message.role == "assistant" and r.usage.completion_tokens >= 1,
          "fed back: %r" % r)
    for what, kw in (("unknown function", {"tools": TOOLS, "tool_choice": {
            "type": "function", "function": {"name": "nope"}}}),
                     ("required without tools", {"tool_choice": "required"}),
                     ("tools not functions", {"tools": [{"type": "other"}]})):
        try:
            client.chat.completions.create(model=name, messages=MSGS, max_tokens=2, **kw)
            check(False, "%s: no error" % what)
        except openai.BadRequestError:
            pass
    try:
        client.chat.completions.create(model=name, max_tokens=2, messages=[
            {"role": "tool", "tool_call_id": "x", "content": "y"}])
        check(False, "a lone tool message: no error")
    except openai.BadRequestError:
        pass


def on_gemma3(client, name):
    try:
        client.chat.completions.create(model=name, messages=MSGS, tools=TOOLS, max_tokens=2)
        check(False, "gemma3 with tools: no error")
    except openai.BadRequestError as e:
        check("architecture 'gemma3'" in str(e) and "no native tool-call format" in str(e),
              "gemma3's 400: %s" % e)
    r = client.chat.completions.create(model=name, messages=MSGS, max_tokens=2)
    check(r.choices[0].message.role == "assistant", "gemma3 without tools: %r" % r)


def main():
    for model, body in ((GEMMA4, on_gemma4), (GEMMA3, on_gemma3)):
        proc, client, name = start(model)
        try:
            if check(client is not None, "%s: the server did not start" % model):
                body(client, name)
        finally:
            rc = stop(proc)
            check(rc == 0, "serve exited %d" % rc)


main()
failures = serve_util.failures
print("serve_tools_test: %s" % ("ok" if failures == 0 else "%d failures" % failures))
sys.exit(1 if failures else 0)
