# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The schema is the contract: every element and attribute name the parser reads is spelled as the
installed Grid Engine schema defines it (case-sensitively), or as a real capture of another flavour
writes it.

The names the parser reads are taken from the source of ``plugins/module_utils/sge_xml.py`` (its
syntax tree), not from a list kept by hand: a comparison ``tag == "x"``, ``"x" in vals``,
``vals["x"]``, ``vals.get("x")``, ``elem.find("x")`` / ``findall`` / ``findtext`` / ``iter``,
``elem.get("x")`` (an attribute), the root elements given to ``_check_root`` and the tags of
``_QSTAT_TAGS``.  The schemas are those the Debian packages install
(``/usr/share/gridengine/util/resources/schemas/``); the test is skipped, saying so, where they are
absent.  Names no schema defines must appear in a real capture under ``../shared/data/sge/`` (or
its copy in ``tests/unit/fixtures/sge/``) of the same command, or be listed in ``UNCAPTURED`` with
the flavour that writes them.
"""

from __future__ import annotations

import ast
import glob
import os
import re
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import sge_xml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
SOURCE = os.path.join(REPO, "plugins", "module_utils", "sge_xml.py")
SCHEMAS = "/usr/share/gridengine/util/resources/schemas"
CAPTURE_DIRS = [os.path.join(REPO, "..", "shared", "data", "sge"), os.path.join(REPO, "tests", "unit", "fixtures", "sge")]

# document -> (schema files, root elements of its real captures, the parser's scopes in sge_xml.py)
DOCUMENTS = {
    "qstat": (["qstat/qstat.xsd"], {"job_info"},
              {"_QstatReader", "parse_qstat", "parse_qstat_gc", "_QSTAT_TAGS"}),
    "qstat -j": (["qstat/detailed_job_info.xsd", "qstat/message.xsd"], {"detailed_job_info", "unknown_jobs"},
                 {"parse_qstat_j"}),
    "qhost": (["qhost/qhost.xsd"], {"qhost"}, {"_consume_qhost", "parse_qhost"}),
}

# Spellings read although no schema installed here defines them and no capture here holds them,
# each with the flavour that writes it.  Each must differ from a schema name only in case.
UNCAPTURED = {
    "requested_PE": "SGE 6.0 (its qstat -xml spelled the parallel environment elements in upper case)",
    "granted_PE": "SGE 6.0 (as requested_PE)",
}


def _schema_names(files):
    names = set()
    for rel in files:
        tree = ET.parse(os.path.join(SCHEMAS, rel))
        for node in tree.iter():
            if node.tag.endswith("}element") or node.tag.endswith("}attribute"):
                if node.get("name"):
                    names.add(node.get("name"))
    return names


def _captured_names(roots):
    """Element and attribute names in the real captures whose root is one of ``roots``."""
    names, files = {}, 0
    for top in CAPTURE_DIRS:
        for path in glob.glob(os.path.join(top, "**", "*.xml"), recursive=True):
            if os.sep + "handmade" + os.sep in path:
                continue  # hand-written: not evidence of a spelling
            try:
                root = ET.parse(path).getroot()
            except ET.ParseError:
                # broken on purpose (ood_core's <unknown_jobs> holds a <> element): its tags still
                # show how that flavour spells them
                with open(path, encoding="utf-8", errors="replace") as handle:
                    tags = re.findall(r"<([A-Za-z_][\w.-]*)", handle.read().split("?>", 1)[-1])
                if not tags or tags[0] not in roots:
                    continue
                files += 1
                for tag in tags:
                    names.setdefault(tag, path)
                continue
            if root.tag not in roots:
                continue
            files += 1
            for node in root.iter():
                names.setdefault(node.tag, path)
                for attr in node.attrib:
                    names.setdefault(attr, path)
    return names, files


class _Reads(ast.NodeVisitor):
    """Element and attribute names one scope of the parser reads."""

    ELEMENT_CALLS = {"find", "findall", "findtext", "iter"}
    ATTRIBUTE_OWNERS = {"elem", "child", "v", "e", "node"}

    def __init__(self):
        self.elements = set()
        self.attributes = set()
        self.loops = {}

    @staticmethod
    def _str(node):
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None

    @staticmethod
    def _name(node):
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            return node.attr
        return None

    def visit_For(self, node):
        if isinstance(node.target, ast.Name) and isinstance(node.iter, (ast.Tuple, ast.List)):
            values = [self._str(e) for e in node.iter.elts]
            if all(values):
                self.loops[node.target.id] = values
        self.generic_visit(node)

    def visit_Compare(self, node):
        sides = [node.left] + list(node.comparators)
        for op, left, right in zip(node.ops, sides, sides[1:]):
            if isinstance(op, (ast.Eq, ast.NotEq)):
                for a, b in ((left, right), (right, left)):
                    if self._name(a) in ("tag", "t") and self._str(b):
                        self.elements.add(self._str(b))
            if isinstance(op, (ast.In, ast.NotIn)) and self._name(right) == "vals" and self._str(left):
                self.elements.add(self._str(left))
        self.generic_visit(node)

    def visit_Subscript(self, node):
        if self._name(node.value) == "vals" and self._str(node.slice):
            self.elements.add(self._str(node.slice))
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        args = node.args
        if isinstance(func, ast.Attribute) and args:
            owner = self._name(func.value)
            value = self._str(args[0])
            if value is None and isinstance(args[0], ast.Name) and args[0].id in self.loops:
                values = self.loops[args[0].id]
            else:
                values = [value] if value else []
            if func.attr in self.ELEMENT_CALLS or (func.attr == "get" and owner == "vals"):
                self.elements.update(values)
            elif func.attr == "get" and owner in self.ATTRIBUTE_OWNERS:
                self.attributes.update(values)
        if self._name(func) == "_texts" and len(args) == 2 and self._str(args[1]):
            self.elements.add(self._str(args[1]))
        if self._name(func) == "_check_root" and len(args) >= 3 and isinstance(args[2], (ast.Tuple, ast.List)):
            self.elements.update(v for v in (self._str(e) for e in args[2].elts) if v)
        self.generic_visit(node)


def parser_reads(scopes):
    with open(SOURCE, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    reads = _Reads()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in scopes:
            reads.visit(node)
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) in scopes for t in node.targets):
            for const in ast.walk(node.value):
                if isinstance(const, ast.Constant) and isinstance(const.value, str):
                    reads.elements.add(const.value)
    return reads


needs_schemas = pytest.mark.skipif(not os.path.isdir(SCHEMAS),
                                   reason="the Grid Engine schemas are not installed (Debian gridengine-common)")


def test_the_source_reading_finds_what_the_parser_reads():
    """The extraction itself: names known to be read are found, so an empty result cannot pass."""
    reads = parser_reads(DOCUMENTS["qstat"][2])
    assert {"JB_job_number", "requested_pe", "granted_pe", "Queue-List", "slots_total", "hard_request",
            "job_list", "cluster_queue_summary", "manual_intervention"} <= reads.elements
    assert {"name", "state"} <= reads.attributes
    reads = parser_reads(DOCUMENTS["qhost"][2])
    assert {"host", "hostvalue", "queue", "queuevalue", "qhost"} <= reads.elements
    assert reads.attributes == {"name"}


@needs_schemas
@pytest.mark.parametrize("document", sorted(DOCUMENTS))
def test_every_name_the_parser_reads_is_defined_or_captured(document):
    files, roots, scopes = DOCUMENTS[document]
    defined = _schema_names(files)
    captured, count = _captured_names(roots)
    assert count > 0, "no real capture of %s found" % document
    reads = parser_reads(scopes)
    unknown = []
    for name in sorted(reads.elements | reads.attributes):
        if name in defined or name in captured:
            continue
        if name in UNCAPTURED and any(name.lower() == d.lower() for d in defined):
            continue
        unknown.append(name)
    assert not unknown, ("%s: the parser reads %s, which %s does not define and no real capture holds "
                         "(case-sensitive)" % (document, ", ".join(unknown), " / ".join(files)))


@needs_schemas
def test_the_installed_schema_spells_the_pe_elements_in_lower_case():
    defined = _schema_names(DOCUMENTS["qstat"][0])
    assert {"requested_pe", "granted_pe"} <= defined
    assert not {"requested_PE", "granted_PE"} & defined
    reads = parser_reads(DOCUMENTS["qstat"][2])
    assert {"requested_pe", "granted_pe"} <= reads.elements


def test_uncaptured_spellings_are_case_variants_of_schema_names():
    reads = parser_reads(DOCUMENTS["qstat"][2])
    for name in UNCAPTURED:
        assert name in reads.elements, "%s is listed but not read" % name
        assert name.lower() in reads.elements, "%s is read without the schema's spelling" % name


def test_flavour_table_is_used():
    # the flavours the parser names are those the captures and schemas come from
    assert sge_xml.detect_flavour("http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/"
                                  "qstat/qstat.xsd") == "SoGE 8.1"
