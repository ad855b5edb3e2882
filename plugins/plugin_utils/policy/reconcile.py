# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reconciliation of a cloud provider's instances with Grid Engine, and launch back-off.

Pure: no clock, no I/O, no Ansible import.  Each poll (``playbooks/tasks/reconcile.yml``)::

    result = reconcile(instances, exec_hosts, state, config, now, journal=..., balancer_nodes=...)

``instances``  the provider's instances of the cluster, found by tag (``ec2_node_info``): dicts
               with ``instance_id``, ``node``, ``state``, ``launch_time`` (seconds since the epoch)
``exec_hosts`` Grid Engine's execution hosts: the snapshot's ``hosts`` mapping (a host has joined
               when it reports a load, ``load_avg`` not null) or a list of names (all reporting)
``state``      what the previous call returned in ``result["state"]`` (``{}`` the first time)
``journal``    node operations in flight (``balancer_journal_info.operations``)
``balancer_nodes`` the nodes the elastic balancer's state knows (its ``nodes`` keys)

Rules (each action carries a reason):

1. An instance the balancer launched (a ``join`` in the journal, or one it has seen before) that
   has not joined Grid Engine ``provisioning_timeout`` seconds after its launch is terminated
   (``terminate``; ``half_joined`` when Grid Engine already lists it, so the caller removes it
   from Grid Engine too) and counted as a launch failure (kind ``timeout``).
2. An exec host whose instance was seen before and is gone now (terminated, shutting down or not
   listed) is removed from Grid Engine (``remove_exec_host``), unless an operation on it is in flight.
3. An instance the balancer does not know (no journal entry, never seen, not in the balancer's
   state, not an exec host) is reported (``report``) and never terminated; so are duplicate
   instances of one node and instances without a node tag.
4. Launch failures (recorded with :func:`record_failure`, or rule 1) start a back-off:
   ``backoff_base * backoff_factor ** (n - 1)`` seconds after the n-th consecutive failure, at most
   ``backoff_max``.  A node launched after the last failure that joins ends it.  While it lasts,
   a ``join`` in the journal whose node has no live instance and is no exec host (a launch that
   failed and left nothing) is dropped (``drop_journal``) instead of being retried.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

SCHEMA = 1
LIVE_STATES = ('pending', 'running', 'stopping', 'stopped')
FAILURE_KINDS = ('capacity', 'spot', 'limit', 'throttling', 'config', 'timeout', 'error')
#: failures and counted instance ids kept in the state
HISTORY_LIMIT = 20

DEFAULTS = {
    'provisioning_timeout': 900,   # seconds from launch until the node must have joined
    'backoff_base': 300,           # seconds after the first failure
    'backoff_factor': 2.0,
    'backoff_max': 3600,
    'master': None,                # never removed
}
OPTIONS = tuple(DEFAULTS)


