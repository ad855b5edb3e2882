# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ec2 provider on the real local Grid Engine cluster, with moto_server as EC2.

Real AWS cannot be reached from the test machine, so EC2 is moto_server on 127.0.0.1 (a child
process; tests/unit/plugins/modules/ec2_moto.py), the one stand-in of this test. Everything else
is real: the VPC's subnet 10.77.0.128/26 lies on the local bridge sgebr0, and the test-only
option provider_ec2_local_boot boots a namespace node (provider_local) at each instance's private
address, so node_join, a real job, node_leave's drain and the terminate run against the real
qmaster and a real execd.

    .venv/bin/pytest tests/integration/test_ec2_moto.py -m integration

Errors are injected by the moto server's fault layer; after each one the test checks that no
instance is left running, no namespace node of that name exists and Grid Engine does not know it.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ipaddress
import json
import os
import tempfile
import time

import pytest
import yaml

from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import (
    CLUSTER, JOB_USER, REPO, STATE_DIR, _run, _tool)
from ansible_collections.gridengine.balancer.tests.integration.test_local_cluster import cluster_nodes  # noqa: F401 pylint: disable=unused-import
from ansible_collections.gridengine.balancer.tests.unit.plugins.modules.ec2_moto import MotoEc2, SUBNET_CIDR
from ansible_collections.gridengine.balancer.plugins.module_utils import local_node as ln

pytestmark = pytest.mark.integration

VARS_FILE = os.path.join(REPO, 'tests', 'integration', 'files', 'ec2_vars.yml')
RECONCILE_PLAYBOOK = os.path.join(REPO, 'tests', 'integration', 'files', 'reconcile_poll.yml')
NODE = 'ec2node1'


@pytest.fixture(scope='module')
def ec2(cluster_nodes):  # noqa: F811 pylint: disable=redefined-outer-name,unused-argument
    try:
        import moto  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        pytest.fail("moto is not installed (.venv/bin/pip install 'moto[server]', see requirements.txt)")
    server = MotoEc2().start()
    work = tempfile.mkdtemp(prefix='geb-ec2-')
    vars_path = os.path.join(work, 'ec2.json')
    try:
        net = server.network()
        with open(VARS_FILE) as handle:
            extra = yaml.safe_load(handle)
        extra.update(provider_ec2_endpoint_url=server.endpoint, provider_ec2_subnet_ids=[net['subnet_id']],
                     provider_ec2_security_group_ids=[net['security_group_id']],
                     provider_ec2_state_path=os.path.join(work, 'reconcile.json'),
                     state_path=os.path.join(work, 'state.json'), journal_path=os.path.join(work, 'journal.json'),
                     lock_path=os.path.join(work, 'lock.json'), drain_settle_time=2)
        with open(vars_path, 'w') as handle:
            json.dump(extra, handle)
        yield server, vars_path, work
    finally:
        # whatever a failed test left: no namespace node of ours, no exec host, no instance
        if os.path.exists(os.path.join(work, 'journal.json')):
            os.unlink(os.path.join(work, 'journal.json'))
        _playbook('playbooks/node_remove.yml', '-e', 'node=%s' % NODE, vars_path=vars_path)
        server.stop()


def _playbook(playbook, *args, vars_path=None):
    argv = [_tool('ansible-playbook'), playbook, '-e', 'cluster=%s' % CLUSTER]
    if vars_path:
        argv += ['-e', '@%s' % vars_path]
    argv += list(args)
    return _run(argv, timeout=900)


def _exec_hosts():
    proc = _run(['qconf', '-sel'])
    return set(proc.stdout.split()) if proc.returncode == 0 else set()


def _qhost_load(host):
    proc = _run(['qhost', '-h', host])
    lines = [ln_ for ln_ in proc.stdout.splitlines() if ln_.split() and ln_.split()[0] == host]
    return lines[0].split()[6] if lines else None


def _local_node_running(name):
    for record in ln.list_records(STATE_DIR):
        if record.get('name') == name and ln.running_pid(STATE_DIR, record):
            return True
    return False


def _tag(instance, key):
    return {t['Key']: t['Value'] for t in instance.get('Tags', [])}.get(key)


def _nothing_left(server, name=NODE):
    assert [i['InstanceId'] for i in server.live_instances(CLUSTER) if _tag(i, 'gridengine-balancer:node') == name] == []
    assert name not in _exec_hosts()
    assert not _local_node_running(name)
    with open('/etc/hosts') as handle:
        assert not any(line.split()[1:2] == [name] for line in handle if line.strip() and not line.startswith('#'))


