# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one validator of role variables that reach a Grid Engine object or a sourced file.

Standard library only. A role variable written into a ``qconf`` object file (a queue, the
local configuration, the scheduler configuration, a host group), into ``bootstrap`` or into
``settings.sh`` (which shells source) must not be able to add a line of its own: a value with a
newline once added ``prolog root@...`` to a queue (issue 20, finding 5). :data:`KINDS` holds one
pattern per kind of value, anchored with ``\\A`` and ``\\Z`` (``$`` also matches before a trailing
newline) and without any blank, quote, ``$``, backquote, ``;`` or control character;
:data:`ROLE_VARIABLES` names every such variable of every role and its kind.

The roles check their inputs with ``ansible.builtin.assert`` before anything runs; each of those
conditions is ``<variable> is match('<KINDS pattern>')`` with the pattern written out, and
``tests/unit/test_hostile_input.py`` checks that each role refuses, for each variable listed
here, exactly the values :func:`check` refuses (the same hostile values and good ones), so the
roles and this table cannot drift apart.
"""

from __future__ import annotations

import re

# kind: (pattern, what it is, for messages)
KINDS = {
    # Grid Engine object names (queue, user set, project, complex, cell): no blank, no comma
    "object_name": (r"\A[A-Za-z_][A-Za-z0-9_.-]{0,63}\Z", "a Grid Engine object name"),
    # a queue's user_lists / xuser_lists: NONE or user set names separated by commas
    "user_lists": (r"\A(?:NONE|[A-Za-z_][A-Za-z0-9_.-]{0,63}(?:,[A-Za-z_][A-Za-z0-9_.-]{0,63}){0,63})\Z",
                   "NONE or user set names separated by commas"),
    # a Grid Engine time (load_report_time, schedule_interval): [[h:]m:]s
    "time": (r"\A[0-9]{1,6}(?::[0-9]{1,2}){0,2}\Z", "a time [[h:]m:]s"),
    # an absolute path written into a file a shell sources or Grid Engine reads as one word
    "path": (r"\A/[A-Za-z0-9_./-]{0,1023}\Z", "a plain absolute path (letters, digits, _ . / -)"),
    # a number of slots, a sequence number
    "count": (r"\A[0-9]{1,9}\Z", "a non-negative whole number"),
    # a TCP port
    "port": (r"\A[1-9][0-9]{0,4}\Z", "a port number"),
    # a Unix user name (bootstrap's admin_user)
    "user": (r"\A[a-z_][a-z0-9_-]{0,31}\Z", "a user name"),
    # a host group name (@name)
    "hostgroup": (r"\A@[A-Za-z_][A-Za-z0-9_.-]{0,63}\Z", "a host group name (@name)"),
    # a host name (RFC 1123), or empty for "the target's own name"
    "host_or_empty": (r"\A(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)?\Z",
                      "empty or a host name (RFC 1123)"),
}

# role: {variable: kind} - every variable that reaches a Grid Engine object or a sourced file
ROLE_VARIABLES = {
    "transfer_queue": {
        "transfer_queue_user_lists": "user_lists",            # queue.conf user_lists
        "transfer_queue_load_report_time": "time",            # localconf load_report_time
        "transfer_queue_seq_no": "count",                     # queue.conf seq_no
        "transfer_queue_name": "object_name",                 # queue.conf qname
        "transfer_queue_pending_complex": "object_name",      # queue.conf load_thresholds
        "transfer_queue_remote_complex": "object_name",       # queue.conf complex_values
        "transfer_queue_dir": "path",                         # queue.conf *_method, localconf load_sensor
        "transfer_queue_root": "path",                        # transfer.json, the methods' SGE_ROOT
        "transfer_queue_remote_root": "path",
        "transfer_queue_cell": "object_name",
        "transfer_queue_remote_cell": "object_name",
    },
    "sge_cell": {
        "sge_cell_root": "path",                              # settings.sh (sourced), every path
        "sge_cell_spool_dir": "path",                         # bootstrap spooling_params
        "sge_cell_work_dir": "path",                          # the qconf object files
        "sge_cell_admin_user": "user",                        # bootstrap admin_user
        "sge_cell_schedule_interval": "time",                 # scheduler configuration
        "sge_cell_hostgroup": "hostgroup",                    # host group object, queue hostlist
        "sge_cell_queue": "object_name",                      # queue object
        "sge_cell_qmaster_port": "port",                      # settings.sh
        "sge_cell_execd_port": "port",                        # settings.sh
        "sge_cell_queue_slots": "count",                      # queue slots
        "sge_cell_master_name": "host_or_empty",              # act_qmaster, host_aliases
    },
}

_COMPILED = dict((kind, re.compile(pattern)) for kind, (pattern, dummy) in KINDS.items())


def pattern(kind):
    """The pattern text of ``kind`` (as the roles write it in their ``assert``)."""
    return KINDS[kind][0]


def check(kind, value):
    """``value`` as a string when it is a valid ``kind``; ValueError naming what is expected."""
    text = value if isinstance(value, str) else (str(value) if isinstance(value, int) and not isinstance(value, bool) else None)
    if text is None or not _COMPILED[kind].match(text):
        raise ValueError("%r is not %s" % (value, KINDS[kind][1]))
    return text


def valid(kind, value):
    try:
        check(kind, value)
    except ValueError:
        return False
    return True
