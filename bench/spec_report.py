"""spec_report.py — bench/spec.sh's tables: reads the runs it kept (runs.tsv,
and per run the stdout, stderr and --report-json), prints the medians and
writes the markdown record. Not meant to be run by hand.

usage: spec_report.py RAW [OUT.md]   (RAW: spec.sh --keep's folder)
"""
import datetime
import json
import os
import re
import statistics
import sys

raw, out = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
meta = json.load(open(os.path.join(raw, "meta.json")))
cpu, model, commit, threads, n, rounds, stream, resident, mode = (meta[k] for k in (
    "cpu", "model", "commit", "threads", "n", "rounds", "stream", "resident", "mode"))
LINE = re.compile(r"prompt (\d+) tokens in ([0-9.]+) s \([0-9.]+ tok/s\); "
                  r"generated (\d+) tokens in ([0-9.]+) s \(([0-9.]+) tok/s\)")


def spec_counters(js):
    """--report-json's speculative counters (the names of sw_scheduler_stats),
    wherever the report puts them, or None."""
    want = ("verify_forwards", "drafted_tokens", "accepted_tokens")
    if all(k in js for k in want):
        return {k: js[k] for k in want}
    for v in js.values():
        if isinstance(v, dict):
            got = spec_counters(v)
            if got:
                return got
    return None


runs = []
for line in open(os.path.join(raw, "runs.tsv")):
    rnd, part, cfg, prompt, rid, flags = line.rstrip("\n").split("\t")
    err = open(os.path.join(raw, rid + ".err")).read()
    m = LINE.search(err)
    if not m:
        sys.exit(f"spec_report.py: no speed line in {rid}'s stderr:\n{err[-500:]}")
    js = json.load(open(os.path.join(raw, rid + ".json")))
    runs.append(dict(round=int(rnd), part=part, cfg=cfg, prompt=prompt, flags=flags,
                     n_prompt=int(m[1]), prefill_s=float(m[2]), gen=int(m[3]),
                     decode_s=float(m[4]), tps=float(m[5]), js=js,
                     text=open(os.path.join(raw, rid + ".out")).read(),
                     spec=spec_counters(js)))


def select(**kw):
    return [r for r in runs if all(r[k] == v for k, v in kw.items())]


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, f="{:.2f}"):
    return "-" if x is None else f.format(x)


# ---- the target's forwards, counted by the bytes the streamed plan moves ---
# bytes1[prompt]: the prefill alone; per_fwd[prompt]: a one-token forward
# (plain runs: (bytes - bytes1) / decode tokens).
bytes1 = {r["prompt"]: r["js"]["bytes_to_device"] for r in select(part="bytes1")}
per_fwd = {}
for p in bytes1:
    xs = [(r["js"]["bytes_to_device"] - bytes1[p]) / r["js"]["n_decode_tokens"]
          for r in runs if r["prompt"] == p and r["cfg"] in ("plain",) and
          r["part"] in ("p1", "p2stream") and r["js"]["n_decode_tokens"] > 0]
    per_fwd[p] = med(xs) / 1e6 if xs else None   # MB


def derive(r):
    """Forwards after the prefill, verifies, drafts and kept drafts of a
    drafted run on the streamed plan, from the engine's counters alone (None
    elsewhere). Each forward after the prefill is a plain decode (one token:
    the engine's decode tokens) or a verify (1 + k tokens: the engine books
    them as prefill); each emits its kept drafts plus one token, and the
    prefill emits the first."""
    j, p = r["js"], r["prompt"]
    if not j["bytes_to_device"] or p not in bytes1 or not per_fwd.get(p):
        return None
    n1 = j["n_decode_tokens"]
    fwd = round((j["bytes_to_device"] - bytes1[p]) / 1e6 / per_fwd[p])
    v = fwd - n1
    kept = r["gen"] - 1 - n1 - v
    return dict(src="derived", fwd=fwd, verify=v, drafted=j["n_prefill_tokens"] - r["n_prompt"] - v,
                accepted=kept, out=kept + v)


