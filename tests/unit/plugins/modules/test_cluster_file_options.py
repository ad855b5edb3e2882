# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared options once (DESIGN.md habit 12) for the modules that keep one of a cluster's balancer
files: each documents ``cluster`` through the doc fragment gridengine.balancer.cluster_file (and
not itself), documents ``path`` itself with its file's name (the two journal modules through the
fragment's ``journal``), and builds both into its argument spec from
balancer_state.cluster_file_spec with required_one_of=CLUSTER_OR_PATH."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import importlib

import pytest
import yaml

from ansible_collections.gridengine.balancer.plugins.doc_fragments.cluster_file import ModuleDocFragment
from ansible_collections.gridengine.balancer.plugins.module_utils.balancer_state import (
    CLUSTER_OR_PATH,
    cluster_file_spec,
)
from ansible_collections.gridengine.balancer.tests.unit.plugins.modules.test_sge_shared_options import (
    _Built,
    _fake_module,
)

PACKAGE = "ansible_collections.gridengine.balancer.plugins.modules."
FRAGMENT = "gridengine.balancer.cluster_file"
JOURNAL = FRAGMENT + ".journal"
MODULES = ["balancer_journal", "balancer_journal_info", "balancer_lock", "balancer_state", "task_registry"]
JOURNAL_MODULES = ["balancer_journal", "balancer_journal_info"]


@pytest.mark.parametrize("name", MODULES)
def test_documents_cluster_through_the_fragment(name):
    doc = yaml.safe_load(importlib.import_module(PACKAGE + name).DOCUMENTATION)
    fragments = doc["extends_documentation_fragment"]
    options = doc.get("options", {})
    assert FRAGMENT in fragments, name
    assert "cluster" not in options, "%s documents cluster itself" % name
    if name in JOURNAL_MODULES:
        assert JOURNAL in fragments and "path" not in options, name
        path = yaml.safe_load(ModuleDocFragment.JOURNAL)["options"]["path"]
    else:
        assert JOURNAL not in fragments, name
        path = options["path"]
    assert "/var/lib/gridengine-balancer/<cluster>/" in " ".join(path["description"]), name


@pytest.mark.parametrize("name", MODULES)
def test_builds_cluster_and_path_from_one_spec(name, monkeypatch):
    module = importlib.import_module(PACKAGE + name)
    monkeypatch.setattr(module, "AnsibleModule", _fake_module)
    with pytest.raises(_Built) as built:
        module.main()
    spec = built.value.kwargs["argument_spec"]
    assert dict((k, spec[k]) for k in ("cluster", "path")) == cluster_file_spec(), name
    assert built.value.kwargs["required_one_of"] == CLUSTER_OR_PATH, name


def test_the_fragment_matches_the_spec():
    options = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert options["cluster"]["type"] == cluster_file_spec()["cluster"]["type"]
    journal = yaml.safe_load(ModuleDocFragment.JOURNAL)["options"]
    assert journal["path"]["type"] == cluster_file_spec()["path"]["type"]
    assert "journal.json" in " ".join(journal["path"]["description"])


# the same for the node's task data: data_root through gridengine.balancer.task_data and
# task_data.data_root_spec

@pytest.mark.parametrize("name", ["task_data", "task_data_info"])
def test_task_data_root_through_the_fragment_and_one_spec(name, monkeypatch):
    from ansible_collections.gridengine.balancer.plugins.doc_fragments.task_data import ModuleDocFragment as TaskData
    from ansible_collections.gridengine.balancer.plugins.module_utils.task_data import data_root_spec
    module = importlib.import_module(PACKAGE + name)
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert "gridengine.balancer.task_data" in doc["extends_documentation_fragment"], name
    assert "data_root" not in doc["options"], name
    monkeypatch.setattr(module, "AnsibleModule", _fake_module)
    with pytest.raises(_Built) as built:
        module.main()
    assert built.value.kwargs["argument_spec"]["data_root"] == data_root_spec()["data_root"]
    documented = yaml.safe_load(TaskData.DOCUMENTATION)["options"]["data_root"]
    assert (documented["type"], documented["default"]) == (data_root_spec()["data_root"]["type"],
                                                           data_root_spec()["data_root"]["default"])


# the EC2 node modules: cluster and the API retries through gridengine.balancer.ec2 and
# ec2_nodes.ec2_argument_spec

def test_ec2_fragment_matches_the_spec():
    from ansible_collections.gridengine.balancer.plugins.doc_fragments.ec2 import ModuleDocFragment as Ec2
    from ansible_collections.gridengine.balancer.plugins.module_utils.ec2_nodes import ec2_argument_spec
    documented = yaml.safe_load(Ec2.DOCUMENTATION)["options"]
    spec = ec2_argument_spec()
    assert sorted(documented) == sorted(spec)
    for name, entry in spec.items():
        assert documented[name]["type"] == entry["type"], name
        assert documented[name].get("default") == entry.get("default"), name
        assert bool(documented[name].get("required")) == bool(entry.get("required")), name
    for module in ("ec2_node", "ec2_node_info"):
        doc = yaml.safe_load(importlib.import_module(PACKAGE + module).DOCUMENTATION)
        assert "gridengine.balancer.ec2" in doc["extends_documentation_fragment"], module
        assert "cluster" not in doc["options"] and "api_retries" not in doc["options"], module
