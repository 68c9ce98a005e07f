"""One pytest test per conformance case (collected by ``conformance/conftest.py``)."""
import dataclasses

import pytest

from conformance.cases import by_id
from conformance.runner import BAD, EXCLUDED, run_case


def test_case(conformance_case_id, conformance_backend, conformance_seed):
    case = by_id()[conformance_case_id]
    # run without the exclusion list: pytest's strict xfail does the bookkeeping
    ctx = dataclasses.replace(conformance_backend, exclusions=[])
    res = run_case(case, ctx, conformance_seed)
    assert res.status not in (EXCLUDED,)
    if res.status in BAD:
        pytest.fail(f"{res.message} (seed {conformance_seed})", pytrace=False)
