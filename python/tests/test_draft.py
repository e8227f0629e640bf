"""Speculative decoding through the package: with greedy sampling the text
with drafts (the text's own n-grams, a draft model: the tiny model
drafting for itself, or a tiny Gemma 4's assistant) equals the text without, the drafts are counted, and
a request's draft_max 0 turns them off."""
import os

import pytest

import spillway
from conftest import DATA

PROMPTS = ["1, 2, 3, 1, 2, 3, 1, 2,", "the cat sat on the mat and the cat", "Once upon a time"]
PLAN = dict(backend="cpu", n_ctx=256, n_seq=2, n_threads=1)


@pytest.fixture(scope="module")
def ngram(tiny_path):
    m = spillway.Model(tiny_path, draft_ngram=True, draft_max=6, **PLAN)
    yield m
    m.close()


def test_ngram_greedy_equals_plain(model, ngram):
    for p in PROMPTS:
        assert ngram(p, max_tokens=24, temperature=0) == model(p, max_tokens=24, temperature=0)
    assert ngram.batch(PROMPTS, max_tokens=24, temperature=0) == \
        model.batch(PROMPTS, max_tokens=24, temperature=0)
    st = ngram.stats()
    assert st["draft_max"] == 6 and st["drafted_tokens"] > 0 and st["verify_forwards"] > 0
    assert 0 <= st["accepted_tokens"] <= st["drafted_tokens"]
    assert st["verify_tokens"] <= st["accepted_tokens"] + st["verify_forwards"]


def test_request_draft_max(ngram):
    before = ngram.stats()["drafted_tokens"]
    ngram(PROMPTS[0], max_tokens=16, temperature=0, draft_max=0)
    assert ngram.stats()["drafted_tokens"] == before
    with pytest.raises(spillway.SpillwayError) as e:
        ngram(PROMPTS[0], max_tokens=4, draft_max=17)
    assert e.value.status == "arg"


def test_draft_model_greedy_equals_plain(model, tiny_path):
    # on the cpu; and on the simulated device, where the draft model is
    # planned first and its share reserved in this model's plan
    for plan in (PLAN, dict(PLAN, backend="sim", device_mem="64M")):
        with spillway.Model(tiny_path, draft_model=tiny_path, draft_max=4, **plan) as m:
            for p in PROMPTS:
                assert m(p, max_tokens=24, temperature=0) == \
                    model(p, max_tokens=24, temperature=0)
            st = m.stats()
            assert st["draft_max"] == 4 and st["accepted_tokens"] > 0
            budget = m.plan()["budget"]
            assert budget.get("drafter_bytes", 0) > 0 if budget["has_device"] else \
                "drafter" not in budget


def test_draft_errors(tiny_path):
    with pytest.raises(ValueError, match="one drafter"):
        spillway.Model(tiny_path, draft_ngram=True, draft_model=tiny_path, **PLAN)
    with pytest.raises(ValueError, match="draft_max"):
        spillway.Model(tiny_path, draft_ngram=True, draft_max=17, **PLAN)


def test_assistant_greedy_equals_plain():
    """The tiny Gemma 4 with its assistant (tools/golden/make_tiny_assistant.py),
    on the host and on the simulated device, where the plan reserves it."""
    target = os.path.join(DATA, "tiny", "gemma4-kv-hf")
    assistant = os.path.join(DATA, "tiny", "gemma4-kv-assistant-hf")
    for plan in (PLAN, dict(PLAN, backend="sim", device_mem="64M")):
        with spillway.Model(target, **plan) as plain, \
                spillway.Model(target, draft_model=assistant, draft_max=4, **plan) as m:
            for p in PROMPTS:
                assert m(p, max_tokens=24, temperature=0) == \
                    plain(p, max_tokens=24, temperature=0)
            st = m.stats()
            assert st["draft_max"] == 4 and st["verify_forwards"] > 0
            assert st["accepted_tokens"] > 0
    with pytest.raises(ValueError, match="no budget of its own"):
        spillway.Model(target, draft_model=assistant, draft_device_mem="1M", **PLAN)
    with pytest.raises(spillway.SpillwayError, match="not its assistant"):
        spillway.Model(target, draft_model=os.path.join(DATA, "tiny", "gemma4-ple-assistant-hf"),
                       **PLAN)
