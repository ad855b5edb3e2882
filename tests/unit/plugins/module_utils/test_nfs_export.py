# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/nfs_export.py: checks, exports(5) and ganesha parsing and rendering."""

from __future__ import annotations

import pytest

from ansible_collections.gridengine.balancer.plugins.module_utils import nfs_export as nx

OPTS = nx.KERNEL_DEFAULT_OPTIONS

HOSTILE_PATHS = ["", "home", "/home dir", "/home\n/etc 0.0.0.0(rw)", '/home"', "/home'", "/home{", "/home}",
                 "/home;", "/home#", "/home,x", "/a=b", "/a\\b", "/a/../etc", "/a//b", "/a/", "/a/./b", "/$(id)",
                 "/a`id`", "/a*", "/a?", "/a[1]", "/a(rw)", "/a\x00", "/a\x7f", "/" + "x" * 1100, None, 7]
HOSTILE_ADDRESSES = ["", "*", "node001", "10.77.0.0/24", "10.77.0.13 *", "10.77.0.13\n", "10.77.0.13(rw)",
                     "0.0.0.0", "::", "255.255.255.255", "224.0.0.1", "ff02::1", "fe80::1%eth0", "-x",
                     "10.77.0.13;", "::ffff:10.77.0.13", "10.77.0", "1.2.3.4.5", None]


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_paths_that_could_add_a_client_line_or_block_are_refused(path):
    with pytest.raises(nx.NfsExportError, match="paths"):
        nx.check_path(path, "paths")


@pytest.mark.parametrize("path", ["/", "/home", "/var/lib/gridengine", "/srv/data-1/x_y.z", "/a@b+c:d"])
def test_plain_paths_pass(path):
    assert nx.check_path(path) == path


@pytest.mark.parametrize("value", HOSTILE_ADDRESSES)
def test_anything_but_one_host_address_is_refused(value):
    with pytest.raises(nx.NfsExportError, match="clients"):
        nx.check_address(value, "clients")


@pytest.mark.parametrize("value, canonical", [("10.77.0.13", "10.77.0.13"), ("127.0.0.1", "127.0.0.1"),
                                              ("FD00:0::13", "fd00::13"), ("2001:db8::1", "2001:db8::1")])
def test_host_addresses_pass_in_canonical_form(value, canonical):
    assert nx.check_address(value) == canonical


@pytest.mark.parametrize("options", ["", "rw sync", "rw,(", "rw)\n/etc *(rw", "rw,,sync", "rw/x", "rw;x"])
def test_kernel_options_are_option_words_only(options):
    with pytest.raises(nx.NfsExportError):
        nx.check_kernel_options(options)


# ------------------------------------------------------------------------------------------ kernel

EXPORTS = """# /etc/exports: the site's own lines stay as they are
/srv/site   10.0.0.5(ro)   # a comment
/home 10.77.0.12(rw,sync,root_squash,no_subtree_check)
/home 10.77.0.13(rw,no_root_squash) 10.77.0.14(rw)
"/var/lib/gridengine" \\
    10.77.0.13(rw)
"""


def test_kernel_present_adds_one_line_per_share_and_keeps_the_rest():
    text, changes = nx.apply_kernel("", ["/home", "/opt/sge"], ["10.77.0.15"], OPTS, "present")
    assert text == "/home 10.77.0.15(%s)\n/opt/sge 10.77.0.15(%s)\n" % (OPTS, OPTS)
    assert changes == ["+ /home 10.77.0.15(%s)" % OPTS, "+ /opt/sge 10.77.0.15(%s)" % OPTS]
    again, changes = nx.apply_kernel(text, ["/home", "/opt/sge"], ["10.77.0.15"], OPTS, "present")
    assert again == text and changes == []


