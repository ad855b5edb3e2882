# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster reserves (Aron et al.), as Li & Parker restate it: three steps, two of them
constrained optimisation problems, solved with HiGHS through ``scipy.optimize.linprog``.

Pure policy: numpy in, numpy out; no I/O, no clock, no Ansible.

Inputs: ``r`` and ``u`` (N x S, percent allocation and usage per node and class), ``D`` (S,
desired percent per class, summing to 100). Output: ``R`` (N x S, new percent allocations).

Step 1 (an LP once the ``abs`` terms are linearised with one ``t[j] >= |col_j - N D_j|`` per
class)::

    minimise  sum_j t[j]
    s.t.      t[j] >= sum_i R[i,j] - N D[j],   t[j] >= N D[j] - sum_i R[i,j]
              sum_j R[i,j] <= 100                          for every node i
              R[i,j] <= u[i,j]   where r[i,j] > u[i,j]     (the class did not use its share)
              R[i,j] >= 1

    V = the optimum.

Step 2: minimise ``sum (R[i,j] - (u[i,j] + k[i,j]))^2`` under the same constraints and
``sum_j |col_j - N D_j| = V``. With V the minimum of step 1 the equality is the convex
``sum_j t[j] <= V`` (a smaller sum is infeasible). HiGHS through SciPy solves LPs only, so
the square is replaced by its piecewise-linear secant through the breakpoints
``0, +-1, +-2, +-4, ..., +-128`` (exact at the breakpoints, at most 1/4 of a segment's squared
width off between them; the LP fills the segments in order because their slopes increase).
``k[i,j] = min(5, 500 (D[j] - u[i,j]) / D[j])`` when ``u[i,j] < D[j]``, else
``max(-5, 500 (D[j] - u[i,j]) / D[j])``.

Step 3: every node's unassigned percent (``100 - sum_j R[i,j]``) goes to the idle classes
(``r > u``: limited by usage) whose cluster-wide total is below ``N D[j]``, in proportion to
the missing amount, never more than it.

Where ``u[i,j] < 1`` and ``r[i,j] > u[i,j]`` the two bounds ``R >= 1`` and ``R <= u``
contradict each other; the upper bound is then 1 (documented deviation: the paper's problem
would be infeasible).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

try:
    import numpy as np
    from scipy import sparse
    from scipy.optimize import linprog
except ImportError as exc:  # numpy and SciPy are controller requirements (requirements.txt)
    np = sparse = linprog = None
    IMPORT_ERROR = exc
else:
    IMPORT_ERROR = None

BREAKPOINTS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
MIN_ALLOC = 1.0
NODE_TOTAL = 100.0


class ReservesError(ValueError):
    """Bad input, or the solver failed; the message says which."""


def _check(r, u, D):
    if IMPORT_ERROR is not None:
        raise ReservesError("numpy and SciPy are required on the controller: %s" % IMPORT_ERROR)
    r = np.asarray(r, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    D = np.asarray(D, dtype=np.float64)
    if r.ndim != 2 or r.shape != u.shape:
        raise ReservesError("r and u: expected two N x S matrices, got %s and %s"
                            % (r.shape, u.shape))
    if D.shape != (r.shape[1],):
        raise ReservesError("D: expected %d values, got shape %s" % (r.shape[1], D.shape))
    for name, arr in (("r", r), ("u", u), ("D", D)):
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise ReservesError("%s: values must be finite and >= 0" % name)
    if abs(D.sum() - 100.0) > 1e-6:
        raise ReservesError("D: percentages must sum to 100, got %g" % D.sum())
    if np.any(D <= 0):
        raise ReservesError("D: every class needs a positive desired percentage")
    if r.shape[1] * MIN_ALLOC > NODE_TOTAL:
        raise ReservesError("more than %d classes cannot all get R >= 1" % int(NODE_TOTAL))
    return r, u, D


def k_matrix(u, D):
    """The paper's ``k[i,j]``: a push of at most 5 points toward D."""
    push = 500.0 * (D[None, :] - u) / D[None, :]
    return np.where(u < D[None, :], np.minimum(5.0, push), np.maximum(-5.0, push))


def _bounds(r, u):
    upper = np.where(r > u, np.maximum(u, MIN_ALLOC), NODE_TOTAL)
    return np.full(r.shape, MIN_ALLOC), upper


def _common_rows(n, s, nvar, t_col):
    """Rows (A_ub) of: deviation t[j] >= +-(col_j - N D_j) and node totals <= 100."""
    rows, cols, vals = [], [], []
    idx = np.arange(n * s).reshape(n, s)
    row = 0
    for sign in (1.0, -1.0):
        for j in range(s):
            rows.extend([row] * n)
            cols.extend(idx[:, j].tolist())
            vals.extend([sign] * n)
            rows.append(row)
            cols.append(t_col + j)
            vals.append(-1.0)
            row += 1
    for i in range(n):
        rows.extend([row] * s)
        cols.extend(idx[i].tolist())
        vals.extend([1.0] * s)
        row += 1
    return rows, cols, vals, row


def _solve(c, a_ub, b_ub, a_eq, b_eq, bounds, what):
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds,
                  method="highs")
    if res.status != 0:
        raise ReservesError("%s: HiGHS did not find an optimum (%s)" % (what, res.message))
    return res


