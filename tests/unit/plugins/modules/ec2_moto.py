# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""moto_server on 127.0.0.1 as the EC2 endpoint of the tests, with error injection.

A stand-in is allowed only for what cannot exist here (docs DESIGN, habit 6): real AWS cannot be
reached from the test machine, so EC2 is moto's server, a real HTTP endpoint in its own process
(``python ec2_moto.py``), spoken to by boto3 exactly as AWS would be.

moto_server has no switch to make a call fail, so this file wraps moto's own WSGI application
(``moto.server.DomainDispatcherApplication``) in a small middleware that answers chosen EC2
actions with an EC2 error document instead of moto's answer.  Rules are set over HTTP:

``POST /_geb_faults``   JSON rule or list of rules, each::

        {"action": "RunInstances",            # the EC2 Action of the query request
         "code": "InsufficientInstanceCapacity", "message": "...", "status": 500,
         "times": 1,                          # how many calls fail (-1: every call)
         "after": false,                      # true: let moto act first, then answer the error
                                              #  (the response was lost; the instance exists)
         "when": {"InstanceType": "c5.large"}}  # only calls whose parameters match ("*": any value)

``GET /_geb_faults``    ``{"rules": [...], "hits": [...], "calls": {"RunInstances": 3, ...}}``
``DELETE /_geb_faults`` forget every rule, hit and count

Everything else goes to moto unchanged.  ``/moto-api/reset`` resets moto's state.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from io import BytesIO

import pytest

FAULTS_PATH = '/_geb_faults'
REGION = 'us-east-1'
# moto's own fixed AMI ids exist in every region of its EC2 backend
IMAGE_ID = 'ami-12c6146b'
# the subnet of the namespace nodes' bridge sgebr0 (10.77.0.0/24); EC2 nodes get addresses from a /26
# far from the master (10.77.0.1) and the local provider's nodes (10.77.0.11 and up)
VPC_CIDR = '10.77.0.0/16'
SUBNET_CIDR = '10.77.0.128/26'


# --------------------------------------------------------------------------------------------
# the server side (runs in the child process)
# --------------------------------------------------------------------------------------------

def _error_body(code, message):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code>'
            '<Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>'
            % (code, message.replace('&', '&amp;').replace('<', '&lt;'), uuid.uuid4())).encode()


class FaultMiddleware:
    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()
        self.rules = []
        self.hits = []
        self.calls = {}

    def _control(self, environ, start_response):
        method = environ['REQUEST_METHOD']
        with self.lock:
            if method == 'POST':
                size = int(environ.get('CONTENT_LENGTH') or 0)
                rules = json.loads(environ['wsgi.input'].read(size) or b'[]')
                self.rules.extend(rules if isinstance(rules, list) else [rules])
            elif method == 'DELETE':
                self.rules, self.hits, self.calls = [], [], {}
            body = json.dumps({'rules': self.rules, 'hits': self.hits, 'calls': self.calls}).encode()
        start_response('200 OK', [('Content-Type', 'application/json'), ('Content-Length', str(len(body)))])
        return [body]

    def _match(self, action, params):
        for rule in self.rules:
            if rule.get('action') != action or rule.get('times', 1) == 0:
                continue
            # "when": {"Param": "value"} matches that value, {"Param": "*"} any value present
            if all(params.get(k, [None])[0] == v or (v == '*' and k in params)
                   for k, v in (rule.get('when') or {}).items()):
                if rule.get('times', 1) > 0:
                    rule['times'] = rule.get('times', 1) - 1
                return rule
        return None

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO') == FAULTS_PATH:
            return self._control(environ, start_response)
        size = int(environ.get('CONTENT_LENGTH') or 0)
        body = environ['wsgi.input'].read(size) if size else b''
        environ['wsgi.input'] = BytesIO(body)
        params = urllib.parse.parse_qs(body.decode('utf-8', 'replace')) if body else {}
        params.update(urllib.parse.parse_qs(environ.get('QUERY_STRING', '')))
        action = (params.get('Action') or [None])[0]
        rule = None
        if action:
            with self.lock:
                self.calls[action] = self.calls.get(action, 0) + 1
                rule = self._match(action, params)
                if rule:
                    self.hits.append({'action': action, 'code': rule['code'], 'after': bool(rule.get('after')),
                                      'time': time.time()})
        if rule is None:
            return self.app(environ, start_response)
        if rule.get('after'):
            # moto acts (the instance is launched), the client is told it failed
            def ignore(status, headers, exc_info=None):  # pylint: disable=unused-argument
                return lambda data: None
            for _chunk in self.app(environ, ignore):
                pass
        status = int(rule.get('status', 400))
        payload = _error_body(rule['code'], rule.get('message') or 'injected by the test (%s)' % rule['code'])
        headers = [('Content-Type', 'text/xml'), ('Content-Length', str(len(payload)))]
        start_response('%d Error' % status, headers)
        return [payload]


