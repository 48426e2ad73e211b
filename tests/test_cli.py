import subprocess
import sys


def test_help_lists_only_working_commands():
    out = subprocess.run([sys.executable, "-m", "cli.main", "--help"], capture_output=True, text=True, check=True).stdout
    assert "promem" in out
    from cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        help_text = p.format_help()
        assert help_text.strip(), name