def test_kernel_present_changes_other_options_in_place():
    text, changes = nx.apply_kernel(EXPORTS, ["/home"], ["10.77.0.13"], OPTS, "present")
    lines = text.splitlines()
    assert lines[:3] == EXPORTS.splitlines()[:3]
    assert lines[3] == "/home 10.77.0.13(%s) 10.77.0.14(rw)" % OPTS
    assert lines[4:] == EXPORTS.splitlines()[4:]       # the continuation line is untouched
    assert changes == ["~ /home 10.77.0.13(rw,no_root_squash) -> (%s)" % OPTS]


def test_kernel_absent_removes_the_host_entry_and_an_emptied_line():
    text, changes = nx.apply_kernel(EXPORTS, ["/home", "/var/lib/gridengine"], ["10.77.0.13"], OPTS, "absent")
    assert "10.77.0.13" not in text
    assert "/home 10.77.0.14(rw)\n" in text and "/srv/site   10.0.0.5(ro)   # a comment\n" in text
    assert "gridengine" not in text                    # its only client left: the whole line goes
    assert sorted(changes) == ["- /home 10.77.0.13(rw,no_root_squash)", "- /var/lib/gridengine 10.77.0.13(rw)"]
    again, changes = nx.apply_kernel(text, ["/home", "/var/lib/gridengine"], ["10.77.0.13"], OPTS, "absent")
    assert again == text and changes == []


def test_kernel_absent_never_touches_similar_addresses_or_paths():
    text = "/home 10.77.0.130(rw)\n/home2 10.77.0.13(rw)\n/home *(ro)\n/home 10.77.0.1(rw)\n"
    assert nx.apply_kernel(text, ["/home"], ["10.77.0.13"], OPTS, "absent") == (text, [])


def test_kernel_duplicate_entries_collapse_to_one():
    text = "/home 10.77.0.13(%s)\n/home 10.77.0.13(rw)\n" % OPTS
    new, changes = nx.apply_kernel(text, ["/home"], ["10.77.0.13"], OPTS, "present")
    assert new == "/home 10.77.0.13(%s)\n" % OPTS and changes == ["- /home 10.77.0.13(rw)"]


def test_exportfs_v_output_is_read_with_long_paths_on_their_own_line():
    out = ("/home         \t10.77.0.13(sync,wdelay,hide,no_subtree_check,sec=sys,rw,secure,root_squash,no_all_squash)\n"
           "/var/lib/gridengine\n\t\t10.77.0.13(sync,wdelay,hide,no_subtree_check,sec=sys,rw,secure,root_squash)\n"
           "/srv/site     \t<world>(sync,ro)\n")
    table = nx.parse_exportfs_v(out)
    assert set(table) == {("/home", "10.77.0.13"), ("/var/lib/gridengine", "10.77.0.13")}
    assert "root_squash" in table[("/home", "10.77.0.13")]


# ----------------------------------------------------------------------------------------- ganesha

def test_ganesha_render_parse_round_trip_and_idempotence():
    text, changes = nx.apply_ganesha("", ["/home", "/var/lib/gridengine"], ["10.77.0.13", "fd00::13"], "present")
    assert text.startswith(nx.MARKER)
    assert text.count("EXPORT {") == 2 and text.count("CLIENT {") == 4
    assert "Access_Type = None;" in text and "Clients = fd00::13;" in text and "Squash = root_squash;" in text
    assert 'Path = "/home";' in text and 'Pseudo = "/home";' in text and "Export_Id = 2000;" in text
    assert "Export_Id = 2001;" in text and "PrivilegedPort = true;" in text and "Protocols = 4;" in text
    parsed = nx.parse_ganesha(text)
    assert list(parsed) == ["/home", "/var/lib/gridengine"]
    assert parsed["/home"]["clients"] == {"10.77.0.13": {"access": "RW", "squash": "root_squash"},
                                          "fd00::13": {"access": "RW", "squash": "root_squash"}}
    assert nx.render_ganesha(parsed) == text
    again, changes = nx.apply_ganesha(text, ["/home", "/var/lib/gridengine"], ["10.77.0.13"], "present")
    assert again == text and changes == []


