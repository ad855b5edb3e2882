# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fault-injecting HTTP proxy in front of moto_server, for the cloud-fault tests.

Real AWS cannot be reached from the test machine, so EC2 is ``moto_server`` on 127.0.0.1
(``ec2_moto.py``). Its own fault layer answers chosen calls with an EC2 error from inside moto's
process; this proxy sits on the wire between boto3 and moto and can also do what only a network
or an overloaded endpoint does: reset the connection, hang, or answer ``200 OK`` with a body that
is not a valid answer. It listens on 127.0.0.1 only (a free port) and forwards only to a server on
127.0.0.1.

A script is a list of rules, tried in order for each EC2 Query-API call (``Action=...``)::

    proxy.script({'action': 'RunInstances', 'times': 2, **REQUEST_LIMIT})        # 2 throttled calls
    proxy.script({'action': 'DescribeInstances', 'times': -1, **INTERNAL})       # every call fails
    proxy.script({'action': '*', 'rate': 0.3, 'seed': 7, 'times': -1, **THROTTLING})  # 30 %, seeded
    proxy.script({'action': 'RunInstances', 'fault': 'reset', 'after': True})    # lost answer

``fault``   ``error`` (default): the EC2 error document (``<Response><Errors><Error><Code>``...,
            as EC2 sends it) with ``code``, ``message`` and HTTP ``status``;
            ``reset``: the TCP connection is reset (RST), no answer;
            ``hang``: no answer for ``seconds`` (default 30), then the connection is closed;
            ``empty`` / ``html`` / ``foreign`` / ``cut``: ``200 OK`` with no body, a middlebox's
            HTML error page (not XML), its XHTML page (well-formed XML, no EC2 answer), or the
            first half of moto's real answer (XML cut short; the call is forwarded, EC2 acts);
            ``more``: moto's real answer with a ``nextToken`` added (``MORE_TOKEN``): the client
            asks for a next page, which another rule can fail (a listing that breaks half-way)
``times``   how many matching calls get the fault (default 1; -1: every one)
``rate``    with ``seed``: each matching call gets the fault with this probability (a seeded
            generator of its own, so a run is repeatable); ``times`` still caps the count
``after``   forward to moto first (so EC2 *acts*: an instance is launched), then give the fault
            instead of moto's answer: the answer was lost
``when``    ``{"Param": "value"}`` only calls with that parameter value (``"*"``: any value)

``client_tokens=True`` makes the proxy honour ``RunInstances``'s ``ClientToken`` as AWS does and
moto does not: a call repeating a token that already launched gets the first answer again and
launches nothing (with other parameters: ``IdempotentParameterMismatch``).

