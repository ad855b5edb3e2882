# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The elastic policy after a failed launch (``decide(..., launches=...)``).

A plan that adds N nodes records N booting requests. When a launch fails (the EC2 provider's
RunInstances refused) the node never appears: the request must stop counting as booting, so that
the launch back-off (plugins/plugin_utils/policy/reconcile.py), not ``boot_timeout``, holds growth.
The back-off and the failures come from the real reconciliation policy, as in the poll
(playbooks/tasks/loadbalance_poll.yml passes reconcile_plan's ``backoff`` and ``failures``).
"""

from __future__ import annotations

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import elastic
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import reconcile
from ansible_collections.gridengine.balancer.tests.unit.plugins.plugin_utils.test_elastic import (
    T0, check_plan, qw, reasons, snap, workers)

#: the defaults that matter here: boot_timeout 1200 s, stabilization 300 s, back-off 300 s
CONFIG = {"master": "master", "max_nodes": 10, "min_nodes": 1, "job_wait_time": 60, "managed_hosts": ["node*"]}
THROTTLED = {"node": "node002", "kind": "throttling", "code": "RequestLimitExceeded", "message": "Rate exceeded"}


class Cluster(object):
    """The master, node001 and a job waiting long enough for one more node; the two states of a poll."""

    def __init__(self, config=None):
        self.config = dict(CONFIG, **(config or {}))
        self.hosts = workers(1, used=2, jobs=1)
        self.elastic = {}
        self.reconcile = {}

    def fail_launch(self, node, at, failure=None):
        """The provider_ec2 role's rescue: reconcile_plan mode=record_failure (the controller's clock)."""
        self.reconcile, backoff = reconcile.record_failure(self.reconcile, dict(failure or THROTTLED, node=node),
                                                           {}, at)
        return backoff

    def poll(self, now, launches=True):
        """One poll: the reconciliation (no instance is left), then the decision."""
        launch_info = None
        if launches:
            out = reconcile.reconcile([], self.hosts, self.reconcile, {"master": "master"}, now)
            self.reconcile = out["state"]
            launch_info = {"backoff": out["backoff"], "failures": out["failures"]}
        plan = elastic.decide(snap(self.hosts, pending=[qw(7, 600, slots=2)], now=now), self.elastic,
                              self.config, now, launches=launch_info)
        check_plan(plan)
        self.elastic = plan["state"]
        return plan


def test_failed_launch_is_not_booting_and_growth_resumes_when_the_back_off_ends():
    cluster = Cluster()
    plan = cluster.poll(T0)
    assert plan["add"] == 1 and cluster.elastic["booting"] == [{"requested_at": T0}]
    assert cluster.elastic["last_launch_failure"] is None  # no failure seen yet
    # the launch of node002 fails 20 s later: a back-off of 300 s, until T0 + 320
    assert cluster.fail_launch("node002", T0 + 20)["active"]

    # within the back-off: growth held, and the back-off is the reason; the request is not booting
    for now in (T0 + 60, T0 + 120, T0 + 300):
        plan = cluster.poll(now)
        assert plan["add"] == 0 and plan["nodes"]["booting"] == 0, plan["summary"]
        hold = reasons(plan, "hold")
        assert len(hold) == 1 and hold[0].startswith(
            "hold: launches back off for %s more after 1 consecutive failure (last: throttling on node002: "
            "RequestLimitExceeded) (would add 1 node: 2 slots waiting" % reconcile.fmt_duration(T0 + 320 - now)), hold
        assert plan["summary"].startswith("hold: launches back off for ")
        assert cluster.elastic["booting"] == [] and cluster.elastic["last_change"] == T0
    assert cluster.elastic["last_launch_failure"] == T0 + 20

    # the back-off is over (T0 + 320), well within boot_timeout (T0 + 1200): a node is added again
    plan = cluster.poll(T0 + 360)
    assert plan["add"] == 1, plan["items"]
    assert reasons(plan, "add")[0].startswith("add 1 node: 2 slots waiting")
    assert cluster.elastic["booting"] == [{"requested_at": T0 + 360}]

    # that launch succeeds; the node has not joined yet: it counts as booting (the old failure,
    # still in the reconciliation's history, is not taken again)
    plan = cluster.poll(T0 + 420)
    assert plan["add"] == 0 and plan["nodes"]["booting"] == 1
    assert "1 already booting" in reasons(plan, "none")[0]


def test_the_poll_after_the_failure_says_the_request_is_no_longer_booting():
    cluster = Cluster()
    cluster.poll(T0)
    cluster.fail_launch("node002", T0 + 20)
    plan = cluster.poll(T0 + 60)
    assert ("no longer booting: 1 node requested 1m ago, whose launch failed (throttling on node002: "
            "RequestLimitExceeded)") in reasons(plan, "none")
    assert not any("never joined" in w for w in plan["warnings"])


def test_without_launches_the_request_counts_until_boot_timeout_as_before():
    cluster = Cluster()
    cluster.poll(T0, launches=False)
    cluster.fail_launch("node002", T0 + 20)
    plan = cluster.poll(T0 + 360, launches=False)
    assert plan["add"] == 0 and plan["nodes"]["booting"] == 1
    assert "last_launch_failure" not in cluster.elastic
    plan = cluster.poll(T0 + 1260, launches=False)
    assert plan["add"] == 1 and any("never joined (boot_timeout 20m)" in w for w in plan["warnings"])


def test_a_launched_node_that_has_not_joined_still_counts_as_booting():
    cluster = Cluster()
    cluster.poll(T0)
    for now in (T0 + 60, T0 + 600, T0 + 1200):
        plan = cluster.poll(now)
        assert plan["add"] == 0 and plan["nodes"]["booting"] == 1
    plan = cluster.poll(T0 + 1260)  # then boot_timeout, as before
    assert plan["add"] == 1 and plan["nodes"]["booting"] == 0


def test_the_requests_after_the_failed_one_were_never_launched():
    # a plan of 3: node002 joins, node003's launch fails, so node004's is never tried (the poll stops)
    cluster = Cluster({"add_nodes_per_iter": 3})
    cluster.hosts = workers(1, used=2, jobs=1)
    plan = elastic.decide(snap(cluster.hosts, pending=[qw(7, 600, slots=2, tasks=3)]), {}, cluster.config, T0,
                          launches={"backoff": {}, "failures": []})
    assert plan["add"] == 3
    cluster.elastic = plan["state"]
    cluster.hosts["node002"] = workers(1)["node001"]
    cluster.fail_launch("node003", T0 + 90)
    plan = cluster.poll(T0 + 120)
    assert plan["nodes"]["booting"] == 0 and plan["add"] == 0
    assert "no longer booting: 2 nodes requested 2m ago, whose launch failed (throttling on node003: " \
           "RequestLimitExceeded)" in reasons(plan, "none")
    assert cluster.elastic["nodes"]["node002"]["joined"] == T0


def test_a_timeout_is_a_launch_that_succeeded_its_request_waits_for_boot_timeout():
    cluster = Cluster()
    cluster.poll(T0)
    cluster.fail_launch("node002", T0 + 930, {"kind": "timeout", "code": "ProvisioningTimeout"})
    plan = cluster.poll(T0 + 960)
    assert plan["nodes"]["booting"] == 1 and plan["add"] == 0
    assert cluster.elastic["last_launch_failure"] == T0 + 930


def test_a_state_written_before_launches_were_known_takes_the_failures_so_far_as_seen():
    cluster = Cluster()
    cluster.poll(T0, launches=False)  # an older balancer: no last_launch_failure in the state
    cluster.fail_launch("node002", T0 + 20)
    plan = cluster.poll(T0 + 360)
    assert plan["add"] == 0 and plan["nodes"]["booting"] == 1  # as before the fix, for this one
    assert cluster.elastic["last_launch_failure"] == T0 + 20
    # a later failure is taken
    plan = cluster.poll(T0 + 1260)
    assert plan["add"] == 1
    cluster.fail_launch("node002", T0 + 1280)
    plan = cluster.poll(T0 + 1320)
    assert plan["nodes"]["booting"] == 0 and plan["add"] == 0
    assert reasons(plan, "hold")[0].startswith("hold: launches back off for 9m20s more after 2 consecutive failures")


def test_bad_mark_in_the_state_warns_and_counts_the_failures_as_seen():
    cluster = Cluster()
    cluster.poll(T0)
    cluster.elastic["last_launch_failure"] = "yesterday"
    cluster.fail_launch("node002", T0 + 20)
    plan = cluster.poll(T0 + 360)
    assert plan["nodes"]["booting"] == 1
    assert "state: 'last_launch_failure' is not a time; ignored (the launch failures known now count as seen)" \
        in plan["warnings"]


def test_back_off_holds_growth_back_to_min_nodes_too():
    cluster = Cluster({"min_nodes": 4})
    cluster.fail_launch("node002", T0 - 10)
    plan = cluster.poll(T0)
    assert plan["add"] == 0 and cluster.elastic["booting"] == []
    assert reasons(plan, "hold")[0].endswith(
        "(would add 2 nodes: 2 up + 0 booting < min_nodes 4 (the master counts as a node))")


@pytest.mark.parametrize("launches, message", [
    ([], "launches: must be a mapping with 'backoff' and 'failures', got list"),
    ({"backoff": "on"}, "launches: 'backoff' must be a mapping (reconcile_plan's backoff), got str"),
    ({"failures": {}}, "launches: 'failures' must be a list (reconcile_plan's failures), got dict"),
    ({"failures": [{"node": "node002"}]}, "launches: failures[0] must be a mapping with a 'time' in seconds"),
])
def test_malformed_launches_is_an_error_naming_it(launches, message):
    with pytest.raises(ValueError) as err:
        elastic.decide(snap(workers(1)), {}, CONFIG, T0, launches=launches)
    assert str(err.value).startswith(message)
