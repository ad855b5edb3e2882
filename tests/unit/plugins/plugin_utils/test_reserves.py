# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster reserves (plugins/plugin_utils/policy/reserves.py): the three steps on the paper's
4-node example and on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import reserves

D = np.array([60.0, 30.0, 10.0])


def four_nodes():
    """Static 60/30/10 on 4 nodes, class 3 only on node 4 (its usage: 2.5% cluster-wide)."""
    r = np.tile(D, (4, 1))
    u = np.array([[200 / 3, 100 / 3, 0.0]] * 3 + [[60.0, 30.0, 10.0]])
    return r, u


def test_k_matrix_follows_the_definition():
    u = np.array([[0.0, 30.0, 9.99], [70.0, 30.2, 20.0]])
    k = reserves.k_matrix(u, D)
    assert k[0] == pytest.approx([5.0, 0.0, 0.5])
    assert k[1, 0] == pytest.approx(-5.0)           # 500 * (60 - 70) / 60 = -83 -> -5
    assert k[1, 1] == pytest.approx(500 * (30 - 30.2) / 30)  # -3.33, inside the +-5
    assert k[1, 2] == pytest.approx(-5.0)


def test_four_node_example_reaches_zero_deviation():
    r, u = four_nodes()
    V, R1 = reserves.step1(r, u, D)
    assert V == pytest.approx(0.0, abs=1e-6)
    R, V2 = reserves.cluster_reserves(r, u, D)
    assert V2 == pytest.approx(V)
    # class 3 did not use its 10 on nodes 1-3 (r > u): at most 1 there, so node 4 carries it
    assert np.all(R[:3, 2] <= 1.0 + 1e-6)
    assert R[3, 2] == pytest.approx(37.0, abs=1e-4)
    assert R.sum(axis=0) == pytest.approx(4 * D, abs=1e-4)
    assert np.all(R.sum(axis=1) <= 100.0 + 1e-6)
    assert np.all(R >= 1.0 - 1e-9)
    assert np.all(R1.sum(axis=1) <= 100.0 + 1e-6)


def test_step2_keeps_close_to_usage_when_nothing_binds():
    r = np.array([[50.0, 50.0]])
    u = np.array([[50.0, 50.0]])
    R, V = reserves.cluster_reserves(r, u, [50.0, 50.0])
    assert V == pytest.approx(0.0, abs=1e-9)
    assert R[0] == pytest.approx([50.0, 50.0], abs=1e-6)


def test_infeasible_share_gives_the_least_deviation_and_step3_fills_nodes():
    # every class idle (r > u) and using 5: R <= 5 everywhere, so the columns reach at most
    # 10 against targets 120, 60, 20: V = 110 + 50 + 10 = 170
    r = np.tile(D, (2, 1))
    u = np.full((2, 3), 5.0)
    V, _R = reserves.step1(r, u, D)
    assert V == pytest.approx(170.0, abs=1e-6)
    R, _v = reserves.cluster_reserves(r, u, D)
    # step 3 hands each node's unassigned 85 to the idle classes below their share
    assert R.sum(axis=1) == pytest.approx([100.0, 100.0], abs=1e-6)
    assert np.all(R.sum(axis=0) <= 2 * D + 1e-6)


def test_step3_never_exceeds_the_missing_amount():
    R = np.array([[10.0, 10.0], [10.0, 10.0]])
    r = np.full((2, 2), 50.0)
    u = np.full((2, 2), 10.0)
    out = reserves.step3(R, r, u, np.array([50.0, 50.0]))
    assert out.sum(axis=0) == pytest.approx([100.0, 100.0])
    out = reserves.step3(np.array([[10.0, 60.0]]), np.array([[50.0, 50.0]]),
                         np.array([[10.0, 60.0]]), np.array([50.0, 50.0]))
    # class 2 is not idle (r <= u): only class 1 gets the 30 free, up to its missing 40
    assert out[0] == pytest.approx([40.0, 60.0])


def test_usage_below_one_does_not_make_the_problem_infeasible():
    r = np.array([[60.0, 30.0, 10.0]])
    u = np.array([[99.5, 0.5, 0.0]])
    R, _v = reserves.cluster_reserves(r, u, D)
    assert np.all(R >= 1.0 - 1e-9)


@pytest.mark.parametrize("r,u,d,needle", [
    ([[1.0, 2.0]], [[1.0]], [50.0, 50.0], "r and u"),
    ([[1.0, 2.0]], [[1.0, 2.0]], [100.0], "D: expected 2"),
    ([[1.0, 2.0]], [[1.0, 2.0]], [60.0, 60.0], "must sum to 100"),
    ([[1.0, 2.0]], [[1.0, 2.0]], [100.0, 0.0], "positive desired"),
    ([[1.0, -2.0]], [[1.0, 2.0]], [50.0, 50.0], "r: values"),
])
def test_bad_input(r, u, d, needle):
    with pytest.raises(reserves.ReservesError, match=needle):
        reserves.cluster_reserves(r, u, d)
