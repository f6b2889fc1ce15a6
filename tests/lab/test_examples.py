"""Every example in examples/lab gives the results stored in tests/lab/expected/examples.json.

The lab's figures are the product (examples/lab/README.md quotes them); a refactor of the
coordinator, the member state machines or the assignors must leave them as they are, and a
change meant to alter them regenerates the file (`.venv/bin/python tests/lab/lab_examples.py
--write`) in the same commit, so the diff shows what moved.
"""

from __future__ import annotations

import copy

import pytest

from tests.lab.lab_examples import differences, examples, expected, run_example

EXAMPLES = examples()


def test_every_example_has_stored_results_and_every_stored_one_an_example():
    assert EXAMPLES, "no examples/lab/*.yaml found"
    assert sorted(expected()) == sorted(p.name for p in EXAMPLES)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_an_example_gives_its_stored_results(path):
    assert differences(path.name, run_example(path), expected().get(path.name)) == []


def test_a_changed_figure_or_detail_is_named():
    stored = expected()["crash.yaml"]
    changed = copy.deepcopy(stored)
    changed[0]["summary"]["moved"] += 1
    changed[0]["sha256"]["timeline"] = "0" * 64
    found = differences("crash.yaml", stored, changed)
    assert found == [f"crash.yaml {stored[0]['summary']['group']}: moved {stored[0]['summary']['moved']}, "
                     f"stored {stored[0]['summary']['moved'] + 1}",
                     f"crash.yaml {stored[0]['summary']['group']}: timeline differs"]
