"""Helpers shared by the CLI tests: run ``kipcheck`` in-process and read one error line."""
from kipcheck.cli import main


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err):
    """The single line a bad-input error prints (no traceback)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]
