"""docs/formats.md stays in step with the code, and nothing in the repository points outside it."""
from __future__ import annotations

import re
import subprocess

from core.formats import METRIC_KEYS, Decision, Event, Instance, Intention
from tests.support.data import REPO

DOC = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")


def documented(key: str) -> bool:
    return f"`{key}`" in DOC or f'"{key}"' in DOC or f"**{key}**" in DOC


def test_every_model_key_and_metric_is_documented():
    keys = {*Event.model_fields, *Instance.model_fields, *Intention.model_fields, *Decision.model_fields}
    assert not [k for k in sorted(keys) if not documented(k)]
    assert not [k for k in METRIC_KEYS if not documented(k)]


def test_every_validation_rule_is_documented():
    src = (REPO / "bench" / "validate.py").read_text(encoding="utf-8")
    rules = set(re.findall(r'self\.add\(\s*"([a-z_]+)"', src))
    rules |= set(re.findall(r'Violation\([^,]+,[^,]+,[^,]+,\s*"([a-z_]+)"', src))
    # the two rule names built from a variable
    rules |= {"event_id_unique", "intention_id_unique", "formation_ref", "state_change_ref"}
    assert len(rules) > 20 and not [r for r in sorted(rules) if not documented(r)]


def test_no_tracked_file_reads_a_sibling_folder():
    git = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    files = git.stdout.split() if git.returncode == 0 else []
    if not files:  # not a git checkout (an unpacked archive): walk the tree instead
        files = [str(p.relative_to(REPO)) for p in REPO.rglob("*") if p.is_file() and ".venv" not in p.parts]
    offenders = []
    for name in files:
        # CI alone may point PROMEM_DATA at its copy of the public data beside the checkout.
        if name in (".ci/run", "tests/test_docs_formats.py"):
            continue
        try:
            text = (REPO / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        if "../shared" in text or "shared/spec" in text or "shared/examples" in text:
            offenders.append(name)
    assert offenders == []