def validate_config(config):
    """Defaults filled in; ValueError naming the option for a bad value."""
    cfg = dict(DEFAULTS)
    for key, value in (config or {}).items():
        if key not in DEFAULTS:
            raise ValueError('%s: unknown reconcile option (known: %s)' % (key, ', '.join(OPTIONS)))
        if value is not None:
            cfg[key] = value
    for key in ('provisioning_timeout', 'backoff_base', 'backoff_max'):
        value = cfg[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError('%s: must be a number of seconds >= 0, got %r' % (key, value))
    factor = cfg['backoff_factor']
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor < 1:
        raise ValueError('backoff_factor: must be a number >= 1, got %r' % (factor,))
    if cfg['backoff_max'] < cfg['backoff_base']:
        raise ValueError('backoff_max (%s) must be >= backoff_base (%s)' % (cfg['backoff_max'], cfg['backoff_base']))
    if cfg['master'] is not None and not isinstance(cfg['master'], str):
        raise ValueError('master: must be a host name, got %r' % (cfg['master'],))
    return cfg


def _num(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def load_state(state):
    """A clean copy of a saved state (unknown or malformed parts dropped)."""
    state = state if isinstance(state, Mapping) else {}
    out = {'schema': SCHEMA, 'consecutive_failures': 0, 'backoff_until': None, 'failures': [],
           'counted': [], 'instances': {}}
    n = state.get('consecutive_failures')
    if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
        out['consecutive_failures'] = n
    if _num(state.get('backoff_until')):
        out['backoff_until'] = float(state['backoff_until'])
    for item in state.get('failures') or []:
        if isinstance(item, Mapping) and _num(item.get('time')):
            out['failures'].append(dict(item))
    out['counted'] = [str(i) for i in state.get('counted') or [] if isinstance(i, str)]
    instances = state.get('instances')
    if isinstance(instances, Mapping):
        for node, rec in instances.items():
            if isinstance(rec, Mapping) and isinstance(rec.get('instance_id'), str):
                out['instances'][str(node)] = dict(rec)
    return out


def backoff_delay(failures, config):
    """Seconds of back-off after ``failures`` consecutive failures."""
    if failures <= 0:
        return 0.0
    cfg = config
    delay = cfg['backoff_base'] * (cfg['backoff_factor'] ** (failures - 1))
    return float(min(delay, cfg['backoff_max']))


def fmt_duration(seconds):
    seconds = int(round(max(0.0, seconds)))
    if seconds < 120:
        return '%ds' % seconds
    if seconds < 7200:
        return '%dm%02ds' % divmod(seconds, 60)
    return '%dh%02dm' % (seconds // 3600, (seconds % 3600) // 60)


def record_failure(state, failure, config, now):
    """The state after one launch failure: ``failure`` has ``node``, ``kind``, ``code``, ``message``.

    Returns ``(new_state, backoff)`` (see :func:`backoff_status`).
    """
    cfg = validate_config(config)
    new = load_state(state)
    kind = failure.get('kind') if failure.get('kind') in FAILURE_KINDS else 'error'
    new['consecutive_failures'] += 1
    delay = backoff_delay(new['consecutive_failures'], cfg)
    new['backoff_until'] = max(float(now) + delay, new['backoff_until'] or 0.0)
    entry = {'time': float(now), 'node': failure.get('node'), 'kind': kind,
             'code': failure.get('code') or '', 'message': str(failure.get('message') or '')[:500]}
    if failure.get('instance_id'):
        entry['instance_id'] = failure['instance_id']
        if failure['instance_id'] not in new['counted']:
            new['counted'].append(failure['instance_id'])
    new['failures'] = (new['failures'] + [entry])[-HISTORY_LIMIT:]
    new['counted'] = new['counted'][-HISTORY_LIMIT:]
    return new, backoff_status(new, now)


def backoff_status(state, now):
    """``{active, until, remaining, failures, last, reason}`` of a (loaded) state at ``now``."""
    state = load_state(state)
    until = state['backoff_until']
    active = until is not None and now < until
    last = state['failures'][-1] if state['failures'] else None
    out = {'active': bool(active), 'until': until, 'remaining': max(0.0, until - now) if active else 0.0,
           'failures': state['consecutive_failures'], 'last': last, 'reason': ''}
    if active:
        out['reason'] = ('launches back off for %s more after %d consecutive failure%s (last: %s on %s%s)'
                         % (fmt_duration(until - now), state['consecutive_failures'],
                            '' if state['consecutive_failures'] == 1 else 's',
                            last['kind'] if last else '?', last.get('node') if last else '?',
                            (': %s' % last['code']) if last and last.get('code') else ''))
    return out


def _host_map(exec_hosts):
    if isinstance(exec_hosts, Mapping):
        return {str(name): (h if isinstance(h, Mapping) else {}) for name, h in exec_hosts.items()}
    return {str(name): {'load_avg': 0.0} for name in exec_hosts or []}


def _short(name):
    return str(name).split('.', maxsplit=1)[0].lower()


def reconcile(instances, exec_hosts, state, config, now, journal=(), balancer_nodes=()):
    """Compare instances with exec hosts and state; return actions, back-off and the new state."""
    cfg = validate_config(config)
    new = load_state(state)
    hosts = _host_map(exec_hosts)
    by_short = {_short(h): h for h in hosts}
    master = _short(cfg['master']) if cfg['master'] else None
    ops = {}
    for op in journal or []:
        if isinstance(op, Mapping) and op.get('node'):
            ops[str(op['node'])] = str(op.get('operation') or '')
    known_balancer = {str(n) for n in balancer_nodes or []}
    actions = []
    timeouts = []

    def host_of(node):
        return by_short.get(_short(node)) if node else None

    def reporting(host):
        return host is not None and hosts[host].get('load_avg') is not None

    live, going = {}, {}
    for inst in instances or []:
        if not isinstance(inst, Mapping) or not inst.get('instance_id'):
            continue
        if inst.get('state') in LIVE_STATES:
            live.setdefault(str(inst.get('node') or ''), []).append(inst)
        else:
            going[inst['instance_id']] = inst

    for node in sorted(live):
        group = sorted(live[node], key=lambda i: (i.get('launch_time') or 0.0, i['instance_id']))
        if not node:
            for inst in group:
                actions.append({'action': 'report', 'node': None, 'instance_id': inst['instance_id'],
                                'reason': 'instance %s has the cluster tag but no node tag; not touched'
                                          % inst['instance_id']})
            continue
        remembered = new['instances'].get(node)
        # the instance that is the node: the one remembered, else the oldest
        inst = next((i for i in group if remembered and i['instance_id'] == remembered['instance_id']), group[0])
        for dup in group:
            if dup is not inst:
                actions.append({'action': 'report', 'node': node, 'instance_id': dup['instance_id'],
                                'reason': 'instance %s is a second live instance of %s (the node is %s); not touched'
                                          % (dup['instance_id'], node, inst['instance_id'])})
        host = host_of(node)
        iid = inst['instance_id']
        launched = inst.get('launch_time')
        if master and _short(node) == master:
            continue
        if reporting(host):
            rec = remembered if remembered and remembered['instance_id'] == iid else {'instance_id': iid, 'first_seen': now}
            if not rec.get('joined_at'):
                rec['joined_at'] = now
                last = new['failures'][-1]['time'] if new['failures'] else None
                if new['consecutive_failures'] and (last is None or (launched or 0.0) >= last):
                    new['consecutive_failures'] = 0
                    new['backoff_until'] = None
                    actions.append({'action': 'info', 'node': node, 'instance_id': iid,
                                    'reason': '%s (launched after the last failure) joined; launch back-off ended' % node})
            new['instances'][node] = rec
            continue
        was_joined = bool(remembered and remembered['instance_id'] == iid and remembered.get('joined_at'))
        if was_joined:
            continue  # joined before, not reporting now: the elastic policy sees its state, not our business
        known = (ops.get(node) == 'join' or (remembered and remembered['instance_id'] == iid)
                 or node in known_balancer or host is not None)
        if not known:
            actions.append({'action': 'report', 'node': node, 'instance_id': iid,
                            'reason': 'instance %s (%s, %s) is tagged for this cluster but the balancer did not '
                                      'launch it (no journal entry, never seen, not an exec host); not touched'
                                      % (iid, node, inst.get('state'))})
            continue
        new['instances'][node] = remembered if remembered and remembered['instance_id'] == iid else \
            {'instance_id': iid, 'first_seen': now}
        if ops.get(node) == 'leave':
            continue  # a leave in flight: the journal's resume finishes it
        age = (now - launched) if _num(launched) else None
        if age is not None and age > cfg['provisioning_timeout']:
            half = host is not None
            actions.append({'action': 'terminate', 'node': node, 'instance_id': iid, 'half_joined': half,
                            'journal': ops.get(node),
                            'reason': '%s (instance %s) launched %s ago never joined Grid Engine%s '
                                      '(provisioning_timeout %s); terminated, counted as a failure'
                                      % (node, iid, fmt_duration(age),
                                         ' (registered, no load report)' if half else '',
                                         fmt_duration(cfg['provisioning_timeout']))})
            if iid not in new['counted']:
                timeouts.append({'node': node, 'kind': 'timeout', 'code': 'ProvisioningTimeout',
                                 'instance_id': iid,
                                 'message': 'not joined %s after launch' % fmt_duration(age)})
        else:
            actions.append({'action': 'wait', 'node': node, 'instance_id': iid,
                            'reason': '%s (instance %s, %s) is booting%s; joins or is terminated after %s'
                                      % (node, iid, inst.get('state'),
                                         (' for %s' % fmt_duration(age)) if age is not None else '',
                                         fmt_duration(cfg['provisioning_timeout']))})

    # rule 2: exec hosts whose instance is gone
    live_ids = {i['instance_id'] for group in live.values() for i in group}
    for node in sorted(new['instances']):
        rec = new['instances'][node]
        if rec['instance_id'] in live_ids:
            continue
        host = host_of(node)
        gone = going.get(rec['instance_id'])
        how = ('%s' % gone.get('state')) if gone else 'no longer listed'
        if host is None or (master and _short(node) == master):
            del new['instances'][node]  # gone and not in Grid Engine: nothing left to do
            continue
        if ops.get(node):
            continue  # the journal's resume finishes the operation in flight
        actions.append({'action': 'remove_exec_host', 'node': host, 'instance_id': rec['instance_id'],
                        'reason': 'exec host %s: its instance %s is gone (%s); removed from Grid Engine'
                                  % (host, rec['instance_id'], how)})

    for failure in timeouts:
        new, _status = record_failure(new, failure, cfg, now)

    backoff = backoff_status(new, now)
    # rule 4: failed joins that left nothing are not retried during the back-off
    for node, operation in sorted(ops.items()):
        if operation == 'join' and backoff['active'] and node not in live and host_of(node) is None:
            actions.append({'action': 'drop_journal', 'node': node, 'operation': 'join',
                            'reason': 'join of %s left no instance and no exec host; not retried: %s'
                                      % (node, backoff['reason'])})

    def names(kind):
        return [a['node'] for a in actions if a['action'] == kind]

    result = {
        'actions': actions,
        'terminate': [{'node': a['node'], 'instance_id': a['instance_id'], 'half_joined': a['half_joined'],
                       'journal': a['journal']} for a in actions if a['action'] == 'terminate'],
        'remove': names('remove_exec_host'),
        'report': [a for a in actions if a['action'] == 'report'],
        'drop_journal': names('drop_journal'),
        'backoff': backoff,
        # the launch failures kept (oldest first): the elastic policy stops counting as booting a
        # request whose launch failed (elastic.decide's launches)
        'failures': [dict(f) for f in new['failures']],
        'state': new,
    }
    result['summary'] = summarize(result)
    return result


def summarize(result):
    parts = []
    if result['terminate']:
        parts.append('terminate %s (never joined)' % ', '.join(t['node'] for t in result['terminate']))
    if result['remove']:
        parts.append('remove %s (instance gone)' % ', '.join(result['remove']))
    if result['report']:
        parts.append('%d instance%s to look at' % (len(result['report']), '' if len(result['report']) == 1 else 's'))
    if result['drop_journal']:
        plural = '' if len(result['drop_journal']) == 1 else 's'
        parts.append('drop failed join%s of %s' % (plural, ', '.join(result['drop_journal'])))
    if result['backoff']['active']:
        parts.append(result['backoff']['reason'])
    return '; '.join(parts) if parts else 'instances and exec hosts agree'


def format_msg(cluster, result):
    lines = ['%s reconcile: %s' % (cluster, result['summary'])]
    lines.extend('- %s' % a['reason'] for a in result['actions'])
    return '\n'.join(lines)
