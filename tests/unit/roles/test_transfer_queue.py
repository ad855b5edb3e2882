# -*- coding: utf-8 -*-
# Copyright: gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/transfer_queue: the load sensor's user (issue 7 part 7), checked without running the role.

The role talks to Grid Engine (qconf, qhost) and creates a system user, so it is not run here
(tests/integration/test_transfer_real.py runs it on the real clusters). Its input check is
evaluated with Ansible's templar, the load sensor's script is rendered from the role's template
and run with a stand-in ``transfer`` module, and the tasks that make the user and the status
directory are read from ``tasks/present.yml``.
"""

from __future__ import annotations

import os
import sys
import types

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

# the role's regexps end in \Z inside Jinja string literals (see test_hostile_input.py)
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")

HERE = os.path.dirname(os.path.abspath(__file__))
ROLE = os.path.abspath(os.path.join(HERE, '..', '..', '..', 'roles', 'transfer_queue'))


def _load(*path):
    return DataLoader().load_from_file(os.path.join(ROLE, *path))


def _render(template, variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(template))


def role_vars(**extra):
    """The role's defaults and vars, rendered (they refer to each other), with ``extra`` on top."""
    templates = dict(_load('defaults', 'main.yml'), **_load('vars', 'main.yml'))
    templates.update(extra)
    rendered = dict(templates)
    for dummy_pass in range(4):
        for key, value in templates.items():
            if isinstance(value, str) and key not in extra:
                try:
                    rendered[key] = _render(value, dict(rendered))
                except Exception:  # pylint: disable=broad-except
                    rendered[key] = value
    rendered.setdefault('transfer_queue_host_name', 'vm')
    return rendered


def failing(variables):
    """The conditions of the role's input check (tasks/main.yml) that fail with ``variables``."""
    return conditions_failing([task for task in _load('tasks', 'main.yml') if 'ansible.builtin.assert' in task][0],
                              variables)


def conditions_failing(assert_task, variables):
    """The conditions of an ``ansible.builtin.assert`` task that fail (or cannot be evaluated)."""
    templar = Templar(loader=DataLoader(), variables=variables)
    out = []
    for cond in assert_task['ansible.builtin.assert']['that']:
        try:
            if not templar.evaluate_conditional(trust_as_template(cond)):
                out.append(cond)
        except Exception:  # pylint: disable=broad-except
            out.append(cond)
    return out


def tasks(name):
    """Every task of a task file, blocks flattened, by name."""
    out = {}
    stack = list(_load('tasks', name))
    while stack:
        task = stack.pop()
        for key in ('block', 'rescue', 'always'):
            stack.extend(task.get(key) or [])
        out[task.get('name')] = task
    return out


# ------------------------------------------------------------------------------ the option ----

def test_the_default_sensor_user_is_a_dedicated_one_and_passes_the_input_check():
    variables = role_vars()
    assert variables['transfer_queue_sensor_user'] == 'gebtransfer'
    assert variables['transfer_queue_sensor_user_create'] is True
    assert failing(variables) == []
    specs = _load('meta', 'argument_specs.yml')['argument_specs']['main']['options']
    assert specs['transfer_queue_sensor_user']['default'] == 'gebtransfer'
    assert specs['transfer_queue_sensor_user_create'] == dict(specs['transfer_queue_sensor_user_create'],
                                                              type='bool', default=True)


@pytest.mark.parametrize('user', ['sgeadmin', 'gebtransfer', '_ge-sensor2', 'a' * 32])
def test_plain_user_names_pass(user):
    assert failing(role_vars(transfer_queue_sensor_user=user)) == []


@pytest.mark.parametrize('user', ['root', '', 'a' * 33, 'Geb', '-km', "geb'transfer", 'geb"x', 'geb transfer',
                                  'geb\n', '$(touch /tmp/owned)', 'geb:x', '../geb', 7])