def step1(r, u, D):
    """Least feasible deviation V and a solution R of step 1."""
    r, u, D = _check(r, u, D)
    n, s = r.shape
    lo, hi = _bounds(r, u)
    nvar = n * s + s
    rows, cols, vals, nrows = _common_rows(n, s, nvar, n * s)
    a_ub = sparse.csr_matrix((vals, (rows, cols)), shape=(nrows, nvar))
    target = n * D
    b_ub = np.concatenate([target, -target, np.full(n, NODE_TOTAL)])
    cost = np.concatenate([np.zeros(n * s), np.ones(s)])
    bounds = np.column_stack([np.concatenate([lo.ravel(), np.zeros(s)]),
                              np.concatenate([hi.ravel(), np.full(s, np.inf)])])
    res = _solve(cost, a_ub, b_ub, None, None, bounds, "cluster reserves step 1")
    return float(res.fun), res.x[:n * s].reshape(n, s)


def step2(r, u, D, V, slack=1e-6):
    """R closest (piecewise-linear square) to ``u + k`` with deviation at most ``V``."""
    r, u, D = _check(r, u, D)
    n, s = r.shape
    lo, hi = _bounds(r, u)
    g = u + k_matrix(u, D)
    bp = np.asarray(BREAKPOINTS)
    widths = np.diff(bp)
    slopes = (bp[1:] ** 2 - bp[:-1] ** 2) / widths
    nseg = len(widths)
    nrs = n * s
    # variables: R (nrs) | t (s) | plus segments (nrs x nseg) | minus segments (nrs x nseg)
    t_col = nrs
    p0 = nrs + s
    m0 = p0 + nrs * nseg
    nvar = m0 + nrs * nseg
    rows, cols, vals, nrows = _common_rows(n, s, nvar, t_col)
    # sum_j t_j <= V
    rows.extend([nrows] * s)
    cols.extend(range(t_col, t_col + s))
    vals.extend([1.0] * s)
    nrows += 1
    a_ub = sparse.csr_matrix((vals, (rows, cols)), shape=(nrows, nvar))
    target = n * D
    b_ub = np.concatenate([target, -target, np.full(n, NODE_TOTAL), [V + slack]])
    # R - sum p + sum m = g
    entry = np.arange(nrs)
    seg_p = p0 + entry[:, None] * nseg + np.arange(nseg)[None, :]
    seg_m = m0 + entry[:, None] * nseg + np.arange(nseg)[None, :]
    eq_rows = np.concatenate([entry, np.repeat(entry, nseg), np.repeat(entry, nseg)])
    eq_cols = np.concatenate([entry, seg_p.ravel(), seg_m.ravel()])
    eq_vals = np.concatenate([np.ones(nrs), -np.ones(nrs * nseg), np.ones(nrs * nseg)])
    a_eq = sparse.csr_matrix((eq_vals, (eq_rows, eq_cols)), shape=(nrs, nvar))
    b_eq = g.ravel()
    cost = np.concatenate([np.zeros(nrs + s), np.tile(slopes, nrs), np.tile(slopes, nrs)])
    seg_hi = np.tile(widths, 2 * nrs)
    bounds = np.column_stack([
        np.concatenate([lo.ravel(), np.zeros(s), np.zeros(2 * nrs * nseg)]),
        np.concatenate([hi.ravel(), np.full(s, np.inf), seg_hi])])
    res = _solve(cost, a_ub, b_ub, a_eq, b_eq, bounds, "cluster reserves step 2")
    return res.x[:nrs].reshape(n, s)


def step3(R, r, u, D):
    """Hand each node's unassigned percent to idle classes below their cluster-wide share."""
    R = np.array(R, dtype=np.float64)
    n, _s = R.shape
    free = np.maximum(NODE_TOTAL - R.sum(axis=1), 0.0)
    missing = np.maximum(n * D - R.sum(axis=0), 0.0)
    idle = r > u
    for _step in range(R.shape[1]):
        if not np.any(free > 1e-9) or not np.any(missing > 1e-9):
            break
        want = idle * missing[None, :]
        wsum = want.sum(axis=1)
        give = np.where(wsum[:, None] > 0,
                        want * (free / np.where(wsum > 0, wsum, 1.0))[:, None], 0.0)
        # never more than the class's cluster-wide gap
        colsum = give.sum(axis=0)
        scale = np.where(colsum > missing, missing / np.where(colsum > 0, colsum, 1.0), 1.0)
        give = give * scale[None, :]
        R += give
        free = free - give.sum(axis=1)
        missing = missing - give.sum(axis=0)
    return R


def cluster_reserves(r, u, D):
    """Steps 1-3; returns ``(R, V)``."""
    r, u, D = _check(r, u, D)
    V, _r1 = step1(r, u, D)
    R = step2(r, u, D, V)
    return step3(R, r, u, D), V