def _job_runs_on(node):
    """A real job pinned to node ends there with exit 0 (its qacct record says so)."""
    jobdir = tempfile.mkdtemp(prefix='geb-ec2job-')
    os.chmod(jobdir, 0o755)
    script = os.path.join(jobdir, 'job.sh')
    with open(script, 'w') as handle:
        handle.write('#!/bin/sh\nhostname\nexit 0\n')
    os.chmod(script, 0o755)
    sub = _run(['su', '-', JOB_USER, '-c', 'qsub -terse -l h=%s -o /dev/null -e /dev/null %s' % (node, script)])
    assert sub.returncode == 0, sub.stderr
    job = int(sub.stdout.strip().split('.')[0])
    deadline = time.time() + 180
    acct = None
    while time.time() < deadline:
        acct = _run(['qacct', '-j', str(job)])
        if acct.returncode == 0 and 'exit_status' in acct.stdout:
            break
        time.sleep(3)
    assert acct is not None and acct.returncode == 0, 'no accounting record of job %d' % job
    fields = dict(line.split(None, 1) for line in acct.stdout.splitlines() if len(line.split(None, 1)) == 2)
    assert fields['hostname'].strip() == node and fields['exit_status'].split()[0] == '0', acct.stdout


def _address_and_hosts_line(server, node):
    """The node's instance: one, tagged, in the /26; its namespace node runs and /etc/hosts names it."""
    (inst,) = [i for i in server.live_instances(CLUSTER) if _tag(i, 'gridengine-balancer:node') == node]
    address = ipaddress.ip_address(inst['PrivateIpAddress'])
    assert address in ipaddress.ip_network(SUBNET_CIDR)
    assert _local_node_running(node)
    with open('/etc/hosts') as handle:
        assert any(line.split()[:2] == [str(address), node] for line in handle)
    return inst


