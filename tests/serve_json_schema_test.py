#!/usr/bin/env python3
"""serve_json_schema_test.py — structured output through the real `openai`
client (issue 41, item 2): `response_format` json_schema and json_object on
/v1/chat/completions (and /v1/completions), greedy and sampled, streamed and
not; every output must parse with json and validate against its schema
(a small validator below, for the keywords the server supports; no extra
package). Also the client's own `parse()` with a pydantic model (pydantic
comes with openai), logprobs beside a grammar (finite: masked tokens are
not offered as alternatives), and 400s naming unsupported keywords.

On the tiny random-weight models outputs are noise, so free strings carry a
maxLength there (a random model rarely closes a string by itself); with the
default model (a second argument "default") unbounded strings are used too.

usage: serve_json_schema_test.py SPILLWAY [MODEL | default]
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
    print("serve_json_schema_test: the openai package is missing (scripts/test.sh installs it "
          "into ~/.cache/spillway/test-pydeps); skipped")
    sys.exit(77)

BIN = sys.argv[1]
REAL = len(sys.argv) > 2 and sys.argv[2] == "default"
MODEL = ["-m", sys.argv[2]] if len(sys.argv) > 2 and not REAL else []
CTX = 512 if REAL else 256
COMMON = MODEL + ["-t", "2", "-c", str(CTX), "-b", "16"]
S = {"type": "string", "maxLength": 12}  # a free string the tiny models can finish


def validate(v, s, root, path="$"):
    """Errors of value v against schema s (a list; empty when valid)."""
    if s is True or s == {}:
        return []
    if "$ref" in s:
        target = root
        for part in s["$ref"].lstrip("#").split("/")[1:]:
            target = target[part.replace("~1", "/").replace("~0", "~")]
        return validate(v, target, root, path)
    if "const" in s:
        return [] if v == s["const"] and type(v) is type(s["const"]) else ["%s: not const" % path]
    if "enum" in s:
        ok = any(v == e and type(v) is type(e) for e in s["enum"])
        return [] if ok else ["%s: %r not in enum" % (path, v)]
    for key in ("anyOf", "oneOf"):
        if key in s:
            n = sum(not validate(v, sub, root, path) for sub in s[key])
            return [] if n >= 1 else ["%s: no %s branch matches %r" % (path, key, v)]
    if "allOf" in s:
        return [e for sub in s["allOf"] for e in validate(v, sub, root, path)]
    types = s.get("type")
    types = [types] if isinstance(types, str) else types
    if types is None:
        types = ["object"] if "properties" in s else ["array"] if "items" in s else None
    if types is not None and s.get("nullable"):
        types = types + ["null"]
    if types is not None:
        errs = [validate_type(v, s, t, root, path) for t in types]
        return [] if any(not e for e in errs) else errs[0]
    return []


def validate_type(v, s, t, root, path):
    kinds = {"string": str, "boolean": bool, "object": dict, "array": list}
    if t == "null":
        return [] if v is None else ["%s: not null" % path]
    if t in ("integer", "number"):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                (t == "integer" and not isinstance(v, int)):
            return ["%s: %r is not an %s" % (path, v, t)]
        bad = ("minimum" in s and v < s["minimum"]) or ("maximum" in s and v > s["maximum"]) or \
            ("exclusiveMinimum" in s and v <= s["exclusiveMinimum"]) or \
            ("exclusiveMaximum" in s and v >= s["exclusiveMaximum"])
        return ["%s: %r out of bounds" % (path, v)] if bad else []
    if not isinstance(v, kinds[t]) or (t != "boolean" and isinstance(v, bool)):
        return ["%s: %r is not a %s" % (path, v, t)]
    if t == "boolean":
        return []
    if t == "string":
        if len(v) < s.get("minLength", 0) or len(v) > s.get("maxLength", 1 << 30):
            return ["%s: length %d" % (path, len(v))]
        return []
    if t == "array":
        if len(v) < s.get("minItems", 0) or len(v) > s.get("maxItems", 1 << 30):
            return ["%s: %d items" % (path, len(v))]
        return [e for i, x in enumerate(v) for e in validate(x, s.get("items", True), root,
                                                              "%s[%d]" % (path, i))]
    props = s.get("properties", {})
    errs = ["%s: %s missing" % (path, k) for k in s.get("required", []) if k not in v]
    if s.get("additionalProperties") is False:
        errs += ["%s: extra %s" % (path, k) for k in v if k not in props]
    return errs + [e for k, x in v.items() if k in props
                   for e in validate(x, props[k], root, "%s.%s" % (path, k))]


SCHEMAS = {
    "person": {"type": "object", "properties": {
        "name": S, "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": S, "admin": {"type": "boolean"}},
        "required": ["name", "age", "email", "admin"], "additionalProperties": False},
    "weather_call": {"type": "object", "properties": {
        "function": {"enum": ["get_weather", "search_web"]},
        "arguments": {"type": "object", "properties": {
            "city": S, "unit": {"enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14}},
            "required": ["city", "unit"], "additionalProperties": False}},
        "required": ["function", "arguments"], "additionalProperties": False},
    "list": {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "integer", "minimum": 0, "maximum": 999}, "label": S,
            "score": {"type": "number", "minimum": 0}},
            "required": ["id", "label"], "additionalProperties": False},
            "minItems": 1, "maxItems": 2}},
        "required": ["items"], "additionalProperties": False},
    "defs": {"$defs": {"Point": {"type": "object", "properties": {
        "x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"],
        "additionalProperties": False}},
        "type": "object", "properties": {"start": {"$ref": "#/$defs/Point"},
                                         "end": {"$ref": "#/$defs/Point"},
                                         "note": {"anyOf": [S, {"type": "null"}]}},
        "required": ["start", "end", "note"], "additionalProperties": False},
    "tagged": {"type": "object", "properties": {
        "kind": {"const": "event"}, "when": {"type": "string", "format": "date-time"},
        "level": {"type": ["integer", "null"]},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 4}},
        "required": ["kind", "when", "level", "tags"]},
}
if REAL:  # unbounded strings: a real model closes them
    SCHEMAS["free"] = {"type": "object", "properties": {
        "title": {"type": "string"}, "summary": {"type": "string"},
        "year": {"type": "integer"}}, "required": ["title", "summary", "year"],
        "additionalProperties": False}


def rf(name, schema):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema,
                                                   "strict": True}}


def check_output(what, text, finish, schema):
    try:
        v = json.loads(text)
    except ValueError as e:
        check(False, "%s: %r does not parse (%s, finish %s)" % (what, text, e, finish))
        return
    errs = validate(v, schema, schema) if schema is not None else \
        ([] if isinstance(v, dict) else ["not an object"])
    check(not errs and finish == "stop", "%s: %r: %s (finish %s)" % (what, text, errs, finish))


def main():
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", *COMMON, "--port", str(port), "-np", "2"],
                            stderr=subprocess.DEVNULL)
    client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key="none",
                           max_retries=0, timeout=600)
    msgs = [{"role": "user", "content": "Answer in JSON."}]
    n_tok = 400 if REAL else 180
    try:
        t0, name = time.time(), None
        while time.time() - t0 < 300 and proc.poll() is None and name is None:
            try:
                name = client.models.list().data[0].id
            except (openai.APIConnectionError, openai.APIStatusError):
                time.sleep(0.2)
        if not check(name is not None, "the server did not answer models.list()"):
            return
        for sname, schema in SCHEMAS.items():
            # the default model: greedy only (CI time); the tiny one: sampled too
            for temp, seed in ((0, None),) if REAL else ((0, None), (1.0, 7), (1.0, 8)):
                r = client.chat.completions.create(model=name, messages=msgs, max_tokens=n_tok,
                                                   temperature=temp, seed=seed,
                                                   response_format=rf(sname, schema))
                c = r.choices[0]
                check_output("%s temp %s" % (sname, temp), c.message.content, c.finish_reason,
                             schema)
        schema = SCHEMAS["weather_call"]
        parts, finish = [], None
        for ch in client.chat.completions.create(model=name, messages=msgs, max_tokens=n_tok,
                                                 temperature=0, stream=True,
                                                 response_format=rf("w", schema)):
            if ch.choices:
                parts.append(ch.choices[0].delta.content or "")
                finish = ch.choices[0].finish_reason or finish
        check_output("streamed", "".join(parts), finish, schema)
        for temp in (0, 1.0):
            r = client.chat.completions.create(model=name, messages=msgs,
                                               max_tokens=64 if REAL else n_tok,
                                               temperature=temp, seed=3,
                                               response_format={"type": "json_object"})
            if r.choices[0].finish_reason == "stop":
                check_output("json_object temp %s" % temp, r.choices[0].message.content,
                             r.choices[0].finish_reason, None)
            else:  # a random model nests on, a base model repeats itself: cut at max_tokens
                check(r.choices[0].message.content.startswith("{"), "json_object prefix")
        r = client.completions.create(model=name, prompt="JSON:", max_tokens=n_tok,
                                      temperature=0, extra_body={
                                          "response_format": rf("p", SCHEMAS["person"])})
        check_output("completions", r.choices[0].text, r.choices[0].finish_reason,
                     SCHEMAS["person"])
        r = client.chat.completions.create(model=name, messages=msgs, max_tokens=n_tok,
                                           temperature=0, logprobs=True, top_logprobs=3,
                                           response_format=rf("person", SCHEMAS["person"]))
        c = r.choices[0]
        check_output("with logprobs", c.message.content, c.finish_reason, SCHEMAS["person"])
        lps = [t.logprob for e in (c.logprobs.content if c.logprobs else [])
               for t in [e] + e.top_logprobs]
        check(lps and all(-1e30 < x <= 0 for x in lps),  # masked tokens are left out
              "logprobs under a grammar: %r" % lps[:8])
        check_pydantic(client, name, msgs, n_tok)
        for bad, word in (({"type": "string", "pattern": "^a+$"}, "pattern"),
                          ({"type": "number", "maximum": 2.5}, "maximum"),
                          ({"$ref": "https://example.com/x.json"}, "$ref")):
            try:
                client.chat.completions.create(model=name, messages=msgs, max_tokens=4,
                                               response_format=rf("bad", bad))
                check(False, "%s: no error" % word)
            except openai.BadRequestError as e:
                check(word in str(e), "400 names %s: %s" % (word, e))
    finally:
        rc = stop(proc)
        check(rc == 0, "serve exited %d" % rc)


def check_pydantic(client, name, msgs, n_tok):
    """The client's parse(): a pydantic model's strict schema, parsed back."""
    try:
        from pydantic import BaseModel, Field
    except ImportError:
        return
    from typing import List, Literal, Optional

    class Step(BaseModel):
        action: Literal["read", "write"]
        target: str = Field(max_length=12)

    class Plan(BaseModel):
        goal: str = Field(max_length=12)
        steps: List[Step] = Field(max_length=3)
        done: Optional[bool]

    parse = getattr(client.chat.completions, "parse", None) or client.beta.chat.completions.parse
    try:
        r = parse(model=name, messages=msgs, max_tokens=n_tok, temperature=0,
                  response_format=Plan)
        check(isinstance(r.choices[0].message.parsed, Plan),
              "pydantic parse: %r" % (r.choices[0].message.content,))
    except (openai.OpenAIError, ValueError) as e:  # the client could not parse it
        check(False, "pydantic parse: %s" % (e,))


main()
failures = serve_util.failures
print("serve_json_schema_test: %s" % ("ok" if failures == 0 else "%d failures" % failures))
sys.exit(1 if failures else 0)
