#!/usr/bin/env python3
"""webui_browser_test.py — serve's web page in a real browser (issue 41).

Headless Chromium (Debian's `chromium` and `chromium-driver`, which
scripts/install-deps.sh --test installs) driven by Selenium (from the
test's package folder, $SW_TEST_PYDEPS or ~/.cache/spillway/test-pydeps,
which scripts/test.sh fills, pinned). Without them the test exits 77
(CTest: skipped) and says what is missing, unless SW_TEST_REQUIRE_BROWSER
is set (.ci/run sets it): then their absence is a failure.

Against a server with an API key on the tiny Gemma 3 over a simulated
device (layers resident, streamed and on the host): the page asks for the
key and then uses it; its plan picture has one bar per layer of
`spillway plan --json` for the same flags, each with that layer's place
and KV tier and the colour the legend gives the category, one colour per
category; a chat with a system prompt and greedy sampling streams in (the
text grows over several updates: the events are spaced out in the page,
see SLOW) and ends equal to the same request made without streaming; Stop
ends a stream once its text shows, as "stopped"; the live counters count
the tokens. A second server (the tiny
Gemma 4 MoE, no key) shows experts on the host. A screenshot of the first
page goes to OUTDIR/webui.png (its path printed).

usage: webui_browser_test.py SPILLWAY TINY_DIR OUTDIR
"""
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.environ.get("SW_TEST_PYDEPS") or
                os.path.expanduser("~/.cache/spillway/test-pydeps"))
import serve_util  # noqa: E402 - after the path of the test's packages
from serve_util import check, free_port, stop, wait_healthy  # noqa: E402

BIN, TINY, OUTDIR = sys.argv[1], sys.argv[2], sys.argv[3]
KEY = "browser-key"
GEMMA3 = ["-m", os.path.join(TINY, "gemma3.gguf"), "--backend", "sim", "--device-mem", "900K",
          "-t", "2", "-c", "256", "-b", "16", "-np", "2"]
MOE = ["-m", os.path.join(TINY, "gemma4-moe.gguf"), "--backend", "sim", "--device-mem",
       "600K", "-t", "2", "-c", "256", "-b", "16"]
SYSTEM = "You are a terse assistant."
PROMPT = "Once upon a time"
MAX_TOKENS = 24


def skip(what):
    msg = "webui_browser_test: %s" % what
    if os.environ.get("SW_TEST_REQUIRE_BROWSER"):
        print(msg + "; SW_TEST_REQUIRE_BROWSER is set, so this fails")
        sys.exit(1)
    print(msg + "; skipped")
    sys.exit(77)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
if not CHROMIUM or not DRIVER:
    skip("chromium or chromedriver is missing (Debian: apt-get install chromium "
         "chromium-driver, or scripts/install-deps.sh --test)")
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    skip("the selenium package is missing (scripts/test.sh installs it into "
         "~/.cache/spillway/test-pydeps)")


