# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Smaller findings of issue 20 (finding 7) in target-side module_utils.

Standard library and pytest only (also run under the nodes' /usr/bin/python3).
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import balancer_state as bs
from ansible_collections.gridengine.balancer.plugins.module_utils import transfer as t


@pytest.mark.parametrize("name", ["mycluster\n", "mycluster\n\n", "a\nb", "", ".hidden", "-x", "a/b", "a\x00"])
def test_cluster_names_with_a_trailing_newline_are_refused(name):
    """The lock, the journal and the registry put the cluster name into a path: a ``$``-anchored
    pattern also matched before a trailing newline."""
    with pytest.raises(ValueError, match="not a valid cluster name"):
        bs.check_cluster_name(name)


def test_good_cluster_names_pass():
    for name in ("mycluster", "c1", "a.b-c_d"):
        assert bs.check_cluster_name(name) == name


LAUGHS = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
          + "".join('<!ENTITY lol%d "%s">' % (i, ("&lol%d;" % (i - 1) if i else "&lol;") * 10) for i in range(9))
          + ']><job_info><queue_info>&lol8;</queue_info></job_info>')
EXTERNAL = ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
            '<job_info><queue_info>&e;</queue_info></job_info>')


@pytest.mark.parametrize("parse", [t.parse_jobs, t.count_pending, t.cluster_slots, t.cluster_memory])
@pytest.mark.parametrize("doc", [LAUGHS, EXTERNAL, LAUGHS.replace("DOCTYPE", "doctype")],
                         ids=["laughs", "external", "lowercase"])
def test_partner_xml_with_a_doctype_is_refused(parse, doc):
    """The partner's qstat/qhost output is parsed on the transfer queue's host: a document type
    declaration (entity expansion) is refused before parsing, as sge_xml does."""
    start = time.monotonic()
    with pytest.raises(ET.ParseError, match="DOCTYPE|ENTITY|document type"):
        parse(doc)
    assert time.monotonic() - start < 1


def test_partner_xml_without_a_doctype_still_parses():
    doc = ('<?xml version="1.0"?><!-- a comment --><job_info><queue_info></queue_info><job_info>'
           '<job_list state="pending"><JB_job_number>5</JB_job_number><JB_name>tq5</JB_name>'
           '<state>qw</state></job_list></job_info></job_info>')
    assert t.count_pending(doc) == 1
