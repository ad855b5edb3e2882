# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Scripts make their scratch directories with mktemp, never under a fixed name in a shared
place (DESIGN.md habit 15; issue 20). scripts/sanity.sh used ${TMPDIR:-/tmp}/gridengine-balancer-sanity,
which it removed and re-created: another user's directory or link of that name was used."""

from __future__ import annotations

import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def _read(*parts):
    with open(os.path.join(REPO, *parts), encoding="utf-8") as handle:
        return handle.read()


def test_sanity_uses_a_fresh_private_work_directory():
    text = _read("scripts", "sanity.sh")
    assert not re.search(r"/tmp\}?/gridengine-balancer-sanity[\"}\s]", text)
    assert re.search(r'WORK=\$\(mktemp -d "\$\{TMPDIR:-/tmp\}/gridengine-balancer-sanity\.XXXXXXXX"\)', text)
    assert "trap 'rm -rf \"$WORK\"' EXIT" in text
    assert 'WORK=$SANITY_WORKDIR' in text        # the override still works


def test_the_nodes_python_script_runs_the_target_side_tests():
    text = _read("scripts", "unit_nodes_python.sh")
    assert "/usr/bin/python3" in text and "--system-site-packages" in text
    assert "tests/unit/plugins/module_utils" in text
