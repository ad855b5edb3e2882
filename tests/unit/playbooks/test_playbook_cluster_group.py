# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every playbook that takes ``-e cluster=NAME`` fails a wrong, empty or ambiguous cluster group
(non-zero exit, the group named) before anything else happens (issue 22).

Ansible skips a play whose ``hosts:`` matches no host and exits 0: with the check inside the play
on ``NAME_master``, ``-e cluster=nosuch`` was a green run that did nothing (an AWX schedule green
forever). Each playbook runs here as an installed user runs it: by its collection name, with an
empty ``ansible.cfg`` (not the repository's) and the default callback, against a temporary
inventory whose qmaster hosts are unreachable (ssh to port 1 of 127.0.0.1, where nothing listens),
so that a check that let a run through could touch nothing; the output must show that no task
reached them either.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

# the playbooks that act on a cluster, and their cluster name rule (each keeps its own)
LOOSE = "loose"  # ^[A-Za-z0-9][A-Za-z0-9_.-]*\Z (loadbalance.yml's rule)
STRICT = "strict"  # ^[A-Za-z_][A-Za-z0-9_]*\Z (local_cluster.yml's)
TAKE_A_CLUSTER = {
    "loadbalance": LOOSE, "fairshare": LOOSE, "node_add": LOOSE, "node_remove": LOOSE, "rebalance": LOOSE,
    "multicluster": STRICT, "local_cluster": STRICT, "burst": STRICT,
}
NO_CLUSTER = {"awx_setup"}  # AWX objects on localhost: no cluster
# these two build or tear down a cluster on this machine: the tests never let them get past the
# check (no run with a good cluster), even against unreachable hosts
BUILDS_A_CLUSTER = {"multicluster", "local_cluster", "burst"}

# what each playbook needs besides the cluster, so that a run that passes the check gets to the qmaster
OTHER_INPUTS = {"node_remove": ["-e", "node=node009"], "fairshare": ["-e", '{"fairshare_desired": {"alpha": 100}}']}

UNREACHABLE = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
               "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes"}