``proxy.log`` lists every call (action, what the proxy did, HTTP status, client token, time).
"""

from __future__ import annotations

import http.client
import http.server
import random
import socket
import struct
import threading
import time
import urllib.parse
import uuid

import pytest

from ansible_collections.gridengine.balancer.tests.unit.plugins.modules.ec2_moto import (  # noqa: F401 pylint: disable=unused-import
    moto_server)

LOCAL_HOSTS = ('127.0.0.1', 'localhost')

# EC2 error codes with the status and message AWS gives them (EC2 API reference, "Error codes")
REQUEST_LIMIT = {'code': 'RequestLimitExceeded', 'status': 503, 'message': 'Request limit exceeded.'}
THROTTLING = {'code': 'Throttling', 'status': 400, 'message': 'Rate exceeded'}
INTERNAL = {'code': 'InternalError', 'status': 500,
            'message': 'An internal error has occurred. Retry your request, but if the problem persists, '
                       'contact us with details by posting a message on the AWS forums.'}
UNAVAILABLE = {'code': 'Unavailable', 'status': 503,
               'message': "The server is overloaded and can't handle the request."}
HTML_PAGE = (b'<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1>'
             b'</center><hr><center>proxy</center></body></html>\n')
# well-formed XML that is no EC2 answer: botocore parses it into an answer with no field at all
FOREIGN_PAGE = (b'<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><body>'
                b'<p>Service temporarily unavailable</p></body></html>\n')
FAULTS = ('error', 'reset', 'hang', 'empty', 'html', 'foreign', 'cut', 'more')
#: the NextToken the ``more`` fault adds (a rule ``when: {"NextToken": MORE_TOKEN}`` catches the next page)
MORE_TOKEN = 'geb-fault-proxy-more'
HOP_BY_HOP = ('connection', 'keep-alive', 'transfer-encoding', 'content-length', 'proxy-connection', 'te',
              'trailer', 'upgrade')


def error_document(code, message, request_id=None):
    """An EC2 Query-API error as EC2 sends it (``<Response><Errors><Error>``, ``RequestID``)."""
    text = str(message).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code><Message>%s</Message>'
            '</Error></Errors><RequestID>%s</RequestID></Response>' % (code, text, request_id or uuid.uuid4())).encode()


class _Reset(Exception):
    """The handler reset the connection: nothing more is written to it."""


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'ec2-fault-proxy'

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass  # the proxy's own log is FaultProxy.log

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except (_Reset, ConnectionError, socket.timeout):
            self.close_connection = True

    def _any(self):
        self.server.proxy.handle(self)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any

    def send(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def reset(self):
        # SO_LINGER 0, then close: the kernel sends RST instead of FIN
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
        self.connection.close()
        raise _Reset()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FaultProxy:
    """An HTTP proxy on 127.0.0.1 (free port) to ``upstream`` (``http://127.0.0.1:PORT``) with faults."""

    def __init__(self, upstream, client_tokens=False):
        parsed = urllib.parse.urlsplit(upstream)
        if parsed.scheme != 'http' or parsed.hostname not in LOCAL_HOSTS or not parsed.port:
            raise ValueError('upstream: only http://127.0.0.1:PORT (moto_server here), got %r' % upstream)
        self.upstream = ('127.0.0.1', parsed.port)
        self.client_tokens = client_tokens
        self.lock = threading.Lock()
        self.rules = []
        self.log = []
        self.tokens = {}
        self.token_locks = {}
        self.stopping = threading.Event()
        self.server = None
        self.thread = None
        self.endpoint = None

    # --- life cycle -------------------------------------------------------------------------
    def start(self):
        self.server = _Server(('127.0.0.1', 0), _Handler)
        self.server.proxy = self
        self.endpoint = 'http://127.0.0.1:%d' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={'poll_interval': 0.05},
                                       name='ec2-fault-proxy', daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()  # ends every hang at once
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- the script ---------------------------------------------------------------------------
    def script(self, *rules):
        """Add rules (see the module's docstring); they are tried in the order added."""
        with self.lock:
            for rule in rules:
                rule = dict(rule)
                if rule.setdefault('fault', 'error') not in FAULTS:
                    raise ValueError('fault: one of %s, got %r' % (', '.join(FAULTS), rule['fault']))
                if rule['fault'] == 'error' and not rule.get('code'):
                    raise ValueError('an error rule needs a code')
                rule.setdefault('times', 1)
                if 'rate' in rule:
                    rule['_random'] = random.Random(rule.get('seed', 0))
                self.rules.append(rule)

    def clear(self):
        """Forget the rules and the log (and the client tokens seen)."""
        with self.lock:
            self.rules, self.log, self.tokens, self.token_locks = [], [], {}, {}

    def calls(self, action=None, did=None):
        """Calls logged (of one action, and/or with one outcome: ``forwarded``, ``error``, ``reset``...)."""
        with self.lock:
            return [c for c in self.log if (action is None or c['action'] == action)
                    and (did is None or c['did'] == did)]

    def _match(self, action, params):
        for rule in self.rules:
            if rule['times'] == 0 or rule.get('action') not in ('*', action):
                continue
            if not all(params.get(k, [None])[0] == v or (v == '*' and k in params)
                       for k, v in (rule.get('when') or {}).items()):
                continue
            if 'rate' in rule and rule['_random'].random() >= rule['rate']:
                continue
            if rule['times'] > 0:
                rule['times'] -= 1
            return rule
        return None

    # --- one request --------------------------------------------------------------------------
    def _forward(self, handler, body):
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}
            conn.request(handler.command, handler.path, body=body, headers=headers)
            res = conn.getresponse()
            return res.status, res.getheaders(), res.read()
        finally:
            conn.close()

    def _upstream(self, handler, body, params, token, entry):
        """moto's answer; with ``client_tokens``, a token seen before gets its first answer again."""
        if not (self.client_tokens and token):
            return self._forward(handler, body)
        with self.lock:
            token_lock = self.token_locks.setdefault(token, threading.Lock())
        with token_lock:  # a retry that overtakes the first call waits for its answer: one launch
            first = self.tokens.get(token)
            if first is None:
                status, headers, answer = self._forward(handler, body)
                if status == 200:
                    self.tokens[token] = {'params': _launch_params(params), 'answer': (status, headers, answer)}
                return status, headers, answer
        if first['params'] != _launch_params(params):
            entry.update(did='error', code='IdempotentParameterMismatch')
            return 400, [('Content-Type', 'text/xml;charset=UTF-8')], error_document(
                'IdempotentParameterMismatch', 'The client token %s was used with other parameters.' % token)
        entry['did'] = 'replayed'
        return first['answer']

    def handle(self, handler):
        size = int(handler.headers.get('Content-Length') or 0)
        body = handler.rfile.read(size) if size else b''
        params = urllib.parse.parse_qs(body.decode('utf-8', 'replace')) if body else {}
        params.update(urllib.parse.parse_qs(urllib.parse.urlsplit(handler.path).query))
        action = (params.get('Action') or [None])[0]
        token = (params.get('ClientToken') or [None])[0] if action == 'RunInstances' else None
        entry = {'action': action, 'did': 'forwarded', 'status': None, 'client_token': token, 'time': time.time()}
        with self.lock:
            rule = self._match(action, params) if action else None
            self.log.append(entry)
        if rule is None or rule.get('after'):
            status, headers, answer = self._upstream(handler, body, params, token, entry)
            if rule is None:
                entry['status'] = status
                handler.send(status, answer, headers)
                return
            entry['forwarded_status'] = status
        else:
            answer = None
        fault = rule['fault']
        entry['did'] = fault if fault != 'error' else 'error'
        entry['after'] = bool(rule.get('after'))
        if fault == 'error':
            entry['status'], entry['code'] = int(rule.get('status', 400)), rule['code']
            handler.send(entry['status'], error_document(rule['code'], rule.get('message') or 'injected'),
                         [('Content-Type', 'text/xml;charset=UTF-8')])
        elif fault == 'reset':
            handler.reset()
        elif fault == 'hang':
            self.stopping.wait(float(rule.get('seconds', 30)))
            handler.reset()
        elif fault == 'empty':
            entry['status'] = 200
            handler.send(200, b'', [('Content-Type', 'text/xml;charset=UTF-8')])
        elif fault in ('html', 'foreign'):
            entry['status'] = 200
            handler.send(200, HTML_PAGE if fault == 'html' else FOREIGN_PAGE, [('Content-Type', 'text/html')])
        else:  # cut / more: the real answer (moto's, fetched now if not already), changed
            if answer is None:
                _status, _headers, answer = self._upstream(handler, body, params, token, entry)
            if fault == 'cut':
                answer = answer[:len(answer) // 2]
            else:
                end = answer.rindex(b'</')
                answer = answer[:end] + b'<nextToken>' + MORE_TOKEN.encode() + b'</nextToken>' + answer[end:]
            entry['status'] = 200
            handler.send(200, answer, [('Content-Type', 'text/xml;charset=UTF-8')])


def _launch_params(params):
    return sorted((k, tuple(v)) for k, v in params.items() if k != 'ClientToken')


@pytest.fixture(scope='session')
def moto_required():
    """Fail (never skip) when moto is missing: these tests are the only evidence of the cloud faults."""
    try:
        import moto  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        pytest.fail("moto is not installed (.venv/bin/pip install 'moto[server]'): the cloud-fault tests need "
                    "moto_server on 127.0.0.1", pytrace=False)


@pytest.fixture
def shared_botocore_loader(monkeypatch):
    """One botocore data loader for every session of the test (the modules run in this process).

    Each module run makes a new boto3 session, which parses EC2's API model again (0.2-0.4 s here);
    sharing the loader caches that read-only data and changes nothing else.
    """
    import botocore.loaders  # pylint: disable=import-outside-toplevel
    import botocore.session  # pylint: disable=import-outside-toplevel
    loaders = {}
    create = botocore.loaders.create_loader

    def shared(search_path_string=None):
        if search_path_string not in loaders:
            loaders[search_path_string] = create(search_path_string)
        return loaders[search_path_string]
    monkeypatch.setattr(botocore.session, 'create_loader', shared)


@pytest.fixture
def ec2_proxy(moto_required, moto_server):  # noqa: F811 pylint: disable=redefined-outer-name,unused-argument
    """A fresh moto state behind a new fault proxy (no rule; AWS's ClientToken idempotency off, as moto)."""
    moto_server.reset()
    proxy = FaultProxy(moto_server.endpoint).start()
    proxy.moto = moto_server
    try:
        yield proxy
    finally:
        proxy.stop()