def counts(r):
    """The report's speculative counters if it has them, else derive(r)."""
    spec = r["spec"]
    if not spec:
        return derive(r)
    v = spec["verify_forwards"]
    return dict(src="report", fwd=v + r["js"]["n_decode_tokens"], verify=v,
                drafted=spec["drafted_tokens"], accepted=spec["accepted_tokens"],
                out=spec.get("verify_tokens", spec["accepted_tokens"] + v))


disagree = []
for r in runs:
    drafted_run = r["cfg"] == "ngram" or r["cfg"].startswith("md")
    r["c"] = counts(r) if drafted_run else None
    d = derive(r) if drafted_run and r["spec"] else None
    if d and any(d[k] != r["c"][k] for k in ("fwd", "verify", "drafted", "accepted")):
        disagree.append(f"{r['part']} {r['cfg']} {r['prompt']} round {r['round']}: report "
                        + str({k: r["c"][k] for k in ("fwd", "verify", "drafted", "accepted")})
                        + ", from bytes " + str({k: d[k] for k in ("fwd", "verify", "drafted", "accepted")}))

# greedy: drafted output must be plain's, same round, prompt and backend
plain_text = {(r["part"], r["prompt"], r["round"]): r["text"] for r in runs if r["cfg"] == "plain"}
mismatch = []
for r in runs:
    if r["cfg"] == "ngram" or r["cfg"].startswith("md"):
        ref = plain_text.get((r["part"], r["prompt"], r["round"]))
        r["same"] = ref is not None and ref == r["text"]
        if not r["same"]:
            mismatch.append(r)
cross = [(p, rd) for (part, p, rd), t in plain_text.items() if part == "p2cpu"
         and plain_text.get(("p2stream", p, rd)) not in (None, t)]


def acceptance(c):
    return c["accepted"] / c["drafted"] if c and c["drafted"] > 0 else None


def per_verify(c):
    return c["out"] / c["verify"] if c and c["verify"] > 0 else None


def per_fwd_tokens(r):
    c = r["c"]
    return (r["gen"] - 1) / c["fwd"] if c and c["fwd"] > 0 else None


def same_col(rs):
    if not rs or "same" not in rs[0]:
        return "-"
    good = sum(r["same"] for r in rs)
    return "yes" if good == len(rs) else f"NO ({len(rs) - good}/{len(rs)} differ)"


# ---- 1. the draft model on the streamed plan ------------------------------
plain1 = med(r["tps"] for r in select(part="p1", cfg="plain"))
res = select(part="p1", cfg="resident")
t_draft = med(r["decode_s"] / (r["gen"] - 1) for r in res)
ks = sorted({int(r["cfg"][2:]) for r in runs if r["cfg"].startswith("md")})
t1_lines = ["| run | decode tok/s | vs plain | acceptance | tokens per verify | s per target forward "
            "| output = plain |", "|---|---:|---:|---:|---:|---:|---|"]
t1_lines.append(f"| plain, streamed | {fmt(plain1)} | 1.00 | - | - | "
                f"{fmt(med(r['decode_s'] / (r['gen'] - 1) for r in select(part='p1', cfg='plain')), '{:.3f}')} | - |")
measured_md = {}
for k in ks:
    rs = select(part="p1", cfg=f"md{k}")
    tps = med(r["tps"] for r in rs)
    a = med(acceptance(r["c"]) for r in rs)
    spv = med(r["decode_s"] / r["c"]["fwd"] for r in rs if r["c"] and r["c"]["fwd"])
    measured_md[k] = (a, tps / plain1 if tps and plain1 else None, spv)
    t1_lines.append(f"| -md (itself, resident), --draft-max {k} | {fmt(tps)} | "
                    f"{fmt(tps / plain1 if tps and plain1 else None)} | {fmt(a, '{:.3f}')} | "
                    f"{fmt(med(per_verify(r['c']) for r in rs))} | {fmt(spv, '{:.3f}')} | {same_col(rs)} |")
t1_lines.append(f"| plain, resident (the drafter's speed) | {fmt(med(r['tps'] for r in res))} | "
                f"{fmt(med(r['tps'] for r in res) / plain1 if plain1 else None)} | - | - | "
                f"{fmt(t_draft, '{:.3f}')} | - |")

