# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/loadbalance.yml with ``cluster_provider=ec2`` while the EC2 API throttles or fails.

The real playbook through ``ansible-playbook``, as in test_loadbalance_faults.py: the qmaster is
this machine over a local connection with a fake ``SGE_ROOT`` (recorded SoGE 8.1.9 ``qstat`` and
``qhost``; every Grid Engine program that changes something refuses and logs), lock, journal and
state under the temporary directory. EC2 is moto_server on 127.0.0.1 (real AWS cannot be reached
from here) behind the fault proxy (ec2_fault_proxy.py), which throttles or breaks the calls the
test names. A node the poll launches gets an address in 198.51.100.0/24 (TEST-NET-2, routed
nowhere), and ``ansible_ssh_executable`` of the nodes' group is a script that logs and answers
"Connection refused": a join stops at "Wait until the node answers over ssh", so no stage that
writes /etc/hosts, exports or Grid Engine objects can run, and no packet leaves the machine. The
fake Grid Engine programs are also first in PATH (the roles run ``qconf`` from PATH).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import reconcile as reconcile_policy
from ansible_collections.gridengine.balancer.tests.unit.plugins.modules.ec2_fault_proxy import (  # noqa: F401 pylint: disable=unused-import
    INTERNAL, REQUEST_LIMIT, ec2_proxy, moto_required, moto_server)
from ansible_collections.gridengine.balancer.tests.unit.plugins.modules.ec2_moto import IMAGE_ID, REGION
from ansible_collections.gridengine.balancer.tests.unit.playbooks.test_loadbalance_faults import (
    FIXTURES, OTHER_PROGRAMS, acted, balancer_plays, make_qmaster, names, result)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
PLAYBOOK = os.path.join(REPO, "playbooks", "loadbalance.yml")
CLUSTER = "faketest"
QSTAT = "cat %s\n" % os.path.join(FIXTURES, "qstat_u_f_r.xml")
LIST_TASK = "List the instances of the cluster %s" % CLUSTER
WAIT_SSH = "Wait until the node answers over ssh"


def network(proxy):
    """A VPC in TEST-NET-2 (no route leads there), made directly on moto (not through the proxy)."""
    ec2 = proxy.moto.client()
    vpc = ec2.create_vpc(CidrBlock="198.51.100.0/24")["Vpc"]["VpcId"]
    return ec2.create_subnet(VpcId=vpc, CidrBlock="198.51.100.128/26",
                             AvailabilityZone=REGION + "a")["Subnet"]["SubnetId"]


def launch_direct(proxy, subnet, node, cluster=CLUSTER):
    """An instance tagged as a node, launched directly on moto (the state before the poll)."""
    tags = [{"Key": "gridengine-balancer:cluster", "Value": cluster},
            {"Key": "gridengine-balancer:node", "Value": node}, {"Key": "Name", "Value": node}]
    res = proxy.moto.client().run_instances(ImageId=IMAGE_ID, InstanceType="t3.micro", MinCount=1, MaxCount=1,
                                            SubnetId=subnet, TagSpecifications=[{"ResourceType": "instance",
                                                                                 "Tags": tags}])
    return res["Instances"][0]["InstanceId"]


def live(proxy, node=None):
    out = proxy.moto.live_instances(CLUSTER)
    return sorted(i["InstanceId"] for i in out
                  if node is None or {t["Key"]: t["Value"] for t in i["Tags"]}["gridengine-balancer:node"] == node)


def setup(tmp_path, proxy):
    """The fake qmaster (with act_qmaster), the fake ssh, the qmaster's directory; the subnet."""
    root = make_qmaster(tmp_path, QSTAT)
    (root / "default" / "common" / "act_qmaster").write_text("vm\n")
    ssh = tmp_path / "fake-ssh"
    ssh.write_text('#!/bin/sh\necho "ssh $*" >> %s\n'
                   'echo "ssh: connect to host (fake) port 22: Connection refused" >&2\nexit 255\n'
                   % (tmp_path / "ssh.log"))
    ssh.chmod(0o755)
    (tmp_path / "qmaster").mkdir(mode=0o700)
    return network(proxy)


