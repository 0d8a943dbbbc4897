"""The size rule holds (scripts/check_sizes.py, as CI runs it): no module over 500 lines and no
function over 80 lines or a complexity over 25 without a one-line reason at its top and its
place in scripts/size_exemptions.txt; the check would catch one that has none, a new reason the
list does not name, and a listed place that no longer needs one."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
spec = importlib.util.spec_from_file_location("check_sizes", ROOT / "scripts" / "check_sizes.py")
assert spec is not None and spec.loader is not None
check_sizes = importlib.util.module_from_spec(spec)
sys.modules["check_sizes"] = check_sizes  # a dataclass looks its module up there
spec.loader.exec_module(check_sizes)


def test_the_size_rule_holds_over_every_module() -> None:
    found = check_sizes.breaches(check_sizes.sources(), check_sizes.exemptions())
    assert [str(b) for b in found] == []
    assert len(check_sizes.exemptions()) <= check_sizes.MAX_EXEMPTIONS


def test_the_check_catches_a_long_function_and_a_long_module_without_a_reason(
    tmp_path: Path,
) -> None:
    long_body = "".join(f"    x{i} = {i}\n" for i in range(90))
    branches = "".join(f"    if a == {i}:\n        return {i}\n" for i in range(30))
    module = ROOT / "skillpress" / "_size_probe.py"
    try:
        module.write_text(
            '"""probe"""\n\n\ndef long() -> None:\n'
            + long_body
            + "\n\ndef branchy(a: int) -> int:\n"
            + branches
            + "    return 0\n"
            + "\n\ndef said() -> None:\n    # size: a probe\n"
            + long_body
            + "".join(f"\n# {i}" for i in range(400))
            + "\n"
        )
        found = [b.what for b in check_sizes.breaches([module])]
    finally:
        module.unlink()
    assert found[0].startswith("module of ")
    assert sorted(found[1:]) == [
        "function branchy: 62 lines, complexity 31",
        "function long: 91 lines, complexity 1",
    ]


def test_a_new_reason_fails_unless_listed_and_a_stale_one_fails_too(tmp_path: Path) -> None:
    long_body = "".join(f"    x{i} = {i}\n" for i in range(90))
    module = ROOT / "skillpress" / "_size_probe.py"
    shown = "skillpress/_size_probe.py"
    try:
        module.write_text(
            '"""probe"""\n\n\ndef said() -> None:\n    # size: a probe\n'
            + long_body
            + "\n\ndef small() -> None:\n    # size: no longer needed\n    pass\n"
        )
        unlisted = [b.what for b in check_sizes.breaches([module], set())]
        listed = [
            b.what
            for b in check_sizes.breaches(
                [module], {(shown, "said"), (shown, "small"), (shown, "gone")}
            )
        ]
    finally:
        module.unlink()
    assert unlisted == [
        "function said: a `# size:` the exemptions list does not name",
        "function small: a `# size:` the exemptions list does not name",
    ]
    assert listed == [
        "gone is within the rule now: drop its exemption",
        "small is within the rule now: drop its exemption",
    ]
