"""The package against the library's own front ends: plans, tokens and
greedy texts equal what the `spillway` command gives for the same model
and options; streaming, batching and stop strings agree with each other;
errors come as exceptions carrying the library's message."""
import json
import os
import re
import subprocess

import pytest

import spillway

from conftest import ROOT

PROMPTS = ["The capital of France is", "Once upon a time", "1, 2, 3, 4,"]
RUN = ["-c", "256", "-t", "1", "--backend", "cpu", "--temp", "0"]


def test_versions():
    header = open(os.path.join(ROOT, "include", "spillway.h")).read()
    want = re.search(r'#define SW_VERSION_STRING "([^"]+)"', header).group(1)
    assert spillway.library_version() == want
    assert spillway.__version__ == want


def test_plan(model, tiny_path, cli):
    plan = model.plan()
    assert {"tiers", "layers", "model"} <= set(plan)
    out = subprocess.run([cli, "plan", "-m", tiny_path, "--json", "-c", "256", "-np", "2",
                          "-t", "1", "--backend", "cpu"], capture_output=True, check=True)
    want = json.loads(out.stdout)
    assert plan["layers"] == want["layers"]
    # the host budget is MemAvailable at planning time: it moves
    assert {k: v["planned"] for k, v in plan["tiers"].items()} == \
        {k: v["planned"] for k, v in want["tiers"].items()}


def test_tokenize(model, tiny_path, cli):
    for text in PROMPTS:
        ids = model.tokenize(text)
        out = subprocess.run([cli, "tokenize", "-m", tiny_path, "--ids", "-p", text],
                             capture_output=True, check=True, text=True)
        assert ids == [int(x) for x in re.findall(r"-?\d+", out.stdout)]
        assert model.detokenize(ids[1:]) == text


def test_greedy_equals_run(model, tiny_path, cli):
    for text in PROMPTS:
        out = subprocess.run([cli, "run", "-m", tiny_path, "-p", text, "-n", "10", *RUN],
                             capture_output=True, check=True)
        want = out.stdout.decode("utf-8", "replace").rstrip("\n")
        assert model(text, max_tokens=10, temperature=0) == want


def test_stream_batch_agree(model):
    alone = [model(p, max_tokens=12, temperature=0) for p in PROMPTS]
    pieces = list(model.generate(PROMPTS[0], max_tokens=12, temperature=0))
    assert len(pieces) > 1 and "".join(pieces) == alone[0]
    assert model.batch(PROMPTS, max_tokens=12, temperature=0) == alone
    st = model.stats()
    assert st["n_running"] == 0 and st["n_queued"] == 0 and st["kv_capacity_tokens"] == 512


def test_stop(model):
    full = model(PROMPTS[1], max_tokens=12, temperature=0)
    at = next(i for i in range(1, len(full) - 1) if full[i:i + 2].isascii())
    stop = full[at:at + 2]
    cut = full[:full.find(stop)]
    assert model(PROMPTS[1], max_tokens=12, temperature=0, stop=[stop, "never"]) == cut
    assert "".join(model.generate(PROMPTS[1], max_tokens=12, temperature=0, stop=stop)) == cut


def test_seeded_sampling_repeats(model):
    a = model(PROMPTS[0], max_tokens=8, temperature=0.9, seed=7)
    b = model(PROMPTS[0], max_tokens=8, temperature=0.9, seed=7)
    assert a == b


def test_chat_prompt(model):
    text = model.chat_prompt([{"role": "system", "content": "Be brief."},
                              {"role": "user", "content": "Hi"}])
    assert text == ("<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
                    "<start_of_turn>model\n")
    with pytest.raises(spillway.SpillwayError, match="unknown message role"):
        model.chat_prompt([{"role": "tool", "content": "x"}])


def test_errors(model, tiny_path):
    with pytest.raises(spillway.SpillwayError) as e:
        spillway.Model("/nonexistent/model.gguf")
    assert e.value.status == "io" and "/nonexistent/model.gguf" in str(e.value)
    with pytest.raises(TypeError, match="unknown plan option"):
        spillway.Model(tiny_path, n_layers=3)
    with pytest.raises(spillway.SpillwayError) as e:
        spillway.Model(tiny_path, backend="sim")   # the sim needs its capacity
    assert e.value.status == "arg" and "device" in str(e.value)
    with pytest.raises(spillway.SpillwayError) as e:
        model("x", top_p=2.0)
    assert e.value.status == "arg"
    with pytest.raises(spillway.SpillwayError, match="empty"):
        model("x", stop=[""])
    with pytest.raises(spillway.SpillwayError, match="context"):
        model("word " * 400)
    m = spillway.Model(tiny_path, backend="cpu", n_ctx=64)
    m.close()
    with pytest.raises(ValueError, match="closed"):
        m("x")


def test_split_over_devices(model, tiny_path):
    """device_mem as one size per device: a split over two simulated
    devices, the same greedy text as the cpu backend, the split's plan,
    and each device's figures."""
    with spillway.Model(tiny_path, backend="sim", device_mem=["32M", "32M"], devices=[0, 1],
                        n_ctx=256, n_seq=2, n_threads=1) as split:
        for text in PROMPTS:
            assert split(text, max_tokens=10, temperature=0) == \
                model(text, max_tokens=10, temperature=0)
        plan = split.plan()["split"]
        assert plan["n_devices"] == 2 and len(plan["devices"]) == 2
        devs = split.devices()
        assert [d["peer_in"] for d in devs] == [False, True]
        assert devs[0]["first_layer"] == 0 and devs[0]["end_layer"] == devs[1]["first_layer"]
        for d in devs:
            assert 0 < d["peak_bytes"] <= d["plan_bytes"] <= d["budget_bytes"] == 32 << 20
    with spillway.Model(tiny_path, backend="sim", device_mem=["32M", "32M"], n_ctx=256,
                        n_threads=1, draft_ngram=True, draft_max=4) as spec:
        assert spec(PROMPTS[0], max_tokens=10, temperature=0) == \
            model(PROMPTS[0], max_tokens=10, temperature=0)
        assert spec.stats()["verify_forwards"] > 0
    assert model.devices() == []
    with pytest.raises(ValueError, match="one each"):
        spillway.Model(tiny_path, backend="sim", device_mem=["32M", "32M"], devices=[0])
    with pytest.raises(ValueError, match="devices picks"):
        spillway.Model(tiny_path, backend="sim", device_mem="32M", devices=[0, 1])
    with pytest.raises(spillway.SpillwayError, match="2 to 8 devices"):
        spillway.Model(tiny_path, backend="sim", device_mem=["32M"])
