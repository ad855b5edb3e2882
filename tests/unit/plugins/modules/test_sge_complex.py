# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gridengine.balancer.sge_complex, driven by test_sge_complex.yaml."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gridengine.balancer.plugins.modules import sge_complex
from ansible_collections.gridengine.balancer.tests.unit.plugins.modules.sge_admin_table import (
    load_cases,
    run_case,
)

CASES = load_cases(__file__)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_sge_complex(case, monkeypatch):
    run_case(sge_complex, case, monkeypatch)
