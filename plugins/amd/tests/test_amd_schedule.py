"""The pipelined MFMA loop's schedule on gfx942 (compile-only: read from the assembly, nothing is
run): the global loads of the next iteration, then the whole MFMA block of this one at priority 1
(``s_setprio 1`` after its first MFMA, ``s_setprio 0`` after its last), its operands' LDS reads
waited on a few at a time (``lgkmcnt`` counting down between MFMAs), and only after the block the
wait for the global loads, the barrier and the LDS stores."""
import re

import pytest

from test_amd_pipeline import _compile, _execution_order


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


@pytest.mark.parametrize("num_stages", [2, 3])
def test_mfma_block_between_the_loads_and_their_wait(num_stages):
    asm = _compile("hip:gfx942", num_stages=num_stages).asm["amdgcn"]
    order = _execution_order(asm)
    lines = [ln.strip() for ln in asm.splitlines()]
    loads = [i for i, m in enumerate(order) if m.startswith(("global_load", "buffer_load"))]
    mats = [i for i, m in enumerate(order) if m.startswith("v_mfma")]
    writes = [i for i, m in enumerate(order) if m.startswith("ds_write")]
    prio = [i for i, m in enumerate(order) if m == "s_setprio"]
    assert loads and mats and writes and len(prio) == 2
    # loads, then the MFMA block (priority raised after its first MFMA, lowered after its last)
    assert max(loads) < min(mats) < prio[0] < max(mats) < prio[1]
    # the stores of the next stage (and so the wait for its loads) come after the whole block
    assert prio[1] < min(writes)
    # the MFMA operands' LDS reads are waited on a few at a time, not all at once
    waits = [ln for ln in lines if ln.startswith("s_waitcnt") and "lgkmcnt" in ln]
    counts = {int(re.search(r"lgkmcnt\((\d+)\)", w).group(1)) for w in waits}
    assert len(counts - {0}) >= 2, waits


def test_no_priority_outside_loops_or_on_wmma():
    """A loop that is not pipelined (nothing to overlap) and RDNA3's WMMA keep the default priority."""
    assert "s_setprio" not in _compile("hip:gfx1100").asm["amdgcn"]
    assert "s_setprio" not in _compile("hip:gfx942", num_stages=1).asm["amdgcn"]