def http(port, path, body=None, key=KEY):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                 data=json.dumps(body).encode() if body else None,
                                 headers={"Authorization": "Bearer " + key,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.status, r.read()


def start(flags):
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", *flags, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def health():
        try:
            return http(port, "/health")
        except urllib.error.HTTPError as e:
            return e.code, e.read()
    if not check(wait_healthy(proc, health, 60, 0.05), "serve %s did not come up" % flags):
        stop(proc)
        sys.exit(1)
    return port, proc


def plan_json(flags):
    p = subprocess.run([BIN, "plan", *flags, "--json"], capture_output=True, timeout=60)
    check(p.returncode == 0, "plan --json: exit %d" % p.returncode)
    return json.loads(p.stdout)


def browser():
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1400,960", "--no-first-run", "--disable-extensions"):
        o.add_argument(a)
    return webdriver.Chrome(service=Service(DRIVER), options=o)


def wait(d, what, cond, limit_s=30):
    try:
        return WebDriverWait(d, limit_s, poll_frequency=0.05).until(lambda _: cond())
    except Exception:  # selenium's TimeoutException, or the page's own error
        check(False, "timed out waiting for " + what)
        return None


def color(d, e):
    return d.execute_script("return getComputedStyle(arguments[0]).backgroundColor", e)


def check_picture(d, plan):
    """The bars against the plan: count, places, KV tiers, legend colours."""
    layers = plan["layers"]
    bars = wait(d, "the plan's bars",
                lambda: len(d.find_elements(By.CSS_SELECTOR, "#layers .layer")) == len(layers)
                and d.find_elements(By.CSS_SELECTOR, "#layers .layer"))
    if not bars:
        return
    legend = {s.get_attribute("data-cat"): color(d, s.find_element(By.CSS_SELECTOR, ".swatch"))
              for s in d.find_elements(By.CSS_SELECTOR, "#legend [data-cat]")}
    want = {layer["place"] for layer in layers} | {"kv-" + layer["kv"] for layer in layers}
    want |= {"experts"} if any(layer.get("experts") for layer in layers) else set()
    check(want <= set(legend), "legend %s lacks some of %s" % (sorted(legend), sorted(want)))
    check(len(set(legend.values())) == len(legend), "legend colours repeat: %s" % legend)
    kv_bars = d.find_elements(By.CSS_SELECTOR, "#kv .layer")
    check(len(kv_bars) == len(layers), "%d KV bars for %d layers" % (len(kv_bars), len(layers)))
    for layer, bar, kv in zip(layers, bars, kv_bars):
        i, place = layer["layer"], layer["place"]
        check(bar.get_attribute("data-place") == place,
              "layer %d: bar says %r, plan %r" % (i, bar.get_attribute("data-place"), place))
        check(color(d, bar) == legend.get(place), "layer %d (%s): colour %s, legend %s"
              % (i, place, color(d, bar), legend.get(place)))
        check(kv.get_attribute("data-kv") == layer["kv"], "layer %d: KV bar %r, plan %r"
              % (i, kv.get_attribute("data-kv"), layer["kv"]))
        check(color(d, kv) == legend.get("kv-" + layer["kv"]), "layer %d: KV colour" % i)
        experts = bar.find_elements(By.CSS_SELECTOR, ".experts")
        check(len(experts) == (1 if layer.get("experts") == "host" else 0),
              "layer %d: %d experts marks, plan %r" % (i, len(experts), layer.get("experts")))
        for e in experts:
            check(color(d, e) == legend.get("experts"), "layer %d: experts colour" % i)
    tiers = d.execute_script(  # in one script: the tiers are redrawn every second
        "return [...document.querySelectorAll('#tiers .tier')].map((t) => t.dataset.tier)")
    check(tiers == list(plan["tiers"]), "tiers drawn %s, plan %s" % (tiers, list(plan["tiers"])))


# Records every state of the assistant's text as the page sets it.
OBSERVE = """
window.seen = [];
new MutationObserver((records) => {
  for (const r of records) for (const n of r.addedNodes)
    if (n.nodeType === 3 && n.parentElement && n.parentElement.matches('.msg.assistant .text'))
      window.seen.push(n.data);
}).observe(document.getElementById('messages'), {childList: true, subtree: true});
"""

# Hands the page a chat stream's server-sent events window.slowMs apart:
# the tiny model writes its answer in milliseconds, often into one TCP
# segment, so the page would draw it at once; spaced, each event is drawn on
# its own, and Stop can land mid-stream. The request's abort signal ends the
# spaced stream too, as it would a slow network's: the whole answer may have
# arrived already, and an abort after that would otherwise change nothing.
SLOW = """
const real = window.fetch;
window.slowMs = 40;
const pause = (signal) => new Promise((ok, no) => {
  const stop = () => no(new DOMException('the request was stopped', 'AbortError'));
  if (signal && signal.aborted) return stop();
  const t = setTimeout(ok, window.slowMs);
  if (signal) signal.addEventListener('abort', () => { clearTimeout(t); stop(); }, {once: true});
});
window.fetch = async (url, init) => {
  const r = await real(url, init);
  if (!String(url).includes('chat/completions')) return r;
  const signal = init && init.signal;
  const slow = new TransformStream({async transform(chunk, c) {
    let start = 0;
    for (let i = 0; i + 1 < chunk.length; i++)
      if (chunk[i] === 10 && chunk[i + 1] === 10) {
        await pause(signal); c.enqueue(chunk.slice(start, i + 2)); start = i + 2;
      }
    if (start < chunk.length) { await pause(signal); c.enqueue(chunk.slice(start)); }
  }});
  return new Response(r.body.pipeThrough(slow), {status: r.status, headers: r.headers});
};
"""


def chat(d, text):
    box = d.find_element(By.ID, "prompt")
    box.send_keys(text)
    d.find_element(By.ID, "send").click()


def check_chat(d, port):
    d.find_element(By.ID, "settings").click()
    d.find_element(By.ID, "system").send_keys(SYSTEM)
    d.find_element(By.ID, "temperature").send_keys("0")
    mt = d.find_element(By.ID, "max_tokens")
    mt.clear()
    mt.send_keys(str(MAX_TOKENS))
    d.execute_script(OBSERVE)
    d.execute_script(SLOW)
    chat(d, PROMPT)
    done = wait(d, "the streamed answer", lambda: d.find_elements(
        By.CSS_SELECTOR, ".msg.assistant[data-finish]"))
    if not done:
        return
    text = done[0].find_element(By.CSS_SELECTOR, ".text").get_attribute("textContent")
    seen = [s for s in d.execute_script("return window.seen") if s]
    check(len(set(seen)) >= 3, "the answer came in %d updates, not streamed: %r"
          % (len(set(seen)), seen[:5]))
    check(seen and seen[-1] == text, "the last update %r is not the text shown %r"
          % (seen[-1:], text))
    check(all(text.startswith(s) for s in seen), "an update is not a prefix of the answer: "
          "%r" % seen)
    check(done[0].get_attribute("data-finish") in ("length", "stop"),
          "finish %r" % done[0].get_attribute("data-finish"))
    _, body = http(port, "/v1/chat/completions", {
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}],
        "temperature": 0, "max_tokens": MAX_TOKENS})
    want = json.loads(body)["choices"][0]["message"]["content"]
    check(text == want, "the page's answer %r, the API's %r" % (text, want))
    # Stop: a second turn, its stream slowed down, stopped once text shows.
    d.execute_script("window.slowMs = 400")
    chat(d, "and then")
    partial = wait(d, "the second answer's first text", lambda: d.execute_script(
        "const m = document.querySelectorAll('.msg.assistant');"
        "return m.length === 2 && m[1].querySelector('.text').textContent;"))
    d.find_element(By.ID, "stop").click()
    stopped = wait(d, "the stopped answer", lambda: len(d.find_elements(
        By.CSS_SELECTOR, ".msg.assistant[data-finish]")) == 2)
    if stopped:
        last = d.find_elements(By.CSS_SELECTOR, ".msg.assistant")[-1]
        check(last.get_attribute("data-finish") == "stopped",
              "after Stop: finish %r (text so far %r)"
              % (last.get_attribute("data-finish"), partial))
        check(d.find_element(By.ID, "send").is_displayed(), "Send is not back after Stop")