def test_other_sensor_users_are_refused(user):
    """The name is written into the sensor's script and handed to getpwnam: a plain user name,
    never root."""
    assert failing(role_vars(transfer_queue_sensor_user=user))


# ---------------------------------------------------------------------- the sensor's script ----

def _run_script(item, monkeypatch, tmp_path, **extra):
    """Render templates/method.py.j2 for ``item`` and run it with a stand-in transfer module;
    the arguments transfer.main got and whether bytecode writing was off when it was called."""
    with open(os.path.join(ROLE, 'templates', 'method.py.j2')) as handle:
        source = _render(handle.read(), dict(role_vars(**extra), item=item))
    path = tmp_path / item
    path.write_text(source)
    calls = []

    def main(*args, **kwargs):
        calls.append((args, kwargs, sys.dont_write_bytecode))
        return 0

    monkeypatch.setitem(sys.modules, 'transfer', types.SimpleNamespace(main=main))
    monkeypatch.setattr(sys, 'path', list(sys.path))
    monkeypatch.setattr(sys, 'dont_write_bytecode', False)
    with pytest.raises(SystemExit) as info:
        exec(compile(source, str(path), 'exec'), {'__file__': str(path), '__name__': '__main__'})  # pylint: disable=exec-used
    assert info.value.code == 0
    assert source.startswith('#!/usr/bin/python3 -I\n')
    return calls


def test_the_sensor_script_names_its_user_and_its_closing_report(monkeypatch, tmp_path):
    calls = _run_script('load_sensor', monkeypatch, tmp_path)
    assert calls == [(('load_sensor', str(tmp_path / 'load_sensor')),
                      {'sensor': {'user': 'gebtransfer', 'host': 'vm', 'closed': {'remote_pending': 99999}}}, True)]


def test_the_sensor_script_follows_the_options(monkeypatch, tmp_path):
    calls = _run_script('load_sensor', monkeypatch, tmp_path, transfer_queue_sensor_user='sgeadmin',
                        transfer_queue_pending_complex='tq_pending', transfer_queue_host_name='master1')
    assert calls[0][1] == {'sensor': {'user': 'sgeadmin', 'host': 'master1', 'closed': {'tq_pending': 99999}}}


@pytest.mark.parametrize('item', ['starter', 'suspend', 'resume', 'terminate'])
def test_the_methods_get_no_user_to_switch_to(item, monkeypatch, tmp_path):
    """Grid Engine runs them as the job owner already (docs/reliability/privileges.md)."""
    assert _run_script(item, monkeypatch, tmp_path) == [((item, str(tmp_path / item)), {}, True)]


# ------------------------------------------------------------------------- the role's tasks ----

def test_the_role_creates_a_system_user_without_login_shell_or_home_only_when_asked():
    present = tasks('present.yml')
    block = present["Create the load sensor's user and group (system, no login shell, no home) - "
                    "{{ transfer_queue_sensor_user }}"]
    assert block['when'] == 'transfer_queue_sensor_user_create | bool'
    group = present["Create the load sensor's group - {{ transfer_queue_sensor_user }}"]['ansible.builtin.group']
    user = present["Create the load sensor's user - {{ transfer_queue_sensor_user }}"]['ansible.builtin.user']
    assert group == {'name': '{{ transfer_queue_sensor_user }}', 'system': True, 'state': 'present'}
    assert dict(user, comment=None) == {
        'name': '{{ transfer_queue_sensor_user }}', 'group': '{{ transfer_queue_sensor_user }}', 'system': True,
        'shell': '/usr/sbin/nologin', 'home': '/nonexistent', 'create_home': False, 'comment': None,
        'state': 'present'}
    # the role never removes it: every transfer queue of the host uses it
    assert not any('ansible.builtin.user' in task or 'ansible.builtin.group' in task
                   for task in tasks('absent.yml').values())


