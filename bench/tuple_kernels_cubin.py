"""Build the tuple kernels (conformance category ``tuples`` and tests/test_tuples.py) for a target
without a GPU and check that each kernel's parameters are its tuples' run-time leaves.

    python bench/tuple_kernels_cubin.py [--target cuda:90] [--out DIR]

Writes each kernel's PTX and cubin to DIR (default: a temporary folder) and prints the
parameter count of each entry.  On a GPU machine, ``python -m pytest tests/test_tuples.py`` and
``python -m conformance --backend nvidia -k tuples/`` run them."""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import tritium  # noqa: E402
from tritium.compiler import ASTSource  # noqa: E402

from conformance.cases import tuples as cases  # noqa: E402

# (kernel, signature with tuple structure, constexprs (by name or by path), expected leaf count)
BUILDS = [
    (cases.nested_args_kernel, {"ptrs": ("*fp32", ("*fp32", "fp32")), "out_ptr": "*fp32",
                                "meta": ("i32", "constexpr", "constexpr")}, {(2, 1): 128, (2, 2): None}, 5),
    (cases.namedtuple_kernel, {"src": cases.View("*fp32", ("i32", "i32"), ("i32", "constexpr")),
                               "dst": cases.View("*fp32", ("i32", "i32"), ("constexpr", "i32"))},
     {"BM": 32, "BN": 32, (0, 2, 1): 1, (1, 2, 0): 1}, 8),
    (cases.loop_carried_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "rows": "i32"}, {"N": 64}, 3),
    (cases.static_index_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "outs": ("*fp32",) * 4}, {"N": 64}, 6),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="cuda:90")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = pathlib.Path(a.out or tempfile.mkdtemp(prefix="tuple_cubin_"))
    out.mkdir(parents=True, exist_ok=True)
    bad = 0
    for fn, sig, cx, leaves in BUILDS:
        k = tritium.compile(ASTSource(fn, sig, cx), target=a.target)
        ptx = k.asm.get("ptx", "")
        params = ptx.split(".entry", 1)[1].split(")", 1)[0].count(".param") if ".entry" in ptx else len(k.runtime_signature)
        ok = len(k.runtime_signature) == leaves and (not ptx or params >= leaves)
        bad += not ok
        for st, v in k.asm.items():
            (out / f"{fn.__name__}.{st}").write_bytes(v if isinstance(v, (bytes, bytearray)) else v.encode())
        print(f"{'ok ' if ok else 'BAD'} {fn.__name__}: {len(k.runtime_signature)} run-time parameters "
              f"{k.metadata['arg_names']}, {params} in the entry; stages {list(k.asm)}")
    print(f"written to {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
