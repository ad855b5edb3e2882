# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/loadbalance.yml of a burst partner (burst_home set, docs/burst.md), through
ansible-playbook, without a cluster: two fake qmasters (test_loadbalance_faults.make_qmaster),
the partner's and the home's, each host with its own cluster_sge_root in the inventory.

A home that does not answer stops the routing, not the partner's own poll; a wrong burst_home
fails the run, naming it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ansible_collections.gridengine.balancer.tests.unit.playbooks.test_loadbalance_faults import (
    DEAD_QMASTER, FIXTURES, PLAYBOOK, make_qmaster, playbook_env)

QSTAT_OK = "cat %s\n" % os.path.join(FIXTURES, "qstat_u_f_r.xml")


def run_partner_poll(tmp_path, home_qstat, **extra):
    partner_dir, home_dir = tmp_path / "partner", tmp_path / "home"
    partner_dir.mkdir()
    home_dir.mkdir()
    make_qmaster(partner_dir, QSTAT_OK)
    make_qmaster(home_dir, home_qstat)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = tmp_path / "inventory.json"
    partner_host = dict(local, cluster_sge_root=str(partner_dir / "sge"))
    home_host = dict(local, cluster_sge_root=str(home_dir / "sge"))
    inventory.write_text(json.dumps({"all": {"children": {
        "burst": {"children": {"burst_master": {"hosts": {"vm-burst": partner_host}}}},
        "home": {"children": {"home_master": {"hosts": {"vm-home": home_host}}}},
    }}}))
    state = tmp_path / "qmaster"
    variables = {"cluster": "burst", "cluster_provider": "nonexistent", "burst_home": "home",
                 "lock_path": str(state / "lock.json"), "journal_path": str(state / "journal.json"),
                 "state_path": str(state / "state.json"), "burst_state_path": str(state / "burst.json"),
                 "max_nodes": 2, "min_nodes": 1, "slots_per_node": 1, "interval": 60, "idle_time": 600,
                 "stabilization_time": 300}
    variables.update(extra)
    tool = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    proc = subprocess.run([tool, "-i", str(inventory), PLAYBOOK, "-e", json.dumps(variables)], cwd=str(tmp_path),
                          env=playbook_env(), capture_output=True, text=True, timeout=300, check=False)
    out = json.loads(proc.stdout[proc.stdout.index("{\n"):])
    tasks = [(t["task"]["name"], t["hosts"].get("vm-burst", {})) for t in out["plays"][1]["tasks"]]
    home_calls = home_dir / "calls.log"
    return proc, tasks, home_calls.read_text().split("\n") if home_calls.exists() else []


def test_a_home_that_does_not_answer_stops_the_routing_not_the_partners_poll(tmp_path):
    proc, tasks, home_calls = run_partner_poll(tmp_path, DEAD_QMASTER)
    assert proc.returncode == 0, proc.stdout[-3000:]
    done = dict(tasks)
    assert done["Burst - read the home cell's queue"]["failed"] is True
    warning = done["Burst - say why no job was routed in this poll"]["msg"]
    assert warning[0].startswith("WARNING: burst routing failed") and "Connection refused" in warning[1]
    assert "Decide what to add and remove" in done and not done["Decide what to add and remove"].get("failed")
    assert not [c for c in home_calls if c.startswith("qalter")]


def test_a_wrong_burst_home_fails_the_run_naming_it(tmp_path):
    proc, tasks, _calls = run_partner_poll(tmp_path, QSTAT_OK, burst_home="nosuchcluster")
    assert proc.returncode != 0
    done = dict(tasks)
    assert "burst_home=\"nosuchcluster\" must name another cluster" in done["Burst - a wrong setting is not a passing failure"]["msg"]
    assert "Decide what to add and remove" not in done
