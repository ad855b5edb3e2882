# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-ins for ``qconf -sc`` output while no capture of it exists (tests/capture/
capture_qconf_objects.py writes one; tests/unit/fixtures/qconf/PROVENANCE-objects.md).

``package/qconf_sc_standin`` is NOT a capture: it is the complex list of the Debian package
gridengine-common 8.1.9+dfsg-10 (``/usr/share/gridengine/util/resources/centry/``, one file per
attribute, copied unchanged into ``tests/unit/fixtures/qconf/package/centry/``; roles/sge_cell
loads exactly these files into a new cell with ``spooldefaults complexes``), laid out in the
columns Son of Grid Engine's ``qconf -sc`` prints (``%-19s %-10s %-11s %-5s %-11s %-10s %-8s %s``,
header and footer lines of SoGE's source), sorted by name as qconf sorts them. The layout is
written here on its own, not with the module's renderer, so a test does not check the module
against itself.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

from ansible_collections.gridengine.balancer.tests.unit.plugins.modules import sge_admin_table

STANDIN_SC = "package/qconf_sc_standin"
CENTRY = os.path.join(sge_admin_table.FIXTURES, "package", "centry")
HEADER = ("#name               shortcut   type        relop requestable consumable default  urgency \n"
          "#----------------------------------------------------------------------------------------\n")
FOOTER = "# >#< starts a comment but comments are not saved across edits --------\n"
COLUMNS = ("name", "shortcut", "type", "relop", "requestable", "consumable", "default", "urgency")


def centry(name):
    """{column: value} of one package centry file."""
    values = {}
    with open(os.path.join(CENTRY, name)) as handle:
        for line in handle:
            if line.strip() and not line.startswith("#"):
                key, value = line.split(None, 1)
                values[key] = value.strip()
    return values


def line(values):
    return "%-19s %-10s %-11s %-5s %-11s %-10s %-8s %s\n" % tuple(values[c] for c in COLUMNS)


def qconf_sc():
    return HEADER + "".join(line(centry(n)) for n in sorted(os.listdir(CENTRY))) + FOOTER


def install(monkeypatch):
    """Let the table name ``package/qconf_sc_standin`` as an ``out_file``/``file_fixture``."""
    real = sge_admin_table.fixture

    def fixture(name):
        return qconf_sc() if name == STANDIN_SC else real(name)

    monkeypatch.setattr(sge_admin_table, "fixture", fixture)