def serve(host='127.0.0.1', port=0):
    from moto.server import DomainDispatcherApplication, create_backend_app  # pylint: disable=import-outside-toplevel
    from werkzeug.serving import make_server  # pylint: disable=import-outside-toplevel
    app = FaultMiddleware(DomainDispatcherApplication(create_backend_app))
    server = make_server(host, port, app, threaded=True)
    print('PORT %d' % server.server_port, flush=True)
    server.serve_forever()


# --------------------------------------------------------------------------------------------
# the test side
# --------------------------------------------------------------------------------------------

class MotoEc2:
    """A moto_server child process on 127.0.0.1 and a free port."""

    def __init__(self):
        self.proc = None
        self.port = None
        self.endpoint = None

    def start(self, timeout=60):
        env = dict(os.environ, AWS_ACCESS_KEY_ID='testing', AWS_SECRET_ACCESS_KEY='testing',
                   AWS_DEFAULT_REGION=REGION, PYTHONUNBUFFERED='1')
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--serve'], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     universal_newlines=True)
        deadline = time.time() + timeout
        line = self.proc.stdout.readline()
        if not line.startswith('PORT '):
            self.stop()
            raise RuntimeError('moto_server did not start (got %r)' % line)
        self.port = int(line.split()[1])
        self.endpoint = 'http://127.0.0.1:%d' % self.port
        while time.time() < deadline:
            with contextlib.suppress(OSError):
                with socket.create_connection(('127.0.0.1', self.port), timeout=1):
                    return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError('moto_server on port %d does not answer' % self.port)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stdout:
            self.proc.stdout.close()

    def _request(self, method, path, payload=None):
        data = json.dumps(payload).encode() if payload is not None else None
        req = urllib.request.Request(self.endpoint + path, data=data, method=method)
        with urllib.request.urlopen(req, timeout=30) as res:
            text = res.read()
        return json.loads(text) if text.strip().startswith(b'{') else text

    def inject(self, *rules):
        return self._request('POST', FAULTS_PATH, list(rules))

    def faults(self):
        return self._request('GET', FAULTS_PATH)

    def clear_faults(self):
        return self._request('DELETE', FAULTS_PATH)

    def reset(self):
        self.clear_faults()
        self._request('POST', '/moto-api/reset', {})

    def client(self):
        import boto3  # pylint: disable=import-outside-toplevel
        return boto3.client('ec2', region_name=REGION, endpoint_url=self.endpoint,
                            aws_access_key_id='testing', aws_secret_access_key='testing')

    def aws_args(self):
        """The amazon.aws connection options of a module talking to this endpoint."""
        return {'endpoint_url': self.endpoint, 'region': REGION, 'access_key': 'testing',
                'secret_key': 'testing'}

    def network(self):
        """A VPC 10.77.0.0/16 with the subnet 10.77.0.128/26 and a security group; their ids."""
        ec2 = self.client()
        vpc = ec2.create_vpc(CidrBlock=VPC_CIDR)['Vpc']['VpcId']
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=SUBNET_CIDR, AvailabilityZone=REGION + 'a')['Subnet']['SubnetId']
        group = ec2.create_security_group(GroupName='geb-nodes', Description='gridengine.balancer test nodes',
                                          VpcId=vpc)['GroupId']
        return {'vpc_id': vpc, 'subnet_id': subnet, 'security_group_id': group}

    def live_instances(self, cluster=None):
        """Instances not terminated (optionally of one cluster tag): what would cost money."""
        filters = [{'Name': 'instance-state-name', 'Values': ['pending', 'running', 'stopping', 'stopped']}]
        if cluster:
            filters.append({'Name': 'tag:gridengine-balancer:cluster', 'Values': [cluster]})
        out = []
        for res in self.client().describe_instances(Filters=filters)['Reservations']:
            out.extend(res['Instances'])
        return out


@pytest.fixture(scope='session')
def moto_server():
    """moto_server on 127.0.0.1 (a child process), stopped after the session."""
    try:
        import moto  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        # requirements.txt installs it: a skip here would hide the EC2 tests, so it is a failure
        pytest.fail("moto is not installed (.venv/bin/pip install 'moto[server]', see requirements.txt)")
    server = MotoEc2().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def moto_ec2(moto_server):  # pylint: disable=redefined-outer-name
    """The server with a fresh EC2 state and no fault rule."""
    moto_server.reset()
    yield moto_server
    moto_server.clear_faults()


if __name__ == '__main__' and '--serve' in sys.argv:
    serve()