def test_ganesha_ids_avoid_the_main_configuration_and_existing_blocks():
    main = "EXPORT {\n  Export_Id = 2000;\n  Path = /x;\n}\n# Export_Id = 2001 commented out\n"
    assert nx.used_export_ids(main) == {2000}
    text, dummy = nx.apply_ganesha("", ["/home"], ["10.77.0.13"], "present", avoid_ids=nx.used_export_ids(main))
    assert "Export_Id = 2001;" in text
    text, dummy = nx.apply_ganesha(text, ["/opt"], ["10.77.0.13"], "present", avoid_ids={2000})
    assert "Export_Id = 2002;" in text


def test_ganesha_absent_removes_the_client_then_the_block():
    text, dummy = nx.apply_ganesha("", ["/home"], ["10.77.0.13", "10.77.0.14"], "present")
    text, changes = nx.apply_ganesha(text, ["/home"], ["10.77.0.13"], "absent")
    assert changes == ["- /home CLIENT 10.77.0.13"] and "10.77.0.13" not in text and "10.77.0.14" in text
    text, changes = nx.apply_ganesha(text, ["/home"], ["10.77.0.14"], "absent")
    assert changes == ["- /home CLIENT 10.77.0.14", "- EXPORT /home (no client left)"]
    assert "EXPORT" not in text.split("\n", 2)[2] and nx.parse_ganesha(text) == {}
    assert nx.apply_ganesha(text, ["/home"], ["10.77.0.14"], "absent") == (text, [])
    assert nx.apply_ganesha("", ["/home"], ["10.77.0.14"], "absent") == ("", [])


def test_ganesha_squash_and_access_changes_are_reported():
    text, dummy = nx.apply_ganesha("", ["/home"], ["10.77.0.13"], "present")
    new, changes = nx.apply_ganesha(text, ["/home"], ["10.77.0.13"], "present", squash="no_root_squash", access="RO")
    assert changes == ["~ /home CLIENT 10.77.0.13 RO no_root_squash"]
    assert "Squash = no_root_squash;" in new and "Access_Type = RO;" in new


@pytest.mark.parametrize("text, what", [
    ("NFS_CORE_PARAM { NFS_Port = 2049; }", "not an EXPORT block"),
    ("EXPORT { Export_Id = 1; Path = /home; Pseudo = /home; Protocols = 4; PrivilegedPort = true; "
     "Anonymous_Uid = 0; }", "unknown EXPORT settings"),
    ("EXPORT { Export_Id = 1; Path = /home; Pseudo = /home; Protocols = 4; PrivilegedPort = true; "
     "CLIENT { Clients = *; Access_Type = RW; Squash = root_squash; } }", "Clients"),
    ("EXPORT { Export_Id = 1; Path = /home; Pseudo = /home; Protocols = 4; PrivilegedPort = true; "
     "CLIENT { Clients = 10.0.0.1, 10.0.0.2; Access_Type = RW; Squash = root_squash; } }", "Clients"),
    ("EXPORT { Export_Id = x; Path = /home; Pseudo = /home; Protocols = 4; PrivilegedPort = true; }", "Export_Id"),
    ("EXPORT { Export_Id = 1; Path = /home; ", "';'|not closed"),
    ("}", "unbalanced"),
])
def test_ganesha_files_not_written_by_the_module_are_refused(text, what):
    with pytest.raises(nx.NfsExportError, match=what):
        nx.apply_ganesha(text, ["/home"], ["10.77.0.13"], "present")


def test_include_line_is_added_once():
    main = "NFS_CORE_PARAM {\n    Protocols = 4;\n}"
    text, changes = nx.apply_include(main, "/etc/ganesha/gridengine-balancer-c.conf")
    assert text.endswith('}\n%include "/etc/ganesha/gridengine-balancer-c.conf"\n') and len(changes) == 1
    assert nx.apply_include(text, "/etc/ganesha/gridengine-balancer-c.conf") == (text, [])
    assert nx.apply_include("%include /etc/ganesha/x.conf\n", "/etc/ganesha/x.conf")[1] == []
