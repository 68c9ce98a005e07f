"""The pass manager: order, verification, dumps, timing and error reporting."""
import pytest

from tritium.passes import PassError, PassManager
from tritium.ttir.passes import DCE

SRC = """
tt.func public @my_kernel(%x: i32) {
  %c = arith.constant 3 : i32
  %y = arith.addi %x, %c : i32
  tt.return
}"""


class Record:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def run(self, module):
        self.log.append(self.name)


class Boom:
    name = "boom"

    def run(self, module):
        raise ValueError("bad thing")


def test_runs_passes_in_order(parse):
    log = []
    PassManager("p", [Record("a", log), Record("b", log)]).run(parse(SRC))
    assert log == ["a", "b"]


def test_internal_error_names_pass_and_kernel(parse):
    with pytest.raises(PassError, match=r"pass 'boom' \(p pipeline\) failed on kernel 'my_kernel': ValueError: bad thing"):
        PassManager("p", [Boom()]).run(parse(SRC))


def test_verify_each_catches_broken_ir(parse):
    class Break:
        name = "break"

        def run(self, module):
            func = next(iter(module.body.block.ops))
            func.body.block.erase_op(func.body.block.last_op)  # drop the terminator

    with pytest.raises(PassError, match="'break'"):
        PassManager("p", [Break()], verify_each=True).run(parse(SRC))
    PassManager("p", [Break()], verify_each=False).run(parse(SRC))  # not checked when off


def test_dump_ir_to_stderr(parse, capsys, monkeypatch):
    monkeypatch.setenv("TRITIUM_DUMP_IR", "1")
    PassManager("ttir", [DCE()]).run(parse(SRC))
    err = capsys.readouterr().err
    assert "IR Dump Before dce (ttir) on my_kernel" in err and "IR Dump After dce (ttir) on my_kernel" in err
    before, after = err.split("IR Dump After")
    assert "arith.addi" in before and "arith.addi" not in after


def test_dump_ir_filters_by_kernel_name(parse, capsys, monkeypatch):
    monkeypatch.setenv("TRITIUM_DUMP_IR", "other")
    PassManager("ttir", [DCE()]).run(parse(SRC))
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("TRITIUM_DUMP_IR", "my_ker")
    PassManager("ttir", [DCE()]).run(parse(SRC))
    assert "IR Dump Before dce" in capsys.readouterr().err


def test_dump_ir_dir(parse, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRITIUM_DUMP_IR_DIR", str(tmp_path))
    PassManager("ttir", [DCE()]).run(parse(SRC))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["my_kernel.ttir.00.dce.after.mlir", "my_kernel.ttir.00.dce.before.mlir"]
    assert capsys.readouterr().err == ""


def test_pass_timing_table(parse, capsys, monkeypatch):
    monkeypatch.setenv("TRITIUM_PASS_TIMING", "1")
    PassManager("ttir", [DCE(), Record("rec", [])]).run(parse(SRC))
    err = capsys.readouterr().err
    assert "ttir pipeline timing (my_kernel)" in err
    assert any(line.startswith("dce") and line.endswith("%") for line in err.splitlines())
    assert "total" in err