def run_poll(tmp_path, proxy, subnet, check=False, **extra):
    qmaster = tmp_path / "qmaster"
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"children": {CLUSTER: {"children": {
        CLUSTER + "_master": {"hosts": {"vm": {"ansible_connection": "local",
                                               "ansible_python_interpreter": sys.executable}}},
        # a node the poll launches is added to this group: its ssh is the fake one
        CLUSTER + "_nodes": {"vars": {"ansible_connection": "ssh",
                                      "ansible_ssh_executable": str(tmp_path / "fake-ssh")}}}}}}}))
    variables = {
        "cluster": CLUSTER, "cluster_sge_root": str(tmp_path / "sge"), "cluster_provider": "ec2",
        "lock_path": str(qmaster / "lock.json"), "journal_path": str(qmaster / "journal.json"),
        "state_path": str(qmaster / "state.json"),
        # one node more than the cluster has (vm, node002): the poll grows by one
        "min_nodes": 3, "max_nodes": 3, "interval": 60, "idle_time": 600, "stabilization_time": 0,
        "node_join_boot_timeout": 1,
        # boot_timeout stays at its default (1200 s): a node whose launch failed is not counted as
        # booting, so what holds growth after a failed launch is the launch back-off (300 s)
        "provider_ec2_endpoint_url": proxy.endpoint, "provider_ec2_region": REGION,
        "provider_ec2_access_key": "testing", "provider_ec2_secret_key": "testing",
        # botocore's own retries off: every call the proxy logs is one of the modules' (jittered) calls
        "provider_ec2_aws_config": {"retries": {"total_max_attempts": 1}},
        "provider_ec2_image_id": IMAGE_ID, "provider_ec2_instance_types": ["t3.micro"],
        "provider_ec2_subnet_ids": [subnet], "provider_ec2_api_retries": 2, "provider_ec2_api_retry_delay": 0.01,
        "provider_ec2_poll_interval": 0.05, "provider_ec2_wait_timeout": 20,
        "provider_ec2_state_path": str(qmaster / "reconcile.json"),
    }
    variables.update(extra)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_HOST_KEY_CHECKING="0", ANSIBLE_PIPELINING="1",
               ANSIBLE_SSH_CONTROL_PATH_DIR=str(tmp_path / "cp"))
    env.pop("ANSIBLE_CONFIG", None)
    # the roles run qconf, qmod, ... from PATH (node_leave: argv [qconf, -sel]): the fake ones come first,
    # so that a poll that wrongly reached a node operation would meet the refusing fakes, never this
    # machine's Grid Engine
    env["PATH"] = "%s:%s" % (tmp_path / "sge" / "bin" / "lx-amd64", env.get("PATH", ""))
    tool = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    argv = [tool, "-i", str(inventory), PLAYBOOK, "-e", json.dumps(variables)] + (["--check"] if check else [])
    proc = subprocess.run(argv, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    try:
        out = json.loads(proc.stdout)
    except ValueError:  # pragma: no cover - shown when the play itself broke
        raise AssertionError("ansible-playbook printed no JSON (rc %d):\n%s\n%s"
                             % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    tasks = []
    for task in balancer_plays(out)[0]["tasks"]:
        for host, res in task["hosts"].items():  # delegated tasks report under the play's host
            tasks.append((task["task"]["name"].split(" : ")[-1], res if host == "vm" else dict(res, host=host)))
    calls = (tmp_path / "calls.log").read_text().splitlines() if (tmp_path / "calls.log").exists() else []
    return proc.returncode, tasks, calls, proc


def failed_task(tasks):
    """The task that stopped the play (the last one failed: a block's rescue may follow a first one)."""
    failed = [(name, res) for name, res in tasks if res.get("failed")]
    assert failed, names(tasks)
    return failed[-1]


def ec2_calls(proxy):
    return [(c["action"], c["did"]) for c in proxy.log]


def released(tasks, tmp_path):
    res = result(tasks, "Release the cluster's lock")
    return res["changed"] is True and not res.get("failed") and not (tmp_path / "qmaster" / "lock.json").exists()


@pytest.mark.parametrize("rule, code, listings", [
    (dict(INTERNAL, times=-1), "InternalError", 3),   # 1 call + 2 jittered retries, all 500
    ({"fault": "foreign", "times": -1}, "MalformedAnswer", 1),  # 200 OK, but no EC2 answer
], ids=["internal-error", "200-not-an-answer"])
def test_poll_stops_before_acting_when_the_instances_cannot_be_listed(tmp_path, ec2_proxy, rule, code, listings):
    subnet = setup(tmp_path, ec2_proxy)
    # the world before the poll: node002 is an EC2 node the balancer launched and saw join
    iid = launch_direct(ec2_proxy, subnet, "node002")
    now = time.time()
    reconcile_state = tmp_path / "qmaster" / "reconcile.json"
    reconcile_state.write_text(json.dumps({
        "schema": 1, "consecutive_failures": 0, "backoff_until": None, "failures": [], "counted": [],
        "instances": {"node002": {"instance_id": iid, "first_seen": now - 3600, "joined_at": now - 3500}}}))
    before = reconcile_state.read_bytes()
    ec2_proxy.script(dict(rule, action="DescribeInstances"))

    rc, tasks, calls, proc = run_poll(tmp_path, ec2_proxy, subnet)

    assert rc == 2, proc.stderr[-2000:]
    name, failed = failed_task(tasks)
    assert name == LIST_TASK, names(tasks)
    assert failed["msg"].startswith("cannot list the instances of cluster %s: DescribeInstances failed with %s: "
                                    % (CLUSTER, code)), failed["msg"]
    assert failed["msg"].endswith("; no instance list returned") and "instances" not in failed
    assert ec2_calls(ec2_proxy) == [("DescribeInstances", "error" if code == "InternalError" else "foreign")] * listings
    assert calls == []  # Grid Engine was not even read
    ran = names(tasks)
    assert "Compare instances, exec hosts and state" not in ran and "Decide what to add and remove" not in ran
    assert not acted(tasks)
    assert reconcile_state.read_bytes() == before
    assert not (tmp_path / "qmaster" / "state.json").exists() and not (tmp_path / "qmaster" / "journal.json").exists()
    assert released(tasks, tmp_path)
    assert live(ec2_proxy) == [iid]
    # what an empty list would have done (the bug this test guards): node002's exec host removed
    wrongly = reconcile_policy.reconcile([], ["vm", "node002"], json.loads(before), {"master": "vm"}, now)
    assert wrongly["remove"] == ["node002"]


def test_growth_while_run_instances_is_throttled(tmp_path, ec2_proxy):
    subnet = setup(tmp_path, ec2_proxy)
    qmaster = tmp_path / "qmaster"

    # poll 1: RunInstances throttled for good: the launch fails after 1 + 2 retries, nothing is left,
    # the failure starts the back-off, the join stays in the journal, no ssh, nothing in Grid Engine
    ec2_proxy.script(dict(REQUEST_LIMIT, action="RunInstances", times=-1))
    rc, tasks, calls, proc = run_poll(tmp_path, ec2_proxy, subnet)
    assert rc == 2, proc.stderr[-2000:]
    name, failed = failed_task(tasks)
    assert name == "Fail with the reason", names(tasks)
    assert failed["msg"].startswith("EC2 launch of node003 failed (throttling): node003: no instance launched "
                                    "(throttling); attempt 1: RunInstances (t3.micro in %s) failed with "
                                    "RequestLimitExceeded" % subnet), failed["msg"]
    assert ("no instance of it is left, nothing was registered in Grid Engine; launches back off for 5m00s more "
            "after 1 consecutive failure (last: throttling on node003: RequestLimitExceeded)") in failed["msg"]
    launch = result(tasks, "Launch the instance of node003")
    assert launch["failed"] is True and launch["error_kind"] == "throttling"
    runs = ec2_proxy.calls("RunInstances")
    assert [c["did"] for c in runs] == ["error"] * 3 and len({c["client_token"] for c in runs}) == 1
    assert ec2_proxy.calls("TerminateInstances") == [] and live(ec2_proxy) == []
    saved = json.loads((qmaster / "reconcile.json").read_text())
    assert saved["consecutive_failures"] == 1 and saved["failures"][0]["kind"] == "throttling"
    assert [op["node"] for op in json.loads((qmaster / "journal.json").read_text())["operations"]] == ["node003"]
    assert not (tmp_path / "ssh.log").exists() and not [c for c in calls if c.split()[0] in OTHER_PROGRAMS]
    assert released(tasks, tmp_path)

    # poll 2 in check mode, within the back-off: it says it would add no node and writes nothing
    written = {name: (qmaster / name).read_bytes() for name in ("state.json", "reconcile.json", "journal.json")}
    ec2_proxy.clear()
    rc, tasks, calls, proc = run_poll(tmp_path, ec2_proxy, subnet, check=True)
    assert rc == 0, proc.stderr[-2000:]
    plan = result(tasks, "Decide what to add and remove")["plan"]
    assert plan["add"] == 0 and plan["summary"].startswith("hold: launches back off for "), plan["summary"]
    assert "check mode: would add no node" in result(tasks, "Show what check mode would do")["msg"]  # a line
    assert {name: (qmaster / name).read_bytes() for name in written} == written
    assert ec2_calls(ec2_proxy) == [("DescribeInstances", "forwarded")]

    # poll 2, within the back-off: the failed join leaves the journal, growth is held by the back-off
    # (the plan says so), RunInstances is not called at all: the only EC2 call of the poll is the listing.
    # node003's request is no longer counted as booting (its launch failed)
    ec2_proxy.clear()
    ec2_proxy.script(dict(REQUEST_LIMIT, action="RunInstances", times=-1))
    rc, tasks, calls, proc = run_poll(tmp_path, ec2_proxy, subnet)
    assert rc == 0, proc.stderr[-2000:]
    assert result(tasks, "Compare instances, exec hosts and state")["drop_journal"] == ["node003"]
    plan = result(tasks, "Decide what to add and remove")["plan"]
    assert plan["add"] == 0 and plan["nodes"]["booting"] == 0, plan["summary"]
    hold = [i["reason"] for i in plan["items"] if i["action"] == "hold"]
    assert hold[0].startswith("hold: launches back off for ") and "(would add 1 node: " in hold[0], hold
    assert any(i["reason"].startswith("no longer booting: 1 node requested ") and
               i["reason"].endswith(", whose launch failed (throttling on node003: RequestLimitExceeded)")
               for i in plan["items"]), plan["items"]
    shown = result(tasks, "Show the plan and the reason for each item")["msg"]  # one line per item
    assert shown[0].startswith("%s: hold: launches back off for " % CLUSTER), shown
    assert result(tasks, "Add nodes").get("skipped") is True
    assert ec2_calls(ec2_proxy) == [("DescribeInstances", "forwarded")]
    assert json.loads((qmaster / "journal.json").read_text())["operations"] == []
    assert json.loads((qmaster / "state.json").read_text())["booting"] == []
    assert not acted(tasks) and released(tasks, tmp_path)

    # the back-off's 5 minutes pass (its end moved into the past in the state file)
    saved = json.loads((qmaster / "reconcile.json").read_text())
    saved["backoff_until"] = time.time() - 1
    (qmaster / "reconcile.json").write_text(json.dumps(saved))

    # poll 3, minutes after poll 1 (well within boot_timeout, 1200 s): the plan adds a node again.
    # RunInstances throttled twice, then served: one instance, one client token, the join is
    # in the journal; the node is reached over ssh (the fake one refuses: it is "still booting")
    ec2_proxy.clear()
    ec2_proxy.script(dict(REQUEST_LIMIT, action="RunInstances", times=2))
    rc, tasks, calls, proc = run_poll(tmp_path, ec2_proxy, subnet)
    assert rc == 2, proc.stderr[-2000:]
    plan = result(tasks, "Decide what to add and remove")["plan"]
    assert plan["add"] == 1 and plan["nodes"]["booting"] == 0, plan["summary"]
    assert failed_task(tasks)[0] == WAIT_SSH, names(tasks)
    runs = ec2_proxy.calls("RunInstances")
    assert [c["did"] for c in runs] == ["error", "error", "forwarded"] and len({c["client_token"] for c in runs}) == 1
    launched = live(ec2_proxy, "node003")
    assert len(launched) == 1 and ec2_proxy.calls("TerminateInstances") == []
    assert [op["node"] for op in json.loads((qmaster / "journal.json").read_text())["operations"]] == ["node003"]
    address = result(tasks, "Launch the instance of node003")["address"]
    assert address.startswith("198.51.100.") and address in (tmp_path / "ssh.log").read_text()
    assert not [c for c in calls if c.split()[0] in OTHER_PROGRAMS]
    assert released(tasks, tmp_path)

    # the next poll: its reconciliation finds node003 by its tags, known from the journal's join,
    # booting (not an unknown instance to report, not one to terminate); its journal resume then
    # adopts the instance instead of launching one (ec2_node, test_ec2_cloud_faults.py
    # ::test_adopt_after_a_throttled_launch_calls_run_instances_no_more)
    instances = [{"instance_id": i["InstanceId"], "node": "node003", "state": i["State"]["Name"],
                  "launch_time": i["LaunchTime"].timestamp()} for i in ec2_proxy.moto.live_instances(CLUSTER)]
    journal = json.loads((qmaster / "journal.json").read_text())["operations"]
    state = json.loads((qmaster / "reconcile.json").read_text())
    nxt = reconcile_policy.reconcile(instances, ["vm", "node002"], state, {"master": "vm"}, time.time(), journal=journal)
    assert [(a["action"], a["node"], a["instance_id"]) for a in nxt["actions"]] == [("wait", "node003", launched[0])]