# ---- 2. n-gram drafts -----------------------------------------------------
t2_lines = ["| backend | prompt | plain tok/s | n-gram tok/s | n-gram / plain | acceptance "
            "| drafts per verify | tokens per verify | tokens per forward | s per target forward "
            "| output = plain |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
measured_ng = {}
prompts = [p for p in ("rewrite", "repeat", "code") if select(part="p2cpu", prompt=p)]
for b in ("cpu", "stream"):
    for p in prompts:
        pl = med(r["tps"] for r in select(part=f"p2{b}", cfg="plain", prompt=p))
        rs = select(part=f"p2{b}", cfg="ngram", prompt=p)
        ng = med(r["tps"] for r in rs)
        # the cpu backend moves no bytes: its drafts are the streamed run's
        # (greedy, same tokens) unless the report counts them
        cs = rs if all(r["c"] for r in rs) else select(part="p2stream", cfg="ngram", prompt=p)
        note = "" if cs is rs else " (streamed run's)"
        a = med(acceptance(r["c"]) for r in cs)
        dpv = med(r["c"]["drafted"] / r["c"]["verify"] for r in cs if r["c"] and r["c"]["verify"])
        spf = med(r["decode_s"] / r["c"]["fwd"] for r in rs if r["c"] and r["c"]["fwd"]) \
            if rs is cs else None
        if b == "stream":
            measured_ng[p] = (a, dpv, ng / pl if ng and pl else None, spf)
        t2_lines.append(f"| {b} | {p} | {fmt(pl)} | {fmt(ng)} | {fmt(ng / pl if ng and pl else None)} | "
                        f"{fmt(a, '{:.3f}')}{note} | {fmt(dpv)} | {fmt(med(per_verify(r['c']) for r in cs))} | "
                        f"{fmt(med(per_fwd_tokens(r) for r in cs))} | {fmt(spf, '{:.3f}')} | "
                        f"{same_col(rs)} |")

# ---- 3. one forward of W tokens, and the prediction -------------------------
tw, mbw, bad_w = {}, {}, []
for r in select(part="p3"):
    w = int(r["prompt"][1:])
    if r["n_prompt"] != w:
        bad_w.append(f"w{w}: {r['n_prompt']} tokens")
        continue
    # the engine's forward time (tokens over the report's rate: finer than
    # run's 10 ms); it books a one-token forward as decode, wider as prefill
    j = r["js"]
    t = sum(j[f"n_{x}_tokens"] / j[f"{x}_tokens_per_s"] for x in ("prefill", "decode")
            if j[f"{x}_tokens_per_s"] > 0) or r["prefill_s"]
    tw.setdefault(w, []).append(t)
    mbw.setdefault(w, []).append(j["bytes_to_device"] / 1e6)
tw = {w: statistics.median(v) for w, v in sorted(tw.items())}
t3_lines = ["| width W | s per forward | / W = 1 | s per token | MB over the link |",
            "|---:|---:|---:|---:|---:|"]
for w, t in tw.items():
    t3_lines.append(f"| {w} | {t:.3f} | {fmt(t / tw[1] if 1 in tw else None)} | {t / w:.3f} | "
                    f"{statistics.median(mbw[w]):.1f} |")
t_plain_step = med(r["decode_s"] / (r["gen"] - 1) for r in select(part="p1", cfg="plain"))


def predict(a, k, td):
    """E, the cost of a verify, and the speed-up against t(1) and against
    plain decoding's measured step."""
    e = k + 1 if a >= 1 else (1 - a ** (k + 1)) / (1 - a)
    if 1 not in tw or k + 1 not in tw or td is None:
        return e, None, None, None
    cost = tw[k + 1] + k * td
    return e, cost, e * tw[1] / cost, e * t_plain_step / cost if t_plain_step else None


p_lines = ["| drafter | k | a | E tokens per verify | predicted s per verify | predicted speed-up "
           "(t_1 = t(1)) | predicted speed-up (t_1 = plain step) | measured s per target forward "
           "| measured speed-up |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
for name, td, rows in (("n-gram (t_draft 0)", 0.0, [(8, a, None, None) for a in (0.6, 0.8, 1.0)] +
                        [(8, v[0], v[2], f"{p}: measured a") for p, v in measured_ng.items()]),
                       (f"model (t_draft {fmt(t_draft, '{:.3f}')} s)", t_draft,
                        [(8, a, None, None) for a in (0.6, 0.8, 1.0)] +
                        [(k, v[0], v[1], "measured a") for k, v in measured_md.items()])):
    for k, a, meas, label in rows:
        if a is None:
            continue
        e, cost, sp, sp_step = predict(a, k, td)
        mspv = None
        if label and name.startswith("model"):
            mspv = measured_md[k][2]
        elif label:
            mspv = measured_ng[label.split(":")[0]][3]
        lab = f"{a:.3f} ({label})" if label else f"{a:.1f}"
        p_lines.append(f"| {name} | {k} | {lab} | {e:.2f} | {fmt(cost, '{:.3f}')} | {fmt(sp)} | "
                       f"{fmt(sp_step)} | {fmt(mspv, '{:.3f}')} | {fmt(meas)} |")

src = sorted({r["c"]["src"] for r in runs if r["c"]})
loads = [l.split() for l in open(os.path.join(raw, "load"))] if os.path.exists(
    os.path.join(raw, "load")) else []
load_txt = "; ".join(f"{'before round ' + l[0] if int(l[0]) <= int(rounds) else 'at the end'}: "
                     f"{' '.join(l[1:])}" for l in loads)
warn = []
if mismatch:
    warn.append("drafted output differs from plain output (greedy: a bug): " + ", ".join(
        f"{r['part']} {r['cfg']} {r['prompt']} round {r['round']}" for r in mismatch))
if cross:
    warn.append("cpu and streamed plain outputs differ: " + ", ".join(f"{p} round {rd}" for p, rd in cross))
if disagree:
    warn.append("the report's speculative counters and the counts derived from bytes moved "
                "disagree: " + "; ".join(disagree))
if bad_w:
    warn.append("width prompts of the wrong length (left out): " + ", ".join(bad_w))
t1, t2, t3, tp = ("\n".join(x) for x in (t1_lines, t2_lines, t3_lines, p_lines))
head = (f"medians over {rounds} interleaved rounds, {os.path.basename(model)}, {cpu}, -t {threads}, "
        f"{n} tokens, greedy; load avg (1/5/15 min) {load_txt}")
print(head)
for t in (t1, t2, t3, tp):
    print("\n" + t)
for w in warn:
    print("WARNING: " + w)
if not out:
    sys.exit(0)

home, root = os.path.expanduser("~"), os.getcwd()
raw_lines = ["| round | part | run | prompt | prompt tokens | prefill s | generated | decode s | tok/s "
             "| forwards after prefill | verifies | drafted | kept | counts |",
             "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
def natural(x):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", x)]


for r in sorted((r for r in runs if r["part"] != "bytes1"),
                key=lambda r: (r["part"], natural(r["prompt"]), natural(r["cfg"]), r["round"])):
    c = r["c"] or {}
    if r["part"] == "p3":   # one forward: no decode to speak of
        raw_lines.append(f"| {r['round']} | p3 | prefill | {r['prompt']} | {r['n_prompt']} | "
                         f"{r['prefill_s']:.2f} | - | - | - | - | - | - | - | - |")
        continue
    raw_lines.append(f"| {r['round']} | {r['part']} | {r['cfg']} | {r['prompt']} | {r['n_prompt']} | "
                     f"{r['prefill_s']:.2f} | {r['gen']} | {r['decode_s']:.2f} | {r['tps']:.2f} | "
                     f"{c.get('fwd', '-')} | {c.get('verify', '-')} | {c.get('drafted', '-')} | "
                     f"{c.get('accepted', '-')} | {c.get('src', '-')} |")
derivation = ("on the streamed plan every forward moves the same bytes (a one-token forward: "
              + ", ".join(f"{p} {v:.3f} MB" for p, v in per_fwd.items() if v) +
              "; the prefill alone measured by a -n 1 run), so forwards after the prefill = "
              "(bytes_to_device - prefill bytes) / bytes per forward, rounded; one-token forwards "
              "= the engine's decode tokens; verifies = the rest; drafted = the engine's prefill "
              "tokens - the prompt - verifies (each verify feeds its last token and its drafts, "
              "and the engine books a multi-token forward as prefill); kept = generated - 1 - "
              "one-token forwards - verifies")
if src == ["report"]:
    counts_txt = ("--report-json's speculative counters. On the streamed plan they are checked "
                  "against counts derived from the engine's counters alone (" + derivation + "): "
                  + ("they disagree, see the warnings" if disagree else "they agree in every run"))
else:
    counts_txt = ("derived, as this build's --report-json has no speculative counters: "
                  + derivation + ". On --backend cpu (no bytes) the counts are the streamed "
                  "run's: greedy, the same tokens, the same drafts")
doc = f"""# Speculative decoding: speed points (issue 36)

{datetime.date.today().isoformat()}, {cpu}, Spillway {commit}, model {os.path.basename(model)},
`bench/spec.sh{' --quick' if mode == 'quick' else ''}`: `spillway run -f PROMPT -n {n} --temp 0 -t {threads}`,
{rounds} rounds, every configuration once per round (interleaved); tables give medians.
Load average (1, 5, 15 min) {load_txt}.

Plans: streamed = `{stream}` (all 18 layers cross the link every forward; the LM
head on the host); resident = `{resident}` (everything on the device: the draft
model's plan). Drafted runs: `-md MODEL --draft-device-mem 1G --draft-max K` (the
model drafting for itself) or `--draft-ngram --draft-max 8`. "decode tok/s" is
run's "generated M tokens in Y s (S tok/s)"; s per target forward = Y / the target's forwards
after the prefill; tokens per verify = (kept + verifies) / verifies; tokens per
forward = (generated - 1) / forwards after the prefill.
Acceptance (kept / drafted): {counts_txt}.

{"## Warnings" + chr(10) + chr(10) + chr(10).join("- " + w for w in warn) + chr(10) if warn else ""}
## 1. Draft model, streamed plan (issue's target: >= 3x plain at --draft-max 8)

{t1}

## 2. N-gram drafts on text-rewriting prompts (--draft-max 8)

{t2}

## 3. One forward of W tokens on the streamed plan, and the predicted speed-up

`spillway run -p <W tokens> -n 1 -b W` on the streamed plan: one forward of W
tokens, timed by the engine (the report's prefill tokens over its prefill rate; run's
"prompt W tokens in X s" rounds to 10 ms). A prefill computes the LM head for its
last row only, where a verify computes it for all k + 1 rows. Plain decoding's
steady step (section 1) takes {fmt(t_plain_step, '{:.3f}')} s per token and moves {fmt(per_fwd.get("story"), "{:.1f}")} MB
(a lone forward moves more, as the table shows, and starts with nothing in flight).

{t3}

Prediction: E = (1 - a^(k+1)) / (1 - a) tokens per verify, cost t(k+1) + k t_draft,
speed-up E t_1 / cost, with t(W) from the table above, t_draft the resident plan's
decode step, and t_1 either t(1) (the cold one-token forward, as t(k+1) is
measured) or plain decoding's step (what the measured speed-up divides by).
"measured s per target forward" is the drafted run's decode time over the
target's forwards after the prefill (drafting included); n-gram runs also hold
one-token forwards where no n-gram matched. N-gram drafts are fewer than k when
the match is short and absent when there is none, so the formula's row is an
upper bound at that a.

{tp}

## Prompts

Each in Gemma's chat turns (`<start_of_turn>user ... <end_of_turn>` then
`<start_of_turn>model`); the width prompts are "the the ...". The default model
(general.name "Gemma 3 270m") is the base model, not the instruction-tuned one:
inside chat turns it mostly echoes the user's turn, instruction included (the
rewrite prompt's paragraph comes back unchanged, the story turns into "A bridge /
A river" lines), which is what n-gram drafts feed on: a best case for them.

{chr(10).join(f"- {p}: " + repr(open(os.path.join(raw, p + ".txt")).read().split("user" + chr(10), 1)[-1].split("<end_of_turn>")[0]) for p in ["story"] + prompts)}

## Per round

{chr(10).join(raw_lines)}
"""
os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
open(out, "w").write(doc)
print(f"wrote {out}")