@pytest.fixture(name="workdir")
def fixture_workdir(tmp_path):
    """An empty ansible.cfg and an inventory: goodone (one qmaster), my-cluster (one qmaster, a
    name only the loose rule accepts), twomasters (two), nomaster (an empty group)."""
    (tmp_path / "ansible.cfg").write_text("")
    inventory = {"all": {"children": {
        "goodone": {"children": {"goodone_master": {"hosts": {"qm-good": UNREACHABLE}},
                                 "goodone_nodes": {"hosts": {"node-good": UNREACHABLE}}}},
        "my-cluster": {"children": {"my-cluster_master": {"hosts": {"qm-dash": UNREACHABLE}}}},
        "twomasters": {"children": {"twomasters_master": {"hosts": {"qm-one": UNREACHABLE, "qm-two": UNREACHABLE}}}},
        "nomaster": {"children": {"nomaster_master": {"hosts": {}}, "nomaster_nodes": {"hosts": {"node-x": UNREACHABLE}}}},
    }}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    return tmp_path


def run(workdir, playbook, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(workdir / "ansible.cfg"),  # empty: Ansible's defaults, not the repo's
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOST_KEY_CHECKING="0", ANSIBLE_RETRY_FILES_ENABLED="0")
    tool = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    argv = [tool, "-i", str(workdir / "inventory.json"), "gridengine.balancer.%s" % playbook] + list(args)
    proc = subprocess.run(argv, cwd=str(workdir), env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc, proc.stdout + proc.stderr


def recap_hosts(output):
    """The hosts of the PLAY RECAP (none when the run stopped before any play)."""
    recap = output.split("PLAY RECAP", 1)[1] if "PLAY RECAP" in output else ""
    return sorted(re.findall(r"^(\S+)\s+: ok=", recap, re.MULTILINE))


def assert_stopped_at_the_check(proc, output, words):
    assert proc.returncode != 0, output[-3000:]
    flat = " ".join(output.split())  # the message may be wrapped
    for word in words:
        assert word in flat, (word, output[-3000:])
    # nothing else happened: no task reached a qmaster or node host
    assert recap_hosts(output) in ([], ["localhost"]), output[-3000:]
    assert "UNREACHABLE" not in output, output[-3000:]


def test_every_playbook_is_covered():
    found = {name[:-4] for name in os.listdir(os.path.join(REPO, "playbooks")) if name.endswith(".yml")}
    assert found == set(TAKE_A_CLUSTER) | NO_CLUSTER, found


@pytest.mark.parametrize("playbook", sorted(TAKE_A_CLUSTER))
def test_a_wrong_empty_or_ambiguous_cluster_fails_first(workdir, playbook):
    extra = OTHER_INPUTS.get(playbook, [])

    proc, output = run(workdir, playbook, "-e", "cluster=nosuch", *extra)
    assert_stopped_at_the_check(proc, output, ["no group 'nosuch_master'"])
    assert "skipping: no hosts matched" not in output  # the old green run

    proc, output = run(workdir, playbook, "-e", "cluster=", *extra)
    assert_stopped_at_the_check(proc, output, ["cluster is empty", "'_master'"])

    proc, output = run(workdir, playbook, "-e", "cluster=twomasters", *extra)
    assert_stopped_at_the_check(proc, output, ["'twomasters_master'", "ambiguous", "2 hosts (qm-one, qm-two)"])


def test_an_empty_group_or_no_cluster_at_all_fails_first(workdir):
    """The same check in every playbook (common/cluster_group.yml): one playbook is enough here."""
    proc, output = run(workdir, "loadbalance", "-e", "cluster=nomaster")
    assert_stopped_at_the_check(proc, output, ["'nomaster_master'", "has no host"])
    proc, output = run(workdir, "loadbalance")
    assert_stopped_at_the_check(proc, output, ["cluster is not set", "NAME_master"])


@pytest.mark.parametrize("playbook", sorted(TAKE_A_CLUSTER))
def test_each_playbook_keeps_its_own_name_rule(workdir, playbook):
    """my-cluster (its group exists, one host) passes loadbalance.yml's rule, not local_cluster.yml's."""
    extra = OTHER_INPUTS.get(playbook, [])
    if TAKE_A_CLUSTER[playbook] == STRICT:
        proc, output = run(workdir, playbook, "-e", "cluster=my-cluster", "--check", *extra)
        assert_stopped_at_the_check(proc, output, ['cluster="my-cluster" is not a cluster name this playbook accepts',
                                                   "'my-cluster_master'"])
    else:
        proc, output = run(workdir, playbook, "-e", "cluster=my-cluster", "--check", *extra)
        # past the check: the play on the qmaster started (and found it unreachable)
        assert "ok: [localhost]" in output, output[-3000:]
        assert recap_hosts(output) == ["localhost", "qm-dash"], output[-3000:]


@pytest.mark.parametrize("playbook", sorted(set(TAKE_A_CLUSTER) - BUILDS_A_CLUSTER))
def test_a_good_cluster_passes_the_check(workdir, playbook):
    extra = OTHER_INPUTS.get(playbook, [])
    proc, output = run(workdir, playbook, "-e", "cluster=goodone", "--check", *extra)
    assert "ok: [localhost]" in output, output[-3000:]  # the check play passed
    assert recap_hosts(output) == ["localhost", "qm-good"], output[-3000:]  # then the qmaster's play ran


@pytest.mark.parametrize("playbook", sorted(TAKE_A_CLUSTER))
def test_a_limit_without_localhost_still_fails(workdir, playbook):
    """--limit (an AWX job template's limit) leaves the first play, on localhost, without a host:
    the play on the qmaster refuses the group itself (its `hosts:` fails to template)."""
    extra = OTHER_INPUTS.get(playbook, [])
    proc, output = run(workdir, playbook, "-e", "cluster=nosuch", "--limit", "qm-good", *extra)
    assert_stopped_at_the_check(proc, output, ["no group 'nosuch_master'"])
    if playbook == "loadbalance":
        proc, output = run(workdir, playbook, "-e", "cluster=twomasters", "--limit", "qm-one", *extra)
        assert_stopped_at_the_check(proc, output, ["'twomasters_master'", "ambiguous"])
