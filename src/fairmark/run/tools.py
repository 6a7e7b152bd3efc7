"""Moved to fairmark.run.workloads.tools (workload support lives with the workloads). This alias keeps imports of
the old path working for branches in flight: the same module object, so monkeypatching either name patches both."""

import sys

from fairmark.run.workloads import tools

sys.modules[__name__] = tools
