# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""moto_server for the molecule scenario provider_ec2, driven from its playbooks.

Real AWS cannot be reached from the test machine: EC2 is moto_server on 127.0.0.1
(tests/unit/plugins/modules/ec2_moto.py, run detached in its own session), with the VPC, the
subnet 10.77.0.128/26 on the nodes' bridge and a security group made in it.

    python moto_ctl.py start DIR        start it; write and print DIR/moto.json (pid, endpoint, ids)
    python moto_ctl.py instances DIR    print the live instances (what would cost money) as JSON
    python moto_ctl.py stop DIR         stop the server DIR/moto.json names (only if it is ours)

DIR is the scenario's own ephemeral directory (molecule's MOLECULE_EPHEMERAL_DIRECTORY).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EC2_MOTO = os.path.join(os.path.dirname(os.path.dirname(HERE)), 'unit', 'plugins', 'modules', 'ec2_moto.py')


def _ec2_moto():
    spec = importlib.util.spec_from_file_location('geb_ec2_moto', EC2_MOTO)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ours(pid):
    """Whether pid is a moto server this script started (its command line names ec2_moto.py)."""
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as handle:
            argv = handle.read().split(b'\0')
    except OSError:
        return False
    return EC2_MOTO.encode() in argv and b'--serve' in argv


def _server(state):
    mod = _ec2_moto()
    server = mod.MotoEc2()
    server.endpoint = state['endpoint']
    server.port = int(state['endpoint'].rsplit(':', 1)[1])
    return mod, server


def _state(directory):
    with open(os.path.join(directory, 'moto.json')) as handle:
        return json.load(handle)


def stop(directory):
    path = os.path.join(directory, 'moto.json')
    if not os.path.exists(path):
        return {'stopped': False}
    pid = int(_state(directory)['pid'])
    stopped = False
    if _ours(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + 10
        while _ours(pid) and time.time() < deadline:
            time.sleep(0.2)
        if _ours(pid):
            os.kill(pid, signal.SIGKILL)
        stopped = True
    os.unlink(path)
    return {'stopped': stopped, 'pid': pid}


def start(directory, timeout=60):
    stop(directory)
    env = dict(os.environ, AWS_ACCESS_KEY_ID='testing', AWS_SECRET_ACCESS_KEY='testing',
               AWS_DEFAULT_REGION='us-east-1', PYTHONUNBUFFERED='1')
    out_path = os.path.join(directory, 'moto.out')
    with open(out_path, 'w') as out:
        proc = subprocess.Popen([sys.executable, EC2_MOTO, '--serve'], env=env, stdout=out,  # pylint: disable=consider-using-with
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + timeout
    port = None
    while port is None and time.time() < deadline:
        with open(out_path) as handle:
            first = handle.readline()
        if first.startswith('PORT '):
            port = int(first.split()[1])
        elif proc.poll() is not None:
            raise SystemExit('moto_server exited with %s' % proc.returncode)
        else:
            time.sleep(0.1)
    if port is None:
        proc.kill()
        raise SystemExit('moto_server did not say its port within %d s' % timeout)
    state = {'pid': proc.pid, 'endpoint': 'http://127.0.0.1:%d' % port}
    dummy, server = _server(state)
    while True:
        try:
            state.update(server.network())
            break
        except Exception:  # pylint: disable=broad-except
            if time.time() > deadline:
                proc.kill()
                raise
            time.sleep(0.2)
    tmp = os.path.join(directory, '.moto.json.tmp')
    with open(tmp, 'w') as handle:
        json.dump(state, handle)
    os.replace(tmp, os.path.join(directory, 'moto.json'))
    return state


def instances(directory):
    dummy, server = _server(_state(directory))
    out = []
    for inst in server.live_instances():
        out.append({'id': inst['InstanceId'], 'state': inst['State']['Name'],
                    'address': inst.get('PrivateIpAddress'),
                    'tags': {t['Key']: t['Value'] for t in inst.get('Tags', [])}})
    return out


def main(argv):
    if len(argv) != 3 or argv[1] not in ('start', 'stop', 'instances') or not os.path.isdir(argv[2]):
        raise SystemExit('usage: moto_ctl.py start|stop|instances DIR')
    print(json.dumps({'start': start, 'stop': stop, 'instances': instances}[argv[1]](argv[2])))


if __name__ == '__main__':
    main(sys.argv)