def test_the_user_is_checked_before_the_status_directory_is_made_for_it():
    names = [task.get('name') for task in _load('tasks', 'present.yml')]
    order = [names.index(n) for n in (
        "Look up the load sensor's user - {{ transfer_queue_sensor_user }}",
        "Keep the load sensor's user entry",
        "Check that the load sensor's user exists and is neither root nor in the root group",
        "Create the load sensor's status directory, owned by its user (status.json is read by every job owner)",
        'Install the transfer code (transfer.py, transfer_remote.py, broker.py, placement.py)',
        "Write the methods' configuration (transfer.json)")]
    assert order == sorted(order)
    present_tasks = tasks('present.yml')
    check = present_tasks["Check that the load sensor's user exists and is neither root nor in the root group"]
    lookup = present_tasks["Look up the load sensor's user - {{ transfer_queue_sensor_user }}"]
    assert lookup['ansible.builtin.command']['argv'] == ['getent', 'passwd', '{{ transfer_queue_sensor_user }}']
    keep = present_tasks["Keep the load sensor's user entry"]['ansible.builtin.set_fact']['transfer_queue_sensor_entry']
    line = 'gebtransfer:x:998:997:gridengine.balancer transfer-queue load sensor:/nonexistent:/usr/sbin/nologin\n'
    entry = _render(keep, {'transfer_queue_sensor_lookup': {'rc': 0, 'stdout': line}})
    assert entry == ['x', '998', '997', 'gridengine.balancer transfer-queue load sensor', '/nonexistent',
                     '/usr/sbin/nologin']
    assert _render(keep, {'transfer_queue_sensor_lookup': {'rc': 2, 'stdout': ''}}) is None
    templar = Templar(loader=DataLoader(), variables={'transfer_queue_sensor_entry': entry})
    conds = check['ansible.builtin.assert']['that']
    assert all(templar.evaluate_conditional(trust_as_template(c)) for c in conds)
    for bad in (['x', '0', '997'], ['x', '998', '0']):
        templar = Templar(loader=DataLoader(), variables={'transfer_queue_sensor_entry': bad})
        assert not all(templar.evaluate_conditional(trust_as_template(c)) for c in conds)


def test_the_status_directory_belongs_to_the_sensor_and_transfer_json_points_there():
    present = tasks('present.yml')
    status = present["Create the load sensor's status directory, owned by its user "
                     "(status.json is read by every job owner)"]['ansible.builtin.file']
    assert status == {'path': '{{ transfer_queue_dir }}/status', 'state': 'directory',
                      'owner': '{{ transfer_queue_sensor_user }}', 'group': '{{ transfer_queue_sensor_entry[2] }}',
                      'mode': '0755'}
    config = present["Write the methods' configuration (transfer.json)"]['vars']['transfer_queue_config']
    assert config['status_file'] == '{{ transfer_queue_dir }}/status/status.json'
    assert config['unreachable_value'] == '{{ transfer_queue_unreachable_value | int }}'
    # everything else in the methods' directory stays root's
    for name in ("Create the methods' directory and the shared jobs directory (sticky, like /tmp)",
                 'Install the transfer code (transfer.py, transfer_remote.py, broker.py, placement.py)',
                 'Install the method scripts', "Write the methods' configuration (transfer.json)"):
        spec = [v for k, v in present[name].items() if k.startswith('ansible.builtin.')][0]
        assert (spec['owner'], spec['group']) == ('root', 'root'), name


def test_the_role_waits_for_status_json_written_by_the_sensor_user():
    present = tasks('present.yml')
    wait = present['Wait until the load sensor writes status.json as {{ transfer_queue_sensor_user }}']
    assert wait['ansible.builtin.stat']['path'] == '{{ transfer_queue_dir }}/status/status.json'
    assert 'pw_name == transfer_queue_sensor_user' in wait['until']
    check = present['Check that the load sensor runs as {{ transfer_queue_sensor_user }}']['ansible.builtin.assert']
    assert 'transfer_queue_status_file.stat.pw_name == transfer_queue_sensor_user' in check['that']
