"""Helpers: launch hand-written TTIR on the interpreter through its plugin's driver."""
from __future__ import annotations

import numpy as np
import pytest

from tritium.backends.interpreter import plugin


@pytest.fixture(scope="session")
def driver():
    return plugin.tritium_driver(backend="interpreter")


@pytest.fixture
def run(driver):
    def launch(ttir: str, grid, *args, name=None):
        kernel = driver.load_binary(name or "", ttir, {}, 0)
        driver.make_launcher(kernel, {}, {})(grid, None, list(args))
    return launch


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
