# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This module is implemented as an action plugin (plugins/action/elastic_plan.py) and runs on the
# controller; this file holds its documentation, which is also its argument spec.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: elastic_plan
short_description: Decide how to resize a Grid Engine cluster (StarCluster's elastic load balancer)
version_added: 0.1.0
description:
  - Runs on the controller. Takes the cluster snapshot from M(gridengine.balancer.sge_queue_facts),
    reads the balancer state on the task's host (the qmaster) with M(gridengine.balancer.balancer_state),
    decides how many nodes to add and which idle nodes to remove, saves the new state back, and returns
    the plan with a reason for every item.
  - The decision is the pure function C(decide) of C(plugins/plugin_utils/policy/elastic.py); its
    options and defaults are those of StarCluster's C(loadbalance) command. See C(docs/elastic.md).
  - The decision time is the snapshot's C(taken_at) (the qmaster's clock), so the controller's clock
    does not matter.
  - The plan is only a decision. Adding and removing nodes is done by the roles the playbook runs next.
  - In check mode the plan is computed and shown, and nothing is written (neither state nor statistics).
extends_documentation_fragment:
  - gridengine.balancer.attributes
  - gridengine.balancer.controller
  - gridengine.balancer.controller.state
options:
  cluster:
    description:
      - Name of the cluster. Names the default state file and the default statistics directory.
      - Letters, digits, V(_), V(.) and V(-), starting with a letter or digit.
    type: str
    required: true
  snapshot:
    description:
      - The cluster snapshot, C(ansible_facts.sge) as returned by M(gridengine.balancer.sge_queue_facts)
        (schema 1, with C(taken_at), C(hosts), C(pending) and C(running)).
      - A missing or malformed snapshot fails the task and writes nothing.
    type: dict
    required: true
  state_path:
    description:
      - Path of the state file on the task's host (the qmaster).
      - Default C(/var/lib/gridengine-balancer/<cluster>/state.json).
    type: str
  profile:
    description:
      - V(starcluster) applies StarCluster's documented criteria exactly (weaknesses included; hourly billing; C(all.q) only).
      - V(default) fixes StarCluster's weaknesses (slot-aware growth, truly oldest job, held/error/unrunnable
        jobs ignored, any queue, mixed slot counts, per-second billing). See C(docs/elastic.md).
      - V(parallelcluster) follows AWS ParallelCluster v2's rules (grow every poll to busy nodes plus the nodes the
        waiting slots need; remove a node idle for O(idle_time)); a baseline for the trace simulator (C(docs/simulator.md)).
    type: str
    choices: [default, starcluster, parallelcluster]
    default: default
  max_nodes:
    description:
      - StarCluster C(-m). Never plan more nodes than this (the master counts as a node; booting nodes count).
      - When unset, the cluster size at the first poll (remembered in the state), like StarCluster's C(CLUSTER_SIZE).
    type: int
  min_nodes:
    description:
      - StarCluster C(-n). Never remove nodes below this count. The master counts as a node, as in StarCluster,
        so V(1) means "the master alone".
      - With O(profile=default) a cluster below this is grown back to it.
    type: int
    default: 1
  add_nodes_per_iter:
    description:
      - StarCluster C(-a). At most this many nodes are added by one plan.
      - V(0) means no per-poll limit (growth is bounded by the nodes the waiting slots need and O(max_nodes));
        not accepted by O(profile=starcluster).
      - Unset, V(0) with O(profile=default); V(1) with O(profile=starcluster) (the seed's) and O(profile=parallelcluster)
        (where it does not apply).
    type: int
  interval:
    description:
      - StarCluster C(-i). Seconds between polls (the playbook's loop uses it); at most V(300).
      - A poll later than three intervals after the previous one adds a warning.
      - Unset, V(30) with O(profile=default); V(60) with O(profile=starcluster) and O(profile=parallelcluster).
    type: int
  job_wait_time:
    description:
      - StarCluster C(-w). Seconds the oldest waiting job must have waited (more than this) before nodes are added.
      - Unset, V(0) with O(profile=default) and O(profile=parallelcluster); V(900) with O(profile=starcluster).
    type: int
  kill_after:
    description:
      - StarCluster C(-k). With hourly billing, an idle node is removed only when it has been up at least
        this many minutes past the hour (0 to 59).
    type: int
    default: 45
  stabilization_time:
    description:
      - StarCluster C(-s). Seconds after the last change of the cluster during which nothing is added or removed.
      - StarCluster's minimum is 300; lower values are accepted with a warning.
      - Unset, with O(profile=default) it follows O(billing) (V(0) per-second, V(300) hourly; C(docs/elastic.md));
        V(300) with O(profile=starcluster); V(0) with O(profile=parallelcluster).
    type: int
  lookback_window:
    description:
      - StarCluster C(-l). Minutes of job history kept for the average wait and duration statistics.
    type: int
    default: 3
  plot_stats:
    description:
      - StarCluster C(-p). Write PNG plots of the statistics on the controller (needs matplotlib).
      - Implies writing the statistics file the plots are drawn from.
    type: bool
    default: false
  plot_output_dir:
    description:
      - StarCluster C(-P). Controller directory for the plots.
      - Default C(~/.gridengine-balancer/<cluster>/).
    type: path
  dump_stats:
    description: StarCluster C(-d). Append a statistics row to a CSV file on the controller.
    type: bool
    default: false
  stats_file:
    description:
      - StarCluster C(-D). The CSV file on the controller.
      - Default C(~/.gridengine-balancer/<cluster>/sge-stats.csv).
    type: path
  instance_hour_price:
    description:
      - Price of one instance (node) for one hour, in any currency. Used when statistics are written
        (O(dump_stats) or O(plot_stats)).
      - When set, each CSV row gets four more columns, C(node_hours) and C(cost) of the interval since
        the previous row (the previous row's C(hosts) times the elapsed hours, times this price) and
        the running totals C(total_node_hours) and C(total_cost); the plots get C(node_hours.png) and
        C(cost.png). V(0) counts node-hours without a cost.
      - Unset, the CSV has StarCluster's columns only (a file that already has the cost columns keeps
        counting node-hours, with empty cost cells).
      - The count is per second of host time seen in the snapshots, whatever O(billing) says; with hourly
        billing the provider's bill can be higher (every started hour is charged). See C(docs/elastic.md).
    type: float
  kill_cluster:
    description:
      - StarCluster C(-K) (experimental). When only the master is left and no job is queued or running,
        the plan removes the master too (RV(plan.kill_cluster) is V(true)).
    type: bool
    default: false
  billing:
    description:
      - V(per_second) removes a node idle for O(idle_time). V(hourly) removes an idle node once it is
        O(kill_after) minutes past its hour.
      - Default V(per_second) with O(profile=default); O(profile=starcluster) accepts only V(hourly).
    type: str
    choices: [per_second, hourly]
  idle_time:
    description:
      - Seconds a node must have been idle before per-second billing removes it.
      - Unset, V(540) with O(profile=default); V(600) with O(profile=parallelcluster) (its C(scaledown_idletime)).
    type: int
  master:
    description:
      - Grid Engine name of the master host. It counts as a node and is never removed (unless O(kill_cluster)).
    type: str
  slots_per_node:
    description:
      - Slots a new node will have, used to size growth.
      - Default the most common slot count of the existing worker nodes, or 1.
    type: int
  queues:
    description:
      - Cluster queues to balance; empty means all queues.
      - O(profile=starcluster) balances C(all.q) only.
    type: list
    elements: str
    default: []
  boot_timeout:
    description:
      - Seconds a node requested by an earlier plan may take to appear in the snapshot. Until then it
        counts as booting (towards O(max_nodes), and against the nodes needed for waiting slots).
    type: int
    default: 1200
  name_reuse_time:
    description:
      - Seconds after a node left the cluster during which its name is not given to a new node. The qmaster
        caches failed lookups of a removed name (seen up to 9 minutes after the removal), and a node joined
        again under it waits for one more registration round (37-47 s instead of 17 s; C(docs/node-join-leave.md)).
      - The state remembers each host that left, from the first poll that no longer saw it, for this long;
        the plan lists them in RV(plan.recently_removed), and the playbook passes them to the filter
        C(gridengine.balancer.next_node_names) (C(avoid)), so the next node gets the next free number instead.
      - V(0) remembers nothing and names new nodes as before (highest node number + 1).
    type: int
    default: 600
  unknown_timeout:
    description:
      - Seconds a worker node may stay in an unknown state (load C(-) or queue state C(u); its execd
        died, its machine vanished or cannot be reached) before the plan removes it. Counted from the first
        poll that saw it unknown, over polls at most three O(interval)s apart.
      - A node on which Grid Engine lists a job, a used slot or a reservation is never removed for being
        unknown; the plan keeps it and warns. Nor is any node when more than half of the worker nodes (and
        more than one) are unknown at once, which points at the qmaster or the network rather than the nodes.
      - Such a removal is not held by waiting jobs, O(min_nodes) or O(stabilization_time); the next poll's
        growth or O(min_nodes) floor replaces the node if it is needed.
      - V(0) never removes a node for being unknown (the node is kept and the plan warns, as before).
      - O(profile=starcluster) treats an unknown node as idle, as StarCluster did, and ignores this option.
    type: int
    default: 900
  launched_hosts:
    description:
      - Names of the hosts the cloud or local provider launched for this cluster. Only these hosts (and those
        O(managed_hosts) names) are ever removed; every other execution host is the site's and is kept, with
        the reason C(static host, not launched by the balancer) in the plan.
      - The playbook passes the provider's own list (the local provider's node registry, the EC2 instances
        tagged for the cluster) and the nodes of join operations in flight.
      - Unset, the hosts that appeared to fill a node an earlier plan asked for count as launched (the state
        records them); hosts present at the first poll do not.
    type: list
    elements: str
  managed_hosts:
    description:
      - Host name patterns (shell wildcards, case-insensitive) of hosts the plan may remove although the
        balancer did not launch them. V(["*"]) makes every node but the master removable, as StarCluster did.
    type: list
    elements: str
    default: []
  protected_hosts:
    description:
      - Host name patterns (shell wildcards, case-insensitive) of hosts never removed, whatever the other
        options say (also not for being unknown). They still count as nodes for O(min_nodes) and O(max_nodes).
    type: list
    elements: str
    default: []
  launches:
    description:
      - What the cloud provider's reconciliation knows about launches, for clusters whose nodes a provider
        launches (the playbook passes it with C(cluster_provider=ec2)). Unset, nothing changes.
      - While the back-off is active the plan adds no node and holds growth with the back-off's reason (the
        launches would be refused), and records no booting request for it.
      - A request of an earlier plan whose launch failed (a failure newer than the ones the state has seen,
        of a node that is not a host) no longer counts as booting, so growth resumes when the back-off ends
        rather than after O(boot_timeout). A node that launched and has not joined yet still counts.
    type: dict
    suboptions:
      backoff:
        description: RV(gridengine.balancer.reconcile_plan#module:backoff) (C(active), C(reason) are read).
        type: dict
      failures:
        description: RV(gridengine.balancer.reconcile_plan#module:failures) (C(time), C(node), C(kind), C(code) are read).
        type: list
        elements: dict
notes:
  - The task must run on the qmaster host (the state file is there). The plan is computed on the controller.
  - The task reports C(changed) when the state file changed, which is nearly every poll (it records the poll time).
    Use RV(plan.add) and RV(plan.remove) to decide what to run next.
seealso:
  - module: gridengine.balancer.balancer_state
"""

EXAMPLES = r"""
- name: Read the cluster
  gridengine.balancer.sge_queue_facts:

- name: Decide what to do
  gridengine.balancer.elastic_plan:
    cluster: mycluster
    snapshot: "{{ ansible_facts.sge }}"
    master: master
    max_nodes: 10
    min_nodes: 1
    add_nodes_per_iter: 2
  register: balancer_plan

- name: Show the decision
  ansible.builtin.debug:
    msg: "{{ balancer_plan.msg }}"

- name: StarCluster's rules exactly, with statistics and plots
  gridengine.balancer.elastic_plan:
    cluster: mycluster
    snapshot: "{{ ansible_facts.sge }}"
    profile: starcluster
    master: master
    max_nodes: 20
    dump_stats: true
    plot_stats: true
  register: balancer_plan

- name: Statistics with node-hours and cost (0.0416 per instance hour)
  gridengine.balancer.elastic_plan:
    cluster: mycluster
    snapshot: "{{ ansible_facts.sge }}"
    master: master
    dump_stats: true
    instance_hour_price: 0.0416
  register: balancer_plan

- name: Show the cost so far
  ansible.builtin.debug:
    msg: "{{ balancer_plan.cost.total_node_hours | round(2) }} node-hours, cost {{ balancer_plan.cost.total_cost | round(2) }}"
  when: balancer_plan.cost is defined
"""

RETURN = r"""
msg:
  description: The plan's summary, then one line per plan item with its reason.
  returned: always
  type: str
  sample: "add 2 nodes (3 up, 0 booting, min 1, max 5)\n- add 2 nodes: 7 slots waiting ..."
plan:
  description: The decision.
  returned: success
  type: dict
  contains:
    profile:
      description: The profile used.
      type: str
      sample: default
    now:
      description: The decision time (the snapshot's C(taken_at)), seconds since the epoch.
      type: float
      sample: 1700000000.0
    interval:
      description: Seconds until the next poll should run (O(interval)); the playbook's loop waits this long.
      type: int
      sample: 60
    config:
      description: Every option as the decision used it (defaults filled in, C(max_nodes) resolved).
      type: dict
      sample: {"profile": "default", "max_nodes": 5, "min_nodes": 1, "billing": "per_second", "idle_time": 540}
    nodes:
      description: Node counts (C(current) includes the master; C(booting) are nodes requested earlier and not yet seen).
      type: dict
      sample: {"current": 3, "min": 1, "max": 5, "booting": 0}
    add:
      description: Number of nodes to add now.
      type: int
      sample: 2
    remove:
      description: Host names to remove now (longest idle first).
      type: list
      elements: str
      sample: ["node003"]
    kill_cluster:
      description: Whether the plan terminates the cluster (O(kill_cluster), only the master left and idle).
      type: bool
      sample: false
    recently_removed:
      description:
        - Hosts that left the cluster less than O(name_reuse_time) seconds ago, by name. New nodes are not
          given these names (the playbook passes them to C(gridengine.balancer.next_node_names) as C(avoid)).
        - Empty when O(name_reuse_time) is V(0).
      type: list
      elements: str
      sample: ["node003"]
    items:
      description:
        - One entry per decision with C(action) (V(add), V(remove), V(keep), V(hold) or V(none)),
          C(reason), and C(host) or C(count) where they apply.
      type: list
      elements: dict
      sample: [{"action": "remove", "host": "node003", "reason": "remove node003: idle 11m > idle_time 10m"}]
    ignored_jobs:
      description: Waiting jobs not counted for growth, with the reason (held, error state, cannot run on a new node).
      type: list
      elements: dict
      sample: [{"id": 17, "reason": "held (state hqw)"}]
    summary:
      description: One line.
      type: str
      sample: "remove 1 node: node003 (3 up, 0 booting, min 1, max 5)"
    warnings:
      description: Things a person should look at (hosts in unknown state, short stabilization time, ...).
      type: list
      elements: str
      sample: ["node004: state unknown (load -, states 'au'); kept, check its execd"]
    stats:
      description: The statistics row of this poll (StarCluster's columns).
      type: dict
      sample: {"time": 1700000000.0, "hosts": 3, "running_jobs": 2, "queued_jobs": 7, "slots": 6,
               "avg_duration": 120.5, "avg_wait": 30.0, "avg_load": 0.52}
state_path:
  description: The state file on the task's host.
  returned: always
  type: str
  sample: /var/lib/gridengine-balancer/mycluster/state.json
state_corrupt:
  description:
    - The state file was corrupt - C(problem), and C(moved_to) where M(gridengine.balancer.balancer_state)
      moved it (null in check mode, where nothing is moved). The poll then decided from an empty state,
      and the first warning says what that means.
  returned: when the state file was corrupt
  type: dict
  sample: {"problem": "state file /var/lib/gridengine-balancer/mycluster/state.json is not valid JSON (...)",
           "moved_to": "/var/lib/gridengine-balancer/mycluster/state.json.corrupt-20231114T221320Z-a1b2c3"}
stats_file:
  description: The CSV the statistics row was appended to.
  returned: when O(dump_stats) or O(plot_stats) is true and not in check mode
  type: str
  sample: /home/me/.gridengine-balancer/mycluster/sge-stats.csv
cost:
  description:
    - The node-hours and cost of this row of the statistics file (the interval since the previous row)
      and the running totals, as written to the CSV.
    - C(cost) is V(null) and C(total_cost) unchanged when O(instance_hour_price) is unset and the file already
      has the cost columns.
  returned: when the statistics row was written with the cost columns (O(instance_hour_price) set, or a file that has them)
  type: dict
  contains:
    node_hours:
      description: Host-hours of the interval since the previous row (the previous row's C(hosts) times the elapsed hours).
      type: float
      sample: 0.05
    cost:
      description: O(instance_hour_price) times C(node_hours).
      type: float
      sample: 0.00208
    total_node_hours:
      description: Running total of C(node_hours) in the file.
      type: float
      sample: 152.4
    total_cost:
      description: Running total of C(cost) in the file.
      type: float
      sample: 6.34
    instance_hour_price:
      description: The price used (V(null) when unset).
      type: float
      sample: 0.0416
  sample: {"node_hours": 0.05, "cost": 0.00208, "total_node_hours": 152.4, "total_cost": 6.34, "instance_hour_price": 0.0416}
plots:
  description: The PNG files written (with C(node_hours.png) and C(cost.png) when the file has cost rows).
  returned: when O(plot_stats) is true and not in check mode
  type: list
  elements: str
  sample: ["/home/me/.gridengine-balancer/mycluster/hosts.png"]
"""
