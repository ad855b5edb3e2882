# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Role variables that reach a Grid Engine object or a sourced file (issue 20, finding 5).

For every variable of module_utils/role_inputs.ROLE_VARIABLES, the role's input checks (its
``assert`` tasks, evaluated with Ansible's templar as test_hostile_input does) refuse exactly what
role_inputs.check refuses, over the hostile values of test_hostile_input and good values; no kind
of value lets a newline, a NUL or a shell character through, so no value can add a line of its
own to the object file or the sourced file it is written into.
"""

from __future__ import annotations


import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import role_inputs as ri
from ansible_collections.gridengine.balancer.tests.unit import test_hostile_input as hi

# the roles' patterns end in \Z inside Jinja string literals: Jinja's literal unescaping warns
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")

TASK_FILES = {"transfer_queue": "roles/transfer_queue/tasks/main.yml", "sge_cell": "roles/sge_cell/tasks/main.yml"}
BASE = {"transfer_queue": {}, "sge_cell": {"sge_cell_master": "vm"}}

GOOD = {
    "object_name": ["all.q", "remote_pending", "default", "a_b-c.d"],
    "user_lists": ["NONE", "transfer_users", "a,b_c,d-e"],
    "time": ["0:0:10", "10", "1:30", "0:0:1"],
    "path": ["/var/lib/gridengine", "/srv/x-y_z.1"],
    "count": [0, 3, "100", 6446],
    "port": [6500, "7000"],
    "user": ["sgeadmin", "gebtransfer"],
    "hostgroup": ["@allhosts", "@a_b"],
    "host_or_empty": ["", "master", "node001.cluster.example", "10-a"],
}
BAD_EXTRA = ["NONE\nprolog root@/tmp/x", "x\n", "a b", "", "x;y", "'x'", "x=y", "$(id)", "-1", "@"]

CASES = [(role, var, kind) for role, table in sorted(ri.ROLE_VARIABLES.items()) for var, kind in sorted(table.items())]


def _refused(role, var, value):
    variables = hi._role_vars(role, dict(BASE[role]))  # pylint: disable=protected-access
    variables[var] = value
    return hi.failing(hi._asserts(TASK_FILES[role]), variables)  # pylint: disable=protected-access


@pytest.mark.parametrize("role", sorted(TASK_FILES))
def test_the_defaults_pass(role):
    variables = hi._role_vars(role, dict(BASE[role]))  # pylint: disable=protected-access
    assert hi.failing(hi._asserts(TASK_FILES[role]), variables) == []  # pylint: disable=protected-access
    for var, kind in ri.ROLE_VARIABLES[role].items():
        assert ri.valid(kind, variables[var]), (var, variables[var])


@pytest.mark.parametrize("role, var, kind", CASES, ids=["%s-%s" % (c[1], c[2]) for c in CASES])
def test_the_role_refuses_what_the_validator_refuses(role, var, kind):
    values = [hi.hostile(k, "/tmp/owned") for k in hi.HOSTILE_IDS] + BAD_EXTRA + GOOD[kind]
    wrong = []
    for value in values:
        if bool(_refused(role, var, value)) == ri.valid(kind, value):
            wrong.append(value)
    assert wrong == [], "%s (%s): the role and role_inputs disagree on %r" % (var, kind, wrong)


@pytest.mark.parametrize("kind", sorted(ri.KINDS))
def test_no_kind_lets_a_line_or_a_shell_word_through(kind):
    kinds = ("newline", "trailing-newline", "nul", "subst", "backticks", "semicolon")
    for value in BAD_EXTRA[:2] + [hi.hostile(k, "/tmp/owned") for k in kinds]:
        assert not ri.valid(kind, value), (kind, value)
    for value in GOOD[kind]:
        assert ri.check(kind, value) == str(value)