def check_counters(d):
    def tokens():  # in one script: the counters are redrawn every second
        return d.execute_script("""
          for (const c of document.querySelectorAll('#counters .counter'))
            if (c.querySelector('span').textContent === 'tokens generated')
              return c.querySelector('b').textContent;
          return null;""")
    got = wait(d, "the live counters to count tokens",
               lambda: (tokens() or "0").isdigit() and int(tokens()) >= 2 * MAX_TOKENS)
    check(bool(got), "tokens generated counter: %r" % tokens())


def console_errors(d, what, allowed):
    """Fails on the console's errors since the last call, but those naming allowed."""
    logs = [e["message"] for e in d.get_log("browser") if e.get("level") == "SEVERE"
            and not (allowed and allowed in e["message"])]
    check(not logs, "%s: the browser's console has errors: %s" % (what, logs))


def main():
    os.makedirs(OUTDIR, exist_ok=True)
    shot = os.path.join(OUTDIR, "webui.png")
    t0 = time.time()
    port, proc = start(GEMMA3 + ["--api-key", KEY])
    moe_port, moe = start(MOE)
    d = None
    try:
        d = browser()
        d.get("http://127.0.0.1:%d/" % port)
        form = wait(d, "the page to ask for the key",
                    lambda: d.find_element(By.ID, "key-form").is_displayed())
        if form:
            d.find_element(By.ID, "key-input").send_keys(KEY)
            d.find_element(By.CSS_SELECTOR, "#key-form button").click()
        check_picture(d, plan_json(GEMMA3))
        check_chat(d, port)
        check_counters(d)
        d.save_screenshot(shot)
        print("webui_browser_test: screenshot", shot)
        console_errors(d, "the page with a key", " 401 ")  # the calls before the key
        d.get("http://127.0.0.1:%d/" % moe_port)
        check_picture(d, plan_json(MOE))
        d.save_screenshot(os.path.join(OUTDIR, "webui-moe.png"))
        check(not d.find_element(By.ID, "key-form").is_displayed(),
              "a server without a key: the page asked for one")
        console_errors(d, "the MoE page", None)
    finally:
        if d is not None:
            d.quit()
        check(stop(proc) == 0, "serve: exit status")
        check(stop(moe) == 0, "serve (MoE): exit status")
    print("webui_browser_test: %.1f s" % (time.time() - t0))
    if serve_util.failures:
        print("webui_browser_test: %d failures" % serve_util.failures)
        return 1
    print("webui_browser_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
