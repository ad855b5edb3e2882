# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every playbook that reads the cluster with sge_queue_facts passes the cluster's SGE_ROOT, cell,
qmaster port (``cluster_sge_qmaster_port``) and the ``command_timeout`` variable (docs/elastic.md): a static check of playbooks/ (issue 7)."""

from __future__ import annotations

import os

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
MODULE = "gridengine.balancer.sge_queue_facts"
WANTED = {
    "sge_root": "{{ cluster_sge_root | default('/var/lib/gridengine') }}",
    "sge_cell": "{{ cluster_sge_cell | default('default') }}",
    # a cell whose port is in no settings.sh (a site that sets it in the daemons' environment):
    # without it the read went to Grid Engine's standard port, another cell's qmaster if one runs
    "sge_qmaster_port": "{{ cluster_sge_qmaster_port | default(omit) }}",
    "command_timeout": "{{ command_timeout | default(omit) }}",
}


def _tasks(node):
    """Every task of a playbook or task file, blocks and plays walked."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if any(k in node for k in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always")):
            for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
                yield from _tasks(node.get(key) or [])
        else:
            yield node


def calls():
    found = []
    for top, _dirs, files in os.walk(os.path.join(REPO, "playbooks")):
        for name in sorted(files):
            if not name.endswith((".yml", ".yaml")):
                continue
            path = os.path.join(top, name)
            with open(path) as handle:
                data = yaml.safe_load(handle)
            for task in _tasks(data):
                if MODULE in task:
                    found.append((os.path.relpath(path, REPO), task.get("name"), task[MODULE] or {},
                                  task.get("delegate_to")))
    return found


def test_every_sge_queue_facts_call_in_the_playbooks_passes_root_cell_port_and_command_timeout():
    found = calls()
    # loadbalance_poll, reconcile, node_add, fairshare
    assert len(found) >= 4, found
    wrong = ["%s: %s: %s=%r" % (path, name, key, args.get(key))
             for path, name, args, delegate in found for key, value in wanted(delegate).items()
             if args.get(key) != value]
    assert wrong == [], "\n".join(wrong)


def wanted(delegate):
    """The arguments a read must pass; one delegated to another cluster's master (the burst
    partner's poll reading its home, ``delegate_to: "{{ burst_home_master }}"``) takes that
    host's cluster_* variables."""
    if not delegate:
        return WANTED
    host = delegate.strip("{} ")
    return dict((key, value.replace("{{ cluster_", "{{ hostvars[%s].cluster_" % host)) for key, value in WANTED.items())


def test_a_delegated_read_takes_the_other_masters_variables():
    assert wanted('{{ burst_home_master }}')["sge_cell"] == \
        "{{ hostvars[burst_home_master].cluster_sge_cell | default('default') }}"
    assert wanted(None) is WANTED


def test_the_checker_finds_a_call_without_command_timeout(tmp_path):
    play = [{"hosts": "x", "tasks": [{"block": [{"name": "read", MODULE: {"sge_root": "/x"}}]}]}]
    tasks = list(_tasks(play))
    assert [t["name"] for t in tasks] == ["read"] and "command_timeout" not in tasks[0][MODULE]
