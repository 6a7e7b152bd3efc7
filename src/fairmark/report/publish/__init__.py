"""`fairmark publish`: a static dashboard of the store, what asv's `publish` or Bencher give their users.

An index of hosts × workloads × metrics (latest value with its CI, a trend line, the latest change point and
its size ± CI); a page per series (history with the CI band, change points with the commits on either side,
every point linked to its run); the run's own HTML report per run; a page per bisect. Plain HTML and inline
SVG: no JavaScript, nothing loaded from elsewhere (a content security policy says so to the browser), usable
from the keyboard and by screen readers (tables with captions and header cells, titled pictures, visible
focus). A second publish renders only the pages whose data changed (`manifest.py`).
"""
