# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind gridengine.balancer.reconcile_plan (documentation: plugins/modules/reconcile_plan.py).

On the controller: validate the arguments (spec built from the module's DOCUMENTATION), read the
reconcile state on the task's host (the qmaster) with gridengine.balancer.balancer_state, run the
pure policy (plugins/plugin_utils/policy/reconcile.py), write the new state back (not in check
mode) and return the actions with their reasons.
"""

from __future__ import annotations

import json
import os
import time

from ansible.errors import AnsibleActionFail

from ansible_collections.gridengine.balancer.plugins.action.elastic_plan import (
    StateAction,
    argument_spec_from_doc,
    save_state,
)
from ansible_collections.gridengine.balancer.plugins.modules import reconcile_plan as _doc
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import (
    DEFAULT_ROOT,
    check_cluster_name,
)
from ansible_collections.gridengine.balancer.plugins.plugin_utils.policy import reconcile as policy

STATE_FILE_NAME = 'reconcile.json'
ARGUMENT_SPEC = argument_spec_from_doc(_doc.DOCUMENTATION)


def default_path(cluster):
    return os.path.join(DEFAULT_ROOT, check_cluster_name(cluster), STATE_FILE_NAME)


def plain(value):
    """Templated values may be tagged by Ansible: make them plain JSON data."""
    return json.loads(json.dumps(value))


def corrupt_warning(corrupt):
    """The warning for a state file balancer_state found corrupt (and moved aside), as
    elastic_plan gives it: what was wrong, where the file went, what an empty state means here."""
    return ('%s; %s; this run reconciled from an empty state: the launch back-off and its failure count '
            'are forgotten, and so are the instances seen before, so an exec host whose instance is gone '
            'now is not removed and an unknown instance is only reported (docs/reliability/state-faults.md)'
            % (corrupt.get('problem'), 'moved it aside to %s' % corrupt['moved_to']
               if corrupt.get('moved_to') else 'it would be moved aside'))


def run_reconcile(args, execute_state, check_mode=False, diff=False, clock=time.time):
    """The action's core without Ansible's task machinery.

    ``execute_state(module_args) -> result`` runs balancer_state on the task's host.
    """
    cluster = args['cluster']
    try:
        check_cluster_name(cluster)
    except ValueError as exc:
        raise AnsibleActionFail(str(exc))
    config = {k: args.get(k) for k in policy.OPTIONS}
    try:
        config = policy.validate_config(config)
    except ValueError as exc:
        raise AnsibleActionFail('%s; nothing decided, nothing written' % exc)
    now = args.get('now')
    now = float(clock()) if now is None else float(now)
    state_path = args.get('state_path') or default_path(cluster)

    res = execute_state({'path': state_path, 'state': 'read'})
    if res.get('failed') or not isinstance(res.get('content'), dict):
        raise AnsibleActionFail('cannot read the reconcile state (%s): %s' % (state_path, res.get('msg', 'no content')))
    old_state = res['content']

    mode = args.get('mode') or 'reconcile'
    result = {'state_path': state_path}
    corrupt = res.get('corrupt')
    if corrupt:
        # balancer_state moved a corrupt file aside (its own warning stays in its result, which
        # this action does not return): say it here, as elastic_plan does
        result['state_corrupt'] = corrupt
        result['warnings'] = [corrupt_warning(corrupt)]
    if mode == 'status':
        backoff = policy.backoff_status(old_state, now)
        result.update(changed=False, backoff=backoff,
                      summary=backoff['reason'] or 'no launch back-off',
                      msg='%s: %s' % (cluster, backoff['reason'] or 'no launch back-off'))
        return result
    if mode == 'record_failure':
        failure = args.get('failure')
        if not isinstance(failure, dict) or not failure.get('node'):
            raise AnsibleActionFail('failure: a dict with at least node and kind is required with mode=record_failure')
        new_state, backoff = policy.record_failure(old_state, plain(failure), config, now)
        result.update(backoff=backoff, summary=backoff['reason'],
                      msg='%s: launch of %s failed (%s); %s' % (
                          cluster, failure['node'], failure.get('kind'), backoff['reason']))
    else:
        exec_hosts = args.get('exec_hosts')
        if not isinstance(exec_hosts, (dict, list)):
            raise AnsibleActionFail('exec_hosts: the snapshot hosts mapping or a list of names, got %s'
                                    % type(exec_hosts).__name__)
        try:
            out = policy.reconcile(plain(args.get('instances') or []), plain(exec_hosts), old_state, config, now,
                                   journal=plain(args.get('journal') or []),
                                   balancer_nodes=plain(args.get('balancer_nodes') or []))
        except (TypeError, ValueError, KeyError) as exc:
            raise AnsibleActionFail('reconcile: %s; nothing written' % exc)
        new_state = out.pop('state')
        result.update(out)
        result['msg'] = policy.format_msg(cluster, out)

    saved, _res = save_state(execute_state, state_path, old_state, plain(new_state), check_mode, diff,
                             'the reconcile state could not be saved (%s): %s; do not act on this result')
    result.update(saved)
    return result


class ActionModule(StateAction):

    argument_spec = ARGUMENT_SPEC
    core = staticmethod(run_reconcile)
