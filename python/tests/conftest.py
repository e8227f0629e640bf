"""Shared fixtures: the tiny Gemma 3 of the C tests (tests/data/tiny), and
the `spillway` command when SPILLWAY_CLI names it (CI: the release build),
to compare with."""
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.environ.get("SW_TEST_DATA", os.path.join(ROOT, "tests", "data"))


@pytest.fixture(scope="session")
def tiny_path():
    return os.path.join(DATA, "tiny", "gemma3.gguf")


@pytest.fixture(scope="session")
def model(tiny_path):
    import spillway
    m = spillway.Model(tiny_path, backend="cpu", n_ctx=256, n_seq=2, n_threads=1)
    yield m
    m.close()


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("SPILLWAY_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("SPILLWAY_CLI does not name a built `spillway` to compare with")
    return path
