# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-ins for ``qconf -sc`` and ``qconf -sconf HOST`` output while no capture exists (tests/capture/
capture_qconf_objects.py writes one; tests/unit/fixtures/qconf/PROVENANCE-objects.md).

``package/qconf_sc_standin`` is NOT a capture: it is the complex list of the Debian package
gridengine-common 8.1.9+dfsg-10 (``/usr/share/gridengine/util/resources/centry/``, one file per
attribute, copied unchanged into ``tests/unit/fixtures/qconf/package/centry/``; roles/sge_cell
loads exactly these files into a new cell with ``spooldefaults complexes``), laid out in the
columns Son of Grid Engine's ``qconf -sc`` prints (``%-19s %-10s %-11s %-5s %-11s %-10s %-8s %s``,
header and footer lines of SoGE's source), sorted by name as qconf sorts them. The layout is
written here on its own, not with the module's renderer, so a test does not check the module
against itself.

``package/sconf_vm_standin`` is NOT a capture either: ``qconf -sconf vm`` as the local
configuration roles/sge_master gives the master (``mailer``, ``xterm``, ``gid_range``): a
``#vm:`` line, then the ``mailer`` and ``xterm`` lines of the package's
``default-configuration`` (copied unchanged) and a ``gid_range`` line in their layout.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

from ansible_collections.gridengine.balancer.tests.unit.plugins.modules import sge_admin_table

STANDIN_SC = "package/qconf_sc_standin"
STANDIN_SCONF_VM = "package/sconf_vm_standin"
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


def qconf_sconf_vm():
    with open(os.path.join(sge_admin_table.FIXTURES, "package", "default-configuration")) as handle:
        lines = [ln for ln in handle if ln.split(None, 1)[:1] in (["mailer"], ["xterm"])]
    return "#vm:\n" + "".join(lines) + "gid_range              65300-65399\n"


def install(monkeypatch):
    """Let the table name the stand-ins as an ``out_file``/``file_fixture``."""
    real = sge_admin_table.fixture
    standins = {STANDIN_SC: qconf_sc, STANDIN_SCONF_VM: qconf_sconf_vm}

    def fixture(name):
        return standins[name]() if name in standins else real(name)

    monkeypatch.setattr(sge_admin_table, "fixture", fixture)