# The explicit stage playbooks with the ec2 provider (node_add.yml, then node_remove.yml). In the
# slow tier since 2026-11-28 (CI's 35 minutes): the core tier's balancer poll below makes the same
# journey through loadbalance.yml (instance in the /26, /etc/hosts, a real job, removal and a
# terminated instance), and the molecule scenario provider_ec2 launches and terminates.
@pytest.mark.slow
def test_join_run_drain_terminate(ec2):
    server, vars_path, _work = ec2
    proc = _playbook('playbooks/node_add.yml', '-e', 'node=%s' % NODE, vars_path=vars_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    # one instance, tagged, in the /26; the namespace node answers at its private address
    inst = _address_and_hosts_line(server, NODE)
    assert NODE in _exec_hosts()
    deadline = time.time() + 120
    while _qhost_load(NODE) in (None, '-') and time.time() < deadline:
        time.sleep(2)
    assert _qhost_load(NODE) not in (None, '-'), 'no load report from %s' % NODE

    # a real job on the new node, ending with exit 0
    _job_runs_on(NODE)

    # drain and remove: node_leave, then the provider terminates the instance
    proc = _playbook('playbooks/node_remove.yml', '-e', 'node=%s' % NODE, vars_path=vars_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    state = server.client().describe_instances(InstanceIds=[inst['InstanceId']])['Reservations'][0]['Instances'][0]
    assert state['State']['Name'] == 'terminated'
    _nothing_left(server)


# One code in the core tier (a capacity error, HTTP 500); the limit (400), spot, throttling and
# vCPU codes take the same path once classified (unit tests of the classes:
# tests/unit/plugins/module_utils/test_ec2_nodes.py) and run in the slow tier (CI's 35 minutes).
@pytest.mark.parametrize('code, status', [
    ('InsufficientInstanceCapacity', 500),
    pytest.param('SpotMaxPriceTooLow', 400, marks=pytest.mark.slow),
    pytest.param('InstanceLimitExceeded', 400, marks=pytest.mark.slow),
    pytest.param('VcpuLimitExceeded', 400, marks=pytest.mark.slow),
    pytest.param('RequestLimitExceeded', 503, marks=pytest.mark.slow),
])
def test_capacity_errors_leave_nothing_and_back_off(ec2, code, status):
    server, vars_path, work = ec2
    state_path = os.path.join(work, 'reconcile.json')
    if os.path.exists(state_path):
        os.unlink(state_path)  # each error starts without back-off
    server.inject({'action': 'RunInstances', 'code': code, 'status': status, 'times': -1})
    try:
        proc = _playbook('playbooks/node_add.yml', '-e', 'node=%s' % NODE, vars_path=vars_path)
    finally:
        server.clear_faults()
    out = ' '.join((proc.stdout + proc.stderr).split())  # ansible wraps long messages
    assert proc.returncode != 0
    assert code in out and 'no instance of it is left, nothing was registered in Grid Engine' in out, out[-4000:]
    _nothing_left(server)
    with open(state_path) as handle:
        saved = json.load(handle)
    assert saved['consecutive_failures'] == 1 and saved['failures'][-1]['code'] == code
    # the next launch is refused while the back-off lasts, without calling RunInstances
    calls = server.faults()['calls'].get('RunInstances', 0)
    proc = _playbook('playbooks/node_add.yml', '-e', 'node=%s' % NODE, vars_path=vars_path)
    out = ' '.join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0 and 'not tried: launches back off' in out, out[-3000:]
    assert server.faults()['calls'].get('RunInstances', 0) == calls
    _nothing_left(server)
    os.unlink(state_path)
    # node_add's journal keeps the failed join (a poll's reconciliation drops it during the back-off)
    journal = os.path.join(work, 'journal.json')
    if os.path.exists(journal):
        os.unlink(journal)


# Slow tier since 2026-11-27 (CI's 35 minutes, after the kill test joined): a fault (an instance
# gone behind the balancer's back, one started by someone else); the reconcile step itself runs in
# the core tier in test_one_balancer_poll_reconciles_and_grows_with_ec2, its rules in unit tests.
@pytest.mark.slow
def test_reconcile_reports_unknown_and_removes_exec_host_of_a_gone_instance(ec2):
    server, vars_path, work = ec2
    # an instance someone else started with the cluster's tag: reported, never terminated
    ec2c = server.client()
    with open(vars_path) as handle:
        subnet = json.load(handle)['provider_ec2_subnet_ids'][0]
    stray = ec2c.run_instances(ImageId='ami-12c6146b', MinCount=1, MaxCount=1, SubnetId=subnet, TagSpecifications=[{
        'ResourceType': 'instance', 'Tags': [{'Key': 'gridengine-balancer:cluster', 'Value': CLUSTER},
                                             {'Key': 'gridengine-balancer:node', 'Value': 'stray1'}]}])['Instances'][0]
    # a node that joined
    proc = _playbook('playbooks/node_add.yml', '-e', 'node=%s' % NODE, vars_path=vars_path)
    assert proc.returncode == 0, proc.stdout[-4000:]
    proc = _playbook(RECONCILE_PLAYBOOK, vars_path=vars_path)
    assert proc.returncode == 0, proc.stdout[-4000:]
    out = ' '.join(proc.stdout.split())
    assert 'instance %s (stray1, running) is tagged for this cluster but the balancer did not launch it' \
        % stray['InstanceId'] in out
    # its instance is terminated behind the balancer's back (a spot interruption, the console)
    (inst,) = [i for i in server.live_instances(CLUSTER) if _tag(i, 'gridengine-balancer:node') == NODE]
    ec2c.terminate_instances(InstanceIds=[inst['InstanceId']])
    proc = _playbook(RECONCILE_PLAYBOOK, vars_path=vars_path)
    assert proc.returncode == 0, proc.stdout[-4000:]
    # moto may still list the terminated instance, or no longer list it: either way it is gone
    out = ' '.join(proc.stdout.split())
    assert any('exec host %s: its instance %s is gone (%s); removed from Grid Engine' % (NODE, inst['InstanceId'], how)
               in out for how in ('terminated', 'no longer listed')), out[-3000:]
    _nothing_left(server)
    # the stray instance is still there
    assert stray['InstanceId'] in [i['InstanceId'] for i in server.live_instances(CLUSTER)]
    ec2c.terminate_instances(InstanceIds=[stray['InstanceId']])
    os.unlink(os.path.join(work, 'reconcile.json'))


def test_one_balancer_poll_reconciles_and_grows_with_ec2(ec2):
    """The acting balancer (loadbalance.yml) with the ec2 provider: the poll reconciles first,
    then grows to min_nodes through EC2 (a real node joins Grid Engine at its instance's address
    and runs a real job), and node_remove drains it and terminates the instance."""
    server, vars_path, _work = ec2
    before = _exec_hosts()
    size = len(before)
    # a name of its own: the local provider's node003 of a later test must not inherit this
    # node's address from the qmaster's host cache
    proc = _playbook('playbooks/loadbalance.yml', '-e', 'min_nodes=%d' % (size + 1), '-e', 'max_nodes=%d' % (size + 1),
                     '-e', 'cluster_node_name_format=ec2poll%03d', vars_path=vars_path)
    new = sorted(_exec_hosts() - before)
    inst = None
    try:
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        out = ' '.join(proc.stdout.split())
        assert '%s reconcile:' % CLUSTER in out, out[-3000:]
        assert len(new) == 1, (new, out[-3000:])
        assert [_tag(i, 'gridengine-balancer:node') for i in server.live_instances(CLUSTER)] == new
        deadline = time.time() + 60
        while _qhost_load(new[0]) in (None, '-') and time.time() < deadline:
            time.sleep(2)
        assert _qhost_load(new[0]) not in (None, '-')
        inst = _address_and_hosts_line(server, new[0])
        # a real job on the node the balancer added, ending with exit 0
        _job_runs_on(new[0])
    finally:
        for name in new:
            proc = _playbook('playbooks/node_remove.yml', '-e', 'node=%s' % name, vars_path=vars_path)
            assert proc.returncode == 0, proc.stdout[-4000:]
            _nothing_left(server, name)
    # node_remove drained the node and the provider terminated its instance
    state = server.client().describe_instances(InstanceIds=[inst['InstanceId']])['Reservations'][0]['Instances'][0]
    assert state['State']['Name'] == 'terminated'
